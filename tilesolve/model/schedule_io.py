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
    d = {"kind": lv.kind, "func": lv.func, "var": lv.var}
    if lv.stage:
        d["stage"] = lv.stage
    return d


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


def directive_from_dict(d, index: int = 0) -> Directive:
    """A Directive from its JSON form, checked against ``DIRECTIVES`` (see ``check_directive``)."""
    where = f"schedule JSON: directive {index}"
    if not isinstance(d, dict):
        raise ScheduleError(f"{where}: expected an object with fields {', '.join(_FIELDS)}, "
                            f"got {d!r}")
    missing = [k for k in _FIELDS if k not in d]
    if missing:
        raise ScheduleError(f"{where}: field {missing[0]!r} is missing (a directive has the "
                            f"fields {', '.join(_FIELDS)})")
    extra = sorted(str(k) for k in d if k not in _FIELDS)
    if extra:
        raise ScheduleError(f"{where}: unknown field {extra[0]!r} (a directive has the fields "
                            f"{', '.join(_FIELDS)})")
    func, stage, method = d["func"], d["stage"], d["method"]
    if not isinstance(func, str) or not func:
        raise ScheduleError(f"{where}: field 'func' must be a Func name, got {func!r}")
    where = f"schedule JSON: directive {index} on Func {func}"
    if isinstance(stage, bool) or not isinstance(stage, int) or stage < 0:
        raise ScheduleError(f"{where}: field 'stage' must be an int >= 0 (0: the pure stage, "
                            f"i + 1: update i), got {stage!r}")
    if not isinstance(method, str) or method not in DIRECTIVES:
        raise ScheduleError(f"{where}: {method!r} is not a schedule directive; the directives "
                            f"are {', '.join(DIRECTIVES)}")
    where = f"schedule JSON: directive {index} ({method} on Func {func})"
    args, kwargs = d["args"], d["kwargs"]
    if not isinstance(args, list) or not all(_is_pair(a) for a in args):
        raise ScheduleError(f"{where}: field 'args' must be a list of [kind, value] pairs, "
                            f"got {args!r}")
    if not isinstance(kwargs, list) or not all(_is_pair(k) and isinstance(k[0], str)
                                               and _is_pair(k[1]) for k in kwargs):
        raise ScheduleError(f"{where}: field 'kwargs' must be a list of [name, [kind, value]] "
                            f"entries, got {kwargs!r}")
    out = Directive(func, stage, method, tuple(tuple(a) for a in args),
                    tuple((k, tuple(v)) for k, v in kwargs))
    check_directive(out, where)
    return out


# The public directives replay may call: method -> (stage-0 only, the argument kind
# patterns it accepts (a "var*" entry: any number of loop names), keyword names).
_TAIL = ("tail",)
DIRECTIVES = {
    "split": (False, [("var", "var", "var", "int")], _TAIL),
    "tile": (False, [("var",) * 6 + ("int", "int"), ("var",) * 4 + ("int", "int")], _TAIL),
    "reorder": (False, ["var*"], ()),
    "fuse": (False, [("var", "var", "var")], ()),
    "vectorize": (False, [("var",), ("var", "int")], _TAIL),
    "unroll": (False, [("var",), ("var", "int")], _TAIL),
    "parallel": (False, [("var",), ("var", "int")], _TAIL),
    "serial": (False, [("var",)], ()),
    "gpu_blocks": (False, [("var",), ("var",) * 2, ("var",) * 3], ()),
    "gpu_threads": (False, [("var",), ("var",) * 2, ("var",) * 3], ()),
    "gpu_tile": (False, [("var",) * 3 + ("int",), ("var",) * 6 + ("int", "int")], _TAIL),
    "compute_inline": (True, [()], ()),
    "compute_root": (True, [()], ()),
    "compute_at": (True, [("func", "var")], ("update",)),
    "store_at": (True, [("func", "var")], ("update",)),
    "store_root": (True, [()], ()),
    "store_in": (True, [("str",)], ()),
    "bound": (True, [("var", "int", "int")], ()),
    # ``s.wrap(source, [consumers], name=...)``: ``func`` is the source (a Func or an
    # input), the args its consumers (none: every caller); replayed as that call
    "wrap": (True, ["func*"], ("name",)),
}
_FIELDS = ("func", "stage", "method", "args", "kwargs")
_KINDS = ("var", "func", "int", "str")


def _is_pair(v) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2


def _describe(pattern) -> str:
    if pattern == "var*":
        return "any number of loop names"
    if pattern == "func*":
        return "any number of Func names"
    return f"({', '.join(pattern)})"


def _matches(pattern, kinds) -> bool:
    if isinstance(pattern, str):                      # "var*", "func*"
        return all(k == pattern[:-1] for k in kinds)
    return pattern == kinds


def check_directive(d: Directive, where: str | None = None) -> None:
    """``ScheduleError`` unless ``d`` calls a public directive with arguments of the
    right count and kinds (``(kind, value)``: "var"/"func"/"str" a non-empty string,
    "int" an int) and only the keywords that directive takes."""
    where = where or f"directive {d.method} on Func {d.func}"
    spec = DIRECTIVES.get(d.method) if isinstance(d.method, str) else None
    if spec is None:
        raise ScheduleError(f"{where}: {d.method!r} is not a schedule directive; the directives "
                            f"are {', '.join(DIRECTIVES)}")
    stage0, patterns, keywords = spec
    if stage0 and d.stage != 0:
        raise ScheduleError(f"{where}: {d.method} applies to a Func's pure stage (stage 0), "
                            f"not to stage {d.stage}")
    for i, (kind, value) in enumerate(d.args):
        _check_value(kind, value, f"{where}: argument {i}")
    kinds = tuple(k for k, _ in d.args)
    if not any(_matches(p, kinds) for p in patterns):
        raise ScheduleError(f"{where}: arguments of kinds ({', '.join(kinds)}) do not match "
                            f"{d.method}; it takes {' or '.join(_describe(p) for p in patterns)}")
    for name, (kind, value) in d.kwargs:
        if name not in keywords:
            takes = f"only {', '.join(keywords)}" if keywords else "none"
            raise ScheduleError(f"{where}: unknown keyword {name!r}; {d.method} takes {takes}")
        _check_value(kind, value, f"{where}: keyword {name}")
        want = "int" if name == "update" else "str"
        if kind != want:
            raise ScheduleError(f"{where}: keyword {name} must be a \"{want}\" value, got {kind!r}")


