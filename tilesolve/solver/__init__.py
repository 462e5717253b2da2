"""``solve(pipeline, hw_spec, estimates=None, method="auto", ...)``: the chosen
groups and tilings (a :class:`Solution`), which ``Solution.schedule()`` turns into a
Schedule.  ``ts.solve_schedule`` (``tilesolve/driver.py``) calls it, then checks a GPU
schedule with lowering, which sits to the solver's right.

Methods (all share ``Problem`` preprocessing, the inlining trials of
``inline_refine`` after a greedy grouping, and ``CostModel``):

* ``"greedy"``: Mullapudi 2016's agglomerative grouping with joint tiling;
* ``"ilp"``: the exact partition + tiling model (CP-SAT; ``solver="pulp"``
  for CBC), warm-started with greedy, under ``time_limit``;
* ``"beam"``: beam search over groupings (Adams 2019 / Anderson 2021), never
  worse than greedy, under ``time_limit``;
* ``"auto"``: ILP (when OR-tools imports) and beam within ``time_limit``
  together (the ILP gets up to 60% of it), returning the answer with the
  lower predicted cost, or, when the two are within ``cost_params.auto_tie``,
  the one whose cost holds up best when the model's measured constants are off
  (``robust.py``; ``provenance.robust`` says so); ``provenance.candidates``
  records both.

The Schedule's ``provenance`` is a typed ``solver.provenance.Provenance``
(method, predicted cost, solve time, any fallback taken, each group's cost
split); the Schedule prints as the code a user would write.
Same inputs give the same schedule.
"""
from __future__ import annotations

import time
from typing import NamedTuple

from ..errors import SolverError
from .cost import CostModel
from .inline_refine import refine_inlining
from .problem import Problem
from .provenance import Provenance
from .schedule_gen import in_group_callees, schedule_from_columns

METHODS = ("auto", "greedy", "ilp", "beam")


def available_methods() -> list[str]:
    out = ["greedy", "beam"]
    try:
        from . import ilp  # noqa: F401
        import ortools  # noqa: F401
        out.append("ilp")
    except ImportError:
        pass
    return out + ["auto"]


def _resolve_spec(hw_spec):
    from ..specs import load_spec
    return load_spec(hw_spec)


def method_options(method: str) -> tuple:
    """The keyword options ``method`` takes (``"auto"``: the ILP's, its default)."""
    import inspect
    if method == "greedy":
        return ()
    if method == "beam":
        from .beam import solve_beam as fn
    else:
        from .ilp import solve_ilp as fn
    skip = ("model", "time_limit", "seed")
    return tuple(n for n, p in inspect.signature(fn).parameters.items()
                 if n not in skip and p.kind is p.POSITIONAL_OR_KEYWORD)


