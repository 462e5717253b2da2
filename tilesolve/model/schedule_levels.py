"""Legality of compute and store levels, and the whole-schedule check.

``funcs`` below is a dict ``name -> FuncSchedule``.  A level ``at(c, v, k)``
names loop ``v`` of stage ``k`` of Func ``c`` (0: the pure stage); loop ``w``
of the same stage is at or inside ``v`` when ``index(w) <= index(v)`` (dims
are innermost first).  Loops of different stages of ``c`` never nest.
"""
from __future__ import annotations

from ..errors import ScheduleError
from .schedule_facts import reads_transitively, use_sites
from .schedule_types import FuncSchedule, LoopLevel, StageSchedule


def encloses(funcs: dict, outer: LoopLevel, inner: LoopLevel) -> bool:
    """Whether level ``outer`` is at or outside level ``inner`` (following
    the compute levels of the Funcs ``inner`` is nested in)."""
    if inner.kind == "inline":
        return False
    if outer.kind == "root":
        return True
    if outer.kind != "at":
        return False
    st = funcs[outer.func].stages[outer.stage]
    lvl, seen = inner, set()
    while lvl.kind == "at" and lvl.func not in seen:
        seen.add(lvl.func)
        if lvl.func == outer.func:
            return lvl.stage == outer.stage and 0 <= st.index(lvl.var) <= st.index(outer.var)
        lvl = funcs[lvl.func].compute
    return False


def check_target(pipeline, funcs: dict, name: str, level: LoopLevel, what: str) -> None:
    """Call-time checks of ``compute_at``/``store_at(c, v)`` on Func ``name``."""
    where = f"Func {name} (pure stage)"
    c, v = level.func, level.var
    if c not in funcs:
        raise ScheduleError(f"{where}: {what}: no Func named {c!r}; Funcs are {', '.join(funcs)}")
    if c == name:
        raise ScheduleError(f"{where}: {what}: a Func cannot be computed or stored inside its own loops")
    if not reads_transitively(pipeline, name, c):
        users = ", ".join(pipeline.consumers(name)) or "none"
        raise ScheduleError(f"{where}: {what}: {c} does not read {name} (directly or through "
                            f"other Funcs); its consumers are {users}")
    if funcs[c].compute.kind == "inline":
        raise ScheduleError(f"{where}: {what}: {c} is inlined, so it has no loops; give it a "
                            f"compute level first (s[{c}].compute_root())")
    st: StageSchedule = funcs[c].stages[level.stage]
    if st.index(v) < 0:
        label = "its pure stage" if level.stage == 0 else f"its update {level.stage - 1}"
        raise ScheduleError(f"{where}: {what}: {c} has no loop {v} in {label}; its loops "
                            f"are {', '.join(st.loop_names())} (innermost first)")


def check_store(funcs: dict, name: str, fs: FuncSchedule, what: str) -> None:
    """Storage must be at or outside the compute level (``what``: the message prefix)."""
    if fs.compute.kind != "inline" and not encloses(funcs, fs.store, fs.compute):
        raise ScheduleError(f"{what}: storage level {fs.store} of Func {name} is "
                            f"inside compute level {fs.compute}; store at or outside where it "
                            "is computed")


def check_all(pipeline, funcs: dict, what: str) -> None:
    """The checks every directive must keep true for every Func: levels name
    existing loops of non-inlined consumers, and storage encloses compute.
    ``what`` describes the directive being applied (for the message)."""
    for name, fs in funcs.items():
        for kind, lvl in (("computed", fs.compute), ("stored", fs.store)):
            if lvl.kind != "at":
                continue
            c = funcs[lvl.func]
            if c.compute.kind == "inline":
                raise ScheduleError(f"{what}: Func {lvl.func} cannot be inlined: {name} is "
                                    f"{kind} at {lvl}")
            if c.stages[lvl.stage].index(lvl.var) < 0:
                raise ScheduleError(
                    f"{what}: this removes loop {lvl.var} of Func {lvl.func}, where {name} is "
                    f"{kind} ({lvl}); schedule {lvl.func}'s loops before compute_at/store_at, "
                    f"or keep the name (split({lvl.var}, {lvl.var}, ...))")
        check_store(funcs, name, fs, what)


def _is_default(fs: FuncSchedule, defaults: FuncSchedule) -> bool:
    return fs.stages == defaults.stages and fs.memory == "auto" and not fs.bounds


def validate(pipeline, funcs: dict, explicit_store: dict, defaults: dict) -> None:
    """Whole-schedule checks that may only hold once every directive is given.

    * an inlined Func has no loop schedule, memory space, bounds or storage;
    * every stage that reads a Func computed at ``c.v`` (directly or through
      inlined Funcs) runs inside that loop (Halide's rule).
    """
    for name, fs in funcs.items():
        if fs.compute.kind == "inline":
            if name in explicit_store:
                raise ScheduleError(f"Func {name} (pure stage): it is inlined, so "
                                    f"store_at/store_root ({explicit_store[name]}) has no meaning")
            if not _is_default(fs, defaults[name]):
                raise ScheduleError(
                    f"Func {name} (pure stage): it is inlined, so its loops, memory and bounds "
                    "cannot be scheduled; give it a compute level (compute_root/compute_at)")
            continue
        if fs.compute.kind != "at":
            continue
        for e, k in use_sites(pipeline, funcs, name):
            inside = ((e == fs.compute.func and k == fs.compute.stage)
                      or encloses(funcs, fs.compute, funcs[e].compute))
            if not inside:
                label = "pure stage" if k == 0 else f"update {k - 1}"
                raise ScheduleError(
                    f"Func {name} (pure stage): it is computed at {fs.compute}, but Func {e} "
                    f"({label}) reads it outside that loop; compute it at a loop that encloses "
                    "every use (or compute_root)")
