"""The Schedule value: how to compute a Pipeline, separate from the algorithm.

    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[blur_y].tile(x, y, xo, yo, xi, yi, 256, 32).parallel(yo).vectorize(xi, 16)
    s[blur_x].compute_at(blur_y, xo).vectorize(x, 16)

The frozen data model lowering consumes is in ``schedule_types.py``
(``LoopLevel``, ``Split``, ``Fuse``, ``Dim``, ``StageSchedule``,
``FuncSchedule``); ``s.func_schedule(name)`` returns a Func's value.
"""
from __future__ import annotations

import copy as _copy

from ..errors import ScheduleError
from .pipeline import Pipeline
from .schedule_types import (TARGETS, Bound, Dim, FuncSchedule, Fuse,  # noqa: F401
                             LoopLevel, Split, StageSchedule)


def default_stage_schedules(func) -> tuple:
    """The stages' default loops: pure Vars; for updates RVars then pure Vars."""
    stages = [StageSchedule((), tuple(Dim(a.name) for a in func.pure.args))]
    for u in func.updates:
        dims = []
        if u.rdom is not None:
            dims.extend(Dim(rv.name, "serial", True) for rv in u.rdom.rvars())
        from .expr import Var
        dims.extend(Dim(a.name) for a in u.args if isinstance(a, Var))
        stages.append(StageSchedule((), tuple(dims)))
    return tuple(stages)


def default_func_schedule(func, is_output: bool) -> FuncSchedule:
    """Outputs are computed and stored at root, every other Func is inlined."""
    level = LoopLevel.root() if is_output else LoopLevel.inline()
    return FuncSchedule(level, level, "auto", default_stage_schedules(func), ())


class Schedule:
    """A pipeline's schedule: per-Func ``FuncSchedule`` values, a target
    (``"cpu"`` or ``"cuda"``) and ``provenance`` (a JSON-able dict: method,
    predicted_cost, solve_time, fallback, status, objective, best_bound, gap...).
    """

    def __init__(self, pipeline: Pipeline, target: str = "cpu"):
        if not isinstance(pipeline, Pipeline):
            raise ScheduleError(f"Schedule needs a Pipeline, got {pipeline!r}")
        if target not in TARGETS:
            raise ScheduleError(f"Schedule target must be one of {TARGETS}, got {target!r}")
        self.pipeline = pipeline
        self.target = target
        self.provenance: dict = {}
        self._funcs: dict[str, FuncSchedule] = {
            n: default_func_schedule(f, pipeline.is_output(n)) for n, f in pipeline.funcs.items()}

    def func_schedule(self, name) -> FuncSchedule:
        """The frozen schedule of Func ``name`` (a Func or its name)."""
        name = getattr(name, "name", name)
        try:
            return self._funcs[name]
        except KeyError:
            raise ScheduleError(f"no Func named {name!r} in this pipeline; Funcs: "
                                f"{', '.join(self._funcs)}") from None

    def copy(self) -> "Schedule":
        new = object.__new__(Schedule)
        new.__dict__.update(self.__dict__)
        new.provenance = _copy.deepcopy(self.provenance)
        new._funcs = dict(self._funcs)
        return new
