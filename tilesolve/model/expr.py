"""Immutable, hash-consed expression nodes.

Equal nodes are the same object (hash-consing), so structural equality is
identity, hashing is ``id``-based and CSE is free.  Operators build nodes:
``a == b`` builds an ``EQ`` node, whose truth value is ``a is b`` (structural
equality), so Exprs still work as dict keys and set members.

Every node has a ``.type``.  A Python number adopts the type of the other
operand (see ``types.py``).  Node kinds:

Const, Var, RVar, Param, BufferExtent, Cast, BinOp, Not, Select, Call,
Intrinsic, Let.  Lowering adds its own (``Load``) by subclassing ``Expr``.
"""
from __future__ import annotations

import weakref
from typing import Any

from ..errors import PipelineError
from . import ops as _ops
from . import types as T
from .types import Type, match_types

# the op table (ops.py) declares every operator and math function; these are its views
ARITH_OPS = _ops.of_kind("arith")
CMP_OPS = _ops.of_kind("cmp")
BOOL_OPS = _ops.of_kind("logic")
BIT_OPS = _ops.of_kind("bits")
OP_SYMBOL = {n: o.symbol for n, o in _ops.OPS.items() if o.symbol is not None}
MATH_FUNCS = _ops.of_kind("math")

_INTERN: "weakref.WeakValueDictionary[tuple, Expr]" = weakref.WeakValueDictionary()
_PARAM_ESTIMATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _key_part(v):
    """The intern-table key of one field.

    Children are keyed by ``id``: a parent holds its children alive, and its
    table entry dies with it, so an id is never reused while its key exists.
    This also keeps Expr.__eq__ (which builds nodes) out of dict lookups.
    """
    if isinstance(v, (Expr, )) or (not isinstance(v, (str, int, float, tuple, Type))
                                   and v is not None):
        return ("o", id(v))
    if isinstance(v, float):
        # floats and ints compare equal in Python (1 == 1.0), and so do 0.0 and
        # -0.0 (1 / -0.0 is -inf): key floats by their exact bits
        return ("f", v.hex())
    if isinstance(v, tuple):
        return tuple(_key_part(x) for x in v)
    return v


