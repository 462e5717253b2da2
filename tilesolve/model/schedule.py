"""The Schedule value: how to compute a Pipeline, separate from the algorithm.

    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[blur_y].tile(x, y, xo, yo, xi, yi, 256, 32).parallel(yo).vectorize(xi, 16)
    s[blur_x].compute_at(blur_y, xo).vectorize(x, 16)

``s[f]`` (a Func or its name) is a builder handle (``schedule_handle.py``);
each directive is checked, recorded (``s.directives``, a replayable trace)
and turns the Func's frozen ``FuncSchedule`` into a new one.  The data model
lowering consumes is in ``schedule_types.py``; ``s.func_schedule(name)``
returns a Func's value.  Defaults: outputs are computed and stored at root,
every other Func is inlined; loops are the definitions' own, all serial.

``s.wrap(source, consumers)`` (Halide's ``in()``, ``model/wrap.py``) adds a wrapper
Func that the consumers read instead of ``source``; ``s.view`` is the Pipeline with the
wrappers, which the checks and lowering use (``s.pipeline`` stays the user's).

``print(s)`` shows the equivalent Python code; ``to_json``/``from_json``
round-trip exactly; ``loop_nest(sizes)`` shows the loops of the lowered program with
concrete bounds (``lower/loopnest.py``, which the package root attaches).
"""
from __future__ import annotations

import copy as _copy

from ..errors import ScheduleError
from . import expr as E
from .pipeline import Pipeline
from .schedule_facts import stage_facts
from .schedule_handle import FuncHandle, StageHandle  # noqa: F401
from .schedule_levels import check_all, validate
from .schedule_types import (TARGETS, Bound, Dim, Directive, FuncSchedule,  # noqa: F401
                             Fuse, LoopLevel, Split, StageSchedule)

__all__ = ["Schedule", "LoopLevel", "Split", "Fuse", "Dim", "StageSchedule", "FuncSchedule",
           "Bound", "Directive", "default_func_schedule"]


def default_stage_schedules(func) -> tuple:
    """The stages' default loops: pure Vars; for updates RVars then pure Vars."""
    stages = [StageSchedule((), tuple(Dim(a.name) for a in func.pure.args))]
    for u in func.updates:
        dims = []
        if u.rdom is not None:
            dims.extend(Dim(rv.name, "serial", True) for rv in u.rdom.rvars())
        dims.extend(Dim(a.name) for a in u.args if isinstance(a, E.Var))
        stages.append(StageSchedule((), tuple(dims)))
    return tuple(stages)


def default_func_schedule(func, is_output: bool) -> FuncSchedule:
    """Outputs are computed and stored at root, every other Func is inlined."""
    level = LoopLevel.root() if is_output else LoopLevel.inline()
    return FuncSchedule(level, level, "auto", default_stage_schedules(func), ())


CODEGEN_OPTIONS = {
    "unroll_threshold": lambda v: (isinstance(v, int) and not isinstance(v, bool)
                                   and 1 <= v <= 10000),
    "fma": lambda v: isinstance(v, bool),
    "accumulator_tiles": lambda v: isinstance(v, bool),
    "free_early": lambda v: isinstance(v, bool),
    "window_gathers": lambda v: isinstance(v, bool),
}
"""The options :meth:`Schedule.set_codegen` takes, each with its check."""
_CODEGEN_RULES = {"unroll_threshold": "an int in [1, 10000]", "fma": "a bool",
                  "accumulator_tiles": "a bool", "free_early": "a bool",
                  "window_gathers": "a bool"}


class TupleHandle:
    """``s[f]`` of a Tuple Func: each directive is applied to every value's Func, in
    order; a directive that returns another handle (``update(i)``) returns theirs, as
    one TupleHandle.  ``packed``: the handle of a packed Tuple's ``f_packed``
    (``model/tuple_pack.py``), which takes the compute and store levels too."""

    _LEVELS = ("compute_root", "compute_at", "store_root", "store_at")

    def __init__(self, handles: tuple, packed=None):
        self._handles = handles
        self._packed = packed

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._packed is not None and name in self._LEVELS:
            level = getattr(self._packed, name)

            def both(*args, **kwargs):
                level(*args, **kwargs)
                getattr(TupleHandle(self._handles), name)(*args, **kwargs)
                return self
            return both
        methods = [getattr(h, name) for h in self._handles]
        if not callable(methods[0]):
            return tuple(methods)

        def apply(*args, **kwargs):
            results = [m(*args, **kwargs) for m in methods]
            if all(r is h for r, h in zip(results, self._handles)):
                return self
            return TupleHandle(tuple(results))
        return apply

    def __repr__(self) -> str:
        return f"TupleHandle({list(self._handles)})"


