"""Solve a Formulation with PuLP (CBC, bundled with PuLP; HiGHS if installed).

The greedy solution is given as the initial incumbent (``warmStart``).  CBC
is deterministic for a fixed model; ``time_limit`` is wall-clock (CBC has no
deterministic time), so a run cut by the limit may differ between machines.
"""
from __future__ import annotations

import time

import pulp


def _solver(name: str, time_limit: float, msg: bool = False):
    if name == "highs":
        try:
            s = pulp.HiGHS(msg=msg, timeLimit=time_limit)
            if s.available():
                return s
        except Exception:  # noqa: BLE001 - HiGHS missing: fall back to CBC
            pass
    return pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit, warmStart=True)


def solve_pulp(form, hint=(), time_limit: float = 10.0, seed: int = 0, backend: str = "cbc",
               exclude=()) -> dict:
    """``exclude``: answers the solution must differ from (no-good cuts, as in CP-SAT)."""
    prob = pulp.LpProblem("tilesolve", pulp.LpMinimize)
    if hasattr(prob, "add_variable"):       # PuLP >= 3.3
        x = [prob.add_variable(f"x{j}", cat="Binary") for j in range(len(form.columns))]
    else:
        x = [pulp.LpVariable(f"x{j}", cat="Binary") for j in range(len(form.columns))]
    # objective in the original units (PuLP handles floats)
    prob += pulp.lpSum(form.columns[j].cost.total * x[j] for j in range(len(x)))
    for f, js in form.cover.items():
        prob += pulp.lpSum(x[j] for j in js) == 1, f"cover_{f}"
    if form.budget is not None:
        prob += pulp.lpSum(form.columns[j].root_bytes * x[j] for j in range(len(x))) <= form.budget, "memory"
    for i, chosen in enumerate(exclude):
        prob += pulp.lpSum(x[j] for j in chosen) <= len(chosen) - 1, f"nogood_{i}"
    hint = set(hint)
    for j in range(len(x)):
        x[j].setInitialValue(1 if j in hint else 0)
    t0 = time.perf_counter()
    prob.solve(_solver(backend, time_limit))
    dt = time.perf_counter() - t0
    status = pulp.LpStatus[prob.status].lower()
    if prob.status != pulp.LpStatusOptimal:
        chosen = [j for j in range(len(x)) if (x[j].value() or 0) > 0.5]
        try:
            form.check(chosen)
        except AssertionError:
            return {"status": status, "chosen": None, "solve_seconds": dt}
        obj = form.objective(chosen)
        return {"status": "feasible", "chosen": chosen, "objective": obj, "best_bound": None,
                "gap": None, "solve_seconds": dt}
    chosen = [j for j in range(len(x)) if (x[j].value() or 0) > 0.5]
    obj = form.objective(chosen)
    return {"status": "optimal", "chosen": chosen, "objective": obj, "best_bound": obj,
            "gap": 0.0, "solve_seconds": dt}
