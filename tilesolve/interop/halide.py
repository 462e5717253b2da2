"""Translate a tilesolve Pipeline into the same algorithm in Halide's Python API.

    from tilesolve.interop import halide as th
    hp = th.translate(pipe)                  # fresh Halide Funcs, Vars, RDoms...
    hp.apply_schedule(schedule)              # optional: our Schedule as Halide calls
    seconds = hp.compile()                   # Halide's JIT for the host
    out = hp.realize([W, H], input=arr)      # numpy in, numpy out (same axis order)

Optional: everything here needs ``import halide`` (the ``halide`` extra of
the package; ``available()`` says whether it imports and why not).

What translates, node by node (every Halide rule below is the same as ours,
which is why a translation can be checked bit for bit on integers):

* ``Const`` -> a typed Halide immediate (``hl.u8(3)``, ``hl.f32(0.5)``...).
* ``Var`` -> ``hl.Var`` of the same name (``.`` -> ``_``; ``_`` and ``_0``
  style names, which Halide reserves, get a ``v`` prefix); ``RVar`` -> the
  ``hl.RVar`` of the translated ``hl.RDom`` (ranges and ``where`` predicates
  translated too); ``Param`` -> ``hl.Param`` with its default;
  ``BufferExtent`` -> ``image.dim(d).extent()``.
* ``Cast`` -> ``hl.cast`` (int->int wraps, float->int truncates: Halide's
  rules and ours); a cast to bool becomes ``x != 0`` (Halide's bool cast keeps
  the lowest bit, so ``bool(2)`` would be false there).
* ``BinOp``: ``+ - * / %`` (Halide's integer ``/`` and ``%`` are Euclidean and
  ``x / 0 == x % 0 == 0``, float ``%`` is ``a - b*floor(a/b)``: ours), ``min``
  ``max`` -> ``hl.min``/``hl.max``, comparisons, ``&``/``|`` on bools.
* ``Not`` -> ``hl.logical_not``; ``Select`` -> ``hl.select``.
* ``Call`` of a Func or an input -> the Halide Func / ImageParam called.
* ``Intrinsic``: sqrt exp log pow sin cos tan atan2 floor ceil round
  (ties to even in both) and abs (Halide's abs of a signed integer is
  unsigned: cast back to our type, so ``abs(int.min)`` wraps as ours does).
* ``Let`` -> its value substituted into the body (Halide CSEs it again).

Differences that remain: the JIT target has ``strict_float`` (no fused
multiply-adds, no float reassociation: our rules), but Halide's math library
(exp, log, pow, sin...) differs from numpy's in the last bit, so float
results differ by an ulp or so and an integer cast of such a value can differ
by one; signed 32-bit overflow is undefined in Halide but wraps
here (the apps do not overflow).  Boundary conditions need no special case:
ours are ordinary Funcs built from clamp/select, translated as written.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np

from ..errors import RealizeError, TilesolveError
from ..model import expr as E
from ..model import ops
from ..model.dispatch import NodeTable
from ..model import types as T
from ..model.func import Func
from ..model.pipeline import Pipeline
from . import halide_schedule
from .halide_common import _halide_message, halide_name

__all__ = ["available", "hl_module", "translate", "HalidePipeline", "hl_type", "halide_name"]

_IMPORT_ERROR: list = []


def hl_module():
    """The ``halide`` module; ``TilesolveError`` saying why when it does not import."""
    try:
        import halide
    except Exception as exc:  # ImportError, or a broken shared library
        raise TilesolveError(
            f"Halide is not available: `import halide` failed ({type(exc).__name__}: {exc}); "
            "install it with `pip install tilesolve[halide]` (or `pip install halide`)") from None
    return halide


def available() -> tuple[bool, str]:
    """``(True, version)`` when Halide's Python bindings import, else ``(False, reason)``."""
    try:
        hl = hl_module()
    except TilesolveError as exc:
        return False, str(exc)
    try:
        from importlib.metadata import version
        return True, version("halide")
    except Exception:
        return True, getattr(hl, "__version__", "halide")


