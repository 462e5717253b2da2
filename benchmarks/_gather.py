"""Candidates for a ranking study: autotune's Gatherer, spread over predicted cost.

Shared by ``gpu_rank.py`` (a GPU spec, timed on a GPU machine) and ``cpu_rank.py``
(this machine's spec, timed here).
"""
from __future__ import annotations

import math
import time


def spread_candidates(pipe, est, spec, per_app: int, seconds: float):
    """(problem, up to ``per_app`` distinct modelled candidates of autotune's Gatherer on
    ``spec``): greedy, beam, the ILP on each tile menu and the neighbours of the two best,
    the best predicted first, the rest evenly spaced over the ranking."""
    from tilesolve.solver.inline_refine import refine_inlining
    from tilesolve.solver.problem import Problem
    from tilesolve.tune.candidates import MENUS, Gatherer
    problem = refine_inlining(Problem(pipe, spec, est))[0]
    g = Gatherer(problem, k=4)
    g.greedy()
    g.beam(min(5.0, seconds / 4))
    g.ilp(None, min(10.0, seconds / 4))
    for menu in MENUS:
        g.ilp(menu, min(5.0, seconds / 8))
    stop = time.perf_counter() + seconds / 4
    for base in g.bases()[:2]:
        g.neighbours(base, stop)
    ranked = sorted((c for c in g.candidates()
                     if c.predicted_cost is not None and math.isfinite(c.predicted_cost)),
                    key=lambda c: (c.predicted_cost, c.hash))
    if len(ranked) > per_app:
        picks = sorted({round(i * (len(ranked) - 1) / (per_app - 1)) for i in range(per_app)})
        ranked = [ranked[i] for i in picks]
    return problem, ranked