def _check_value(kind, value, where: str) -> None:
    if kind not in _KINDS:
        raise ScheduleError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(_KINDS)}")
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScheduleError(f"{where}: expected an int, got {value!r}")
    elif not isinstance(value, str) or not value:
        raise ScheduleError(f"{where}: a {kind} must be a non-empty string, got {value!r}")


def to_json(s) -> str:
    doc = {
        "format": FORMAT, "version": VERSION,
        "outputs": list(s.pipeline.output_names), "target": s.target,
        "provenance": _plain(s.provenance),
        "directives": [directive_to_dict(d) for d in s.directives],
        "funcs": {n: func_schedule_to_dict(fs) for n, fs in s.func_schedules().items()},
    }
    if s.codegen:
        doc["codegen"] = dict(s.codegen)
    try:
        return _layout(doc)
    except (TypeError, ValueError) as e:
        bad = [k for k, v in s.provenance.items() if not _jsonable(v)]
        raise ScheduleError(f"schedule provenance is not JSON-able (key {bad[0] if bad else '?'}): "
                            f"{e}") from None


def _plain(v):
    """Provenance as plain data: a solver's typed records give their dict forms, at any
    depth (a plain dict copied from a typed provenance still holds typed records)."""
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


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


def replay(s, directives, prefix: str = "") -> None:
    """Apply recorded directives to Schedule ``s`` in order; only the public directives
    (``DIRECTIVES``) are called, and a failure names the directive."""
    for i, d in enumerate(directives):
        where = f"{prefix}directive {i} ({d.method} on Func {d.func})"
        check_directive(d, where)
        try:
            args = [v for _, v in d.args]
            kwargs = {k: v for k, (_, v) in d.kwargs}
            if d.method == "wrap":
                s.wrap(d.func, args or None, **kwargs)
                continue
            h = s[d.func] if d.stage == 0 else s[d.func].update(d.stage - 1)
            getattr(h, d.method)(*args, **kwargs)
        except ScheduleError as e:
            raise ScheduleError(f"{where}: {e}") from None


def from_json(text: str, pipeline):
    from .schedule import CODEGEN_OPTIONS, Schedule
    if not isinstance(text, (str, bytes, bytearray)):
        raise ScheduleError(f"schedule JSON must be a string, got {type(text).__name__}")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ScheduleError(f"schedule JSON does not parse: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ScheduleError(f"not a tilesolve schedule (expected \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise ScheduleError(f"schedule JSON version {doc.get('version')!r}; this tilesolve "
                            f"reads version {VERSION}")
    for key, typ, what in (("outputs", list, "a list of output names"),
                           ("provenance", dict, "an object"),
                           ("directives", list, "a list of directives"),
                           ("funcs", dict, "an object mapping Func names to schedules"),
                           ("codegen", dict, "an object of code-generation options"),
                           ("target", str, "a string")):
        if key in doc and not isinstance(doc[key], typ):
            raise ScheduleError(f"schedule JSON: field {key!r} must be {what}, got {doc[key]!r}")
    outs = tuple(doc.get("outputs", ()))
    if outs != pipeline.output_names:
        raise ScheduleError(f"the schedule is for outputs {list(outs)} but the pipeline's "
                            f"outputs are {list(pipeline.output_names)}")
    s = Schedule(pipeline, doc.get("target", "cpu"))
    s.provenance = doc.get("provenance", {})
    codegen = doc.get("codegen", {})
    unknown = sorted(set(codegen) - set(CODEGEN_OPTIONS))
    if unknown:
        raise ScheduleError(f"schedule JSON: field 'codegen' names {unknown[0]!r}, which is "
                            f"not a code-generation option (known: "
                            f"{', '.join(sorted(CODEGEN_OPTIONS))})")
    try:
        s.set_codegen(**codegen)
    except ScheduleError as e:
        raise ScheduleError(f"schedule JSON: field 'codegen': {e}") from None
    directives = [directive_from_dict(d, i) for i, d in enumerate(doc.get("directives", []))]
    replay(s, directives, "schedule JSON: ")
    stored = doc.get("funcs")
    if stored is not None:
        for name, fs in s.func_schedules().items():
            try:
                same = name in stored and func_schedule_from_dict(stored[name]) == fs
            except (KeyError, TypeError, AttributeError, ValueError) as e:
                raise ScheduleError(f"schedule JSON: Func {name}: the stored schedule is "
                                    f"malformed ({type(e).__name__}: {e})") from None
            if not same:
                raise ScheduleError(
                    f"Func {name}: the stored schedule differs from the one its directives "
                    "build (was the JSON edited, or written for a different algorithm?)")
        extra = sorted(set(stored) - set(s.func_schedules()))
        if extra:
            raise ScheduleError(f"schedule JSON: field 'funcs' names {extra[0]!r}, which is not "
                                f"a Func of this pipeline")
    return s
