"""A constant upper bound of an int32 extent, for block sizes and shared array sizes.

The extent of a thread loop often depends on the block (a tile clipped at the
image's edge): ``min(yo*16 + 15, H - 1) - yo*16 + 3``.  The block size must be
a number known at launch, so we take the largest value the extent can have, by
pushing additions into ``min``/``max`` and cancelling linear terms::

    ub(min(yo*16 + 15, H - 1) - yo*16 + 3) = min(ub(15 + 3), ub(H - 1 - yo*16 + 3)) = 18

As in Halide, index arithmetic is assumed not to overflow.  ``upper_bound``
returns None when no constant bound is found.
"""
from __future__ import annotations

import math

from ...model import expr as E

__all__ = ["upper_bound"]


def _linear(e):
    """``(terms, const)`` with ``terms`` {atom: coefficient}, or None if ``e`` is not linear
    over integer atoms (an atom is any non-linear subexpression, compared by identity)."""
    if isinstance(e, E.Const):
        return ({}, int(e.value)) if not e.type.is_float() else None
    if e.type.is_float():
        return None
    if isinstance(e, E.BinOp) and e.op in ("add", "sub"):
        a, b = _linear(e.a), _linear(e.b)
        if a is None or b is None:
            return None
        return _combine(a, b, 1 if e.op == "add" else -1)
    if isinstance(e, E.BinOp) and e.op == "mul":
        for k, x in ((e.a, e.b), (e.b, e.a)):
            if isinstance(k, E.Const):
                lx = _linear(x)
                if lx is not None:
                    return ({t: c * int(k.value) for t, c in lx[0].items()}, lx[1] * int(k.value))
    if isinstance(e, E.BinOp) and e.op in ("min", "max"):
        return None
    if isinstance(e, E.Select):
        return None
    return ({e: 1}, 0)


def _combine(a, b, sign):
    terms = dict(a[0])
    for t, c in b[0].items():
        terms[t] = terms.get(t, 0) + sign * c
        if terms[t] == 0:
            del terms[t]
    return terms, a[1] + sign * b[1]


def _ub(e, ctx) -> float:
    """Upper bound of ``e + ctx`` (ctx a linear form); +inf when unknown."""
    lin = _linear(e)
    if lin is not None:
        terms, const = _combine(lin, ctx, 1)
        return const if not terms else math.inf
    if isinstance(e, E.BinOp) and e.op in ("add", "sub"):
        sign = 1 if e.op == "add" else -1
        lb = _linear(e.b)
        if lb is not None:
            return _ub(e.a, _combine(ctx, lb, sign))
        la = _linear(e.a)
        if la is not None and sign == 1:
            return _ub(e.b, _combine(ctx, la, 1))
        if sign == 1:
            return _ub(e.a, ctx) + _ub(e.b, ({}, 0))
        return math.inf
    if isinstance(e, E.BinOp) and e.op == "min":
        return min(_ub(e.a, ctx), _ub(e.b, ctx))
    if isinstance(e, E.BinOp) and e.op == "max":
        return max(_ub(e.a, ctx), _ub(e.b, ctx))
    if isinstance(e, E.Select):
        return max(_ub(e.true_value, ctx), _ub(e.false_value, ctx))
    return math.inf


def upper_bound(e: E.Expr) -> int | None:
    """A constant upper bound of the integer Expr ``e``, or None."""
    if e.type.is_float():
        return None
    v = _ub(e, ({}, 0))
    return None if math.isinf(v) else int(v)
