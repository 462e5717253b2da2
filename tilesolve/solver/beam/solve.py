"""``solve_beam``: greedy, then beam passes from coarse to fine, then the best.

Anderson 2021's hierarchical search, on our space (groups + one tiling each):

1. Greedy (Mullapudi 2016) runs first, on the same CostModel: it costs
   every singleton on the full tiling menu (memoized for the search) and
   gives the incumbent answer, whose decisions are pinned in every beam.
2. Pass 1 (coarse) decides the *grouping*: a beam search where a grown
   group's tiling is only searched near its parent's (``TilingSearch.quick``
   with hash depth ``hash_depth``, -1 by default: no sampling) and a group
   is costed exactly once it is closed (``settle``).
3. Fine pass over tilings: the grouping of each of the ``fine_top`` best
   final states is frozen and every group gets its best tiling over the
   full menu; the cheapest such answer is the incumbent.
4. Passes 2..``passes`` (Anderson's freezing): the decisions of every Func
   outside the most expensive groups of the incumbent (the
   ``ceil(log2(groups + 1)) + 1`` costliest, plus their direct producers)
   are frozen and the rest is searched again with a finer structural hash
   (one depth more per pass: more tilings sampled where the cost is), then
   step 3 again.
5. ``restarts`` more unfrozen passes with seeds ``seed + 1, ...`` and a
   sampling hash (other samples; off by default).
6. The best exact answer is returned, or greedy's if that is cheaper
   (never worse than greedy in model cost); ``provenance.beam.source`` says
   which.

A time limit bounds the search: a pass past the deadline completes its
states cheaply (remaining Funcs as singletons) and no further pass starts;
greedy itself is not limited.
"""
from __future__ import annotations

import math
import time

from ...errors import SolverError
from ..greedy import greedy_groups
from ..provenance import BeamRun, BeamStats, Provenance
from ..space import Tiling
from .search import PassStats, beam_pass
from .state import Space
from .tiling_search import TilingSearch

MENUS = ("quick", "full")


def _columns(space: Space, search: TilingSearch, state) -> list:
    """Exact columns of a complete state: (Group, best Tiling, Cost) per group,
    in the pipeline order of the group outputs."""
    cols = []
    for g in sorted(state.groups, key=lambda g: space.index[g.output]):
        best = search.full(g)
        if best is None:           # a singleton no tiling makes feasible: greedy's fallback
            t = Tiling.untiled(len(space.problem.regions[g.output]))
            best = (t, search.model.cost(g, t))
        cols.append((g, best[0], best[1]))
    return cols


def _score(columns) -> tuple:
    bad = sum(1 for _, _, c in columns if not math.isfinite(c.total))
    return (bad, sum(c.total for _, _, c in columns if math.isfinite(c.total)))


def _frozen(space: Space, columns) -> dict:
    """Decisions to freeze: all but those of the costliest groups' Funcs and
    of their direct producers."""
    ranked = sorted(columns, key=lambda c: (-c[2].total, c[0].output))
    k = math.ceil(math.log2(len(ranked) + 1)) + 1
    free = set()
    for g, _, _ in ranked[:k]:
        free |= g.members
        for m in g.members:
            free |= set(space.producers[m])
    decisions = space.decisions_of(columns)
    return {f: d for f, d in zip(space.order, decisions) if f not in free}


def solve_beam(model, time_limit: float = 10.0, seed: int = 0, beam_width: int = 32,
               passes: int = 3, restarts: int = 0, menu: str = "quick", climb: int = 3,
               fine_top: int = 4, pin_greedy: bool = True, hash_depth: int = -1,
               settle: bool = True, *, answers: list | None = None, **unknown):
    """Beam search for a grouping and tilings; returns ``(columns, provenance)``
    like ``solve_ilp``.  Options: ``beam_width`` (states kept per step),
    ``passes`` (1 = coarse pass only; each further pass freezes the cheap
    groups and refines the rest), ``restarts`` (extra coarse passes with other
    seeds), ``menu`` ("quick": sampled tilings while searching, "full": every
    tiling of the menu everywhere), ``climb`` (hill-climbing steps per
    group), ``fine_top`` (final states costed exactly per pass),
    ``pin_greedy`` (keep greedy's partial answers in the beam),
    ``hash_depth`` (structural hash depth of pass 1; -1: no sampling),
    ``settle`` (cost closed groups exactly during the search).

    ``answers`` (keyword only, not a user option of ``solve_schedule``): a list
    to which every exact answer the passes cost is appended, in the order
    found (the ``fine_top`` best final states of each pass), so a caller such
    as ``tilesolve.tune`` can use more of the final beam than its best state."""
    if unknown:
        raise SolverError(f"unknown beam option {sorted(unknown)[0]!r}; expected beam_width, "
                          "passes, restarts, menu, climb, fine_top, pin_greedy, hash_depth or settle")
    for name, v, lo in (("beam_width", beam_width, 1), ("passes", passes, 1),
                        ("restarts", restarts, 0), ("climb", climb, 0), ("fine_top", fine_top, 1),
                        ("hash_depth", hash_depth, -1)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise SolverError(f"beam option {name} must be an int >= {lo}, got {v!r}")
    if menu not in MENUS:
        raise SolverError(f"beam option menu must be one of {', '.join(MENUS)}, got {menu!r}")
    t0 = time.perf_counter()
    deadline = t0 + float(time_limit)
    problem = model.problem
    greedy = greedy_groups(model)
    greedy_s = time.perf_counter() - t0
    search = TilingSearch(model, seed=seed, depth=hash_depth, climb=climb, menu=menu)
    space = Space(problem, search)
    pin = space.decisions_of(greedy.columns) if pin_greedy else None
    stats = PassStats()
    best_cols, best_key, runs = None, None, []

    def run(depth: int, run_seed: int, frozen, label: str):
        nonlocal best_cols, best_key
        search.reseed(run_seed, depth)
        finals = beam_pass(space, beam_width, frozen=frozen, pin=pin, deadline=deadline, stats=stats,
                           settle=settle)
        for s in finals[:fine_top]:
            cols = _columns(space, search, s)
            if answers is not None:
                answers.append(cols)
            key = _score(cols) + (s.key,)
            if best_key is None or key < best_key:
                best_cols, best_key = cols, key
        runs.append(BeamRun(label, depth, run_seed, len(frozen or {}),
                            sum(c.total for _, _, c in best_cols)))

    run(hash_depth, seed, None, "coarse")
    for p in range(1, passes):
        if time.perf_counter() > deadline:
            break
        run(hash_depth + p, seed, _frozen(space, best_cols), f"freeze-{p}")
    for r in range(restarts):
        if time.perf_counter() > deadline:
            break
        run(max(0, hash_depth + 1), seed + 1 + r, None, f"restart-{r + 1}")
    source = "beam"
    gcols = greedy.columns
    if _score(gcols) < best_key[:2]:
        best_cols, source = gcols, "greedy"
    total = sum(c.total for _, _, c in best_cols)
    stats = BeamStats(beam_width, stats.expanded, stats.generated, len(runs), tuple(runs), source,
                      menu, seed, stats.timed_out, round(greedy_s, 4),
                      round(time.perf_counter() - t0, 4))
    prov = Provenance("beam", total, greedy_cost=greedy.total,
                      cost_evaluations=model.evaluations, beam=stats)
    return best_cols, prov
