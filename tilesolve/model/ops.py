"""The op table: every operator and math function of the language, declared once.

An :class:`Op` holds what the language itself defines about an operation: its kind,
arity, infix spelling, result type, numpy evaluation (the executable semantics that
the reference evaluator and the tests use) and its arithmetic cost per point (the cost
model's unit).  What later phases know about an op -- its interval rule, and its
spelling in LLVM IR, CUDA C and Halide -- is registered against this table by those
phases::

    @ops.register("cuda", "min", "max")
    def _minmax(printer, op, t, a, b): ...

and looked up with ``ops.impl(layer, name)``.  ``ops.missing(layer)`` lists the ops a
layer has no entry for; ``tests/test_op_table.py`` imports every layer and asserts
that it lists none, so a new op cannot be half added.

Semantics (shared by every layer; the backends must agree with ``numpy`` bit for bit
on integers):

- integer ``div``/``mod`` are Euclidean (the remainder is never negative) and
  ``x / 0 == x % 0 == 0``; ``-1`` as divisor negates (wrapping at the minimum);
- float ``mod`` is ``a - b * floor(a / b)``;
- float ``min``/``max`` propagate NaN from either operand (numpy's rule);
- ``+ - *`` wrap on integers (two's complement);
- math functions take and give floats, except ``abs``, which keeps its type;
- ``reinterpret`` (its own kind) gives its operand's bits as another non-bool type of the
  same width;
- bit operations (``& | ^ << >>``, kind "bits") take integers of one type and give that
  type; a shift amount is read in the operands' type: a negative amount shifts the other
  way, and an amount of the type's width or more shifts every bit out (``<<`` gives 0,
  ``>>`` gives 0 or, for a negative signed value, -1).  ``~a`` is ``a ^ -1`` (all ones).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import types as T

LAYERS = ("interval", "llvm", "cuda", "halide")
# Math ops every backend rounds correctly, in scalar and vector code alike; the other
# math ops (exp, sin, ...) may differ in their last bits between a backend's vector
# code and its scalar code (the CPU's vector polynomials against the C library).
EXACT_MATH = frozenset({"sqrt", "trunc", "floor", "ceil", "round", "abs"})


@dataclass(frozen=True)
class Op:
    name: str
    kind: str                 # "arith", "bits", "cmp", "logic", "math" or "reinterpret"
    arity: int
    symbol: str | None        # infix spelling in the language (None: a function call)
    numpy: Callable           # numpy(t, *args): t is the operands' type
    cost: int                 # arithmetic ops per point (integer operands)
    float_cost: int | None = None     # with float operands, when it differs
    pow2_cost: int | None = None      # with a constant power-of-two integer divisor

    def result_type(self, operand: T.Type) -> T.Type:
        return T.bool_ if self.kind in ("cmp", "logic") else operand

    def cost_of(self, operand: T.Type, pow2_divisor: bool = False) -> int:
        if self.name == "div" and pow2_divisor and operand.is_float():
            return 1                  # a multiplication by the exact reciprocal
        if operand.is_float() and self.float_cost is not None:
            return self.float_cost
        if pow2_divisor and self.pow2_cost is not None and operand.is_integral():
            return self.pow2_cost
        return self.cost

    def latency_of(self, operand: T.Type) -> int:
        """Cycles from an operand to the result on the vector units (a dependent
        chain, such as an accumulator updated at every step of a reduction, pays
        this per step however many units are free).  Integer ops other than
        multiplication take one cycle; float ``+ - *`` four; float ``min``/``max``
        five (the compare and blend that keep numpy's NaN rule follow the min/max
        instruction); everything else its cost."""
        if operand.is_float():
            return _FLOAT_LATENCY.get(self.name, max(self.cost_of(operand), 4))
        if self.name == "mul":
            return 3
        return self.cost_of(operand) if self.kind == "math" or self.name in ("div", "mod") else 1


_FLOAT_LATENCY = {"add": 4, "sub": 4, "mul": 4, "min": 5, "max": 5, "abs": 1,
                  "floor": 8, "ceil": 8, "round": 8}


# -- numpy semantics ------------------------------------------------------------------
def _int_div(a, b, t):
    """Euclidean division: q with a == q*b + r, 0 <= r < |b|; x / 0 == 0."""
    zero = b == 0
    bs = np.where(zero, np.ones_like(b), b)
    if t.is_uint():
        return np.where(zero, np.zeros_like(a), a // bs)
    minus1 = bs == -1              # negate (wraps for the most negative value)
    bs = np.where(minus1, np.ones_like(bs), bs)
    q = a // bs
    r = a - q * bs
    q = np.where((bs < 0) & (r != 0), q + 1, q)
    q = np.where(minus1, (np.zeros_like(a) - a), q)
    return np.where(zero, np.zeros_like(q), q).astype(t.dtype, copy=False)


def _int_mod(a, b, t):
    """Euclidean remainder in [0, |b|); x % 0 == 0."""
    zero = b == 0
    bs = np.where(zero, np.ones_like(b), b)
    if t.is_uint():
        return np.where(zero, np.zeros_like(a), a % bs)
    r = a % bs                       # sign of the divisor
    r = np.where(r < 0, r - bs, r)   # only for negative divisors
    return np.where(zero, np.zeros_like(r), r).astype(t.dtype, copy=False)


def _div(t, a, b):
    return a / b if t.is_float() else _int_div(a, b, t)


def _mod(t, a, b):
    return a - b * np.floor(a / b) if t.is_float() else _int_mod(a, b, t)


def _shift(t, a, b, left: bool):
    """``a << b`` (``left``) or ``a >> b`` with the table's rules for the amount, exact for
    every width up to 64 bits: the amount's magnitude and direction are taken apart
    without overflow, and shifts by the width or more are spelled out."""
    a, b = np.asarray(a, t.dtype), np.asarray(b, t.dtype)
    u64 = np.uint64
    if t.is_int():
        neg = b < 0
        mag = np.where(neg, (~b.astype(np.int64)).astype(u64) + u64(1), b.astype(u64))
        left = np.where(neg, not left, left)
    else:
        mag = b.astype(u64)
    out = mag >= u64(t.bits)                     # every bit shifted out
    m = np.where(out, u64(0), mag)
    with np.errstate(over="ignore"):
        up = (a.astype(u64) << m).astype(t.dtype)              # wraps to the type
        down = a >> m.astype(t.dtype)                          # arithmetic for signed a
        gone = (a >> np.asarray(t.bits - 1, t.dtype)) if t.is_int() else np.zeros_like(a)
    return np.where(left, np.where(out, np.zeros_like(a), up),
                    np.where(out, gone, down)).astype(t.dtype)


def _math(fn):
    return lambda t, *args: fn(*args)


_TABLE = (
    # name, kind, arity, symbol, numpy, cost, float_cost, pow2_cost
    ("add", "arith", 2, "+", lambda t, a, b: a + b, 1, None, None),
    ("sub", "arith", 2, "-", lambda t, a, b: a - b, 1, None, None),
    ("mul", "arith", 2, "*", lambda t, a, b: a * b, 1, None, None),
    ("div", "arith", 2, "/", _div, 8, 4, 1),
    ("mod", "arith", 2, "%", _mod, 8, 4, 1),
    ("min", "arith", 2, None, lambda t, a, b: np.minimum(a, b), 1, None, None),
    ("max", "arith", 2, None, lambda t, a, b: np.maximum(a, b), 1, None, None),
    ("bitand", "bits", 2, "&", lambda t, a, b: np.bitwise_and(a, b), 1, None, None),
    ("bitor", "bits", 2, "|", lambda t, a, b: np.bitwise_or(a, b), 1, None, None),
    ("bitxor", "bits", 2, "^", lambda t, a, b: np.bitwise_xor(a, b), 1, None, None),
    ("shl", "bits", 2, "<<", lambda t, a, b: _shift(t, a, b, True), 1, None, None),
    ("shr", "bits", 2, ">>", lambda t, a, b: _shift(t, a, b, False), 1, None, None),
    ("eq", "cmp", 2, "==", lambda t, a, b: a == b, 1, None, None),
    ("ne", "cmp", 2, "!=", lambda t, a, b: a != b, 1, None, None),
    ("lt", "cmp", 2, "<", lambda t, a, b: a < b, 1, None, None),
    ("le", "cmp", 2, "<=", lambda t, a, b: a <= b, 1, None, None),
    ("gt", "cmp", 2, ">", lambda t, a, b: a > b, 1, None, None),
    ("ge", "cmp", 2, ">=", lambda t, a, b: a >= b, 1, None, None),
    ("and", "logic", 2, "&", lambda t, a, b: np.logical_and(a, b), 1, None, None),
    ("or", "logic", 2, "|", lambda t, a, b: np.logical_or(a, b), 1, None, None),
    ("sqrt", "math", 1, None, _math(np.sqrt), 4, None, None),
    ("exp", "math", 1, None, _math(np.exp), 16, None, None),
    ("log", "math", 1, None, _math(np.log), 16, None, None),
    ("pow", "math", 2, None, _math(np.power), 16, None, None),
    ("sin", "math", 1, None, _math(np.sin), 16, None, None),
    ("cos", "math", 1, None, _math(np.cos), 16, None, None),
    ("tan", "math", 1, None, _math(np.tan), 16, None, None),
    ("atan2", "math", 2, None, _math(np.arctan2), 16, None, None),
    ("atan", "math", 1, None, _math(np.arctan), 16, None, None),
    ("asin", "math", 1, None, _math(np.arcsin), 16, None, None),
    ("acos", "math", 1, None, _math(np.arccos), 16, None, None),
    ("sinh", "math", 1, None, _math(np.sinh), 16, None, None),
    ("cosh", "math", 1, None, _math(np.cosh), 16, None, None),
    ("tanh", "math", 1, None, _math(np.tanh), 16, None, None),
    ("asinh", "math", 1, None, _math(np.arcsinh), 16, None, None),
    ("acosh", "math", 1, None, _math(np.arccosh), 16, None, None),
    ("atanh", "math", 1, None, _math(np.arctanh), 16, None, None),
    ("trunc", "math", 1, None, _math(np.trunc), 1, None, None),
    ("floor", "math", 1, None, _math(np.floor), 1, None, None),
    ("ceil", "math", 1, None, _math(np.ceil), 1, None, None),
    ("round", "math", 1, None, _math(np.rint), 1, None, None),      # ties to even
    ("abs", "math", 1, None, _math(np.abs), 1, None, None),
    # the same bits read as another type of the same width (``t`` is the result type)
    ("reinterpret", "reinterpret", 1, None,
     lambda t, a: np.ascontiguousarray(a).view(t.dtype).reshape(np.shape(a)), 1, None, None),
)

OPS: dict[str, Op] = {row[0]: Op(*row) for row in _TABLE}


def of_kind(*kinds: str) -> tuple[str, ...]:
    return tuple(n for n, o in OPS.items() if o.kind in kinds)


# -- what later phases register ---------------------------------------------------------
_IMPL: dict[str, dict[str, Callable]] = {layer: {} for layer in LAYERS}


def register(layer: str, *names: str):
    """Decorator: ``fn`` is ``layer``'s rule for each op in ``names``."""
    if layer not in _IMPL:
        raise ValueError(f"unknown op-table layer {layer!r}; the layers are {LAYERS}")
    unknown = [n for n in names if n not in OPS]
    if unknown:
        raise ValueError(f"{layer}: no op named {unknown} in the op table")

    def deco(fn):
        for n in names:
            _IMPL[layer][n] = fn
        return fn
    return deco


def impl(layer: str, name: str) -> Callable:
    try:
        return _IMPL[layer][name]
    except KeyError:
        raise NotImplementedError(
            f"the op table has no {layer} rule for the op {name!r}") from None


def missing(layer: str) -> list[str]:
    """The ops ``layer`` registered no rule for (the completeness test wants none)."""
    return [n for n in OPS if n not in _IMPL[layer]]
