"""Expressions -> LLVM IR, scalar or W-lane vector, with the semantics of model/evaluate.py.

The emitter is a mixin of the per-function emitter in ``codegen.py``.  It needs from its
host: ``self.b`` (the IRBuilder), ``self.module``, ``self.env`` (name -> value),
``self.lanes`` (1 outside vectorized loops) and ``self.emit_load`` (codegen_memory.py).

Values
------
Inside a vectorized loop of W lanes an expression's value is one of

* a scalar ``ir.Value``: uniform across the lanes (broadcast only when combined with a
  vector, so uniform work stays scalar);
* a :class:`Ramp` ``base + stride * lane`` (scalar base, constant stride): the loop
  variable and affine functions of it; a Load/Store whose index is a stride-1 ramp is one
  dense vector access;
* a :class:`Guarded` ramp: a vector known to equal a ramp when a scalar condition holds,
  e.g. ``clamp(ramp, lo, hi)`` (see ``codegen_lanes``);
* a vector ``ir.Value`` of W lanes.

Semantics (the table of types.py, as executed by evaluate.py): integers wrap (plain
add/sub/mul; ``nsw`` only on the add/sub/mul spine of an index made purely of loop
variables and constants); signed ``/`` and ``%`` are Euclidean with ``x/0 == x%0 == 0`` and
the divisor guarded so that neither 0 nor ``INT_MIN / -1`` can trap; float ``%`` is
``a - b*floor(a/b)``; float min/max reproduce numpy's ``minimum``/``maximum`` exactly
(NaN from either side propagates, ties return the second operand); float->int casts to
8/16-bit types go through i32 and to uint32 through i64, as numpy does on x86-64;
float32 division by an odd integer constant is an exact multiply in double (proof at
``_div_by_odd_integer``); math functions on float32 vectors are ``vecmath.py``'s code
where it has them, else LLVM intrinsics (libm underneath) or libm calls (tan, atan2), so
they may differ from numpy's by a few ulps.  float16 is LLVM's ``half`` in memory and
registers; every op on it is computed in float32 and rounded to float16 once
(``half.py``), so float16 math may use the float32 vector code.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import LoweringError
from ...lower.ir import Load
from ...model import expr as E
from ...model import ops
from ...model.dispatch import NodeTable
from ...model.types import Type
from ...model.visit import children
from . import half, vecmath
from .codegen_lanes import SYMBOLIC, LaneEmitter, Ramp, is_varying  # noqa: F401 (Ramp: re-exported)

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()

# Intrinsics that exist as llvm.* for float scalars and vectors.
_LLVM_MATH = {"sqrt": "llvm.sqrt", "exp": "llvm.exp", "log": "llvm.log", "sin": "llvm.sin",
              "cos": "llvm.cos", "pow": "llvm.pow", "floor": "llvm.floor",
              "ceil": "llvm.ceil", "round": "llvm.roundeven", "trunc": "llvm.trunc"}
# Intrinsics called in the C library (per lane in vector code): name -> (f32, f64) symbol.
_LIBM = {"tan": ("tanf", "tan"), "atan2": ("atan2f", "atan2"),
         **{n: (n + "f", n) for n in ("atan", "asin", "acos", "sinh", "cosh", "tanh",
                                      "asinh", "acosh", "atanh")}}

_ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def llvm_type(t: Type) -> ir.Type:
    """The register type of a scalar type (bool is i1)."""
    if t.is_bool():
        return I1
    if t.is_float():
        return {16: half.HALF, 32: F32}.get(t.bits, F64)
    return ir.IntType(t.bits)


def const_value(t: Type, value):
    """A Const's value as LLVM writes it: a float16 is rounded to float16 first (past
    65504, to inf, as the reference does)."""
    if t.is_float() and t.bits == 16:
        import numpy as np
        with np.errstate(over="ignore"):
            return float(np.float16(value))
    return value


def mem_type(t: Type) -> ir.Type:
    """The in-memory element type (bool is one byte, like numpy)."""
    return I8 if t.is_bool() else llvm_type(t)


def _mangle(ty: ir.Type) -> str:
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    return f"i{ty.width}"


class ExprEmitter(LaneEmitter):
    """Mixin: ``emit(expr)`` -> scalar ir.Value, vector ir.Value, Ramp or Guarded."""

    fp_flags: tuple = ()      # LLVM fast-math flags of float add/sub/mul (fma: "contract")
    scalar_gathers: bool | None = None   # per-lane loads or llvm.masked.gather (None: by index)
    shared_spans: bool = True      # strided loads read their siblings' span (codegen_memory)
    window_gathers: int = 0        # widest lanes the target permutes (codegen_memory)
    windows: dict = {}             # load id -> its siblings' offsets, in the current Store
    vector_math: bool = True       # float32 vector exp, pow, sin, ...: vecmath.py's code

    # -- helpers ---------------------------------------------------------------------
    def declare(self, name: str, ret: ir.Type, args: list) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    def intrinsic(self, base: str, ty: ir.Type, nargs: int = 1) -> ir.Function:
        return self.declare(f"{base}.{_mangle(ty)}", ty, [ty] * nargs)

    def const(self, ty: ir.Type, value) -> ir.Constant:
        """A constant of ``ty``; a splat when ``ty`` is a vector type."""
        if isinstance(ty, ir.VectorType):
            return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
        return ir.Constant(ty, value)

    def scalar(self, e: E.Expr) -> ir.Value:
        """Emit an Expr that must be uniform (loop bounds, allocation sizes, conditions)."""
        v = self.emit(e)
        if is_varying(v):
            raise LoweringError(f"codegen: {e} varies across vector lanes where a uniform "
                                "value is needed")
        return v

    # -- dispatch --------------------------------------------------------------------
    def emit(self, e: E.Expr, index: bool = False):
        """The value of ``e``; ``index`` marks the add/sub/mul spine of an address.

        Values are reused (CSE) within the scope that computed them.  An Expr that
        reads memory is reused only within the statement being emitted: a Store in
        between (or in a later loop iteration) may change what it reads.  Deep in an
        Expr, its operands are first emitted leaves first, so that the recursion
        through ``emit`` finds them cached and stays shallow whatever the depth."""
        self.depth += 1
        try:
            if self.depth > _SHALLOW:
                self._emit_operands_bottom_up(e, index)
            v = self._cached(e, index)
            if v is None:
                v = self._emit_node(e, index)
                if self.reads_memory(e):
                    self.stmt_cache[(id(e), index)] = v
                else:
                    self.cache[-1][(id(e), index)] = v
            return v
        finally:
            self.depth -= 1

    def _cached(self, e, index):
        key = (id(e), index)
        if self.reads_memory(e):
            return self.stmt_cache.get(key)
        for scope in reversed(self.cache):
            v = scope.get(key)
            if v is not None:
                return v
        return None

    def _emit_operands_bottom_up(self, root, index) -> None:
        """Emit every not yet cached operand below ``root``, operands before their users
        (with the address-spine flag each is asked for), without recursion."""
        order, seen, stack = [], set(), [(root, index, False)]
        while stack:
            e, ix, ready = stack.pop()
            if ready:
                order.append((e, ix))
                continue
            if (id(e), ix) in seen or self._cached(e, ix) is not None:
                continue
            seen.add((id(e), ix))
            stack.append((e, ix, True))
            stack.extend((c, cix, False) for c, cix in _operands(e, ix))
        for e, ix in order[:-1]:          # the last is ``root``: the caller emits it
            self.emit(e, ix)

    def reads_memory(self, e) -> bool:
        memo = self.load_memo
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        stack = [(e, False)]
        while stack:
            n, ready = stack.pop()
            if id(n) in memo:
                continue
            if type(n).__name__ == "Load":
                memo[id(n)] = True
            elif ready:
                memo[id(n)] = any(memo[id(c)] for c in children(n))
            else:
                stack.append((n, True))
                stack.extend((c, False) for c in children(n) if id(c) not in memo)
        return memo[id(e)]

    def _emit_node(self, e, index):
        return _LLVM(e, self, index)

    def lookup(self, name: str):
        try:
            return self.env[name]
        except KeyError:
            raise LoweringError(f"codegen: the name {name!r} is used but never defined "
                                "(no loop, let, argument or param binds it)") from None

    def _let(self, e: E.Let):
        value = self.emit(e.value)
        saved = self.env, self.cache, self.stmt_cache
        self.env = dict(self.env)
        self.env[e.name] = value
        self.cache, self.stmt_cache = [{}], {}
        try:
            return self.emit(e.body)
        finally:
            self.env, self.cache, self.stmt_cache = saved

    # -- arithmetic ------------------------------------------------------------------
    def _binop(self, e: E.BinOp, index: bool):
        op, t = e.op, e.a.type
        spine = index and op in ("add", "sub", "mul", "min", "max")
        a = self.emit(e.a, spine)
        if op in ("div", "mod") and isinstance(e.b, E.Const) and t.is_integral():
            if op == "div" and e.b.value == 2:
                h = self.halve(t, a)
                if h is not None:
                    return h
            a = self.vec(a) if isinstance(a, SYMBOLIC) else a
            return self._divmod_const(op, t, a, e.b.value)
        if op == "div" and t.is_float() and t.bits == 32 and _exact_via_double(e.b):
            return self._div_by_odd_integer(self.emit(e.a), e.b.value)
        b = self.emit(e.b, spine)
        nsw = spine and t == _INT32 and self.pure_index(e)
        lane = self.lane_arith(op, t, a, b, nsw) if op in _PURE_OPS else None
        if lane is not None:
            return lane
        if is_varying(a) or is_varying(b):
            a, b = self.vec(a), self.vec(b)
        return self.binop_values(op, t, a, b, nsw)

    def binop_values(self, op, t: Type, a, b, nsw=False):
        """``a op b`` on two ir values of one type (scalars or vectors of W lanes)."""
        if _is_half(t):
            return self._half_op(op, a, b)
        return ops.impl("llvm", op)(self, op, t, a, b, ("nsw",) if nsw else ())

    def _half_op(self, name: str, *args):
        """An op of the table on float16 operands: computed in float32, the result rounded
        to float16 once.  Float ``%`` is ``a - b*floor(a/b)`` with each of its ops rounded
        to float16, as the reference computes it."""
        if name == "mod":
            a, b = args
            q = self._half_op("div", a, b)
            return self._half_op("sub", a, self._half_op("mul", b, self._half_op("floor", q)))
        bld = self.b
        wide = [half.widen(bld, a) for a in args]
        rule = ops.impl("llvm", name)
        if ops.OPS[name].kind == "math":
            r = rule(self, name, _FLOAT32, *wide)
        else:
            r = rule(self, name, _FLOAT32, *wide, ())
        return r if ops.OPS[name].kind == "cmp" else half.narrow(bld, r)

    def _div_by_odd_integer(self, a, c: float):
        """float32 ``a / c`` for an odd integer ``c`` (3 <= |c| < 2**24), exactly.

        ``RN32(RN64(a * RN64(1/c)))`` equals ``RN32(a / c)`` for every float32 ``a``: the
        double product is within 2**-52 (relative) of ``a / c``, and ``a / c`` is never
        that close to a float32 rounding midpoint without being equal to it -- which it
        cannot be either, because ``c`` is odd (clearing the denominators gives an integer
        smaller than 1 that must be 0).  Subnormal results obey the same argument with
        absolute spacing 2**-150; inf, NaN and signed zeros pass through the multiply.
        It replaces a divide (the bottleneck of, e.g., a box blur) with a multiply."""
        if isinstance(a, SYMBOLIC):
            a = self.vec(a)
        bld = self.b
        dty = F64 if not isinstance(a.type, ir.VectorType) else ir.VectorType(F64, a.type.count)
        wide = bld.fmul(bld.fpext(a, dty), self.const(dty, 1.0 / c))
        return bld.fptrunc(wide, a.type)

    def _int_div(self, t, a, b):
        bld, ty = self.b, a.type
        zero, one = self.const(ty, 0), self.const(ty, 1)
        is0 = bld.icmp_unsigned("==", b, zero)
        if t.is_uint():
            q = bld.udiv(a, bld.select(is0, one, b))
            return bld.select(is0, zero, q)
        ism1 = bld.icmp_signed("==", b, self.const(ty, -1))
        bs = bld.select(bld.or_(is0, ism1), one, b)
        qt, rt = bld.sdiv(a, bs), bld.srem(a, bs)
        # Euclidean: when the remainder is negative, step the quotient away from zero
        step = bld.select(bld.icmp_signed(">", bs, zero), one, self.const(ty, -1))
        q = bld.sub(qt, bld.select(bld.icmp_signed("<", rt, zero), step, zero))
        q = bld.select(ism1, bld.sub(zero, a), q)
        return bld.select(is0, zero, q)

    def _int_mod(self, t, a, b):
        bld, ty = self.b, a.type
        zero, one = self.const(ty, 0), self.const(ty, 1)
        is0 = bld.icmp_unsigned("==", b, zero)
        if t.is_uint():
            r = bld.urem(a, bld.select(is0, one, b))
            return bld.select(is0, zero, r)
        ism1 = bld.icmp_signed("==", b, self.const(ty, -1))
        bs = bld.select(bld.or_(is0, ism1), one, b)
        rt = bld.srem(a, bs)
        absb = bld.select(bld.icmp_signed("<", bs, zero), bld.sub(zero, bs), bs)
        return bld.select(bld.icmp_signed("<", rt, zero), bld.add(rt, absb), rt)

    def _divmod_const(self, op, t, a, c: int):
        """Division or modulo by a constant: shifts and masks for powers of two."""
        bld, ty = self.b, a.type
        if c == 0 or (op == "mod" and c in (1, -1)):
            return self.const(ty, 0)
        if c > 0 and c & (c - 1) == 0:
            k = c.bit_length() - 1
            if op == "mod":
                return bld.and_(a, self.const(ty, c - 1))
            if k == 0:
                return a
            return bld.ashr(a, self.const(ty, k)) if t.is_int() else bld.lshr(a, self.const(ty, k))
        if t.is_uint():
            cc = self.const(ty, c)
            return bld.udiv(a, cc) if op == "div" else bld.urem(a, cc)
        if c == -1:
            return bld.sub(self.const(ty, 0), a)
        return self._int_div(t, a, self.const(ty, c)) if op == "div" \
            else self._int_mod(t, a, self.const(ty, c))

    def pure_index(self, e) -> bool:
        """True if ``e`` is made only of Vars, constants and add/sub/mul/min/max: index
        math that lowering produced, where ``nsw`` is safe."""
        memo = self.pure_memo
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        if isinstance(e, (E.Var, E.Const)):
            r = True
        elif isinstance(e, E.BinOp) and e.op in _PURE_OPS:
            r = self.pure_index(e.a) and self.pure_index(e.b)
        else:
            r = False
        memo[id(e)] = r
        return r

    # -- select, cast, intrinsics ------------------------------------------------------
    def _select(self, e: E.Select):
        c = self.emit(e.cond)
        tv, fv = self.emit(e.true_value), self.emit(e.false_value)
        if is_varying(c):
            c, tv, fv = self.vec(c), self.vec(tv), self.vec(fv)
        elif is_varying(tv) or is_varying(fv):
            tv, fv = self.vec(tv), self.vec(fv)
        return self.b.select(c, tv, fv)

    def _cast(self, e: E.Cast):
        v = self.emit(e.value)
        if isinstance(v, SYMBOLIC):
            v = self.vec(v)
        return self.convert(v, e.value.type, e.type)

    def convert(self, v, src: Type, dst: Type):
        """Convert an ir value of type ``src`` to ``dst`` (scalar or vector).  float16 goes
        through float32: widened exactly as a source; as a destination, rounded once from
        float32 (exact for every integer source: one of at most 24 bits is exact in
        float32, a wider one is beyond float16's range either way) or from float64
        (``half.narrow_double``)."""
        bld = self.b
        lanes = v.type.count if isinstance(v.type, ir.VectorType) else 1
        if src != dst and _is_half(src):
            v, src = half.widen(bld, v), _FLOAT32
        if src != dst and _is_half(dst):
            if src.is_float() and src.bits == 64:
                return half.narrow_double(bld, v)
            return half.narrow(bld, self.convert(v, src, _FLOAT32))

        def ty(t):
            return t if lanes == 1 else ir.VectorType(t, lanes)
        if src == dst:
            return v
        if dst.is_bool():
            if src.is_float():
                return bld.fcmp_unordered("!=", v, self.const(v.type, 0.0))
            return bld.icmp_unsigned("!=", v, self.const(v.type, 0))
        out = ty(llvm_type(dst))
        if src.is_float():
            if dst.is_float():
                return bld.fpext(v, out) if dst.bits > src.bits else bld.fptrunc(v, out)
            if dst.bits < 32:
                return bld.trunc(bld.fptosi(v, ty(I32)), out)
            if dst.is_uint():
                return bld.trunc(bld.fptosi(v, ty(I64)), out)
            return bld.fptosi(v, out)
        signed = src.is_int()
        if dst.is_float():
            return bld.sitofp(v, out) if signed else bld.uitofp(v, out)
        if dst.bits < src.bits:
            return bld.trunc(v, out)
        if dst.bits > src.bits:
            return bld.sext(v, out) if signed else bld.zext(v, out)
        return v

    def _intrinsic(self, e: E.Intrinsic):
        args = [self.emit(a) for a in e.args]
        if any(is_varying(a) for a in args):
            args = [self.vec(a) for a in args]
        if _is_half(e.type) and e.name != "reinterpret":
            return self._half_op(e.name, *args)
        return ops.impl("llvm", e.name)(self, e.name, e.type, *args)


_SHALLOW = 64      # emit() depth past which operands are emitted bottom-up first


_LLVM = NodeTable("LLVM IR", E.NODE_KINDS + (Load,))


@_LLVM.on(E.Const)
def _ll_const(e, em, index):
    return ir.Constant(llvm_type(e.type), const_value(e.type, e.value))


@_LLVM.on(E.Var, E.Param)
def _ll_name(e, em, index):
    return em.lookup(e.name)


@_LLVM.on(E.BufferExtent)
def _ll_extent(e, em, index):
    return em.lookup(f"{e.image}.extent.{e.dim}")


@_LLVM.on(E.BinOp)
def _ll_binop(e, em, index):
    return em._binop(e, index)


@_LLVM.on(E.Not)
def _ll_not(e, em, index):
    a = em.emit(e.a)
    a = em.vec(a) if isinstance(a, SYMBOLIC) else a
    return em.b.xor(a, em.const(a.type, 1))


@_LLVM.on(E.Select)
def _ll_select(e, em, index):
    return em._select(e)


@_LLVM.on(E.Cast)
def _ll_cast(e, em, index):
    return em._cast(e)


@_LLVM.on(E.Intrinsic)
def _ll_intrinsic_node(e, em, index):
    return em._intrinsic(e)


@_LLVM.on(E.Let)
def _ll_let(e, em, index):
    return em._let(e)


@_LLVM.on(Load)
def _ll_load(e, em, index):
    return em.emit_load(e)


@_LLVM.on(E.Call, E.RVar)
def _ll_unlowered(e, em, index):
    raise LoweringError(f"codegen: cannot generate code for {type(e).__name__} node {e}; "
                        "lowering should have removed it")


def _operands(e, index: bool):
    """The operands that emitting ``e`` emits unconditionally, each with the spine flag
    it is emitted with (a Let's body is emitted in its own scope: not listed)."""
    if isinstance(e, E.BinOp):
        spine = index and e.op in ("add", "sub", "mul", "min", "max")
        return ((e.a, spine), (e.b, spine))
    if isinstance(e, E.Let):
        return ((e.value, False),)
    if type(e).__name__ == "Load":
        return ((e.index, True),)
    if isinstance(e, (E.Cast, E.Not, E.Select, E.Intrinsic)):
        return tuple((c, False) for c in children(e))
    return ()


_INT32 = Type("int", 32)
_FLOAT32 = Type("float", 32)


def _is_half(t: Type) -> bool:
    return t.is_float() and t.bits == 16


def _exact_via_double(b) -> bool:
    """``b`` is a constant odd integer with 3 <= |b| < 2**24 (see _div_by_odd_integer)."""
    if not isinstance(b, E.Const) or not b.type.is_float():
        return False
    v = b.value
    return v == int(v) and 3 <= abs(v) < 2 ** 24 and int(v) % 2 == 1
_PURE_OPS = ("add", "sub", "mul", "min", "max")


# -- the op table's LLVM rules: rule(emitter, op, t, *ir operands[, flags]) ---------------
@ops.register("llvm", *ops.of_kind("cmp"))
def _ll_compare(em, op, t, a, b, flags=()):
    bld = em.b
    if t.is_float():
        return bld.fcmp_unordered("!=", a, b) if op == "ne" else bld.fcmp_ordered(_ICMP[op], a, b)
    if t.is_int():
        return bld.icmp_signed(_ICMP[op], a, b)
    return bld.icmp_unsigned(_ICMP[op], a, b)     # uint and bool


@ops.register("llvm", "and", "or")
def _ll_logic(em, op, t, a, b, flags=()):
    return em.b.and_(a, b) if op == "and" else em.b.or_(a, b)


@ops.register("llvm", "bitand", "bitor", "bitxor")
def _ll_bits(em, op, t, a, b, flags=()):
    return {"bitand": em.b.and_, "bitor": em.b.or_, "bitxor": em.b.xor}[op](a, b)


@ops.register("llvm", "shl", "shr")
def _ll_shift(em, op, t, a, b, flags=()):
    """The op table's shift: a negative amount shifts the other way, an amount of the
    type's width or more shifts every bit out (LLVM's shifts are poison there)."""
    bld, ty = em.b, a.type
    bits = em.const(ty, t.bits)
    left_op = op == "shl"
    if isinstance(b, ir.Constant) and not isinstance(ty, ir.VectorType) \
            and 0 <= b.constant < t.bits:
        return bld.shl(a, b) if left_op else (bld.ashr if t.is_int() else bld.lshr)(a, b)
    zero = em.const(ty, 0)
    if t.is_int():
        neg = bld.icmp_signed("<", b, zero)
        mag = bld.select(neg, bld.sub(zero, b), b)        # -min wraps to min: >= width below
    else:
        neg, mag = None, b
    wide = bld.icmp_unsigned(">=", mag, bits)
    m = bld.select(wide, em.const(ty, t.bits - 1), mag)
    up = bld.select(wide, zero, bld.shl(a, m))
    down = (bld.ashr if t.is_int() else bld.lshr)(a, m)   # width - 1: the sign fill
    if not t.is_int():
        down = bld.select(wide, zero, down)
    if neg is None:
        return up if left_op else down
    return bld.select(neg, down, up) if left_op else bld.select(neg, up, down)


@ops.register("llvm", "add", "sub", "mul")
def _ll_ring(em, op, t, a, b, flags=()):
    bld = em.b
    if t.is_float():
        return {"add": bld.fadd, "sub": bld.fsub, "mul": bld.fmul}[op](a, b, flags=em.fp_flags)
    return {"add": bld.add, "sub": bld.sub, "mul": bld.mul}[op](a, b, flags=flags)


@ops.register("llvm", "div", "mod")
def _ll_divmod(em, op, t, a, b, flags=()):
    bld = em.b
    if not t.is_float():
        return em._int_div(t, a, b) if op == "div" else em._int_mod(t, a, b)
    if op == "div":
        return bld.fdiv(a, b)
    fl = em.intrinsic("llvm.floor", a.type)
    return bld.fsub(a, bld.fmul(b, bld.call(fl, [bld.fdiv(a, b)])))


@ops.register("llvm", "min", "max")
def _ll_minmax(em, op, t, a, b, flags=()):
    bld = em.b
    if t.is_float():
        # numpy: NaN in either operand propagates; ties give the second operand
        better = bld.fcmp_ordered("<" if op == "min" else ">", a, b)
        take_a = bld.or_(better, bld.fcmp_unordered("uno", a, a))
        return bld.select(take_a, a, b)
    cmp = bld.icmp_signed if t.is_int() else bld.icmp_unsigned
    return bld.select(cmp("<" if op == "min" else ">", a, b), a, b)


@ops.register("llvm", "abs")
def _ll_abs(em, name, t, a):
    bld = em.b
    if t.is_float():
        return bld.call(em.intrinsic("llvm.fabs", a.type), [a])
    if not t.is_int():
        return a
    zero = em.const(a.type, 0)
    return bld.select(bld.icmp_signed("<", a, zero), bld.sub(zero, a), a)


@ops.register("llvm", "reinterpret")
def _ll_reinterpret(em, name, t, a):
    target = llvm_type(t)
    if isinstance(a.type, ir.VectorType):
        target = ir.VectorType(target, a.type.count)
    return em.b.bitcast(a, target)


@ops.register("llvm", *_LLVM_MATH)
def _ll_intrinsic(em, name, t, *args):
    if em.vector_math and vecmath.applies(name, args[0].type):   # no per-lane libm calls
        return vecmath.emit(em, name, *args)
    return em.b.call(em.intrinsic(_LLVM_MATH[name], args[0].type, len(args)), list(args))


@ops.register("llvm", *_LIBM)
def _ll_libm(em, name, t, *args):
    if em.vector_math and vecmath.applies(name, args[0].type):
        return vecmath.emit(em, name, *args)
    bld = em.b
    sym = _LIBM[name][0 if t.bits == 32 else 1]
    st = llvm_type(t)
    fn = em.declare(sym, st, [st] * len(args))
    if not isinstance(args[0].type, ir.VectorType):
        return bld.call(fn, list(args))
    out = ir.Constant(args[0].type, ir.Undefined)
    for k in range(args[0].type.count):
        idx = ir.Constant(I32, k)
        lane = bld.call(fn, [bld.extract_element(a, idx) for a in args])
        out = bld.insert_element(out, lane, idx)
    return out
