"""What lowering needs from a Schedule, resolved once (``Plan``).

Compute levels become one of:

* ``("root",)``: outside every loop, before the first statement that uses it;
* ``("at", consumer, var, stage)`` resolved later from the consumer's
  stage nest (``var`` is the schedule's short loop name, ``stage`` 0 for the
  pure stage, ``k`` for update ``k - 1``);
* ``("innermost",)``: a Func with update definitions left at the default
  ``inline`` level (e.g. ``ts.sum``): as in Halide it cannot be substituted,
  so it is computed (and stored) around each statement that uses it, the
  innermost loop level of its users.
* ``("inline",)``: substituted into its callers.

A schedule with wrapper Funcs (``Schedule.wrap``) is lowered as its ``view``:
``plan.pipeline`` is that Pipeline (the user's when there are no wrappers).

``schedule=None`` gives the naive schedule: every Func computed and stored
at root, its stages' default loops, all serial.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ScheduleError
from ..model.pipeline import Pipeline
from ..model.schedule import default_stage_schedules


@dataclass
class Plan:
    pipeline: Pipeline
    target: str
    order: list                 # Func names, producers first
    outputs: tuple
    inlined: dict               # name -> Func (substituted)
    compute: dict               # name -> level tuple
    store: dict                 # name -> level tuple
    memory: dict                # name -> memory kind ("auto", "heap", ...)
    bounds: dict                # name -> {var: (min, extent)}
    stages: dict                # name -> tuple of StageSchedule
    notes: list = field(default_factory=list)

    def func(self, name):
        return self.pipeline.func(name)

    def realized(self):
        """Non-inlined Funcs, producers first."""
        return [n for n in self.order if n not in self.inlined]


def _level(lvl) -> tuple:
    if lvl.kind == "root":
        return ("root",)
    if lvl.kind == "inline":
        return ("inline",)
    return ("at", lvl.func, lvl.var, lvl.stage)


def make_plan(pipeline: Pipeline, schedule=None, target: str | None = None) -> Plan:
    order = pipeline.order()
    outputs = pipeline.output_names
    if schedule is None:
        stages = {n: default_stage_schedules(pipeline.func(n)) for n in order}
        return Plan(pipeline, target or "cpu", order, outputs, {}, {n: ("root",) for n in order},
                    {n: ("root",) for n in order}, {n: "auto" for n in order},
                    {n: {} for n in order}, stages)
    if schedule.pipeline is not pipeline:
        raise ScheduleError("the schedule was made for another Pipeline "
                            f"(outputs {', '.join(schedule.pipeline.output_names)})")
    if hasattr(schedule, "validate"):
        schedule.validate()
    # the Pipeline with the schedule's wrapper Funcs (``Schedule.wrap``): the same
    # outputs, inputs and Params, some Funcs reading a wrapper instead of its source
    pipeline = getattr(schedule, "view", pipeline)
    order, outputs = pipeline.order(), pipeline.output_names
    plan = Plan(pipeline, target or getattr(schedule, "target", "cpu"), order, outputs,
                {}, {}, {}, {}, {}, {})
    for n in order:
        fs = schedule.func_schedule(n)
        f = pipeline.func(n)
        comp, store = _level(fs.compute), _level(fs.store)
        if n in outputs and comp != ("root",):
            raise ScheduleError(f"Func {n}: outputs are computed at root, not {fs.compute}")
        if comp == ("inline",):
            if f.updates:
                comp = store = ("innermost",)
                plan.notes.append(f"{n} has update definitions and is not scheduled: computed "
                                  "at the innermost loop of each statement that uses it")
            else:
                plan.inlined[n] = f
        plan.compute[n], plan.store[n] = comp, store
        plan.memory[n] = fs.memory
        plan.bounds[n] = {b.var: (b.min, b.extent) for b in fs.bounds}
        plan.stages[n] = fs.stages
    return plan
