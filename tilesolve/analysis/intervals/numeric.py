"""Numeric interval arithmetic on endpoint pairs, with the semantics of types.py.

The fast path of the interval analysis and the bounds the simplifier keeps in
the same visit both use these functions, so the two never drift apart.  An
interval is a pair ``(lo, hi)`` of Python numbers where ``-inf``/``+inf`` mean
unbounded.  Every function takes the operation's ``Type`` and returns a pair
that contains every value the operation can produce (NaN aside: NaN lies in no
interval).

Integer rules (``fit``):
* a result that fits the type's range is exact;
* a finite result that does not fit wraps: when it spans less than 2**bits and
  both ends wrap to an ordered pair that pair is exact, else the type's range;
* int32/int64 intervals with an infinite end are index arithmetic: they are
  assumed not to overflow (Halide's rule) and stay unbounded.  Narrow types are
  always finite.

Float rules: float16 and float32 results are computed in float64 and rounded
outward to the type (sound because the roundings are monotone and float16 and
float32 values are float64 values; a float16 result past 65504 rounds to inf, and
the outward rounding keeps that); transcendental functions are widened by a few
float32 ulps because numpy's float32 versions (which float16 math goes through
before its one rounding to float16) are not correctly rounded.
"""
from __future__ import annotations

import math

import numpy as np

INF = math.inf
EVERYTHING = (-INF, INF)
_INDEX_BITS = (32, 64)


# -- helpers -------------------------------------------------------------------
def type_range(t) -> tuple:
    """The interval of every value of type ``t`` (floats: unbounded)."""
    if t.is_float():
        return EVERYTHING
    return (t.min_value(), t.max_value())


def _round_to(t, v: float, direction: float) -> float:
    """Round ``v`` to the float type ``t`` (16 or 32 bits) toward ``direction`` (-inf or
    +inf); past the type's largest finite value that is inf (or the largest value, when
    rounding back toward zero)."""
    if v != v or v in (INF, -INF):
        return v
    kind = t.dtype.type
    with np.errstate(all="ignore"):
        f = kind(v)
        if (direction < 0 and float(f) > v) or (direction > 0 and float(f) < v):
            f = np.nextafter(f, kind(direction))
    return float(f)


def is_index(t) -> bool:
    return t.code == "int" and t.bits in _INDEX_BITS


def fit(t, lo, hi) -> tuple:
    """Make ``(lo, hi)`` (exact over the integers/reals) sound for type ``t``."""
    if t.code == "float":
        if lo != lo or hi != hi:
            return EVERYTHING
        if t.bits < 64:
            return _round_to(t, float(lo), -INF), _round_to(t, float(hi), INF)
        return float(lo), float(hi)
    if t.code == "bool":
        return (0 if lo <= 0 else 1), (1 if hi >= 1 else 0)
    tmin, tmax = t.min_value(), t.max_value()
    if lo == -INF or hi == INF:
        if is_index(t):
            lo = lo if lo == -INF else min(max(int(lo), tmin), tmax)
            hi = hi if hi == INF else max(min(int(hi), tmax), tmin)
            return lo, hi
        return tmin, tmax
    lo, hi = int(lo), int(hi)
    if tmin <= lo and hi <= tmax:
        return lo, hi
    if hi - lo < (1 << t.bits):
        wl, wh = t.wrap(lo), t.wrap(hi)
        if wl <= wh:
            return wl, wh
    return tmin, tmax


def _widen(t, lo, hi, ulps_rel: float) -> tuple:
    """Widen a float interval by a relative amount (for inexact libm results)."""
    tiny = float(np.finfo(t.dtype).smallest_subnormal)
    if lo not in (INF, -INF):
        lo = lo - abs(lo) * ulps_rel - tiny
    if hi not in (INF, -INF):
        hi = hi + abs(hi) * ulps_rel + tiny
    return fit(t, lo, hi)


def _mul(a, b):
    """Product of two extended numbers with 0 * inf = 0."""
    if a == 0 or b == 0:
        return 0
    return a * b


# -- arithmetic ----------------------------------------------------------------
def _plus(x, y, unbounded):
    s = x + y
    return unbounded if s != s else s       # inf + -inf: unbounded


