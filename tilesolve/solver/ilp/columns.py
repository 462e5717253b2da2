"""The candidate columns of the exact model: (group, tiling) pairs with costs.

Groups.  A candidate group is an output Func ``o`` plus producers computed
per tile of it, where every member but ``o`` is not a pipeline output and
has *all* its consumers inside the group (Mullapudi's condition generalized
from pairwise merges to any such set), singletons included.  Groups are grown
breadth-first from each Func: a group grows by one producer of a member whose
consumers are all already in it.  Enumeration is bounded by

* ``max_group_size`` members (default 6), and
* ``max_groups`` groups in all (default 4000), taken in breadth-first order
  (smaller groups first, then by name).

What the caps can cut: groups larger than ``max_group_size`` (a long chain of
stencils fused into one tile loop), and, on very wide pipelines, some larger
groups once ``max_groups`` is reached.  Singletons are never cut, so every
partition into singletons stays reachable, and the greedy answer's groups are
always added (so the ILP is never worse than greedy in model cost).

Tilings.  Each group's tilings come from ``solver.tilings`` (the same menu
greedy uses), pruned to the feasible ones (hard constraints of the spec), and
then to the ``max_tilings_per_group`` cheapest (default 6): a group's other
tilings can never be chosen over its cheapest one unless a coupling
constraint (the memory budget) distinguishes them, and the budget depends on
the group, not its tiling, so keeping one would already be exact; we keep a
few for robustness and for ``explain()``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..space import Group
from ..tilings import candidate_tilings


@dataclass
class Column:
    group: Group
    tiling: object
    cost: object
    root_bytes: int          # bytes of the group's output buffer if it is an intermediate


def enumerate_groups(problem, max_group_size: int = 6, max_groups: int = 4000) -> list[Group]:
    funcs = problem.funcs
    consumers = problem.consumers
    callees = problem.callees
    seen: set = set()
    out: list[Group] = []
    frontier = []
    for f in funcs:
        g = frozenset([f])
        seen.add((f, g))
        out.append(Group(f, g))
        frontier.append((f, g))
    size = 1
    while frontier and size < max_group_size and len(out) < max_groups:
        nxt = []
        for o, members in frontier:
            cands = set()
            for m in members:
                for p in callees[m]:
                    if p in consumers and p not in members and problem.can_join_group(p):
                        if consumers[p] <= members:
                            cands.add(p)
            for p in sorted(cands):
                g = members | {p}
                if (o, g) in seen:
                    continue
                seen.add((o, g))
                out.append(Group(o, g))
                nxt.append((o, g))
                if len(out) >= max_groups:
                    break
            if len(out) >= max_groups:
                break
        frontier = sorted(nxt, key=lambda og: (og[0], sorted(og[1])))
        size += 1
    return out


def build_columns(model, groups, max_tilings_per_group: int = 6, extra=()) -> list[Column]:
    """Feasible columns of ``groups`` (plus ``extra`` (group, tiling) pairs)."""
    problem = model.problem
    cols: list[Column] = []
    keys = set()

    def root_bytes(g):
        if problem.is_output(g.output):
            return 0
        return problem.region_points(g.output) * problem.bytes_per_point(g.output)

    for g in groups:
        costed = []
        for t in candidate_tilings(problem, g):
            c = model.cost(g, t)
            if c.feasible:
                costed.append((c.total, str(t), t, c))
        costed.sort(key=lambda r: (r[0], r[1]))
        for _, _, t, c in costed[:max_tilings_per_group]:
            keys.add((g, t))
            cols.append(Column(g, t, c, root_bytes(g)))
    for g, t in extra:
        if (g, t) not in keys:
            c = model.cost(g, t)
            keys.add((g, t))
            cols.append(Column(g, t, c, root_bytes(g)))
    return cols