def hl_type(t):
    """The Halide type of tilesolve type ``t``."""
    hl = hl_module()
    if t.is_bool():
        return hl.Bool()
    if t.is_float():
        return hl.Float(t.bits)
    return hl.Int(t.bits) if t.is_int() else hl.UInt(t.bits)


class _Names:
    """Unique Halide names for Funcs and RDoms (sanitizing may make two equal)."""

    def __init__(self, taken=()):
        self.used = set(taken)

    def fresh(self, name: str) -> str:
        base = halide_name(name)
        s, k = base, 2
        while s in self.used:
            s, k = f"{base}_{k}", k + 1
        self.used.add(s)
        return s


# ---------------------------------------------------------------------------
# The translated pipeline
# ---------------------------------------------------------------------------
class HalidePipeline:
    """A tilesolve Pipeline rebuilt in Halide, with fresh Halide objects.

    ``funcs``, ``images`` and ``params`` map our names to the Halide Func,
    ImageParam and Param; ``rdoms`` maps our RDom objects (by id) to Halide
    RDoms; ``pipeline`` is the ``hl.Pipeline`` of the outputs.  Each call of
    ``translate`` gives new objects, so each can get its own schedule.
    """

    def __init__(self, source: Pipeline):
        self.hl = hl_module()
        self.source = source
        self.funcs: dict = {}
        self.images: dict = {}
        self.params: dict = {}
        self.rdoms: dict = {}
        self.vars: dict = {}
        self.pipeline = None
        self.compile_seconds: float | None = None
        self._compiled = False
        self._keep: list = []          # numpy arrays Halide buffers point into
        self._out_bufs: dict = {}
        self.schedule_source = ""      # the Halide schedule applied, as text
        self.strict_float = True       # see target()

    # -- algorithm ---------------------------------------------------------------
    def var(self, name: str):
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = self.hl.Var(halide_name(name))
        return v

    def _build(self):
        hl, src = self.hl, self.source
        names = _Names()
        for name, img in src.images.items():
            self.images[name] = hl.ImageParam(hl_type(img.type), img.dims, names.fresh(name))
        for name, p in src.params.items():
            hp = hl.Param(_param_type(hl, p.type), names.fresh(name))
            if p.default is not None:
                hp.set(_param_value(name, p.type, p.default))
            self.params[name] = hp
        for name in src.order():
            self.funcs[name] = hl.Func(names.fresh(name))
        self._names = names
        tr = _ExprTranslator(self)
        for name in src.order():
            f: Func = src.func(name)
            hf = self.funcs[name]
            try:
                pure = f.pure
                hf[[self.var(a.name) for a in pure.args]] = tr.expr(pure.value)
                for u in f.updates:
                    args = [tr.expr(a) for a in u.args]
                    hf[args] = tr.expr(u.value)
            except TilesolveError:
                raise
            except Exception as exc:
                raise TilesolveError(
                    f"Halide rejected the translation of Func {name}: {_halide_message(exc)}") from None
        self.pipeline = hl.Pipeline([self.funcs[o] for o in src.output_names])
        return self

    # -- running -----------------------------------------------------------------
    def target(self):
        """Halide's JIT target for this machine (``HL_JIT_TARGET`` if set, else host),
        with ``strict_float`` unless ``self.strict_float`` is False: IEEE float as
        in tilesolve, no fused multiply-adds (they change the last bits, and an
        int cast downstream then differs by one)."""
        t = self.hl.get_jit_target_from_environment()
        if self.strict_float:
            t = t.with_feature(self.hl.TargetFeature.StrictFloat)
        return t

    def compile(self) -> float:
        """JIT-compile the pipeline for the host; returns (and keeps) the seconds taken."""
        t0 = time.perf_counter()
        try:
            with native_stdout_to_stderr():
                self.pipeline.compile_jit(self.target())
        except Exception as exc:
            raise TilesolveError(f"Halide could not compile the pipeline: {_halide_message(exc)}") from None
        self.compile_seconds = time.perf_counter() - t0
        self._compiled = True
        return self.compile_seconds

    def bind(self, **inputs_and_params) -> None:
        """Bind numpy inputs (by ImageParam name) and Param values for the next realizes."""
        unknown = sorted(set(inputs_and_params) - set(self.images) - set(self.params))
        if unknown:
            raise RealizeError(f"realize(): unknown argument {unknown[0]!r}; inputs and params: "
                               f"{', '.join(list(self.images) + list(self.params)) or '(none)'}")
        keep = []
        for name, img in self.source.images.items():
            if name not in inputs_and_params:
                raise RealizeError(f"realize(): missing input {name!r}")
            arr = np.ascontiguousarray(inputs_and_params[name])
            if arr.dtype != img.type.dtype or arr.ndim != img.dims:
                raise RealizeError(
                    f"realize(): input {name!r} must be a {img.dims}-D {img.type.dtype} array, "
                    f"got {arr.ndim}-D {arr.dtype}")
            keep.append(arr)
            self.images[name].set(self.hl.Buffer(arr))
        for name, p in self.source.params.items():
            if name in inputs_and_params:
                self.params[name].set(_param_value(name, p.type, inputs_and_params[name]))
            elif p.default is None:
                raise RealizeError(f"realize(): missing param {name!r} ({p.type}), which has no default")
        self._keep = keep

    def output_buffers(self, sizes) -> list:
        """Halide buffers for the outputs at ``sizes`` (a list, or a dict by output name)."""
        key = repr(sizes)
        bufs = self._out_bufs.get(key)
        if bufs is None:
            bufs = []
            for name in self.source.output_names:
                s = sizes[name] if isinstance(sizes, dict) else sizes
                f = self.source.func(name)
                if len(s) != f.dimensions():
                    raise RealizeError(f"realize(): output {name} has {f.dimensions()} dimensions "
                                       f"but {len(s)} sizes were given ({list(s)})")
                bufs.append(self.hl.Buffer(hl_type(f.type), [int(v) for v in s]))
            self._out_bufs = {key: bufs}
        return bufs

    def run(self, sizes) -> list:
        """Realize into reused output buffers (inputs bound with ``bind``); the buffers."""
        bufs = self.output_buffers(sizes)
        if not self._compiled:
            self.compile()
        try:
            self.pipeline.realize(bufs if len(bufs) > 1 else bufs[0])
        except Exception as exc:
            raise TilesolveError(f"Halide failed to realize the pipeline: {_halide_message(exc)}") from None
        return bufs

    def realize(self, sizes, **inputs_and_params):
        """Like ``ts.reference.realize``: one array, or a tuple in output order."""
        self.bind(**inputs_and_params)
        outs = [np.array(np.asarray(b)) for b in self.run(sizes)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def compute_root_all(self) -> None:
        """Schedule every Func ``compute_root`` (breadth first, serial).

        Halide's default inlines every Func without updates, which makes
        pyramids (local_laplacian, interpolate) blow up at compile time;
        this is the simple schedule to check a translation with."""
        for f in self.funcs.values():
            f.compute_root()

    def apply_schedule(self, schedule) -> None:
        """Apply a tilesolve Schedule as Halide scheduling calls (see ``halide_schedule``)."""
        halide_schedule.apply_schedule(self, schedule)

    def __repr__(self) -> str:
        return f"HalidePipeline({self.source!r})"


def _param_type(hl, t):
    """The Halide type of a Param of type ``t``.  A float16 Param is a float32 Param,
    read as float16 (its value is a float16 value, so the cast is exact): Halide's Python
    bindings cannot set a float16 Param (``Param::set<float16>`` is unsupported)."""
    return hl.Float(32) if t == T.float16 else hl_type(t)


def _param_value(name: str, t, v):
    """The value given to the Halide Param ``name`` of type ``t`` (float16: rounded to
    float16 here, once, as the reference rounds it; past its range, the reference's
    RealizeError)."""
    if t == T.float16:
        with np.errstate(over="ignore"):
            h = np.float16(v)
        if np.isinf(h) and np.isfinite(float(v)):
            raise RealizeError(f"realize(): param {name!r} is float16; {v!r} is out of its "
                               "range (the largest finite float16 is 65504)")
        return float(h)
    return v


_HL = NodeTable("Halide translation", E.NODE_KINDS)


@_HL.on(E.Const)
def _hl_const(e, tr):
    return tr.const(e.type, e.value)


@_HL.on(E.Var)
def _hl_var(e, tr):
    return tr.hl.Expr(tr.hp.var(e.name))


@_HL.on(E.RVar)
def _hl_rvar(e, tr):
    return tr.hl.Expr(tr.rdom(e.rdom)[e.index])


@_HL.on(E.Param)
def _hl_param(e, tr):
    if e.type == T.float16:                 # see _param_type
        return tr.hl.cast(tr.hl.Float(16), tr.hp.params[e.name])
    return tr.hl.Expr(tr.hp.params[e.name])


@_HL.on(E.BufferExtent)
def _hl_extent(e, tr):
    return tr.hp.images[e.image].dim(e.dim).extent()


@_HL.on(E.Cast)
def _hl_cast(e, tr):
    hl, v = tr.hl, tr.expr(e.value)
    if e.type.is_bool():      # ours is x != 0; Halide's cast keeps the low bit
        return v != tr.const(e.value.type, 0)
    if e.type == T.float16 and e.value.type == T.float64:
        return _f64_to_f16(hl, v)
    return hl.cast(hl_type(e.type), v)


@_HL.on(E.BinOp)
def _hl_binop(e, tr):
    return tr.binop(e.op, tr.expr(e.a), tr.expr(e.b))


@_HL.on(E.Not)
def _hl_not(e, tr):
    return tr.hl.logical_not(tr.expr(e.a))


@_HL.on(E.Select)
def _hl_select(e, tr):
    return tr.hl.select(tr.expr(e.cond), tr.expr(e.true_value), tr.expr(e.false_value))


@_HL.on(E.Call)
def _hl_call(e, tr):
    args = [tr.expr(a) for a in e.args]
    name = e.target.name
    target = tr.hp.funcs.get(name) if isinstance(e.target, Func) else tr.hp.images.get(name)
    if target is None:
        raise TilesolveError(f"Halide translation: {name} is called but not in the pipeline")
    return tr.as_expr(target[args])


@_HL.on(E.Intrinsic)
def _hl_intrinsic(e, tr):
    return tr.intrinsic(e)


@_HL.on(E.Let)
def _hl_let(e, tr):
    value = tr.expr(e.value)
    saved_memo, saved_lets = tr.memo, tr.lets
    tr.memo, tr.lets = {}, dict(tr.lets, **{e.name: value})
    try:
        return tr.expr(e.body)
    finally:
        tr.memo, tr.lets = saved_memo, saved_lets


def translate(pipeline: Pipeline) -> HalidePipeline:
    """The Halide version of ``pipeline`` (fresh Halide objects each call)."""
    if not isinstance(pipeline, Pipeline):
        raise TilesolveError(f"translate() needs a Pipeline, got {type(pipeline).__name__}")
    for name, t in [(n, i.type) for n, i in pipeline.images.items()] + [
            (o.name, o.type) for o in pipeline.outputs]:
        if t == T.uint64:
            raise TilesolveError(f"{name} is uint64: Halide's Python bindings make no uint64 "
                                 "buffers, so the bridge cannot pass it (uint64 inside the "
                                 "pipeline is fine)")
    return HalidePipeline(pipeline)._build()


@contextlib.contextmanager
def native_stdout_to_stderr():
    """Send what Halide's C++ prints on stdout (warnings) to stderr meanwhile,
    so it never mixes with a table printed on stdout."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):   # no real fd 1 (e.g. captured)
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 1)
        os.close(saved)


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------
_CONST_MAKERS = {"bool": None, "uint8": "u8", "uint16": "u16", "uint32": "u32", "int8": "i8",
                 "int16": "i16", "int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64"}


class _ExprTranslator:
    """Expr -> Halide Expr, memoized on node identity (the DAG stays a DAG)."""

    def __init__(self, hp: HalidePipeline):
        self.hp = hp
        self.hl = hp.hl
        self.memo: dict = {}
        self.lets: dict = {}

    def expr(self, e):
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._node(e)
        self.memo[id(e)] = (e, r)     # inside a Let: the memo of that scope
        return r

    def _node(self, e):
        if isinstance(e, (E.Var, E.RVar, E.Param)) and e.name in self.lets:
            return self.lets[e.name]
        return _HL(e, self)

    def as_expr(self, v):
        """A Halide Expr of a FuncRef/Var/RVar/Param (an Expr is returned as is)."""
        return v if isinstance(v, self.hl.Expr) else self.hl.Expr(v)

    def const(self, t, value):
        hl = self.hl
        if t.is_bool():
            return hl.Expr(bool(value))
        if t.is_float() and t.bits == 16:    # no f16 maker: the float16 bits, reinterpreted
            with np.errstate(over="ignore"):
                bits = int(np.float16(value).view(np.uint16))
            return hl.reinterpret(hl.Float(16), hl.u16(bits))
        return getattr(hl, _CONST_MAKERS[str(t)])(value)

    def binop(self, op, a, b):
        hl = self.hl
        if op != "mod" and a.type() == hl.Float(16):     # see _widened
            r = ops.impl("halide", op)(hl, hl.cast(hl.Float(32), a), hl.cast(hl.Float(32), b))
            return r if r.type().is_bool() else hl.cast(hl.Float(16), r)
        return ops.impl("halide", op)(hl, a, b)

    def intrinsic(self, e):
        hl = self.hl
        args = [self.expr(a) for a in e.args]
        t = e.type
        if t == T.float16 and e.name != "reinterpret":      # see _widened
            args, t = [hl.cast(hl.Float(32), a) for a in args], T.float32
        r = ops.impl("halide", e.name)(hl, t, *args)
        return r if r.type() == hl_type(e.type) else hl.cast(hl_type(e.type), r)

    def rdom(self, rd):
        """The Halide RDom of our RDom ``rd`` (built on first use, with its predicates)."""
        h = self.hp.rdoms.get(id(rd))
        if h is not None:
            return h[1]
        hl = self.hl
        ranges = [hl.Range(self.expr(m), self.expr(x)) for m, x in zip(rd.mins, rd.extents)]
        h = hl.RDom(ranges, self.hp._names.fresh(rd.name))
        self.hp.rdoms[id(rd)] = (rd, h)
        for p in rd.predicates:
            h.where(self.expr(p))
        return h


# _widened: float16 ops are given to Halide as float32 ops on the widened operands, their
# results cast back to float16 (the op table's semantics, rounded once): Halide's own
# float16 math is not IEEE where strict_float would make it so (its float16 sqrt(-1) is
# -inf, sqrt(NaN) inf).
def _hl_mod(hl, a, b):
    """``a % b``; on float16, ``a - b*floor(a/b)`` spelled out in float32 with each op's
    result rounded to float16, as the op table's rule does (Halide's own float16 ``%``
    rounds once, and its float16 ops are not bound by strict_float: ``inf % inf`` came out
    inf, not NaN)."""
    if a.type() == hl.Float(16):
        f16, f32 = hl.Float(16), hl.Float(32)
        wa, wb = hl.cast(f32, a), hl.cast(f32, b)
        q = hl.cast(f32, hl.cast(f16, wa / wb))
        p = hl.cast(f32, hl.cast(f16, wb * hl.floor(q)))
        return hl.cast(f16, wa - p)
    return a % b


def _f64_to_f16(hl, v):
    """A float64 Halide Expr rounded to float16 once, through float32 rounded to odd (see
    backend/cpu/half.py): Halide's JIT narrows float64 to float16 with a call to
    ``__truncdfhf2``, which a Python process need not have."""
    r = hl.cast(hl.Float(32), v)
    back = hl.cast(hl.Float(64), r)
    inexact = (back != v) & (v == v)
    bits = hl.reinterpret(hl.UInt(32), r)
    toward_zero = hl.select(hl.abs(back) > hl.abs(v), bits - 1, bits)
    odd = hl.select(inexact, toward_zero | hl.u32(1), bits)
    return hl.cast(hl.Float(16), hl.reinterpret(hl.Float(32), odd))


# -- the op table's Halide spellings: rule(hl, *operands) (Halide's own semantics agree:
# Euclidean integer division, IEEE floats) --------------------------------------------
for _name, _fn in (("add", lambda hl, a, b: a + b), ("sub", lambda hl, a, b: a - b),
                   ("mul", lambda hl, a, b: a * b), ("div", lambda hl, a, b: a / b),
                   ("mod", lambda hl, a, b: _hl_mod(hl, a, b)),
                   ("min", lambda hl, a, b: hl.min(a, b)),
                   ("max", lambda hl, a, b: hl.max(a, b)), ("eq", lambda hl, a, b: a == b),
                   ("ne", lambda hl, a, b: a != b), ("lt", lambda hl, a, b: a < b),
                   ("le", lambda hl, a, b: a <= b), ("gt", lambda hl, a, b: a > b),
                   ("ge", lambda hl, a, b: a >= b), ("and", lambda hl, a, b: a & b),
                   ("or", lambda hl, a, b: a | b)):
    ops.register("halide", _name)(_fn)


for _name, _fn in (("bitand", lambda hl, a, b: a & b), ("bitor", lambda hl, a, b: a | b),
                   ("bitxor", lambda hl, a, b: a ^ b)):
    ops.register("halide", _name)(_fn)


def _hl_shift_rule(left: bool):
    """Halide shifts by an unsigned amount here; a negative amount of ours shifts the
    other way and an amount of the width or more shifts every bit out (undefined in
    Halide), so both are spelled out as the op table defines them."""
    def rule(hl, a, b):
        t = a.type()
        bits = t.bits()
        mag = hl.select(b < 0, -b, b) if t.is_int() else b
        mag_u = hl.cast(hl.UInt(bits), mag)
        wide = mag_u >= bits
        fill = hl.select(a < 0, hl.cast(t, -1), hl.cast(t, 0)) if t.is_int() else hl.cast(t, 0)
        safe = hl.cast(hl.UInt(bits), hl.select(wide, hl.cast(t, 0), mag))
        up = hl.select(wide, hl.cast(t, 0), a << safe)
        down = hl.select(wide, fill, a >> safe)
        if not t.is_int():
            return up if left else down
        neg = b < 0
        return hl.select(neg, down, up) if left else hl.select(neg, up, down)
    return rule


ops.register("halide", "shl")(_hl_shift_rule(True))
ops.register("halide", "shr")(_hl_shift_rule(False))


for _name in ("sqrt", "exp", "log", "sin", "cos", "tan", "floor", "ceil", "round", "pow",
              "atan2", "atan", "asin", "acos", "sinh", "cosh", "tanh", "asinh", "acosh",
              "atanh", "trunc"):
    ops.register("halide", _name)(lambda hl, t, *args, _n=_name: getattr(hl, _n)(*args))


ops.register("halide", "reinterpret")(lambda hl, t, a: hl.reinterpret(hl_type(t), a))


@ops.register("halide", "abs")
def _hl_abs(hl, t, a):
    if t.is_uint() or t.is_bool():
        return a
    r = hl.abs(a)
    return r if t.is_float() else hl.cast(hl_type(t), r)
