"""Exact scheduling: the best partition into groups and tiling of each, at once.

``solve_ilp(model, time_limit, seed, solver="cpsat"|"pulp", ...)`` returns
``(columns, Provenance)`` (``solver.provenance``; ILP details in ``.ilp``);
``solve_ilp_k_best(model, k, ...)`` the ``k`` best distinct answers (no-good cuts).
Steps:

1. greedy (Mullapudi 2016) runs first: its columns join the candidate set and
   warm-start the solver (so the answer is never worse than greedy);
2. candidate groups and feasible tilings are enumerated (``columns.py``,
   with the caps documented there);
3. the model (``formulation.py``) is solved by CP-SAT (default) or PuLP/CBC;
4. if the model is infeasible or nothing is found in time, greedy's answer is
   returned and the fallback and its reason recorded.
"""
from __future__ import annotations

import time

from ..greedy import greedy_groups
from ..provenance import IlpStats, Provenance
from .columns import build_columns, enumerate_groups
from .formulation import formulate

SOLVERS = ("cpsat", "pulp", "highs")


def solve_ilp(model, time_limit: float = 10.0, seed: int = 0, solver: str = "cpsat",
              memory_budget_bytes=None, max_group_size: int = 12, max_groups: int = 4000,
              max_tilings_per_group: int | None = None):
    """The best columns under the model and their Provenance (see the module's steps)."""
    return solve_ilp_k_best(model, 1, time_limit, seed, solver, memory_budget_bytes,
                            max_group_size, max_groups, max_tilings_per_group)[0]


def solve_ilp_k_best(model, k: int, time_limit: float = 10.0, seed: int = 0,
                     solver: str = "cpsat", memory_budget_bytes=None, max_group_size: int = 12,
                     max_groups: int = 4000, max_tilings_per_group: int | None = None) -> list:
    """Up to ``k`` distinct answers, best first: after each, a no-good cut excludes its
    set of columns and the model is solved again (the time left after building the
    model is shared among the solves).  Each answer's Provenance has its ``rank`` (0 for
    the best), objective, bound and gap; the first is what ``solve_ilp`` returns.  Where
    no answer is found in time, the first falls back to greedy's and the search stops."""
    from ...errors import SolverError
    if solver not in SOLVERS:
        raise SolverError(f"unknown ILP solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    t0 = time.perf_counter()
    problem = model.problem
    if max_tilings_per_group is None:
        # without a memory budget only a group's cheapest tiling can be chosen
        max_tilings_per_group = 1 if memory_budget_bytes is None and k == 1 else 6
    greedy = greedy_groups(model)
    feasible = model.feasible
    # Column generation may use up to 60% of the limit (greedy included);
    # the solver gets the rest.
    deadline = t0 + 0.6 * time_limit
    groups = enumerate_groups(problem, max_group_size, max_groups, feasible, deadline)
    cut = enumerate_groups.last_cut
    extra = [(g, t) for g, t, _ in greedy.columns]
    cols = build_columns(model, groups, max_tilings_per_group, extra=extra,
                         deadline=t0 + 0.7 * time_limit)
    cut = cut or build_columns.last_cut
    form = formulate(problem, cols, memory_budget_bytes)
    index = {(c.group, c.tiling): j for j, c in enumerate(form.columns)}
    hint = [index[k_] for k_ in extra if k_ in index]
    try:
        form.check(hint)
    except AssertionError:
        hint = []            # greedy's answer breaks the budget: no warm start
    build_s = time.perf_counter() - t0
    if solver == "cpsat":
        from .cpsat import solve_cpsat as run
        solver_name = "cp-sat"
    else:
        from .pulp_solver import solve_pulp
        backend = "highs" if solver == "highs" else "cbc"
        solver_name = "pulp-" + backend

        def run(form, hint, limit, seed, exclude):
            return solve_pulp(form, hint, limit, seed, backend=backend, exclude=exclude)
    answers, exclude = [], []
    for rank in range(k):
        left = time_limit - (time.perf_counter() - t0)
        remaining = max(0.05, left / (k - rank))
        res = run(form, hint if rank == 0 else (), remaining, seed, exclude)
        stats = IlpStats(solver_name, len(form.columns), len(groups), bool(cut),
                         round(build_s, 4), round(res["solve_seconds"], 4))
        if res["chosen"] is None:
            if rank == 0:
                prov = Provenance("ilp", greedy.total, status=res["status"], fallback="greedy",
                                  fallback_reason=f"{solver_name} returned {res['status']} "
                                                  f"within {remaining:.2f} s",
                                  greedy_cost=greedy.total, cost_evaluations=model.evaluations,
                                  ilp=stats)
                answers.append((greedy.columns, prov))
            break
        exclude.append(res["chosen"])
        chosen = sorted(res["chosen"],
                        key=lambda j: problem.funcs.index(form.columns[j].group.output))
        columns = [(form.columns[j].group, form.columns[j].tiling, form.columns[j].cost)
                   for j in chosen]
        prov = Provenance("ilp", res["objective"], status=res["status"],
                          objective=res["objective"], bound=res["best_bound"], gap=res["gap"],
                          greedy_cost=greedy.total, cost_evaluations=model.evaluations,
                          ilp=stats, rank=rank if k > 1 else None)
        answers.append((columns, prov))
    answers.sort(key=lambda a: a[1].predicted_cost)      # a time-cut solve may be worse
    return [(c, p.replace(rank=i) if k > 1 else p) for i, (c, p) in enumerate(answers)]