class Expr:
    """Base class of every expression node; gives operator overloading."""

    __slots__ = ("__weakref__",)
    _fields: tuple[str, ...] = ()

    def __new__(cls, *args):
        key = (cls,) + tuple(_key_part(a) for a in args)
        node = _INTERN.get(key)
        if node is None:
            node = object.__new__(cls)
            for name, val in zip(cls._fields, args):
                object.__setattr__(node, name, val)
            node._init()
            _INTERN[key] = node
        return node

    def _init(self) -> None:  # compute derived fields (type)
        pass

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} nodes are immutable")

    def __reduce__(self):
        return (type(self), tuple(getattr(self, f) for f in self._fields))

    __hash__ = object.__hash__

    def children(self) -> tuple["Expr", ...]:
        return tuple(getattr(self, f) for f in self._fields
                     if isinstance(getattr(self, f), Expr))

    # -- arithmetic ---------------------------------------------------------
    def __add__(self, o): return binop("add", self, o)
    def __radd__(self, o): return binop("add", o, self)
    def __sub__(self, o): return binop("sub", self, o)
    def __rsub__(self, o): return binop("sub", o, self)
    def __mul__(self, o): return binop("mul", self, o)
    def __rmul__(self, o): return binop("mul", o, self)
    def __truediv__(self, o): return binop("div", self, o)
    def __rtruediv__(self, o): return binop("div", o, self)
    def __floordiv__(self, o): return _floordiv(self, o)
    def __rfloordiv__(self, o): return _floordiv(o, self)
    def __mod__(self, o): return binop("mod", self, o)
    def __rmod__(self, o): return binop("mod", o, self)
    def __pow__(self, o): return pow_(self, o)
    def __rpow__(self, o): return pow_(o, self)
    def __neg__(self): return binop("sub", 0, self)
    def __pos__(self): return self

    # -- comparisons and booleans ---------------------------------------------
    def __eq__(self, o): return binop("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return binop("ne", self, o)  # type: ignore[override]
    def __lt__(self, o): return binop("lt", self, o)
    def __le__(self, o): return binop("le", self, o)
    def __gt__(self, o): return binop("gt", self, o)
    def __ge__(self, o): return binop("ge", self, o)
    def __and__(self, o): return bitwise("bitand", self, o)
    def __rand__(self, o): return bitwise("bitand", o, self)
    def __or__(self, o): return bitwise("bitor", self, o)
    def __ror__(self, o): return bitwise("bitor", o, self)
    def __xor__(self, o): return bitwise("bitxor", self, o)
    def __rxor__(self, o): return bitwise("bitxor", o, self)
    def __lshift__(self, o): return shift("shl", self, o)
    def __rlshift__(self, o): return shift("shl", o, self)
    def __rshift__(self, o): return shift("shr", self, o)
    def __rrshift__(self, o): return shift("shr", o, self)
    def __invert__(self): return invert(self)

    def __bool__(self):
        raise PipelineError(
            f"the truth value of the expression {self} is not known while building a "
            "pipeline; use ts.select(cond, a, b) instead of if/and/or/not, and & | ^ ~ "
            "for boolean logic")

    def __repr__(self) -> str:
        from .printer import expr_str
        return expr_str(self)

    __str__ = __repr__


class Const(Expr):
    __slots__ = ("type", "value")
    _fields = ("type", "value")

    def __new__(cls, type: Type, value):
        if type.is_float():
            value = float(value)
        elif type.is_bool():
            value = bool(value)
        else:
            value = type.wrap(int(value))
        return Expr.__new__(cls, type, value)


class Var(Expr):
    """A pure dimension variable; Vars of one name are the same Var."""

    __slots__ = ("name", "type")
    _fields = ("name",)

    def __new__(cls, name: str = None):
        if name is None:
            name = _fresh_name("v")
        if not isinstance(name, str) or not name:
            raise PipelineError(f"a Var needs a non-empty name, got {name!r}")
        return Expr.__new__(cls, name)

    def _init(self):
        object.__setattr__(self, "type", T.int32)


class RVar(Expr):
    """One dimension of an RDom (``r.x``)."""

    __slots__ = ("rdom", "index", "type")
    _fields = ("rdom", "index")

    def _init(self):
        object.__setattr__(self, "type", T.int32)

    @property
    def name(self) -> str:
        return f"{self.rdom.name}.{'xyzw'[self.index] if self.index < 4 else self.index}"


def param_value(t: Type, name: str, v):
    """A Param value (default or estimate) as a number of its type; PipelineError if it
    is not one."""
    import math

    import numpy as np
    if t.is_float():
        v = float(v)
        with np.errstate(over="ignore"):
            narrowed = np.float64(v).astype(t.dtype)
        if math.isfinite(v) and not np.isfinite(narrowed):
            raise PipelineError(f"Param {name}: default {v!r} is out of the range of {t}")
        return v
    if isinstance(v, float) and not v.is_integer():       # also inf and nan
        raise PipelineError(f"Param {name}: default {v!r} is not an integer, but {name} is {t}")
    v = int(v)
    if not t.is_bool() and not t.can_represent(v):
        raise PipelineError(f"Param {name}: default {v} does not fit in {t}")
    return v


class Param(Expr):
    """A scalar parameter given at realize() time: ``Param(ts.float32, "k", 1.0)``.

    The default is part of the node's identity: two Params with the same name
    and different defaults are different nodes (a Pipeline rejects using both).
    """

    __slots__ = ("type", "name", "default")
    _fields = ("type", "name", "default")

    def __new__(cls, type: Type, name: str, default=None):
        if not isinstance(type, Type):
            raise PipelineError(f"Param {name!r}: first argument must be a ts type, got {type!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise PipelineError(f"Param name must be an identifier, got {name!r}")
        if default is not None:
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                if hasattr(default, "item"):
                    default = default.item()
                else:
                    raise PipelineError(f"Param {name}: default must be a number, got {default!r}")
            default = param_value(type, name, default)
        return Expr.__new__(cls, type, name, default)

    def set_estimate(self, value) -> "Param":
        """The value the scheduler assumes for this Param (a default serves as one too;
        ``estimates={name: value}`` in ``solve_schedule`` overrides both).  Not a value
        at run time: a Param with no default must still be passed to ``realize``."""
        _PARAM_ESTIMATES[self] = param_value(self.type, self.name, value)
        return self

    @property
    def estimate(self):
        """The estimate set by ``set_estimate``, else the default (None without both)."""
        return _PARAM_ESTIMATES.get(self, self.default)


class BufferExtent(Expr):
    """The run-time extent of dimension ``dim`` of input ``image`` (a name)."""

    __slots__ = ("image", "dim", "type")
    _fields = ("image", "dim")

    def _init(self):
        object.__setattr__(self, "type", T.int32)


class Cast(Expr):
    __slots__ = ("type", "value")
    _fields = ("type", "value")


class BinOp(Expr):
    __slots__ = ("op", "a", "b", "type")
    _fields = ("op", "a", "b")

    def _init(self):
        object.__setattr__(self, "type", _ops.OPS[self.op].result_type(self.a.type))

    def __bool__(self):
        # structural equality in boolean context (dict keys, ``in`` tests)
        if self.op == "eq":
            return self.a is self.b
        if self.op == "ne":
            return self.a is not self.b
        return Expr.__bool__(self)


class Not(Expr):
    __slots__ = ("a", "type")
    _fields = ("a",)

    def _init(self):
        object.__setattr__(self, "type", T.bool_)


class Select(Expr):
    __slots__ = ("cond", "true_value", "false_value", "type")
    _fields = ("cond", "true_value", "false_value")

    def _init(self):
        object.__setattr__(self, "type", self.true_value.type)


class Call(Expr):
    """A call to a Func or an ImageParam (``target``), one Expr per dimension."""

    __slots__ = ("target", "args", "type")
    _fields = ("target", "args")

    def _init(self):
        object.__setattr__(self, "type", self.target.type)

    @property
    def name(self) -> str:
        return self.target.name


class Intrinsic(Expr):
    """A math function or other built-in: ``name`` in MATH_FUNCS."""

    __slots__ = ("name", "args", "type")
    _fields = ("name", "args", "type")


class Let(Expr):
    __slots__ = ("name", "value", "body", "type")
    _fields = ("name", "value", "body")

    def _init(self):
        object.__setattr__(self, "type", self.body.type)


# Every kind of node of the language, for the passes' tables (``model/dispatch.py``).
NODE_KINDS = (Const, Var, RVar, Param, BufferExtent, Cast, BinOp, Not, Select, Call,
              Intrinsic, Let)


# ---------------------------------------------------------------------------
# Construction helpers with Halide's typing rules
# ---------------------------------------------------------------------------
_counter = [0]


def _fresh_name(prefix: str) -> str:
    _counter[0] += 1
    return f"{prefix}{_counter[0]}"


def as_expr(v, like: Type | None = None) -> Expr:
    """Turn a Python number (or Expr) into an Expr; numbers adopt ``like``."""
    if isinstance(v, Expr):
        return v
    if hasattr(v, "_as_expr"):           # e.g. a FuncRef
        return v._as_expr()
    if hasattr(v, "rvars") and hasattr(v, "predicates"):   # an RDom: one-dimensional is r.x
        if len(v.mins) == 1:
            return v[0]
        raise PipelineError(f"RDom {v.name} has {len(v.mins)} dimensions; only a "
                            "one-dimensional RDom stands for its variable (use r.x, r.y, ...)")
    if isinstance(v, bool):
        return Const(T.bool_, v)
    if isinstance(v, int):
        if like is None or like.is_bool():
            like = T.int32
        if like.is_integral() and not like.can_represent(v):
            raise PipelineError(
                f"integer constant {v} does not fit in {like}; cast one operand explicitly")
        return Const(like, v)
    if isinstance(v, float):
        if like is None or not like.is_float():
            like = T.float32
        return Const(like, v)
    if hasattr(v, "dtype") and getattr(v, "shape", None) == ():   # numpy scalar
        t = T.type_of_dtype(v.dtype)
        return Const(t, v.item())
    raise PipelineError(f"cannot use {v!r} (a {type(v).__name__}) in an expression")


def _coerce_pair(a, b) -> tuple[Expr, Expr]:
    if isinstance(a, Expr) or hasattr(a, "_as_expr"):
        a = as_expr(a)
        b = as_expr(b, a.type)
    elif isinstance(b, Expr) or hasattr(b, "_as_expr"):
        b = as_expr(b)
        a = as_expr(a, b.type)
    else:
        a, b = as_expr(a), as_expr(b)
    t = match_types(a.type, b.type)
    return cast(t, a), cast(t, b)


def binop(op: str, a, b) -> Expr:
    a, b = _coerce_pair(a, b)
    if op in BOOL_OPS:
        raise AssertionError("use logical()")
    if a.type.is_bool() and op in ("add", "sub", "mul", "div", "mod"):
        raise PipelineError(f"arithmetic '{OP_SYMBOL[op]}' on bool operands ({a}, {b}); cast first")
    return BinOp(op, a, b)


def logical(op: str, a, b) -> Expr:
    a, b = as_expr(a), as_expr(b)
    for e in (a, b):
        if not e.type.is_bool():
            raise PipelineError(
                f"'{OP_SYMBOL[op]}' needs boolean operands, got {e} of type {e.type}; "
                "compare first (e.g. x > 0)")
    return BinOp(op, a, b)


_LOGICAL = {"bitand": "and", "bitor": "or"}


def _is_bool(v) -> bool:
    return isinstance(v, bool) or ((isinstance(v, Expr) or hasattr(v, "_as_expr"))
                                   and as_expr(v).type.is_bool())


def _bit_error(op: str, e: Expr) -> PipelineError:
    return PipelineError(
        f"'{OP_SYMBOL[op]}' needs integer (or, for & | ^, boolean) operands, got {e} of "
        f"type {e.type}; cast first")


def bitwise(op: str, a, b) -> Expr:
    """``a & b``, ``a | b``, ``a ^ b``: on two bools the logical and, or and xor (``!=``);
    on integers the bit operation, in the operands' common type (``match_types``)."""
    if _is_bool(a) and _is_bool(b):
        if op == "bitxor":
            return binop("ne", a, b)
        return logical(_LOGICAL[op], a, b)
    if _is_bool(a) or _is_bool(b):
        p, n = (a, b) if _is_bool(a) else (b, a)
        p, n = as_expr(p), as_expr(n)
        raise PipelineError(
            f"'{OP_SYMBOL[op]}' mixes the boolean {p} with {n} of type {n.type}; compare "
            "first (e.g. x > 0) or cast the boolean")
    a, b = _coerce_pair(a, b)
    if not a.type.is_integral():
        raise _bit_error(op, a)
    return BinOp(op, a, b)


def shift(op: str, a, b) -> Expr:
    """``a << b`` / ``a >> b`` in the type of ``a`` (as in Halide): a number ``b`` adopts
    it, an Expr ``b`` is converted to it; a negative amount shifts the other way."""
    if not (isinstance(a, Expr) or hasattr(a, "_as_expr")):
        a = as_expr(a, as_expr(b).type)
    a = as_expr(a)
    if not a.type.is_integral():
        raise _bit_error(op, a)
    if isinstance(b, int) and not isinstance(b, bool) and b < 0:
        op, b = ("shr" if op == "shl" else "shl"), -b
    if isinstance(b, int) and not isinstance(b, bool) and not a.type.can_represent(b):
        b = a.type.bits               # every bit out, as the rule for wide amounts says
    b = as_expr(b, a.type)
    if not b.type.is_integral():
        raise _bit_error(op, b)
    return BinOp(op, a, cast(a.type, b))


def invert(e) -> Expr:
    """``~e``: logical not of a bool, bitwise complement of an integer."""
    e = as_expr(e)
    if e.type.is_bool():
        return Not(e)
    if not e.type.is_integral():
        raise PipelineError(f"'~' needs an integer or boolean operand, got {e} of type "
                            f"{e.type}")
    return BinOp("bitxor", e, Const(e.type, -1))


def _floordiv(a, b) -> Expr:
    q = binop("div", a, b)
    return Intrinsic("floor", (q,), q.type) if q.type.is_float() else q


def cast(t: Type, e) -> Expr:
    """Explicit conversion with the rules of types.py (integers wrap)."""
    if not isinstance(t, Type):
        raise PipelineError(f"cast needs a ts type first, got {t!r}")
    e = as_expr(e, t)
    if e.type == t:
        return e
    return Cast(t, e)


def saturating_cast(t: Type, e) -> Expr:
    """Convert, clamping to the target type's range first."""
    e = as_expr(e)
    if e.type == t or t.is_float():
        return cast(t, e)
    lo, hi = t.min_value(), t.max_value()
    src = e.type
    if src.is_float():
        return cast(t, clamp(e, float(lo), float(hi)))
    if src.is_bool():
        return cast(t, e)
    # integer -> integer: clamp in a type that holds both ranges
    lo = max(lo, src.min_value())
    hi = min(hi, src.max_value())
    return cast(t, max_(min_(e, Const(src, hi)), Const(src, lo)))


def select(cond, true_value, false_value) -> Expr:
    """``cond ? true_value : false_value`` (both branches are evaluated)."""
    cond = as_expr(cond)
    if not cond.type.is_bool():
        raise PipelineError(f"select condition {cond} has type {cond.type}, expected bool")
    tv, fv = true_value, false_value
    if isinstance(tv, Expr) or hasattr(tv, "_as_expr") or isinstance(fv, Expr) or hasattr(fv, "_as_expr"):
        if isinstance(tv, Expr) or hasattr(tv, "_as_expr"):
            tv = as_expr(tv)
            fv = as_expr(fv, tv.type)
        else:
            fv = as_expr(fv)
            tv = as_expr(tv, fv.type)
    else:
        tv, fv = as_expr(tv), as_expr(fv)
    if tv.type != fv.type:
        if isinstance(true_value, (int, float)) or isinstance(false_value, (int, float)):
            t = match_types(tv.type, fv.type)
            tv, fv = cast(t, tv), cast(t, fv)
        else:
            raise PipelineError(
                f"select: the branches have different types ({tv}: {tv.type}, "
                f"{fv}: {fv.type}); cast one of them")
    return Select(cond, tv, fv)


def min_(a, b) -> Expr:
    return binop("min", a, b)


def max_(a, b) -> Expr:
    return binop("max", a, b)


def clamp(e, lo, hi) -> Expr:
    """``min(max(e, lo), hi)``."""
    e = as_expr(e)
    return min_(max_(e, as_expr(lo, e.type)), as_expr(hi, e.type))


def abs_(e) -> Expr:
    """Absolute value; of a signed integer, in the unsigned type of its width (as in
    Halide: ``abs(int8(-128)) == uint8(128)``), else of the type of ``e``."""
    e = as_expr(e)
    a = Intrinsic("abs", (e,), e.type)
    return cast(T.Type("uint", e.type.bits), a) if e.type.is_int() else a


def _float_arg(e) -> Expr:
    e = as_expr(e)
    return e if e.type.is_float() else cast(T.float32, e)


def _math1(name):
    def f(e):
        e = _float_arg(e)
        return Intrinsic(name, (e,), e.type)
    f.__name__ = name
    f.__doc__ = f"{name}(e); integer arguments are converted to float32."
    return f


(sqrt, exp, log, sin, cos, tan, floor, ceil, trunc, atan, asin, acos, sinh, cosh, tanh, asinh,
 acosh, atanh) = (
    _math1(n) for n in ("sqrt", "exp", "log", "sin", "cos", "tan", "floor", "ceil", "trunc",
                        "atan", "asin", "acos", "sinh", "cosh", "tanh", "asinh", "acosh",
                        "atanh"))


def round_(e) -> Expr:
    """Round to nearest, ties to even (Halide's rule)."""
    e = _float_arg(e)
    return Intrinsic("round", (e,), e.type)


def pow_(a, b) -> Expr:
    a = _float_arg(a) if not isinstance(a, (int, float)) else a
    b = _float_arg(b) if not isinstance(b, (int, float)) else b
    a, b = _coerce_pair(a, b)
    if not a.type.is_float():
        a, b = cast(T.float32, a), cast(T.float32, b)
    return Intrinsic("pow", (a, b), a.type)


def atan2(a, b) -> Expr:
    a, b = _coerce_pair(a, b)
    if not a.type.is_float():
        a, b = cast(T.float32, a), cast(T.float32, b)
    return Intrinsic("atan2", (a, b), a.type)


def reinterpret(t: Type, e) -> Expr:
    """The bits of ``e`` read as type ``t`` of the same width (``ts.reinterpret(ts.uint32,
    f)`` gives a float32's bits); bool has no bit layout to reinterpret."""
    e = as_expr(e)
    if not isinstance(t, Type):
        raise PipelineError(f"reinterpret: the first argument must be a ts type, got {t!r}")
    if t.is_bool() or e.type.is_bool() or t.bits != e.type.bits:
        raise PipelineError(f"reinterpret({t}, {e}): {e.type} and {t} must be non-bool types "
                            "of the same width")
    return e if t == e.type else Intrinsic("reinterpret", (e,), t)


def is_const(e, value=None) -> bool:
    if not isinstance(e, Const):
        return False
    return value is None or e.value == value


Any  # re-exported for type hints elsewhere
