"""Sliding window and storage folding (Halide's SlidingWindow and StorageFolding; CPU).

A Func ``P`` stored outside a serial loop ``v`` and computed inside it
(``P.store_at(C, outer).compute_at(C, v)``, or ``store_root``) would compute
its whole region again at every iteration of ``v``.  When that region moves
monotonically with ``v`` along one dimension ``d`` (a stencil's rows as ``C``
walks down the image), the rows computed at iteration ``v - 1`` are still in
the buffer, so iteration ``v`` computes only the new ones::

    let P.y.min = select(v > v.min, max(lo(v), hi(v - 1) + 1), lo(v))
    let P.y.extent = hi(v) - P.y.min + 1

and the first iteration of each entry into the loop computes the whole region.
Conditions (each checked, else the region stays whole):

- every loop between the store level and ``v`` (``v`` included) is serial or
  unrolled, so the iterations run in order on one thread;
- exactly one dimension of the region depends on ``v``, and both its ends are
  provably non-decreasing in ``v`` (``lo(v - 1) <= lo(v)``, ``hi(v - 1) <= hi(v)``),
  through the lets that open the loop body;
- every guard between ``v`` and the computation, once false, stays false as ``v``
  grows (a tail's ``y < extent``): an iteration that skips must not be followed
  by one that relies on its rows;
- ``P`` has no update definitions.

**Storage folding.**  Then the buffer need only hold the rows one iteration
touches: when the span of the rows read and written at one iteration has a
constant upper bound ``s`` and its low end is non-decreasing in ``v``, the
dimension is stored modulo ``F``, the power of two at least ``s``: every access
``P[..., y, ...]`` becomes ``P[..., y % F, ...]`` (Euclidean; an ``and`` in the
generated code).  A row written at iteration ``v`` overwrites one at least ``F``
rows lower, which lies below every row read from then on.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.simplify import prove, simplify
from ..model import expr as E
from ..model import types as T
from ..model.visit import mutate, rebuild, substitute_names, walk
from . import ir as L

ORDERED_KINDS = ("serial", "unrolled")


@dataclass(frozen=True)
class Window:
    """A sliding window of one Func: dimension ``dim`` slides over loop ``loop``."""

    dim: int
    loop: str
    loop_min: E.Expr
    expand: dict            # the opening lets inside ``loop`` (name -> value), innermost last
    prev_hi: E.Expr         # the region's upper end at the previous iteration


def _free(e: E.Expr) -> set:
    return {n.name for n in walk(e) if isinstance(n, E.Var)}


def _expand(e: E.Expr, lets: list) -> E.Expr:
    """``e`` with ``lets`` (outermost first) substituted, innermost first."""
    for name, value in reversed(lets):
        if name in _free(e):
            e = substitute_names(e, {name: value})
    return simplify(e)


def _prev(e: E.Expr, v: str) -> E.Expr:
    return simplify(substitute_names(e, {v: E.Var(v) - 1}))


def _non_decreasing(e: E.Expr, v: str) -> bool:
    return prove(_prev(e, v) <= e) is True


def _stays_false(cond: E.Expr, v: str) -> bool:
    """Whether ``cond``, once false at some ``v``, is false at every later ``v``."""
    if v not in _free(cond):
        return True
    if isinstance(cond, E.BinOp) and cond.op == "and":
        return _stays_false(cond.a, v) and _stays_false(cond.b, v)
    if isinstance(cond, E.BinOp) and cond.op in ("lt", "le", "gt", "ge"):
        a, b = (cond.a, cond.b) if cond.op in ("lt", "le") else (cond.b, cond.a)
        slack = simplify(b - a)         # true while a < b: the slack must not grow
        return prove(_prev(slack, v) >= slack) is True
    return False


def find_window(demand: list, env: tuple, kinds: tuple, store_loop,
                fixed_dims: set) -> Window | None:
    """The sliding window for a region ``demand`` (one ``(lo, hi)`` per dimension)
    computed inside ``env`` (see ``realize.insert_in_loop``), or None.

    ``store_loop``: the IR name of the loop the buffer is stored in (None: root).
    ``fixed_dims``: dimensions whose bounds the schedule fixes."""
    fors = [i for i, entry in enumerate(env) if entry[0] == "for"]
    if not fors or len(fors) != len(kinds) or kinds[-1] != "serial":
        return None
    first = 0
    if store_loop is not None:
        names = [env[i][1] for i in fors]
        if store_loop not in names:
            return None
        first = names.index(store_loop) + 1
    if any(k not in ORDERED_KINDS for k in kinds[first:]):
        return None
    _, v, vmin, _ = env[fors[-1]]
    opening = env[fors[-1] + 1:]
    lets = [(e[1], e[2]) for e in opening if e[0] == "let"]
    guards = [e[1] for e in opening if e[0] == "if"]
    dims = []
    for d, (lo, hi) in enumerate(demand):
        lo_e, hi_e = _expand(lo, lets), _expand(hi, lets)
        if v in _free(lo_e) or v in _free(hi_e):
            dims.append((d, lo_e, hi_e))
    if len(dims) != 1 or dims[0][0] in fixed_dims:
        return None
    d, lo_e, hi_e = dims[0]
    if not (_non_decreasing(lo_e, v) and _non_decreasing(hi_e, v)):
        return None
    if not all(_stays_false(_expand(g, lets), v) for g in guards):
        return None
    return Window(d, v, vmin, dict(lets), _prev(hi_e, v))


def slid_min(w: Window, lo: E.Expr) -> E.Expr:
    """The region's new low end in the window's dimension (see the module docstring)."""
    v = E.Var(w.loop)
    return simplify(E.select(v > w.loop_min, E.max_(lo, w.prev_hi + 1), lo))


def fold_factor(region: tuple, written: tuple, mn: E.Expr, ext: E.Expr, bound) -> int | None:
    """The folding factor for a slid region, or None.

    ``region``: the region ``(lo, hi)`` the consumers read at one iteration, whose
    low end ``find_window`` proved non-decreasing; ``written``: the rows the
    producer writes, which must lie inside its (slid) region ``[mn, mn + ext)``
    (not so with a ``round_up`` tail in this dimension).  Every row touched at an
    iteration is then in ``region``; ``bound`` (an ``ExtentBounder``) gives its
    size a constant upper bound, or none."""
    wlo, whi = written
    if wlo is None or whi is None or prove(wlo >= mn) is not True \
            or prove(whi <= mn + ext - 1) is not True:
        return None
    lo, hi = region
    span = bound(simplify(hi - lo + 1))
    if span is None or span < 1:
        return None
    return 1 << (span - 1).bit_length()


def fold_accesses(s: L.Stmt, name: str, dim: int, factor: int) -> L.Stmt:
    """``s`` with every access of ``name`` in dimension ``dim`` taken modulo ``factor``."""
    f = E.Const(T.int32, factor)
    memo: dict = {}

    def fold_args(args):
        args = tuple(mutate(a, on_expr, memo) for a in args)
        return args[:dim] + (args[dim] % f,) + args[dim + 1:]

    def on_expr(e):
        if isinstance(e, E.Call) and e.name == name:
            return rebuild(e, (e.target, fold_args(e.args)))
        return None

    def on_stmt(st):
        if isinstance(st, L.Provide) and st.func == name:
            return L.Provide(st.func, fold_args(st.args), mutate(st.value, on_expr, memo))
        return None
    return L.map_stmt(s, on_stmt, lambda e: mutate(e, on_expr, memo))
