"""Constant upper bounds of allocation extents (Halide's rule for GPU buffers).

``const_upper(e)`` (``analysis.simplify``): a constant no smaller than ``e`` for
every value of its free names, when cancellation proves one
(``min(base + 63, W - 1) - base + 1 <= 64``); None otherwise.
``ExtentBounder``: the extent of an allocation bounded through the lets that enclose
it (substituted one level at a time, so names that cancel do so while the Expr is
small) and then over the ranges of the enclosing loops (``bounds.expr_bounds``).
Where that finds none, the extent as the difference of its ends, bounded by
``clamped_extent_upper`` (a box of clamped reads, ``repeat_edge``'s: no wider than
the unclamped box).  Only an allocation's size uses such a bound; the region computed
stays exact.
"""
from __future__ import annotations

from ..analysis.simplify import clamped_extent_upper, const_upper, simplify
from ..analysis.simplify_rules import node_count
from ..model import expr as E
from ..model.visit import substitute_names, walk
from . import bounds as B


def _culprits(x: E.Expr) -> list:
    """The run-time values (Params, input and output extents) that ``x`` has no
    constant bound because of: those that, fixed alone, make it bounded, else
    every one it names."""
    from ..model.visit import mutate

    def name(n):
        if isinstance(n, E.Param):
            return n.name
        if isinstance(n, E.BufferExtent):
            return f"{n.image}.extent({n.dim})"
        if isinstance(n, E.Var) and ".extent." in n.name and ".s" not in n.name:
            return n.name       # an output's extent (loop and region names have ".s0.")
        return None
    names = sorted({m for m in map(name, walk(x)) if m is not None})

    def fixed(m):
        return mutate(x, lambda n: E.Const(n.type, 1) if name(n) == m else None)
    alone = [m for m in names
             if not x.type.is_float() and const_upper(fixed(m)) is not None]
    return alone or names


class ExtentBounder:
    """Constant upper bounds of an allocation's extents (Halide's rule for GPU
    shared/register and stack buffers): the size of a full tile, which a tail
    tile uses part of.  Only the allocation's size uses the bound; the region
    computed stays exact.

    ``bound(ext)`` takes ``const_upper`` of ``ext``, then of ``ext`` with the
    lets that enclose the allocation substituted one level at a time (``top``:
    the outputs' and hoisted program lets, then ``env``, then the Func's own
    region ``lets``), so a tail tile's ``min(base + 63, W - 1) - base + 1``
    shows as ``min(64, W - base)`` while names that cancel stay names.  Where
    that finds no constant it bounds the extent over the ranges of the
    enclosing loops, innermost first (``bounds.expr_bounds``), trying
    ``const_upper`` after each.  None: no constant bound; ``shown(ext)`` is the
    substituted Expr, for messages."""

    # A tile extent that bounds shows its constant in a small Expr (at most ~40
    # nodes in the apps); bigger ones only cost time in const_upper, and each
    # substitution mostly grows them.
    TRY_NODES, GIVE_UP_NODES = 60, 400

    def __init__(self, defs: dict, loops: list = (), try_nodes: int | None = None):
        self.defs, self.loops = defs, list(loops)     # loops: (name, min, extent), outermost first
        self.try_nodes = self.TRY_NODES if try_nodes is None else try_nodes
        self.last: dict = {}

    @classmethod
    def at(cls, top: list, env: tuple, lets: list, **kw) -> "ExtentBounder":
        """The bounder for an allocation inside ``env`` (see ``insert_in_loop``)."""
        defs, loops = dict(top), []
        for entry in env:
            if entry[0] == "let":
                defs[entry[1]] = entry[2]
            elif entry[0] == "for":
                loops.append(entry[1:])
        defs.update(lets)
        return cls(defs, loops, **kw)

    def _expand(self, e: E.Expr):
        """``e`` with the lets it names substituted once (None: it names none)."""
        sub = {n.name: self.defs[n.name] for n in walk(e)
               if isinstance(n, E.Var) and n.name in self.defs}
        return simplify(substitute_names(e, sub)) if sub else None

    def _deepen(self, e: E.Expr):
        """(bound or None, the most substituted ``e`` tried)."""
        for _ in range(64):
            size = node_count(e, self.GIVE_UP_NODES)
            if size <= self.try_nodes:
                cu = const_upper(e, self.try_nodes)
                if cu is not None:
                    return cu, e
            if size > self.GIVE_UP_NODES:
                break
            nxt = self._expand(e)
            if nxt is None or nxt is e:
                break
            e = nxt
        return None, e

    def __call__(self, ext: E.Expr):
        if isinstance(ext, E.Const):
            return int(ext.value)
        cu, e = self._deepen(ext)
        self.last[id(ext)] = (ext, e)
        if cu is None:
            # a box of clamped reads: its ends' difference, each loop's variable at least
            # the loop's start
            cu = clamped_extent_upper(e, {v: int(mn.value) for v, mn, _ in self.loops
                                          if isinstance(mn, E.Const)})
        for var, mn, extent in reversed(self.loops):
            if cu is not None:
                break
            if not any(isinstance(n, E.Var) and n.name == var for n in walk(e)):
                continue
            lo = self._deepen(mn)[1]
            hi = simplify(lo + self._deepen(extent)[1] - 1)
            e = B.expr_bounds(e, {var: (lo, hi)})[1]
            if e is None:
                break
            cu = const_upper(e)
        return cu

    def shown(self, ext: E.Expr) -> E.Expr:
        hit = self.last.get(id(ext))
        return ext if hit is None else hit[1]