def add(t, a, b):
    return fit(t, _plus(a[0], b[0], -INF), _plus(a[1], b[1], INF))


def neg(t, a):
    return fit(t, -a[1], -a[0])


def sub(t, a, b):
    return add(t, a, (-b[1], -b[0]))


def mul(t, a, b):
    ps = (_mul(a[0], b[0]), _mul(a[0], b[1]), _mul(a[1], b[0]), _mul(a[1], b[1]))
    return fit(t, min(ps), max(ps))


def _floordiv_pos(x, y):
    """floor(x / y) for y > 0 (extended)."""
    if x in (INF, -INF):
        return x
    if y == INF:
        return 0 if x >= 0 else -1
    return x // y


def _div_pos(a, c, d):
    qs = [_floordiv_pos(x, y) for x in a for y in (c, d)]
    return min(qs), max(qs)


def div(t, a, b):
    """Division with Euclidean rounding for integers (x / 0 == 0)."""
    if t.is_float():
        return _fdiv(t, a, b)
    parts = []
    lo_b, hi_b = b
    if hi_b >= 1:
        parts.append(_div_pos(a, max(lo_b, 1), hi_b))
    if lo_b <= -1:
        # x / y == -floor(x / |y|) for y < 0
        q = _div_pos(a, -min(hi_b, -1), -lo_b)
        parts.append((-q[1], -q[0]))
    if lo_b <= 0 <= hi_b:
        parts.append((0, 0))
    if not parts:            # an empty divisor interval: nothing is computed
        return fit(t, 0, 0)
    return fit(t, min(p[0] for p in parts), max(p[1] for p in parts))


def _fdiv(t, a, b):
    if b[0] > 0 or b[1] < 0:
        qs = []
        for x in a:
            for y in b:
                if x in (INF, -INF) and y in (INF, -INF):
                    qs.append(INF if (x > 0) == (y > 0) else -INF)
                elif y in (INF, -INF):
                    qs.append(0.0)
                else:
                    qs.append(x / y)
        return fit(t, min(qs), max(qs))
    return EVERYTHING


def mod(t, a, b):
    """Euclidean remainder: integers in [0, |b| - 1], x % 0 == 0."""
    if t.is_float():
        return _fmod(t, a, b)
    m = max(abs(b[0]), abs(b[1]))
    if m == 0:
        return (0, 0)
    lo, hi = 0, m - 1
    if b[0] == b[1] and a[0] > -INF and a[1] < INF:
        k = abs(b[0])
        if a[0] // k == a[1] // k:
            return fit(t, a[0] % k, a[1] % k)
    if a[0] >= 0:
        hi = min(hi, a[1])
        has0 = b[0] <= 0 <= b[1]
        smallest = b[0] if b[0] > 0 else (-b[1] if b[1] < 0 else 1)
        if a[1] < smallest:          # x % y == x for 0 <= x < |y| (and x % 0 == 0)
            return fit(t, 0 if has0 else a[0], a[1])
    return fit(t, lo, hi)


def _fmod(t, a, b):
    """x - y * floor(x / y): in [0, y] for y > 0, up to rounding error."""
    big = max(abs(a[0]), abs(a[1]), abs(b[0]), abs(b[1]))
    smallest_b = 0.0 if b[0] <= 0 <= b[1] else min(abs(b[0]), abs(b[1]))
    limit = float(np.finfo(t.dtype).max) / 4
    if big >= limit or smallest_b == 0 or max(abs(a[0]), abs(a[1])) / smallest_b >= limit:
        return EVERYTHING       # x / y (or y * floor(x / y)) may overflow: +-inf or NaN
    eps = big * {16: 2.0 ** -8, 32: 2.0 ** -20}.get(t.bits, 2.0 ** -49)
    return fit(t, min(b[0], 0.0) - eps, max(b[1], 0.0) + eps)


def min_(t, a, b):
    return fit(t, min(a[0], b[0]), min(a[1], b[1]))


def max_(t, a, b):
    return fit(t, max(a[0], b[0]), max(a[1], b[1]))


