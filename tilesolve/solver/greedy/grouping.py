"""Mullapudi 2016 §4.2: greedy agglomerative grouping (Listings 1 and 2).

Start with every (non-inlined) Func in its own group, each with the tiling
that minimizes its cost (Listing 1's role: tile non-pure Funcs for input
reuse; pure ones may stay untiled).  Then repeatedly evaluate every legal
merge — producer group P into the one consumer group C that reads P's output,
P's output not a pipeline output — choosing the merged group's best tiling
(Listing 2), and apply the merge with the largest benefit
``cost(P) + cost(C) - cost(P ∪ C)``.  Stop when no merge helps.  Ties break
on names, so the result is deterministic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..space import Group, Tiling
from ..tilings import candidate_tilings


@dataclass
class GreedyResult:
    columns: list           # [(Group, Tiling, Cost)] in pipeline order of outputs
    merges: int
    evaluations: int

    @property
    def total(self) -> float:
        return sum(c.total for _, _, c in self.columns)


def best_tiling(model, group: Group):
    """The cheapest feasible tiling of ``group`` (or None): (Tiling, Cost);
    the first in menu order among costs within 1e-9."""
    return model.best(group)


def _merge_candidates(problem, groups: dict):
    """(producer group, consumer group) pairs that may merge."""
    owner = {m: g for g in groups.values() for m in g.members}
    for p in sorted(groups):
        pg = groups[p]
        cons = problem.consumers[p]
        if not cons:
            continue
        cgroups = {owner[c].output for c in cons}
        if len(cgroups) != 1:
            continue
        target = cgroups.pop()
        if all(problem.can_join_group(m, target) for m in sorted(pg.members)):
            yield pg, groups[target]


def greedy_groups(model) -> GreedyResult:
    """Greedy's grouping on ``model``, computed once per model: the ILP's warm start,
    beam's pinned start and ``inline_refine`` all ask for it."""
    if model.greedy is None:
        model.greedy = _greedy_groups(model)
    return model.greedy


def _greedy_groups(model) -> GreedyResult:
    problem = model.problem
    groups: dict = {}
    chosen: dict = {}
    for f in problem.funcs:
        g = Group.singleton(f)
        bt = best_tiling(model, g)
        if bt is None:
            # every tiling violates a hard constraint: keep one anyway (a
            # CPU Func runs untiled; a GPU kernel needs a block: the first
            # of the menu) and let the provenance say it is infeasible
            menu = candidate_tilings(problem, g)
            t = menu[0] if problem.spec.is_gpu and menu else Tiling.untiled(len(problem.regions[f]))
            bt = (t, model.cost(g, t))
        groups[f] = g
        chosen[f] = bt
    merges = 0
    while True:
        best = None
        for pg, cg in _merge_candidates(problem, groups):
            merged = Group(cg.output, pg.members | cg.members)
            bt = best_tiling(model, merged)
            if bt is None:
                continue
            before = chosen[pg.output][1].total + chosen[cg.output][1].total
            benefit = before - bt[1].total
            if not math.isfinite(before):
                benefit = math.inf if math.isfinite(bt[1].total) else -math.inf
            key = (benefit, pg.output, cg.output)
            if benefit > 0 and (best is None or key > best[0]):
                best = (key, pg, cg, merged, bt)
        if best is None:
            break
        _, pg, cg, merged, bt = best
        del groups[pg.output], chosen[pg.output]
        groups[cg.output] = merged
        chosen[cg.output] = bt
        merges += 1
    cols = [(groups[o], chosen[o][0], chosen[o][1]) for o in problem.funcs if o in groups]
    return GreedyResult(cols, merges, model.evaluations)
