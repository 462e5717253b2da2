"""``solve_schedule(pipeline, hw_spec, estimates=None, method="auto", ...)``.

Methods (all share ``Problem`` preprocessing and ``CostModel``):

* ``"greedy"``: Mullapudi 2016's agglomerative grouping with joint tiling;
* ``"ilp"``: the exact partition + tiling model (CP-SAT; ``solver="pulp"``
  for CBC), warm-started with greedy, under ``time_limit``;
* ``"beam"``: beam search over groupings (Adams 2019 / Anderson 2021), never
  worse than greedy, under ``time_limit``;
* ``"auto"``: the best available: ``"ilp"`` when OR-tools imports, else greedy.

The returned Schedule's ``provenance`` records the method, predicted cost,
solve time and any fallback taken; it prints as the code a user would write.
Same inputs give the same schedule.
"""
from __future__ import annotations

import time

from ..errors import SolverError
from .cost import CostModel
from .problem import Problem
from .schedule_gen import schedule_from_columns

METHODS = ("auto", "greedy", "ilp", "beam")


def available_methods() -> list[str]:
    out = ["greedy", "beam"]
    try:
        from . import ilp  # noqa: F401
        import ortools  # noqa: F401
        out.append("ilp")
    except ImportError:
        pass
    return out


def _resolve_spec(hw_spec):
    from ..specs import load_spec
    return load_spec(hw_spec)


def solve_schedule(pipeline, hw_spec, estimates=None, method: str = "auto",
                   time_limit: float = 10.0, seed: int = 0, **options):
    """Solve for a schedule of ``pipeline`` on ``hw_spec`` (a HardwareSpec, a
    spec name or a YAML path).  ``estimates`` maps output and input names to
    sizes (innermost first); input sizes are inferred from the outputs where
    possible.  ``options`` go to the method (e.g. ``solver="pulp"``,
    ``memory_budget_bytes=...`` for the ILP)."""
    if method not in METHODS:
        raise SolverError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    spec = _resolve_spec(hw_spec)
    t0 = time.perf_counter()
    problem = Problem(pipeline, spec, estimates)
    model = CostModel(problem)
    if method == "auto":
        method = "ilp" if "ilp" in available_methods() else "greedy"
    if method == "greedy":
        from .greedy import greedy_groups
        res = greedy_groups(model)
        prov = {"method": "greedy", "predicted_cost": res.total, "merges": res.merges,
                "columns_evaluated": res.evaluations}
        columns = res.columns
    elif method == "beam":
        from .beam import solve_beam
        columns, prov = solve_beam(model, time_limit=time_limit, seed=seed, **options)
    else:
        from .ilp import solve_ilp
        columns, prov = solve_ilp(model, time_limit=time_limit, seed=seed, **options)
    prov["solve_time"] = round(time.perf_counter() - t0, 4)
    prov["spec"] = spec.name
    return schedule_from_columns(problem, columns, prov)


__all__ = ["solve_schedule", "available_methods", "Problem", "CostModel", "METHODS"]
