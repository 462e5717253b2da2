"""Inline reductions over an RDom: ``ts.sum(e)``, ``maximum``, ``minimum``, ``product``,
``argmax`` and ``argmin``.

As in Halide, ``ts.sum(g[x + r.x])`` becomes an anonymous Func over the
expression's free Vars (``s[x] = 0; s[x] = s[x] + g[x + r.x]``) and the call
``s[x]``.  The result keeps the type of ``e`` (so a uint8 sum can wrap: cast
first, as in Halide).
"""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from . import types as T
from .func import Func
from .rdom import RDom
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


def _arg_extremum(kind: str, args, name: str | None) -> tuple:
    if len(args) == 2:
        r, e = args
        if not isinstance(r, RDom):
            raise PipelineError(f"ts.{kind}(r, e): r must be an RDom, got {r!r}")
    elif len(args) == 1:
        r, e = None, args[0]
    else:
        raise PipelineError(f"ts.{kind} takes (e) or (r, e), got {len(args)} arguments")
    e = E.as_expr(e)
    rdoms = {id(n.rdom): n.rdom for n in walk(e) if isinstance(n, E.RVar)}
    if r is None:
        if len(rdoms) != 1:
            raise PipelineError(f"ts.{kind}({e}): the expression must use one RDom, uses "
                                f"{len(rdoms)}")
        r = next(iter(rdoms.values()))
    elif set(rdoms) - {id(r)}:
        raise PipelineError(f"ts.{kind}(r, e): e uses an RDom other than {r.name}")
    base = name or f"{kind}{_count[0] + 1}"
    best = _reduce("maximum" if kind == "argmax" else "minimum", e, f"{base}_value")
    # the first point in iteration order (r.x fastest) where e attains the extremum
    lin, stride = None, None
    for rv, mn, ext in zip(r.rvars(), r.mins, r.extents):
        term = rv - mn if stride is None else (rv - mn) * stride
        lin = term if lin is None else lin + term
        stride = ext if stride is None else stride * ext
    none = E.Const(T.int32, T.int32.max_value())
    first = _reduce("minimum", E.select(E.binop("eq", e, best), lin, none), f"{base}_index")
    coords, stride = [], None
    for mn, ext in zip(r.mins, r.extents):
        q = first if stride is None else first / stride
        coords.append(E.select(E.binop("eq", first, none), mn, mn + q % ext))
        stride = ext if stride is None else stride * ext
    return tuple(coords) + (best,)


def argmax(*args, name: str | None = None) -> tuple:
    """``ts.argmax(e)`` or ``ts.argmax(r, e)``: the Tuple ``(r.x, r.y, ..., value)`` of the
    first point of the RDom, in iteration order (``r.x`` fastest), where ``e`` is largest,
    and that largest value, as Halide's ``argmax`` gives it.  Computed as the maximum,
    then the first point that equals it: where ``e`` is NaN at every point (no point
    equals the maximum) the point is the RDom's minimum."""
    return _arg_extremum("argmax", args, name)


def argmin(*args, name: str | None = None) -> tuple:
    """``ts.argmin``: as ``argmax``, for the smallest value."""
    return _arg_extremum("argmin", args, name)
