"""Solve a Formulation with OR-tools CP-SAT.

Determinism: one search worker (``num_workers=1``) with a fixed
``random_seed``, and the time limit given as CP-SAT's *deterministic* time
(``max_deterministic_time``), so the same inputs and seed give the same
answer on any machine load; a wall-clock limit of twice that is a backstop.
The greedy solution is given as a hint (and the hint is checked to be
feasible, so CP-SAT starts from it: the answer is never worse than greedy).
"""
from __future__ import annotations

import time

from ortools.sat.python import cp_model


def solve_cpsat(form, hint=(), time_limit: float = 10.0, seed: int = 0, exclude=()) -> dict:
    """``exclude``: answers (lists of chosen column indices) the solution must differ
    from, each a no-good cut (``sum of its x <= its size - 1``)."""
    m = cp_model.CpModel()
    x = [m.NewBoolVar(f"x{j}") for j in range(len(form.columns))]
    for f, js in form.cover.items():
        m.AddExactlyOne(x[j] for j in js)
    for chosen in exclude:
        m.Add(sum(x[j] for j in chosen) <= len(chosen) - 1)
    if form.budget is not None:
        m.Add(sum(int(form.columns[j].root_bytes) * x[j] for j in range(len(x))
                  if form.columns[j].root_bytes) <= int(form.budget))
    m.Minimize(sum(form.int_cost(j) * x[j] for j in range(len(x))))
    hint = set(hint)
    if hint:
        for j in range(len(x)):
            m.AddHint(x[j], j in hint)
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = 1
    p.random_seed = seed
    p.max_deterministic_time = float(time_limit)
    p.max_time_in_seconds = float(time_limit) * 2 + 1
    t0 = time.perf_counter()
    status = solver.Solve(m)
    dt = time.perf_counter() - t0
    name = solver.StatusName(status).lower()
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {"status": name, "chosen": None, "solve_seconds": dt}
    chosen = [j for j in range(len(x)) if solver.Value(x[j])]
    obj = form.objective(chosen)
    bound = solver.BestObjectiveBound() / form.scale
    gap = 0.0 if status == cp_model.OPTIMAL else max(0.0, (obj - bound) / obj) if obj else 0.0
    return {"status": "optimal" if status == cp_model.OPTIMAL else "feasible", "chosen": chosen,
            "objective": obj, "best_bound": min(bound, obj), "gap": gap, "solve_seconds": dt}
