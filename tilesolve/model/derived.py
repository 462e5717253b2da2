"""Halide's functions that are compositions of the op table's operations.

Each builds plain Exprs from the language's own nodes (select, casts, the op table's
operators), so no later phase sees anything new and every backend already agrees with
the reference on them.  Semantics follow Halide's documentation; where Halide leaves a
result undefined, the one given here is stated.
"""
from __future__ import annotations

from ..errors import PipelineError
from . import types as T
from .expr import (Const, Expr, as_expr, binop, cast, clamp, cos, exp, log, max_, min_, pow_,
                   saturating_cast, select, sin, sqrt)
from .types import Type

__all__ = ["select_n", "min_n", "max_n", "mux", "lerp", "absd", "is_nan", "is_inf",
           "is_finite", "widen", "widening_add", "widening_sub", "widening_mul",
           "rounding_shift_right", "rounding_shift_left", "rounding_mul_shift_right",
           "mul_shift_right", "halving_add", "rounding_halving_add", "halving_sub",
           "saturating_add", "saturating_sub", "u8_sat", "u16_sat", "u32_sat", "i8_sat",
           "i16_sat", "i32_sat", "fast_inverse", "fast_inverse_sqrt", "fast_exp", "fast_log",
           "fast_pow", "fast_sin", "fast_cos", "likely", "likely_if_innermost"]


def select_n(*args) -> Expr:
    """``select(c1, v1, c2, v2, ..., default)``: the value of the first true condition."""
    if len(args) < 3 or len(args) % 2 == 0:
        raise PipelineError(f"select takes (condition, value) pairs and a default: an odd "
                            f"number of at least 3 arguments, got {len(args)}")
    out = args[-1]
    for i in range(len(args) - 3, -1, -2):
        out = select(args[i], args[i + 1], out)
    return out


def _fold(fn, name, args):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    if len(args) < 2:
        raise PipelineError(f"{name} takes at least 2 arguments, got {len(args)}")
    out = args[0]
    for a in args[1:]:
        out = fn(out, a)
    return out


def min_n(*args) -> Expr:
    """``min(a, b, c, ...)`` (or a list), left to right."""
    return _fold(min_, "min", args)


def max_n(*args) -> Expr:
    """``max(a, b, c, ...)`` (or a list), left to right."""
    return _fold(max_, "max", args)


def mux(index, values) -> Expr:
    """``values[index]``: ``index`` is clamped to the list (Halide's ``mux``)."""
    values = list(values)
    if not values:
        raise PipelineError("mux needs at least one value")
    index = as_expr(index)
    if not index.type.is_integral():
        raise PipelineError(f"mux: the index {index} must be an integer, not {index.type}")
    out = values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = select(index <= i, values[i], out)
    return out


def _unsigned(t: Type) -> Type:
    return Type("uint", t.bits)


def lerp(zero, one, weight) -> Expr:
    """Halide's ``lerp``: ``zero * (1 - w) + one * w``.  For floats ``w`` is the weight
    itself; for integer operands an unsigned weight counts in units of its type's maximum
    (255 is 1.0 for a uint8 weight) and the result is rounded to nearest, computed in a
    type wide enough not to overflow."""
    zero = as_expr(zero)
    one = as_expr(one, zero.type)
    if one.type != zero.type:
        raise PipelineError(f"lerp: the two values have different types ({zero.type}, "
                            f"{one.type}); cast one of them")
    t = zero.type
    if t.is_float():
        w = cast(t, as_expr(weight, t))
        return zero * (1.0 - w) + one * w
    weight = as_expr(weight, _unsigned(t))
    if weight.type.is_float():          # a fraction: to the unsigned type of the values
        u = _unsigned(t)
        weight = cast(u, clamp(weight, 0.0, 1.0) * float(u.max_value()) + 0.5)
    if not weight.type.is_uint():
        raise PipelineError(f"lerp: an integer lerp needs an unsigned or float weight, got "
                            f"{weight} of type {weight.type}")
    wmax = weight.type.max_value()
    wide = T.int64 if max(t.bits, weight.type.bits) >= 32 else T.int32
    z, o, w = cast(wide, zero), cast(wide, one), cast(wide, weight)
    num = z * (wmax - w) + o * w
    half = wmax // 2
    return cast(t, select(num >= 0, (num + half) / wmax, -((half - num) / wmax)))


def absd(a, b) -> Expr:
    """``|a - b|`` without overflow; for integers in the unsigned type of their width."""
    a = as_expr(a)
    b = as_expr(b, a.type)
    d = select(a > b, a - b, b - a)
    return cast(_unsigned(d.type), d) if d.type.is_int() else d


def is_nan(e) -> Expr:
    """Whether a float is NaN (never, for an integer)."""
    e = as_expr(e)
    return binop("ne", e, e) if e.type.is_float() else as_expr(False)


def is_inf(e) -> Expr:
    e = as_expr(e)
    if not e.type.is_float():
        return as_expr(False)
    return (e == float("inf")) | (e == float("-inf"))


def is_finite(e) -> Expr:
    e = as_expr(e)
    if not e.type.is_float():
        return as_expr(True)
    return (e == e) & (e != float("inf")) & (e != float("-inf"))