# -- constants -----------------------------------------------------------------------
def const(t, v) -> tuple:
    """The interval of a constant of type ``t``: a float16 or float32 Const keeps a
    float64, its value is the nearest value of ``t`` (inf past its range); NaN lies in no
    interval (everything)."""
    if isinstance(v, float):
        if v != v:
            return EVERYTHING
        if t.bits < 64:
            with np.errstate(over="ignore"):
                v = float(t.dtype.type(v))
        return (v, v)
    v = int(v)
    return (v, v)


# -- comparisons and logic (results are 0/1) -------------------------------------
def compare(op, a, b):
    """Bounds of ``a op b`` as (0|1, 0|1)."""
    if op == "lt":
        return (1, 1) if a[1] < b[0] else (0, 0) if a[0] >= b[1] else (0, 1)
    if op == "le":
        return (1, 1) if a[1] <= b[0] else (0, 0) if a[0] > b[1] else (0, 1)
    if op == "gt":
        return compare("lt", b, a)
    if op == "ge":
        return compare("le", b, a)
    if op in ("eq", "ne"):
        if a[0] == a[1] == b[0] == b[1]:
            r = 1
        elif a[1] < b[0] or b[1] < a[0]:
            r = 0
        else:
            return (0, 1)
        r = r if op == "eq" else 1 - r
        return (r, r)
    raise AssertionError(op)


def logic(op, a, b):
    if op == "and":
        return (min(a[0], b[0]), min(a[1], b[1]))
    return (max(a[0], b[0]), max(a[1], b[1]))


def not_(a):
    return (1 - a[1], 1 - a[0])


# -- casts ---------------------------------------------------------------------
def cast(src, dst, a):
    lo, hi = a
    if dst.is_bool():
        if lo > 0 or hi < 0:
            return (1, 1)
        if lo == hi == 0:
            return (0, 0)
        return (0, 1)
    if src.is_float() and not dst.is_float():
        tmin, tmax = dst.min_value(), dst.max_value()
        if lo > tmin - 1 and hi < tmax + 1:
            return (math.trunc(lo), math.trunc(hi))
        return (tmin, tmax)
    if dst.is_float():
        return fit(dst, float(lo), float(hi))
    return fit(dst, lo, hi)


# -- math intrinsics -----------------------------------------------------------
def bits(op, t, a, b):
    """Bounds of a bit operation (``bitand bitor bitxor shl shr``, see model/ops.py) on
    integer intervals: exact bit facts where the operands' signs allow, else the type's
    range."""
    tmin, tmax = type_range(t)
    a = (int(max(a[0], tmin)), int(min(a[1], tmax)))
    b = (int(max(b[0], tmin)), int(min(b[1], tmax)))
    if op == "bitand":
        lo = 0 if a[0] >= 0 or b[0] >= 0 else tmin
        hi = min(a[1], b[1]) if a[0] >= 0 and b[0] >= 0 else max(a[1], b[1])
        hi = a[1] if a[0] >= 0 and b[0] < 0 else (b[1] if b[0] >= 0 and a[0] < 0 else hi)
        return lo, hi
    top = (1 << max(abs(a[1]), abs(b[1])).bit_length()) - 1
    if op == "bitor":
        if a[0] >= 0 and b[0] >= 0:
            return max(a[0], b[0]), top
        return min(a[0], b[0]), max(top, -1)
    if op == "bitxor":
        return (0, top) if a[0] >= 0 and b[0] >= 0 else (tmin, tmax)
    if b[0] < 0 or (op == "shl" and b[1] >= t.bits):
        return tmin, tmax
    s = (b[0], min(b[1], t.bits))
    if op == "shl":
        vs = [x << k for x in a for k in s]
    else:
        vs = [x >> k for x in a for k in s]
    return fit(t, min(vs), max(vs))


def _rel(t):
    """Relative widening of a transcendental result: a few ulps of float32, where float32
    and float16 are computed (float16 is then rounded outward by ``fit``)."""
    return 2.0 ** -50 if t.bits == 64 else 2.0 ** -20


def _call(fn, *xs):
    try:
        return fn(*xs)
    except OverflowError:
        return INF
    except (ValueError, ZeroDivisionError):
        return math.nan


