"""Breaking a near tie between solvers' answers by robustness to the cost model's errors.

``auto`` runs the ILP and beam search on one cost model.  When their answers differ
and their predicted costs are within ``cost_params.auto_tie`` of each other, the model
cannot tell them apart: its constants are measured, not exact, and a schedule whose
advantage rests on one of them can run far slower when that constant is off.  Each
answer is then priced again under perturbed models: every uncertain parameter of
``CostParams`` (``UNCERTAIN``) scaled by ``auto_spread`` and by its inverse, one at a
time.  Under each model an answer's *ratio* is its cost over the cheaper answer's; the
answer whose worst ratio is smallest wins (ties: the lower nominal cost).  The
parameters that shape the tiling menu (block sizes, tile sizes) are not perturbed, so
every answer's tilings stay priceable.
"""
from __future__ import annotations

import copy
import dataclasses

# the measured weights of the CPU model whose error moves costs most
UNCERTAIN = ("stream_miss_loads", "l2_word_ops", "tile_overhead_ops", "cached_load_ops",
             "first_touch_word_loads", "spill_ops", "llc_keep_fraction")


def _price(model, columns) -> float:
    return sum(model.cost(g, t).total for g, t, *_ in columns)


def _only(tilings: dict):
    """A menu filter keeping only the answers' tilings (priced as in the full menu)."""
    return lambda problem, output, t: t in tilings.get(output, ())


def perturbed_problems(problem) -> list:
    """``(label, problem)`` for each perturbed model (the same Problem, another spec)."""
    spec = problem.spec
    cp = spec.cost_params
    if cp is None or spec.kind != "cpu":
        return []
    out = []
    for name in UNCERTAIN:
        base = getattr(cp, name)
        if not base:
            continue
        for f in (cp.auto_spread, 1.0 / cp.auto_spread):
            v = min(base * f, 1.0) if name == "llc_keep_fraction" else base * f
            p = copy.copy(problem)
            p.spec = dataclasses.replace(spec, cost_params=dataclasses.replace(cp, **{name: v}))
            out.append((f"{name} x{f:.2g}", p))
    return out


def robust_choice(model, answers: list) -> tuple:
    """``answers``: ``[(columns, predicted_cost)]``.  ``(index of the answer to keep,
    worst ratio of each answer, a sentence saying how)``; the cheapest answer's index and
    no ratios when the answers are not a tie."""
    costs = [c for _, c in answers]
    best = min(range(len(answers)), key=lambda i: (costs[i], i))
    cp = model.problem.spec.cost_params
    if len(answers) < 2 or cp is None or not all(c < float("inf") for c in costs):
        return best, None, None
    columns = [sorted(((g.output, g), t) for g, t, *_ in cols) for cols, _ in answers]
    if all(c == columns[0] for c in columns):
        return best, None, None          # one answer, found twice
    lo = costs[best]
    if max(costs) > lo * (1 + cp.auto_tie):
        return best, None, None
    scenarios = perturbed_problems(model.problem)
    if not scenarios:
        return best, None, None
    tilings: dict = {}
    for cols, _ in answers:
        for g, t, *_ in cols:
            tilings.setdefault(g.output, set()).add(t)
    worst = [1.0] * len(answers)
    for _, p in scenarios:
        m = type(model)(p, menu_filter=_only(tilings))
        priced = [_price(m, cols) for cols, _ in answers]
        floor = min(priced)
        for i, v in enumerate(priced):
            worst[i] = max(worst[i], v / floor if floor > 0 else 1.0)
    pick = min(range(len(answers)), key=lambda i: (round(worst[i], 9), costs[i], i))
    how = (f"the answers are within {cp.auto_tie:.0%} in model cost: kept the one whose "
           f"worst cost, over {len(scenarios)} models with one uncertain parameter scaled by "
           f"{cp.auto_spread:g} or 1/{cp.auto_spread:g}, is closest to the best answer's")
    return pick, tuple(worst), how
