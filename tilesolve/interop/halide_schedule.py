"""Replay a tilesolve Schedule as Halide scheduling calls on a translated pipeline.

For each Func, from its ``FuncSchedule`` (``model/schedule_types.py``):

=====================================  ===========================================
ours                                   Halide
=====================================  ===========================================
compute inline / root / at(g, v)       (default) / ``compute_root()`` /
                                       ``compute_at(g, Var(v))``
store (when it differs from compute)   ``store_root()`` / ``store_at(g, Var(v))``
memory heap / stack / register         ``store_in(MemoryType.Heap/Stack/Register)``
``Bound(var, min, extent)``            ``bound(Var(var), min, extent)``
stage k's ``Split``                    ``split(old, outer, inner, factor, tail)``
                                       (``tail`` resolved as lowering does:
                                       ``resolve_tail``)
stage k's ``Fuse``                     ``fuse(inner, outer, fused)``
stage k's ``dims`` order               ``reorder(dims...)`` (innermost first)
Dim kind parallel/vectorized/unrolled  ``parallel`` / ``vectorize`` / ``unroll``
=====================================  ===========================================

Stage 0 is the Func itself, stage ``k > 0`` is ``func.update(k - 1)``.  Loops
that come from RVars stay ``hl.RVar`` (Halide needs the distinction).  Not
translated, with a ``ScheduleError`` saying so: GPU loop kinds and ``shared``
memory (the bridge targets Halide's host JIT).  Halide checks legality again
(e.g. races on parallel RVars): its refusal is reported as a ScheduleError
naming the Func and the stage.
"""
from __future__ import annotations

from ..errors import ScheduleError, TilesolveError
from ..model import expr as E
from ..model.schedule_types import Fuse, Split, resolve_tail
from .halide_common import _halide_message, halide_name

__all__ = ["apply_schedule", "schedule_calls"]

_TAILS = {"guard_with_if": "GuardWithIf", "shift_inward": "ShiftInwards", "round_up": "RoundUp"}
_MEMORY = {"heap": "Heap", "stack": "Stack", "register": "Register"}


def apply_schedule(hp, schedule) -> None:
    """Apply ``schedule`` to the translated pipeline ``hp`` (a ``HalidePipeline``).
    A schedule with ``set_codegen(fma=True)`` compiles without ``strict_float``, so
    Halide may fuse multiply-adds as our code then does."""
    src = hp.source
    hp.strict_float = not schedule.codegen.get("fma", False)
    if getattr(schedule, "target", "cpu") != "cpu":
        raise ScheduleError(f"the Halide bridge replays CPU schedules; this one targets "
                            f"{schedule.target!r}")
    for w in getattr(schedule, "wrappers", {}):
        if not schedule.func_schedule(w).is_inline():
            raise ScheduleError(f"the Halide bridge does not translate wrapper Funcs "
                                f"(Schedule.wrap): {w} is scheduled; only inlined wrappers, "
                                "which change nothing, are accepted")
    for name in src.order():
        fs = schedule.func_schedule(name)
        where = f"Func {name}"
        try:
            _apply_func(hp, name, fs)
        except TilesolveError:
            raise
        except Exception as exc:
            raise ScheduleError(f"Halide refused the schedule of {where}: "
                                f"{_halide_message(exc)}") from None
    hp.schedule_source = schedule_calls(hp, schedule)


def _level_loop(hp, level):
    """Halide's LoopLevel of ``level``.  Halide's default stage index (-1) means the
    consumer's last stage; an explicit index for the last stage is refused by
    Halide 21's legality check, so the last stage is given as -1."""
    last = len(hp.source.func(level.func).definitions()) - 1
    stage = -1 if level.stage == last else level.stage
    return hp.hl.LoopLevel(hp.funcs[level.func], hp.hl.Var(halide_name(level.var)), stage)


def _level_text(lvl) -> str:
    if lvl.stage == 0:
        return f"{lvl.func}, {halide_name(lvl.var)}"
    return f"LoopLevel({lvl.func}, {halide_name(lvl.var)}, {lvl.stage})"


def _apply_func(hp, name, fs) -> None:
    hl = hp.hl
    hf = hp.funcs[name]
    func = hp.source.func(name)
    if fs.compute.is_root():
        hf.compute_root()
    elif fs.compute.is_at():
        hf.compute_at(_level_loop(hp, fs.compute))
    elif func.updates and not hp.source.is_output(name):
        raise ScheduleError(f"Func {name} has update definitions and cannot be inlined "
                            "(in Halide or here); schedule it compute_root or compute_at")
    if fs.store != fs.compute and not fs.compute.is_inline():
        if fs.store.is_root():
            hf.store_root()
        elif fs.store.is_at():
            hf.store_at(_level_loop(hp, fs.store))
    if fs.memory in _MEMORY:
        hf.store_in(getattr(hl.MemoryType, _MEMORY[fs.memory]))
    elif fs.memory not in ("auto",):
        raise ScheduleError(f"Func {name}: memory {fs.memory!r} has no Halide CPU equivalent")
    for b in fs.bounds:
        hf.bound(hl.Var(halide_name(b.var)), b.min, b.extent)
    for k, st in enumerate(fs.stages):
        stage = hf if k == 0 else hf.update(k - 1)
        _apply_stage(hp, name, k, func, stage, st)