class Schedule:
    """A pipeline's schedule.

    ``pipeline``: the Pipeline (never mutated).  ``target``: ``"cpu"`` or
    ``"cuda"``.  ``provenance``: a free-form JSON-able dict filled by the
    solvers (method, predicted_cost, solve_time, fallback, status, objective,
    best_bound, gap, columns, groups...).  ``directives``: the recorded calls.
    ``codegen``: options for the code generator that are not loop structure, set with
    :meth:`set_codegen` (``unroll_threshold``: LLVM's loop-unroll threshold for this
    pipeline's CPU code; ``fma``: fused multiply-adds allowed; absent: the defaults).
    """

    def __init__(self, pipeline: Pipeline, target: str = "cpu"):
        if not isinstance(pipeline, Pipeline):
            raise ScheduleError(f"Schedule needs a Pipeline, got {pipeline!r}")
        if target not in TARGETS:
            raise ScheduleError(f"Schedule target must be one of {TARGETS}, got {target!r}")
        self.pipeline = pipeline
        self.target = target
        self.provenance: dict = {}
        self.codegen: dict = {}
        self._defaults: dict[str, FuncSchedule] = {
            n: default_func_schedule(f, pipeline.is_output(n)) for n, f in pipeline.funcs.items()}
        self._funcs: dict[str, FuncSchedule] = dict(self._defaults)
        self._explicit_store: dict[str, LoopLevel] = {}
        self._log: list[Directive] = []
        self._facts: dict[str, tuple] = {}
        self._view: Pipeline = pipeline
        self._wrappers: dict[str, tuple] = {}     # wrapper -> (source, consumers)
        self._wrap_given: dict[str, tuple | None] = {}   # wrapper -> consumers as asked

    # -- handles -------------------------------------------------------------------
    def __getitem__(self, f) -> FuncHandle:
        """``s[f]`` or ``s["f"]``: the builder handle of Func ``f`` (of a Tuple Func: a
        handle that applies each directive to every value's Func)."""
        if getattr(f, "components", None) is not None:
            packed = f.packed
            return TupleHandle(tuple(self[c] for c in f.components),
                               self[packed] if packed is not None else None)
        name = getattr(f, "name", f)
        if not isinstance(name, str) or name not in self._funcs:
            known = ", ".join(self._funcs)
            if name in self.pipeline.images:
                raise ScheduleError(f"{name} is an input of the pipeline; only Funcs are "
                                    f"scheduled (Funcs: {known})")
            raise ScheduleError(f"no Func named {name!r} in this pipeline; Funcs: {known}")
        if getattr(f, "name", None) is not None and \
                (self.pipeline.funcs.get(name) or self._view.funcs[name]) is not f:
            raise ScheduleError(f"Func {name} is not the Func of that name in this pipeline")
        return FuncHandle(self, name)

    # -- wrappers --------------------------------------------------------------------
    def wrap(self, source, consumers=None, name=None) -> FuncHandle:
        """Halide's ``source.in(consumers)``: a wrapper Func ``w(v...) = source(v...)``
        that ``consumers`` (a Func, a name or a list of them; None: every Func that calls
        ``source``) read instead of ``source`` (an ImageParam or a Func, or its name).
        Named ``name``, or ``<source>_in`` (consumers None) or ``<source>_in_<c1>_...``.
        Inlined by default (nothing changes); schedule it through the handle returned
        (``s.wrap("input", ["blur_x"]).compute_at("blur_y", "xo").store_in("shared")``)
        to stage the source, e.g. per GPU block.  The user's Pipeline is not changed:
        ``s.view`` is the Pipeline with the wrappers, which lowering compiles."""
        from . import wrap as W
        src, cons, wname, given = W.resolve(self, source, consumers, name)
        if wname in self._wrappers:
            return FuncHandle(self, wname)
        view = W.with_wrapper(self._view, src, cons, wname)
        fs = default_func_schedule(view.funcs[wname], False)
        funcs = {n: self._funcs.get(n, fs) for n in view.order()}
        where = f"s.wrap({src})"
        check_all(view, funcs, where)
        kwargs = () if wname == W.wrapper_name(src, given) else (("name", ("str", wname)),)
        d = Directive(src, 0, "wrap", tuple(("func", c) for c in given or ()), kwargs)
        self._view, self._funcs = view, funcs
        self._defaults = {**self._defaults, wname: fs}
        self._wrappers = {**self._wrappers, wname: (src, cons)}
        self._wrap_given = {**self._wrap_given, wname: given}
        self._facts = {}
        self._log.append(d)
        return FuncHandle(self, wname)

    @property
    def view(self) -> Pipeline:
        """The Pipeline lowering compiles: ``pipeline`` with the wrapper Funcs of
        :meth:`wrap` (``pipeline`` itself when there are none)."""
        return self._view

    @property
    def wrappers(self) -> dict:
        """``{wrapper name: (source name, tuple of consumer names)}``, in wrap order."""
        return dict(self._wrappers)

    def wrapper_request(self, name: str):
        """The consumers ``wrap`` was given for wrapper ``name`` (None: every caller)."""
        return self._wrap_given[name]

    def _stage_facts(self, name: str) -> tuple:
        facts = self._facts.get(name)
        if facts is None:
            facts = self._facts[name] = stage_facts(self._view, name)
        return facts

    def _commit(self, name: str, new: FuncSchedule, directive: Directive,
                explicit_store: dict | None = None) -> None:
        """Check the schedule with ``name`` replaced by ``new``; then keep it."""
        funcs = dict(self._funcs)
        funcs[name] = new
        up = "" if directive.stage == 0 else f".update({directive.stage - 1})"
        check_all(self._view, funcs, f"s[{name}]{up}.{directive.method}")
        self._funcs = funcs
        if explicit_store is not None:
            self._explicit_store = explicit_store
        self._log.append(directive)

    # -- the values ----------------------------------------------------------------
    def func_schedule(self, name) -> FuncSchedule:
        """The frozen schedule of Func ``name`` (a Func or its name)."""
        name = getattr(name, "name", name)
        try:
            return self._funcs[name]
        except (KeyError, TypeError):
            raise ScheduleError(f"no Func named {name!r} in this pipeline; Funcs: "
                                f"{', '.join(self._funcs)}") from None

    def func_schedules(self) -> dict:
        """``{name: FuncSchedule}`` for every Func (wrappers too), producers first."""
        return dict(self._funcs)

    @property
    def directives(self) -> tuple:
        """The recorded directive calls, in call order (a replayable trace)."""
        return tuple(self._log)

    def is_default(self, name) -> bool:
        """Whether Func ``name`` has its default schedule."""
        name = getattr(name, "name", name)
        return self.func_schedule(name) == self._defaults[name]

    def set_codegen(self, **options) -> "Schedule":
        """Code-generation options of this schedule; None removes one.

        * ``unroll_threshold``: LLVM's loop-unroll size threshold for the CPU code (1
          to 10000; absent: LLVM's own, 300).  The autotuner tries other values.
        * ``fma``: True lets the code generator fuse a float multiply and the add or
          subtract that uses it into one fused multiply-add (LLVM's ``contract``
          flag on the CPU, nvcc's ``--fmad=true`` on CUDA; the CUDA code also divides by
          a constant as a multiplication by its rounded reciprocal).  The result is
          rounded once instead of twice, so it differs from the reference (numpy) in the
          last bits; absent or False: IEEE float as numpy computes it, the default.
        * ``accumulator_tiles``: False leaves out lowering's accumulator tiles
          (``lower/accumulate.py``: a reduction's register tile kept in a local); absent
          or True: the CPU lowering makes them.
        * ``free_early``: False leaves out lowering's early release of buffers
          (``lower/free.py``: each freed after its last reader, not at the end).
        * ``window_gathers``: False loads a gather at float coordinates one lane at a time
          even where its lanes fit one vector's window (``backend/cpu/codegen_memory``:
          ``_window_gather``); absent or True: a window load and a permute where the
          CPU has one.

        ``str(schedule)`` prints them; unknown names raise a ScheduleError."""
        for key, value in options.items():
            check = CODEGEN_OPTIONS.get(key)
            if check is None:
                raise ScheduleError(f"set_codegen: {key!r} is not a code-generation option "
                                    f"(known: {', '.join(sorted(CODEGEN_OPTIONS))})")
            if value is None:
                self.codegen.pop(key, None)
                continue
            if not check(value):
                raise ScheduleError(f"set_codegen: {key} must be {_CODEGEN_RULES[key]} or None, "
                                    f"got {value!r}")
            self.codegen[key] = value
        return self

    def validate(self) -> "Schedule":
        """Whole-schedule checks (lowering calls this): inlined Funcs carry no
        loop schedule, and every use of a Func computed at a loop is inside it."""
        validate(self._view, self._funcs, self._explicit_store, self._defaults)
        return self

    def copy(self) -> "Schedule":
        """An independent copy (directives, values and provenance)."""
        new = object.__new__(Schedule)
        new.__dict__.update(self.__dict__)
        new.provenance = _copy.deepcopy(self.provenance)
        new._funcs = dict(self._funcs)
        new._explicit_store = dict(self._explicit_store)
        new._log = list(self._log)
        new.codegen = dict(self.codegen)
        return new

    def __eq__(self, other) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return (self.pipeline is other.pipeline and self.target == other.target
                and self._log == other._log and self._funcs == other._funcs
                and self.provenance == other.provenance and self.codegen == other.codegen)

    __hash__ = None  # mutable builder

    # -- text ----------------------------------------------------------------------
    def __str__(self) -> str:
        from .schedule_print import schedule_code
        return schedule_code(self)

    def __repr__(self) -> str:
        return (f"<Schedule of {', '.join(self.pipeline.output_names)} for {self.target}: "
                f"{len(self._log)} directives>")

    def explain(self) -> str:
        """Where the schedule came from and what it does, in words."""
        from .schedule_print import explain
        return explain(self)

    def to_json(self) -> str:
        """The schedule as JSON text (``from_json`` rebuilds it exactly)."""
        from .schedule_io import to_json
        return to_json(self)

    @staticmethod
    def from_json(text: str, pipeline: Pipeline) -> "Schedule":
        """Rebuild a schedule of ``pipeline`` from ``to_json`` text by replaying
        its directives."""
        from .schedule_io import from_json
        return from_json(text, pipeline)
