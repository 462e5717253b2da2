"""The candidate columns of the exact model: (group, tiling) pairs with costs.

Groups.  A candidate group is an output Func ``o`` plus producers computed
per tile of it, where every member but ``o`` is not a pipeline output and
has *all* its consumers inside the group (Mullapudi's condition generalized
from pairwise merges to any such set), singletons included.  Groups are grown
breadth-first from each Func: a group grows by one producer of a member whose
consumers are all already in it.  Enumeration is bounded by

* ``max_group_size`` members (default 12),
* ``max_groups`` groups in all (default 4000), taken in breadth-first order
  (smaller groups first, then by name), and
* feasibility: a group none of whose tilings satisfies the spec's hard
  constraints is kept out and not grown further.  Adding a member never
  shrinks a tile's footprint, thread block or shared memory, so no larger
  group grown from it could be feasible either (the parallelism constraint
  does not depend on the members); and
* time: enumeration stops growing groups at a deadline (a share of the
  solve's ``time_limit``), so a very wide pipeline gets smaller groups rather
  than a late answer.  The ILP's "optimal" is then optimal over the columns
  enumerated, and the provenance says the enumeration was cut.

What the caps can cut: groups larger than ``max_group_size`` (a long chain of
stencils fused into one tile loop), and, on very wide pipelines, some larger
groups once ``max_groups`` is reached.  Singletons are never cut, so every
partition into singletons stays reachable, and the greedy answer's groups are
always added (so the ILP is never worse than greedy in model cost).

Tilings.  Each group's tilings come from ``solver.tilings`` (the same menu
greedy uses), pruned to the feasible ones (hard constraints of the spec), and
then to the ``max_tilings_per_group`` cheapest.  A group's other tilings can
never be chosen over its cheapest one unless a coupling constraint
distinguishes them, and the only one (the memory budget) depends on the
group, not its tiling: so ``solve_ilp`` keeps one tiling per group (exact)
without a budget and 6 with one (for robustness).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..space import Group


@dataclass
class Column:
    group: Group
    tiling: object
    cost: object
    root_bytes: int          # bytes of the group's output buffer if it is an intermediate


def enumerate_groups(problem, max_group_size: int = 12, max_groups: int = 4000,
                     feasible=None, deadline: float | None = None) -> list[Group]:
    """Candidate groups, breadth first; ``feasible(group)`` (optional) prunes;
    growth stops at ``deadline`` (a ``time.perf_counter()`` value)."""
    import time
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
    cut = False
    while frontier and size < max_group_size and len(out) < max_groups:
        nxt = []
        for o, members in frontier:
            if deadline is not None and time.perf_counter() > deadline:
                cut = True
                break
            cands = set()
            for m in members:
                for p in callees[m]:
                    if p in consumers and p not in members and problem.can_join_group(p, o):
                        if consumers[p] <= members:
                            cands.add(p)
            for p in sorted(cands):
                g = members | {p}
                if (o, g) in seen:
                    continue
                seen.add((o, g))
                if feasible is not None and not feasible(Group(o, g)):
                    continue
                out.append(Group(o, g))
                nxt.append((o, g))
                if len(out) >= max_groups:
                    break
            if len(out) >= max_groups:
                break
        if cut:
            break
        frontier = sorted(nxt, key=lambda og: (og[0], sorted(og[1])))
        size += 1
    enumerate_groups.last_cut = cut or bool(frontier and len(out) >= max_groups)
    return out


def build_columns(model, groups, max_tilings_per_group: int = 6, extra=(),
                  deadline: float | None = None) -> list[Column]:
    """Feasible columns of ``groups`` (plus ``extra`` (group, tiling) pairs,
    always included).  Past ``deadline`` only singletons are still costed,
    so every partition into singletons stays available."""
    import time
    problem = model.problem
    build_columns.last_cut = False
    cols: list[Column] = []
    keys = set()

    def root_bytes(g):
        if problem.is_output(g.output):
            return 0
        return problem.region_points(g.output) * problem.bytes_per_point(g.output)

    for g in groups:
        if (deadline is not None and len(g.members) > 1
                and time.perf_counter() > deadline):
            build_columns.last_cut = True
            continue
        for t, c in model.cheapest(g, max_tilings_per_group):
            keys.add((g, t))
            cols.append(Column(g, t, c, root_bytes(g)))
    for g, t in extra:
        if (g, t) not in keys:
            c = model.cost(g, t)
            keys.add((g, t))
            cols.append(Column(g, t, c, root_bytes(g)))
    return cols