def intrinsic(name, t, args):
    """Bounds of a math intrinsic of type ``t`` applied to argument intervals."""
    a = args[0]
    lo, hi = a
    if name == "abs":
        if lo >= 0:
            r = (lo, hi)
        elif hi <= 0:
            r = (-hi, -lo)
        else:
            r = (0, max(-lo, hi))
        return fit(t, *r)
    if not t.is_float():
        return type_range(t)
    if name in ("floor", "ceil", "round", "trunc"):
        fn = {"floor": math.floor, "ceil": math.ceil, "round": round, "trunc": math.trunc}[name]
        g = (lambda v: v if v in (INF, -INF) else float(fn(v)))
        return fit(t, g(lo), g(hi))
    if name == "sqrt":
        if hi < 0:
            return EVERYTHING
        return fit(t, math.sqrt(max(lo, 0.0)), math.sqrt(hi) if hi < INF else INF)
    if name == "exp":
        r = _widen(t, _call(math.exp, lo) if lo > -INF else 0.0,
                   _call(math.exp, hi) if hi < INF else INF, _rel(t))
        return (max(r[0], 0.0), r[1])
    if name == "log":
        if hi < 0:
            return EVERYTHING
        l2 = -INF if lo <= 0 else math.log(lo)
        h2 = -INF if hi == 0 else (INF if hi == INF else math.log(hi))
        return _widen(t, l2, h2, _rel(t))
    if name in ("sin", "cos", "tanh"):
        return fit(t, -1.0, 1.0)
    if name in ("atan", "asin"):
        return _widen(t, -math.pi / 2, math.pi / 2, _rel(t))
    if name == "acos":
        return _widen(t, 0.0, math.pi, _rel(t))

    if name == "atan2":
        return _widen(t, -math.pi, math.pi, _rel(t))
    if name == "pow":
        b = args[1]
        if lo < 0 or (lo == 0 and math.copysign(1.0, lo) < 0):
            return EVERYTHING       # pow(-0.0, -1.0) is -inf
        vs = [_call(math.pow, x, y) for x in (lo, hi) for y in b]
        vs = [INF if v != v else v for v in vs]   # 0 ** -y: ZeroDivision -> inf
        return _widen(t, max(min(vs), 0.0), max(vs), _rel(t))
    return EVERYTHING


# -- the op table's interval rules: rule(t, *operand_intervals), t the operands' type --
def _register():
    from ...model import ops
    for name, fn in (("add", add), ("sub", sub), ("mul", mul), ("div", div), ("mod", mod),
                     ("min", min_), ("max", max_)):
        ops.register("interval", name)(fn)
    for name in ops.of_kind("bits"):
        ops.register("interval", name)(lambda t, a, b, _op=name: bits(_op, t, a, b))
    for name in ops.of_kind("cmp"):
        ops.register("interval", name)(lambda t, a, b, _op=name: compare(_op, a, b))
    for name in ops.of_kind("logic"):
        ops.register("interval", name)(lambda t, a, b, _op=name: logic(_op, a, b))
    for name in ops.of_kind("math"):
        ops.register("interval", name)(lambda t, *args, _n=name: intrinsic(_n, t, list(args)))
    ops.register("interval", "reinterpret")(lambda t, a: type_range(t))    # t: the result


_register()


def node_bounds(e, operands):
    """Bounds of operator node ``e`` (BinOp, Not, Select, Cast or Intrinsic) from the
    bounds of its operands, in order: the one place the node kinds meet the rules."""
    from ...model import expr as E
    cls = type(e)
    if cls is E.BinOp:
        return op_rule(e.op)(e.a.type, *operands)
    if cls is E.Intrinsic:
        return op_rule(e.name)(e.type, *operands)
    if cls is E.Cast:
        return cast(e.value.type, e.type, operands[0])
    if cls is E.Not:
        return not_(operands[0])
    if cls is E.Select:
        c, a, b = operands
        if c[0] == c[1]:
            return a if c[0] else b
        return (min(a[0], b[0]), max(a[1], b[1]))
    raise TypeError(f"node_bounds: {cls.__name__} is not an operator node")


def op_rule(name: str):
    """The interval rule of op ``name``: ``rule(t, *intervals)`` (see model/ops.py)."""
    from ...model import ops
    return ops.impl("interval", name)