def _initial_loops(hp, func, k) -> dict:
    """name -> (Halide Var or RVar, is_rvar) for the original loops of stage ``k``."""
    if k == 0:
        return {a.name: (hp.var(a.name), False) for a in func.pure.args}
    d = func.updates[k - 1]
    loops = {}
    if d.rdom is not None:
        entry = hp.rdoms.get(id(d.rdom))
        if entry is None:
            raise ScheduleError(f"Func {func.name} (update {k - 1}): its RDom was not translated")
        h = entry[1]
        for rv in d.rdom.rvars():
            loops[rv.name] = (h[rv.index], True)
    for a in d.args:
        if isinstance(a, E.Var):
            loops[a.name] = (hp.var(a.name), False)
    return loops


def _apply_stage(hp, name, k, func, stage, st) -> None:
    hl = hp.hl
    where = f"Func {name} ({'pure stage' if k == 0 else f'update {k - 1}'})"
    loops = _initial_loops(hp, func, k)
    is_output = hp.source.is_output(name)

    def make(n, is_rvar):
        obj = hl.RVar(halide_name(n)) if is_rvar else hl.Var(halide_name(n))
        return obj

    def get(n):
        if n not in loops:
            raise ScheduleError(f"{where}: the schedule names loop {n!r}, which is not a loop of "
                                f"this stage (loops: {', '.join(loops)})")
        return loops[n]

    for t in st.transforms:
        if isinstance(t, Split):
            old, rv = get(t.old)
            tail = resolve_tail(t.tail, is_update=k > 0, is_rvar=rv, is_output=is_output)
            outer, inner = make(t.outer, rv), make(t.inner, rv)
            stage.split(old, outer, inner, t.factor, getattr(hl.TailStrategy, _TAILS[tail]))
            del loops[t.old]
            loops[t.inner] = (inner, rv)
            loops[t.outer] = (outer, rv)
        elif isinstance(t, Fuse):
            (inner, rv_i), (outer, rv_o) = get(t.inner), get(t.outer)
            fused = make(t.fused, rv_i and rv_o)
            stage.fuse(inner, outer, fused)
            del loops[t.inner], loops[t.outer]
            loops[t.fused] = (fused, rv_i and rv_o)
        else:
            raise ScheduleError(f"{where}: unknown loop transform {t!r}")
    order = [get(d.var)[0] for d in st.dims]
    if len(order) > 1:
        stage.reorder([hl.VarOrRVar(o) for o in order])
    for d in st.dims:
        obj = get(d.var)[0]
        if d.kind == "parallel":
            stage.parallel(obj)
        elif d.kind == "vectorized":
            stage.vectorize(obj)
        elif d.kind == "unrolled":
            stage.unroll(obj)
        elif d.kind != "serial":
            raise ScheduleError(f"{where}: loop {d.var} is {d.kind}; GPU loops are not "
                                "translated to Halide (the bridge targets the host CPU)")


def schedule_calls(hp, schedule) -> str:
    """The Halide scheduling calls ``apply_schedule`` makes, as readable C++-like text."""
    lines = []
    for name in hp.source.order():
        fs = schedule.func_schedule(name)
        calls = []
        if fs.compute.is_root():
            calls.append("compute_root()")
        elif fs.compute.is_at():
            calls.append(f"compute_at({_level_text(fs.compute)})")
        if fs.store != fs.compute and not fs.compute.is_inline():
            calls.append("store_root()" if fs.store.is_root()
                         else f"store_at({_level_text(fs.store)})")
        for k, st in enumerate(fs.stages):
            pre = "" if k == 0 else f"update({k - 1})."
            for t in st.transforms:
                if isinstance(t, Split):
                    calls.append(f"{pre}split({halide_name(t.old)}, {halide_name(t.outer)}, "
                                 f"{halide_name(t.inner)}, {t.factor})")
                else:
                    calls.append(f"{pre}fuse({halide_name(t.inner)}, {halide_name(t.outer)}, "
                                 f"{halide_name(t.fused)})")
            if len(st.dims) > 1:      # apply_schedule always states the order
                calls.append(f"{pre}reorder({', '.join(halide_name(d.var) for d in st.dims)})")
            for d in st.dims:
                if d.kind in ("parallel", "vectorized", "unrolled"):
                    verb = {"parallel": "parallel", "vectorized": "vectorize", "unrolled": "unroll"}[d.kind]
                    calls.append(f"{pre}{verb}({halide_name(d.var)})")
        if calls:
            lines.append(f"{name}." + "\n    .".join(calls) + ";")
    return "\n".join(lines)