def _check_arguments(pipeline, estimates, method, time_limit, seed, options) -> None:
    """``SolverError`` naming the argument for anything ``solve_schedule`` cannot use."""
    from ..model.func import Func
    from ..model.pipeline import Pipeline
    if not isinstance(pipeline, Pipeline):
        hint = " (wrap it: ts.Pipeline(f))" if isinstance(pipeline, Func) else ""
        raise SolverError(f"solve_schedule: the first argument must be a Pipeline, got "
                          f"{type(pipeline).__name__}{hint}")
    if not isinstance(method, str) or method not in METHODS:
        raise SolverError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if estimates is not None and not isinstance(estimates, dict):
        raise SolverError(f"solve_schedule: estimates must be a dict mapping output and input "
                          f"names to sizes (innermost first), e.g. {{'out': [1920, 1080]}}; "
                          f"got {type(estimates).__name__} {estimates!r}")
    if (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
            or not time_limit > 0):
        raise SolverError(f"solve_schedule: time_limit must be a positive number of seconds, "
                          f"got {time_limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SolverError(f"solve_schedule: seed must be an int, got {seed!r}")
    valid = method_options(method)
    unknown = sorted(k for k in options if k not in valid)
    if unknown:
        takes = f"its options are {', '.join(valid)}" if valid else "it takes no options"
        raise SolverError(f"solve_schedule: unknown {method} option {unknown[0]!r} (method="
                          f"{method!r}); {takes}")


class Solution(NamedTuple):
    """What :func:`solve` chose: ``columns`` (group, tiling, cost) of ``problem``,
    priced by ``model``."""
    problem: Problem
    columns: list
    provenance: Provenance
    model: CostModel | None = None

    def schedule(self, at_root=frozenset(), unstaged=frozenset()):
        """The Schedule of the chosen columns; on a GPU spec the Funcs in ``at_root``
        are computed at root, in kernels of their own, and the buffers of ``unstaged``
        (wrapper names, ``Schedule.wrap``'s) are read from global memory, not staged."""
        return schedule_from_columns(self.problem, self.columns, self.provenance,
                                     at_root=at_root, model=self.model, unstaged=unstaged)

    def with_root(self, at_root: set, name: str) -> set:
        """``at_root`` plus ``name`` and the members of its group that it reads."""
        return at_root | in_group_callees(self.problem, self.columns, name)


def _check_fixed(pipeline, fixed) -> None:
    from ..model.schedule import Schedule
    if fixed is None:
        return
    if not isinstance(fixed, Schedule):
        raise SolverError(f"solve_schedule: fixed must be a ts.Schedule of the pipeline (the "
                          f"Funcs it schedules keep their schedule), got {fixed!r}")
    if fixed.pipeline is not pipeline:
        raise SolverError("solve_schedule: the fixed schedule was made for a different "
                          "Pipeline")
    if fixed.wrappers:
        names = ", ".join(f"{w} (of {src})" for w, (src, _) in fixed.wrappers.items())
        raise SolverError(f"solve_schedule: the fixed schedule wraps {names} "
                          "(Schedule.wrap); the solvers complete schedules of the pipeline's "
                          "own Funcs: wrap after solving (s = solve_schedule(...); "
                          "s.wrap(...))")


def solve(pipeline, hw_spec, estimates=None, method: str = "auto",
          time_limit: float = 10.0, seed: int = 0, fixed=None, **options) -> Solution:
    """Solve for the groups and tilings of ``pipeline`` on ``hw_spec`` (a
    HardwareSpec, a spec name or a YAML path).  ``estimates`` maps output and
    input names to sizes (innermost first); input sizes are inferred from the
    outputs where possible.  ``fixed``: a Schedule whose scheduled Funcs keep their
    schedule, every method completing the rest (``Problem``'s ``fixed``).  ``options``
    go to the method (e.g. ``solver="pulp"``, ``memory_budget_bytes=...`` for the ILP)."""
    _check_arguments(pipeline, estimates, method, time_limit, seed, options)
    _check_fixed(pipeline, fixed)
    spec = _resolve_spec(hw_spec)
    t0 = time.perf_counter()
    problem, model, res = refine_inlining(Problem(pipeline, spec, estimates, fixed=fixed))
    if method == "auto":
        columns, prov = _solve_auto(model, time_limit, seed, t0, **options)
    elif method == "greedy":
        prov = Provenance("greedy", res.total, greedy_cost=res.total,
                          merges=res.merges, cost_evaluations=res.evaluations)
        columns = res.columns
    elif method == "beam":
        from .beam import solve_beam
        columns, prov = solve_beam(model, time_limit=time_limit, seed=seed, **options)
    else:
        from .ilp import solve_ilp
        try:
            columns, prov = solve_ilp(model, time_limit=time_limit, seed=seed, **options)
        except ImportError as e:       # OR-tools (cpsat), PuLP or HiGHS is not installed
            raise SolverError(f"method 'ilp' (solver {options.get('solver', 'cpsat')!r}) needs "
                              f"the package {e.name or e}, which does not import: {e}; install "
                              "it, or use method='greedy' or 'beam'") from None
    prov = prov.replace(solve_time=round(time.perf_counter() - t0, 4), spec=spec.name)
    return Solution(problem, columns, prov, model)


def solve_k_best(pipeline, hw_spec, estimates=None, k: int = 5, time_limit: float = 10.0,
                 seed: int = 0, fixed=None, **options) -> list:
    """The ``k`` best distinct Solutions under the model, best first (the ILP with
    no-good cuts: ``solver.ilp.solve_ilp_k_best``); fewer when the model has fewer
    distinct answers or the time runs out.  ``options`` are the ILP's."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SolverError(f"solve_schedule: k must be a positive int, got {k!r}")
    _check_arguments(pipeline, estimates, "ilp", time_limit, seed, options)
    _check_fixed(pipeline, fixed)
    if "ilp" not in available_methods():
        raise SolverError("k > 1 needs the ILP (OR-tools CP-SAT or PuLP), which does not "
                          "import here")
    from .ilp import solve_ilp_k_best
    spec = _resolve_spec(hw_spec)
    t0 = time.perf_counter()
    problem, model, _ = refine_inlining(Problem(pipeline, spec, estimates, fixed=fixed))
    answers = solve_ilp_k_best(model, k, time_limit=time_limit, seed=seed, **options)
    dt = round(time.perf_counter() - t0, 4)
    return [Solution(problem, cols, prov.replace(solve_time=dt, spec=spec.name), model)
            for cols, prov in answers]


def _solve_auto(model, time_limit: float, seed: int, t0: float, **options):
    """ILP (when OR-tools imports) and beam on one CostModel, within ``time_limit``
    together; the cheaper answer in model cost wins, unless the two are within
    ``cost_params.auto_tie``: then the one more robust to the model's errors
    (``robust.robust_choice``); every answer recorded."""
    from .beam import solve_beam
    from .provenance import Candidate
    from .robust import robust_choice
    runs = []
    if "ilp" in available_methods():
        from .ilp import solve_ilp
        t = time.perf_counter()
        cols, prov = solve_ilp(model, time_limit=0.6 * time_limit, seed=seed, **options)
        runs.append(("ilp", cols, prov, time.perf_counter() - t))
    left = max(0.05 * time_limit, time_limit - (time.perf_counter() - t0))
    t = time.perf_counter()
    cols, prov = solve_beam(model, time_limit=left, seed=seed)
    runs.append(("beam", cols, prov, time.perf_counter() - t))
    best, worst, how = robust_choice(model, [(c, p.predicted_cost) for _, c, p, _ in runs])
    cands = tuple(Candidate(m, p.predicted_cost, round(dt, 4), p.status, i == best,
                            None if worst is None else round(worst[i], 4))
                  for i, (m, _, p, dt) in enumerate(runs))
    _, cols, prov, _ = runs[best]
    return cols, prov.replace(method="auto", candidates=cands, robust=how,
                              cost_evaluations=model.evaluations)


__all__ = ["solve", "solve_k_best", "Solution", "available_methods", "Problem", "CostModel",
           "METHODS"]
