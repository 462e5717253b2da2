"""Inline reductions over an RDom: ``ts.sum(e)``, ``maximum``, ``minimum``, ``product``.

As in Halide, ``ts.sum(g[x + r.x])`` becomes an anonymous Func over the
expression's free Vars (``s[x] = 0; s[x] = s[x] + g[x + r.x]``) and the call
``s[x]``.  The result keeps the type of ``e`` (so a uint8 sum can wrap: cast
first, as in Halide).
"""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from .func import Func
from .visit import walk

_count = [0]


def _reduce(kind: str, e, name: str | None) -> E.Expr:
    e = E.as_expr(e)
    free = []
    rvars = []
    for n in walk(e):
        if isinstance(n, E.Var) and n not in free:
            free.append(n)
        if isinstance(n, E.RVar):
            rvars.append(n)
    if not rvars:
        raise PipelineError(f"ts.{kind}({e}): the expression uses no RDom variable")
    free.sort(key=lambda v: v.name)
    if not free:
        # A scalar reduction still needs a dimension: use a dummy Var.
        free = [E.Var("_")]
    t = e.type
    init = {"sum": 0, "product": 1,
            "maximum": t.min_value(), "minimum": t.max_value()}[kind]
    if t.is_bool():
        raise PipelineError(f"ts.{kind} over a bool expression; cast it first")
    _count[0] += 1
    f = Func(name or f"{kind}{_count[0]}")
    args = tuple(free)
    f[args] = E.Const(t, init)
    cur = f[args]
    if kind == "sum":
        f[args] = cur + e
    elif kind == "product":
        f[args] = cur * e
    elif kind == "maximum":
        f[args] = E.max_(cur, e)
    else:
        f[args] = E.min_(cur, e)
    if free[0].name == "_" and len(free) == 1:
        return f[0]
    return f[args]


def sum(e, name: str | None = None) -> E.Expr:  # noqa: A001 - Halide's name
    """Sum of ``e`` over its RDom."""
    return _reduce("sum", e, name)


def product(e, name: str | None = None) -> E.Expr:
    return _reduce("product", e, name)


def maximum(e, name: str | None = None) -> E.Expr:
    return _reduce("maximum", e, name)


def minimum(e, name: str | None = None) -> E.Expr:
    return _reduce("minimum", e, name)
