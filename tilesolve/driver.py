"""Where the phases are driven from: ``ts.solve_schedule`` and ``ts.compile``.

    model -> analysis -> solver -> lower -> backend

Each phase imports only from the phases to its left, so none of them calls one to
its right; this module sits above them all.  ``solve_schedule`` runs the solver,
then, for a GPU spec, lowers the schedule: a producer whose per-block buffer has no
constant size (``ScheduleError.func``) is computed at root instead, with the members
of its group that it reads, and the schedule is lowered again.  ``compile`` is the
backend's (lower, generate, JIT).  Importing this module imports
``tilesolve.distributed``, which gives compiled pipelines their ``to_dask`` method.
"""
from __future__ import annotations

import weakref

from . import distributed  # noqa: F401  (CompiledPipeline.to_dask)
from .backend.compile import compile  # noqa: A004  (ts.compile)
from .backend.cuda import lower_cuda
from .errors import ScheduleError, SolverError
from .model.schedule_classes import SizeClass, SizeClasses
from .solver import Solution, solve, solve_k_best
from .solver.ranges import ranges_of, solve_range
from .specs import load_spec

__all__ = ["solve_schedule", "compile", "lowerable_schedule", "realize_func"]

_REALIZED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def solve_schedule(pipeline, hw_spec, estimates=None, method: str = "auto",
                   time_limit: float = 10.0, seed: int = 0, k: int = 1, fixed=None,
                   max_classes: int = 3, **options):
    """Solve for a schedule of ``pipeline`` on ``hw_spec`` (a HardwareSpec, a spec
    name or a YAML path).  ``estimates`` maps output and input names to sizes
    (innermost first) and Param names to values; input sizes are inferred from the
    outputs where possible.  ``options`` go to the method (e.g. ``solver="pulp"``,
    ``memory_budget_bytes=...`` for the ILP).  The schedule returned for a GPU spec
    lowers (see the module's docstring).

    ``fixed``: a Schedule of ``pipeline`` that schedules some Funcs (every directive of
    a Func it names is kept; a Func it inlines stays inlined); the method schedules the
    others around them, never fusing a fixed Func with another.  A fixed directive the
    solved schedule cannot take (a loop of a Func left to the solver) is a
    ``ScheduleError`` naming it.

    A range estimate, ``{"out": ([256, 256], [8192, 8192])}`` (min and max sizes), gives
    a ``SizeClasses``: up to ``max_classes`` schedules, each for a class of the output's
    sizes (``solver.ranges``: three point solves, each with a third of ``time_limit``);
    ``ts.compile`` builds them all and dispatches each realize on its sizes.

    ``k > 1``: a list of up to ``k`` distinct schedules, best first under the model
    (the ILP with no-good cuts, whatever ``method`` says), each with its predicted cost
    and ``provenance.rank``; the first is the ILP's answer."""
    if k != 1:
        if method not in ("auto", "ilp"):
            raise SolverError(f"solve_schedule: k={k!r} takes the ILP's k best answers; "
                              f"method={method!r} gives one (use method='ilp' or 'auto')")
        return [lowerable_schedule(pipeline, s)
                for s in solve_k_best(pipeline, hw_spec, estimates, k, time_limit, seed,
                                      fixed, **options)]
    ranges = ranges_of(estimates)
    if ranges:
        if k != 1:
            raise SolverError("solve_schedule: k > 1 is for point estimates, not ranges")
        spec = load_spec(hw_spec)
        classes, out = solve_range(
            lambda est: solve(pipeline, spec, est, method, time_limit / 3, seed, fixed,
                              **options),
            pipeline, spec, estimates, max_classes=max_classes)
        return SizeClasses(pipeline, out, tuple(
            SizeClass(lo, hi, lowerable_schedule(pipeline, sol), sizes, ratio)
            for lo, hi, sol, sizes, ratio in classes), ranges,
            {"method": method, "spec": spec.name, "max_classes": max_classes})
    solution = solve(pipeline, hw_spec, estimates, method, time_limit, seed, fixed, **options)
    return lowerable_schedule(pipeline, solution)


def lowerable_schedule(pipeline, solution: Solution):
    """The schedule of ``solution``; on a GPU spec, with each Func whose per-block
    buffer has no constant size (and the group members it reads) computed at root,
    until lowering accepts it."""
    problem = solution.problem
    at_root: set = set()
    unstaged: set = set()
    for _ in range(2 * len(problem.funcs) + 1):
        sched = solution.schedule(at_root, frozenset(unstaged))
        if not problem.spec.is_gpu:
            return sched
        try:
            lower_cuda(pipeline, sched)
            return sched
        except ScheduleError as e:
            if e.func is not None and e.func in sched.wrappers and e.func not in unstaged:
                unstaged.add(e.func)            # a staged buffer of no constant size
                continue
            if e.func is None or e.func in at_root or e.func not in problem.funcs:
                raise
            at_root = solution.with_root(at_root, e.func)
    return sched


def realize_func(func, sizes, *, spec="host", method: str = "auto", **inputs_and_params):
    """``func.realize(sizes, **inputs)``: the pipeline of ``func`` alone, solved for
    ``spec`` with ``method`` and compiled on the first call (estimates: the Func's own,
    from ``set_estimates``, else ``sizes``; inputs as given), then run; later calls reuse
    the compiled code (solved schedules run at any size) until ``func`` gains a
    definition or the spec or method changes."""
    import numpy as np

    from .model.pipeline import Pipeline
    key = (getattr(spec, "name", spec), method,
           sum(len(p.definitions()) for p in func.parts()))
    hit = _REALIZED.get(func)
    if hit is None or hit[0] != key:
        pipe = Pipeline(func)
        est = {p.name: func.estimates or ([] if func.is_scalar else list(sizes))
               for p in func.parts()}
        for name, v in inputs_and_params.items():
            if name in pipe.images and isinstance(v, np.ndarray):
                est[name] = list(reversed(v.shape))
        hit = _REALIZED[func] = (key, compile(pipe, solve_schedule(pipe, spec, est, method)))
    return hit[1].realize(sizes, **inputs_and_params)
