"""Best tilings of groups, found cheaply during the search and exactly at the end.

Every cost is ``model.cost(group, tiling)`` from the shared ``CostModel``
(memoized per column); this module memoizes per *group* on top of it.

* ``full(group)``: the cheapest feasible tiling of the whole menu
  (``solver.tilings.candidate_tilings``), with greedy's tie-breaking (the
  first of equal costs in menu order).  Used for singletons (greedy has
  already costed them, so this is free), for the groups of the answer, and
  by ``menu="full"``.
* ``quick(group)``: what the search ranks states by.  A group grown by one
  producer starts from its *parent* — the group without its last-decided
  member (a legal group, unique, so the value does not depend on the path
  that reached the group: Anderson 2021's memoization of partial schedules)
  — and also from representatives of the menu drawn by **hierarchical
  sampling** (Anderson 2021 §3.1): tilings are bucketed by a structural hash
  of a given ``depth`` (0: which dimensions are tiled; 1: also the tile
  area's order of magnitude; 2: also each tile extent's order; -1: no
  sampling, the parent's tiling only) and one
  representative per bucket is drawn with a generator seeded by ``seed`` and
  the group, so draws are reproducible and independent of search order.
  From the best start it hill-climbs on the menu's grid (one dimension one
  step up or down) for at most ``climb`` steps.  When no start is feasible
  the whole menu is scanned, so ``quick`` is None exactly when ``full`` is.  ``quick`` is an upper bound
  of ``full`` (it takes a min over a subset of the same menu).
"""
from __future__ import annotations

import math
import random
import zlib

from ..space import Group, Tiling


def _order(v) -> int:
    """Order of magnitude (base 8) of a tile extent or area; None is 'all'."""
    return 99 if v is None else int(math.log2(max(1, v)) // 3)


def structural_hash(t: Tiling, depth: int) -> tuple:
    """Anderson's structural hash of a tiling, coarse to fine with ``depth``."""
    key = (tuple(s is None for s in t.sizes),)
    if depth >= 1:
        area = math.prod(s for s in t.sizes if s is not None) if not t.is_untiled() else None
        key += (_order(area),)
    if depth >= 2:
        key += tuple(_order(s) for s in t.sizes)
    return key


def _better(a, b) -> bool:
    """Is (tiling, cost) ``a`` strictly cheaper than ``b`` (None = nothing)?"""
    return b is None or a[1].total < b[1].total - 1e-9      # greedy.best_tiling's rule


class TilingSearch:
    """Per-group best tilings for one CostModel (see the module docstring)."""

    def __init__(self, model, seed: int = 0, depth: int = 0, climb: int = 3, menu: str = "quick"):
        self.model = model
        self.problem = model.problem
        self.seed = seed
        self.depth = depth
        self.climb = climb
        self.menu = menu
        self._menus: dict = {}
        self._full: dict = {}
        self._quick: dict = {}
        self.order = {f: i for i, f in enumerate(model.problem.funcs)}

    def reseed(self, seed: int, depth: int) -> None:
        """Sample with another seed and hash depth (exact costs stay memoized)."""
        if (seed, depth) != (self.seed, self.depth):
            self.seed, self.depth = seed, depth
            self._quick.clear()

    # -- menus ---------------------------------------------------------------
    def menu_of(self, group: Group) -> tuple:
        """(tilings, index of each tiling, grid neighbours per index)."""
        hit = self._menus.get(group.output)
        if hit is None:
            tilings = self.model.menu(group.output).tilings   # depends on the output only
            index = {t: i for i, t in enumerate(tilings)}
            hit = (tilings, index, _grid_neighbours(tilings, index))
            self._menus[group.output] = hit
        return hit

    def _feasible(self, group, t):
        c = self.model.cost(group, t)
        return (t, c) if c.feasible else None

    # -- exact -----------------------------------------------------------------
    def full(self, group: Group):
        """The cheapest feasible tiling over the whole menu: (Tiling, Cost) or None."""
        if group in self._full:
            return self._full[group]
        best = self._full[group] = self.model.best(group)
        return best

    # -- estimate ----------------------------------------------------------------
    def parent(self, group: Group) -> Group | None:
        """The group without its last-decided member (the producer latest in
        reverse topological order, i.e. earliest in ``problem.funcs``)."""
        if len(group.members) == 1:
            return None
        last = min(group.producers(), key=self.order.__getitem__)
        return Group(group.output, group.members - {last})

    def samples(self, group: Group) -> list:
        """One representative per structural-hash bucket of the menu."""
        if self.depth < 0:
            return []
        tilings = self.menu_of(group)[0]
        buckets: dict = {}
        for t in tilings:
            buckets.setdefault(structural_hash(t, self.depth), []).append(t)
        rng = random.Random(zlib.crc32(f"{self.seed}|{self.depth}|{group}".encode()))
        return [rng.choice(buckets[k]) for k in sorted(buckets, key=repr)]

    def quick(self, group: Group):
        """A cheap upper bound of ``full(group)``: (Tiling, Cost) or None."""
        if self.menu == "full" or len(group.members) == 1:
            return self.full(group)
        if group in self._quick:
            return self._quick[group]
        tilings, index, neigh = self.menu_of(group)
        starts = []
        par = self.parent(group)
        pb = self.quick(par) if par is not None else None
        if pb is not None:
            starts.append(pb[0])
        starts.extend(self.samples(group))
        best = None
        for t in starts:
            r = self._feasible(group, t)
            if r is not None and _better(r, best):
                best = r
        if best is None:
            # no start is feasible (e.g. the parent's best was untiled): scan the menu,
            # so a group is pruned only when no tiling at all makes it feasible
            best = self.full(group)
        for _ in range(self.climb if best is not None else 0):
            moved = None
            for j in neigh[index[best[0]]]:
                r = self._feasible(group, tilings[j])
                if r is not None and _better(r, best) and _better(r, moved):
                    moved = r
            if moved is None:
                break
            best = moved
        self._quick[group] = best
        return best


def _grid_neighbours(tilings, index) -> list:
    """For each tiling, the menu tilings that differ in one dimension by one
    step of that dimension's sorted extents (None, 'untiled', sorts last)."""
    if not tilings:
        return []
    nd = len(tilings[0].sizes)
    key = lambda s: math.inf if s is None else s  # noqa: E731
    values = [sorted({t.sizes[d] for t in tilings}, key=key) for d in range(nd)]
    pos = [{v: i for i, v in enumerate(vs)} for vs in values]
    out = []
    for t in tilings:
        nb = []
        for d in range(nd):
            i = pos[d][t.sizes[d]]
            for j in (i - 1, i + 1):
                if 0 <= j < len(values[d]):
                    sizes = list(t.sizes)
                    sizes[d] = values[d][j]
                    k = index.get(Tiling(tuple(sizes)))
                    if k is not None:
                        nb.append(k)
        out.append(tuple(nb))
    return out
