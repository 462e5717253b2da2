"""JSON form of a Schedule.

The text holds the directives (the replayable trace), the target, the
provenance and, for readers other than tilesolve, every Func's resulting
``FuncSchedule``.  ``from_json`` replays the directives on a fresh Schedule of
the given pipeline and checks that the result matches the stored values, so
``from_json(t, p).to_json() == t`` for any ``t`` that ``to_json`` wrote.
"""
from __future__ import annotations

import json

from ..errors import ScheduleError
from .schedule_types import (Bound, Dim, Directive, FuncSchedule, Fuse, LoopLevel, Split,
                             StageSchedule)

FORMAT = "tilesolve.schedule"
VERSION = 1


def level_to_dict(lv: LoopLevel) -> dict:
    return {"kind": lv.kind, "func": lv.func, "var": lv.var}


def func_schedule_to_dict(fs: FuncSchedule) -> dict:
    """A plain-JSON view of a FuncSchedule (see schedule_types for the fields)."""
    def tr(t):
        if isinstance(t, Split):
            return {"split": {"old": t.old, "outer": t.outer, "inner": t.inner,
                              "factor": t.factor, "tail": t.tail}}
        return {"fuse": {"inner": t.inner, "outer": t.outer, "fused": t.fused}}
    return {
        "compute": level_to_dict(fs.compute),
        "store": level_to_dict(fs.store),
        "memory": fs.memory,
        "stages": [{"transforms": [tr(t) for t in st.transforms],
                    "dims": [{"var": d.var, "kind": d.kind, "is_rvar": d.is_rvar} for d in st.dims]}
                   for st in fs.stages],
        "bounds": [{"var": b.var, "min": b.min, "extent": b.extent} for b in fs.bounds],
    }


def func_schedule_from_dict(d: dict) -> FuncSchedule:
    def tr(t):
        if "split" in t:
            return Split(**t["split"])
        return Fuse(**t["fuse"])
    return FuncSchedule(
        LoopLevel(**d["compute"]), LoopLevel(**d["store"]), d["memory"],
        tuple(StageSchedule(tuple(tr(t) for t in st["transforms"]),
                            tuple(Dim(**x) for x in st["dims"])) for st in d["stages"]),
        tuple(Bound(**b) for b in d["bounds"]))


def directive_to_dict(d: Directive) -> dict:
    return {"func": d.func, "stage": d.stage, "method": d.method,
            "args": [list(a) for a in d.args],
            "kwargs": [[k, list(v)] for k, v in d.kwargs]}


def directive_from_dict(d: dict) -> Directive:
    return Directive(d["func"], d["stage"], d["method"], tuple(tuple(a) for a in d["args"]),
                     tuple((k, tuple(v)) for k, v in d["kwargs"]))


def to_json(s) -> str:
    doc = {
        "format": FORMAT, "version": VERSION,
        "outputs": list(s.pipeline.output_names), "target": s.target,
        "provenance": s.provenance,
        "directives": [directive_to_dict(d) for d in s.directives],
        "funcs": {n: func_schedule_to_dict(fs) for n, fs in s.func_schedules().items()},
    }
    try:
        return _layout(doc)
    except (TypeError, ValueError) as e:
        bad = [k for k, v in s.provenance.items() if not _jsonable(v)]
        raise ScheduleError(f"schedule provenance is not JSON-able (key {bad[0] if bad else '?'}): "
                            f"{e}") from None


def _dump(v) -> str:
    return json.dumps(v, sort_keys=True, allow_nan=False)


def _layout(doc: dict) -> str:
    """Valid JSON with one directive and one Func per line (diff-friendly)."""
    parts = []
    for key in sorted(doc):
        v = doc[key]
        if key == "directives" and v:
            body = "[\n" + ",\n".join("  " + _dump(d) for d in v) + "\n ]"
        elif key == "funcs" and v:
            body = "{\n" + ",\n".join(f"  {_dump(n)}: {_dump(fs)}" for n, fs in sorted(v.items())) + "\n }"
        else:
            body = _dump(v)
        parts.append(f" {_dump(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _jsonable(v) -> bool:
    try:
        json.dumps(v, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def replay(s, directives) -> None:
    """Apply recorded directives to Schedule ``s`` in order."""
    for d in directives:
        h = s[d.func] if d.stage == 0 else s[d.func].update(d.stage - 1)
        args = [v for _, v in d.args]
        kwargs = {k: v for k, (_, v) in d.kwargs}
        getattr(h, d.method)(*args, **kwargs)


def from_json(text: str, pipeline):
    from .schedule import Schedule
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScheduleError(f"schedule JSON does not parse: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ScheduleError(f"not a tilesolve schedule (expected \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise ScheduleError(f"schedule JSON version {doc.get('version')!r}; this tilesolve "
                            f"reads version {VERSION}")
    outs = tuple(doc.get("outputs", ()))
    if outs != pipeline.output_names:
        raise ScheduleError(f"the schedule is for outputs {list(outs)} but the pipeline's "
                            f"outputs are {list(pipeline.output_names)}")
    s = Schedule(pipeline, doc.get("target", "cpu"))
    s.provenance = doc.get("provenance", {})
    replay(s, [directive_from_dict(d) for d in doc.get("directives", [])])
    stored = doc.get("funcs")
    if stored is not None:
        for name, fs in s.func_schedules().items():
            if name not in stored or func_schedule_from_dict(stored[name]) != fs:
                raise ScheduleError(
                    f"Func {name}: the stored schedule differs from the one its directives "
                    "build (was the JSON edited, or written for a different algorithm?)")
    return s
