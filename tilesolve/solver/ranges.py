"""Schedules for a range of sizes: estimates ``{"out": ([256, 256], [8192, 8192])}``.

``solve_range`` samples the range at ``samples`` sizes spaced geometrically from the
minimum to the maximum (every ranged name moves together), solves the problem at the
first, middle and last sample (three point solves: the candidates), prices every
candidate at every sample with the cost model, and cuts the samples into at most
``max_classes`` contiguous classes, each given the candidate that is cheapest for it:
the cut minimizes the worst ratio, over the samples, of the class's predicted cost to
the best any candidate reaches at that sample (fewer classes on a tie).  A class's
bounds on the output's scale (``model.schedule_classes.scale_of``) lie half way, in
log scale, between the last sample of one class and the first of the next.
"""
from __future__ import annotations

import itertools
import math
import numbers

from ..errors import SolverError
from ..model.schedule_classes import scale_of
from .cost import CostModel
from .predict import cost_of_terms
from .problem import Problem


def is_range(v) -> bool:
    """``([min sizes], [max sizes])``: a range estimate (a plain list is a point)."""
    return (isinstance(v, tuple) and len(v) == 2
            and all(isinstance(s, (list, tuple)) for s in v))


def ranges_of(estimates) -> dict:
    """name -> (lo, hi) for the range estimates; ``SolverError`` for a malformed one."""
    out = {}
    if not isinstance(estimates, dict):
        return out                     # solve() names the argument's error
    for name, v in estimates.items():
        if not is_range(v):
            continue
        lo, hi = list(v[0]), list(v[1])
        ok = len(lo) == len(hi) and all(
            isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral)
            and not isinstance(a, bool) and 0 < a <= b for a, b in zip(lo, hi))
        if not ok:
            raise SolverError(f"range estimate for {name!r} must be ([min sizes], [max sizes]) "
                              f"of positive ints with min <= max in every dimension, got {v!r}")
        out[name] = (lo, hi)
    return out


def sample(estimates, ranges: dict, t: float) -> dict:
    """The point estimates at ``t`` in [0, 1] of the way through every range."""
    est = {k: v for k, v in estimates.items() if k not in ranges}
    for name, (lo, hi) in ranges.items():
        est[name] = [max(a, min(b, round(a * (b / a) ** t))) for a, b in zip(lo, hi)]
    return est


def best_cut(costs, max_classes: int):
    """``costs[i][j]``: candidate j's cost at sample i.  The contiguous classes of the
    samples (lists of sample indices) with one candidate each that minimize the worst
    ratio to the per-sample best, at most ``max_classes`` of them; (classes, choice,
    worst ratio per class)."""
    n = len(costs)
    best_at = [min(row) for row in costs]

    def worst(lo, hi, j):
        return max(costs[i][j] / best_at[i] for i in range(lo, hi))
    found = None
    for k in range(1, min(max_classes, n) + 1):
        for cuts in itertools.combinations(range(1, n), k - 1):
            bounds = (0,) + cuts + (n,)
            parts, picks, ratios = [], [], []
            for lo, hi in zip(bounds, bounds[1:]):
                j = min(range(len(costs[0])), key=lambda c: (worst(lo, hi, c), c))
                parts.append(list(range(lo, hi)))
                picks.append(j)
                ratios.append(worst(lo, hi, j))
            key = (round(max(ratios), 9), k)
            if found is None or key < found[0]:
                found = (key, parts, picks, ratios)
    return found[1], found[2], found[3]


def price(pipeline, spec, estimates, solution, models: dict) -> float:
    """The model's cost of ``solution``'s columns at ``estimates`` (with its inlining
    choices; ``models`` caches a CostModel per choice), as ``predict_cost`` counts it."""
    inlined = solution.problem.inlined
    model = models.get(inlined)
    if model is None:
        model = models[inlined] = CostModel(Problem(pipeline, spec, estimates, inlined=inlined,
                                                    fixed=solution.problem.fixed))
    return sum(cost_of_terms(model.cost(g, t)) for g, t, _ in solution.columns)


def solve_range(solve_point, pipeline, spec, estimates, *, samples: int = 5,
                max_classes: int = 3):
    """``solve_point(point_estimates) -> Solution``.  The classes (see the module's
    docstring) as a list of ``(lo, hi, Solution, sample estimates, ratio)`` and the
    first ranged output's name (whose scale the bounds refer to)."""
    ranges = ranges_of(estimates)
    if isinstance(max_classes, bool) or not isinstance(max_classes, int) or max_classes < 1:
        raise SolverError(f"solve_schedule: max_classes must be a positive int, got "
                          f"{max_classes!r}")
    outs = [o for o in pipeline.output_names if o in ranges]
    if not outs:
        raise SolverError("a range estimate must be given for an output (the classes cut "
                          "the range of the output's sizes)")
    ts_ = [i / (samples - 1) for i in range(samples)] if samples > 1 else [0.0]
    points = [sample(estimates, ranges, t) for t in ts_]
    solved_at = sorted({0, samples // 2, samples - 1})
    solutions = [solve_point(points[i]) for i in solved_at]
    models = [dict() for _ in points]          # per sample: a CostModel per inlining
    for i, sol in zip(solved_at, solutions):   # the problems solved are reused
        models[i][sol.problem.inlined] = CostModel(sol.problem)
    costs = [[price(pipeline, spec, est, sol, models[i]) for sol in solutions]
             for i, est in enumerate(points)]
    parts, picks, ratios = best_cut(costs, max_classes)
    out = outs[0]
    scales = [scale_of(p[out]) for p in points]
    classes = []
    for k, (part, j, r) in enumerate(zip(parts, picks, ratios)):
        lo = 0.0 if k == 0 else math.sqrt(scales[parts[k - 1][-1]] * scales[part[0]])
        hi = (math.inf if k == len(parts) - 1
              else math.sqrt(scales[part[-1]] * scales[parts[k + 1][0]]))
        classes.append((lo, hi, solutions[j], tuple(points[i][out] for i in part), r))
    return classes, out