_WIDER = {"int": {8: T.int16, 16: T.int32, 32: T.int64},
          "uint": {8: T.uint16, 16: T.uint32}}


def widen(t: Type) -> Type:
    """The integer type of twice the width (int64 for int32; uint32 has none here)."""
    try:
        return _WIDER[t.code][t.bits]
    except KeyError:
        raise PipelineError(f"{t} has no wider integer type in tilesolve") from None


def _pair(a, b):
    a = as_expr(a)
    b = as_expr(b, a.type)
    if a.type != b.type or not a.type.is_integral():
        raise PipelineError(f"widening ops need two integers of one type, got {a.type} "
                            f"and {b.type}")
    return a, b, widen(a.type)


def widening_add(a, b) -> Expr:
    a, b, w = _pair(a, b)
    return cast(w, a) + cast(w, b)


def widening_sub(a, b) -> Expr:
    """``a - b`` in the wider signed type (Halide: the result of a widening subtract of
    unsigned operands is signed)."""
    a, b, w = _pair(a, b)
    w = Type("int", w.bits)
    return cast(w, a) - cast(w, b)


def widening_mul(a, b) -> Expr:
    a, b, w = _pair(a, b)
    return cast(w, a) * cast(w, b)


def _shift_amount(q):
    if not isinstance(q, int) or isinstance(q, bool) or q < 0:
        raise PipelineError(f"the shift amount of a rounding shift must be a non-negative "
                            f"Python int here, got {q!r}")
    return q


def rounding_shift_right(a, q) -> Expr:
    """``(a + 2**(q-1)) >> q`` without overflow: round to nearest, ties up."""
    a = as_expr(a)
    q = _shift_amount(q)
    if q == 0:
        return a
    w = widen(a.type)                    # PipelineError where there is none (uint32)
    return cast(a.type, (cast(w, a) + (1 << (q - 1))) >> q)


def rounding_shift_left(a, q) -> Expr:
    return as_expr(a) << _shift_amount(q)


def mul_shift_right(a, b, q) -> Expr:
    """``(a * b) >> q`` computed wide, saturated back to the operands' type."""
    a, b, _ = _pair(a, b)
    return saturating_cast(a.type, widening_mul(a, b) >> _shift_amount(q))


def rounding_mul_shift_right(a, b, q) -> Expr:
    """``(a * b + 2**(q-1)) >> q`` computed wide, saturated back (Halide's fixed-point
    multiply)."""
    a, b, _ = _pair(a, b)
    q = _shift_amount(q)
    p = widening_mul(a, b)
    if q:
        p = (p + (1 << (q - 1))) >> q
    return saturating_cast(a.type, p)


def halving_add(a, b) -> Expr:
    """``(a + b) >> 1`` without overflow (rounds down)."""
    a, b, w = _pair(a, b)
    return cast(a.type, (cast(w, a) + cast(w, b)) >> 1)


def rounding_halving_add(a, b) -> Expr:
    """``(a + b + 1) >> 1`` without overflow."""
    a, b, w = _pair(a, b)
    return cast(a.type, (cast(w, a) + cast(w, b) + 1) >> 1)


def halving_sub(a, b) -> Expr:
    """``(a - b) >> 1`` without overflow, in the operands' type (wrapping)."""
    a, b, w = _pair(a, b)
    return cast(a.type, (cast(Type("int", w.bits), a) - cast(Type("int", w.bits), b)) >> 1)


def saturating_add(a, b) -> Expr:
    a, b, _ = _pair(a, b)
    return saturating_cast(a.type, widening_add(a, b))


def saturating_sub(a, b) -> Expr:
    a, b, _ = _pair(a, b)
    return saturating_cast(a.type, widening_sub(a, b))


def _sat(t: Type):
    def f(e) -> Expr:
        return saturating_cast(t, e)
    f.__name__ = f"{'u' if t.is_uint() else 'i'}{t.bits}_sat"
    f.__doc__ = f"``saturating_cast({t}, e)``."
    return f


u8_sat, u16_sat, u32_sat = _sat(T.uint8), _sat(T.uint16), _sat(T.uint32)
i8_sat, i16_sat, i32_sat = _sat(T.int8), _sat(T.int16), _sat(T.int32)


def _float(e) -> Expr:
    e = as_expr(e)
    return e if e.type.is_float() else cast(T.float32, e)


# Halide's fast_* functions trade accuracy for speed; here they compute the exact
# function (the code generator already vectorizes exp and log), a result at least as
# accurate as Halide's
def fast_inverse(e) -> Expr:
    e = _float(e)
    return Const(e.type, 1.0) / e


def fast_inverse_sqrt(e) -> Expr:
    e = _float(e)
    return Const(e.type, 1.0) / sqrt(e)


fast_exp, fast_log, fast_sin, fast_cos = exp, log, sin, cos


def fast_pow(a, b) -> Expr:
    return pow_(a, b)


def likely(e) -> Expr:
    """A hint for Halide's loop partitioning; tilesolve partitions loops from the
    boundary conditions themselves, so the value is ``e`` unchanged."""
    return as_expr(e)


likely_if_innermost = likely
