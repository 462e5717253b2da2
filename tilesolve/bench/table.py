"""The bench's outputs: the text table, the JSON file, the CSV file.

The JSON and CSV fields are documented in ``tilesolve/bench/__init__.py``.
"""
from __future__ import annotations

import csv
import json
import math

from ..errors import TilesolveError
from .record import FIELDS
from .summary import format_summaries, suite_summaries

__all__ = ["format_table", "bench_doc", "write_json", "read_json", "write_csv"]

COLUMNS = ("app", "Funcs", "method", "solve s", "compile s", "cached s", "run ms min/median",
           "speedup", "pred cost", "check")


def _num(v, fmt: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return format(v, fmt)


def _seconds(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def _ms(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 1 else (f"{v:.2f}" if v < 100 else f"{v:.0f}")


def _method(r) -> str:
    return f"{r.method} ({r.schedule_from})" if r.schedule_from else r.method


def _row(r, note: int | None) -> list:
    mark = f" [{note}]" if note else ""
    if r.status == "unavailable":
        return [r.app, str(r.funcs or "-"), _method(r), "-", "-", "-", "-", "-", "-", f"n/a{mark}"]
    compile_s = _seconds(r.compile_s)
    if r.compile_cache_hit:
        compile_s += "*"
    run = "-" if r.run_ms_min is None else f"{_ms(r.run_ms_min)}/{_ms(r.run_ms_median)}"
    speed = "-" if r.speedup is None else f"{r.speedup:.2f}x"
    check = {"ok": "ok", "FAIL": "FAIL <<<"}.get(r.check or "", "-")
    if r.status == "error":     # errors inside Halide are listed, not counted
        check = "halide error" if r.backend == "halide" else "ERROR <<<"
    return [r.app, str(r.funcs), _method(r), _seconds(r.solve_s), compile_s,
            _seconds(r.compile_cached_s), run, speed, _num(r.predicted_cost, ".3g"), check + mark]


def format_table(records, environment: dict | None = None) -> str:
    """The table (a heading per suite when a suite other than the app suite is there),
    notes for rows with details, each suite's summary, and a loud list of failures."""
    notes, rows = [], []
    for r in records:
        n = None
        if r.detail:
            notes.append(f"[{len(notes) + 1}] {r.app} / {_method(r)}: {r.detail}")
            n = len(notes)
        rows.append(_row(r, n))
    widths = [max(len(COLUMNS[i]), *(len(row[i]) for row in rows)) if rows else len(COLUMNS[i])
              for i in range(len(COLUMNS))]
    right = {1, 3, 4, 5, 6, 7, 8}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = []
    if environment:
        out.append(f"spec {environment.get('spec')}, {environment.get('cores')} cores, "
                   f"{environment.get('date')}, host {environment.get('host')}")
    out.append(line(COLUMNS))
    out.append(line(["-" * w for w in widths]))
    prev, suite = None, None
    headings = any(r.suite != "apps" for r in records)
    for r, row in zip(records, rows):
        if prev is not None and r.app != prev:
            out.append("")
        if headings and r.suite != suite:
            out.append(f"== suite {r.suite} ==")
        prev, suite = r.app, r.suite
        out.append(line(row))
    out.append("compile s: the first compile (* = it was already in the on-disk cache); "
               "cached s: compiling again, from the cache")
    if records:
        reps = sorted({r.repeat for r in records if r.repeat})
        out.append(f"run ms: min/median over {'/'.join(map(str, reps)) or 'the'} rounds (each round "
                   "runs every row of the app twice and times the second); speedup: naive's min "
                   "/ this min")
        out.append("sizes: " + ", ".join(f"{r.app} {r.size} {r.sizes} (checked at {r.check_sizes})"
                                         for r in _first_per_app(records)))
    out.extend(format_summaries(suite_summaries(records)))
    out.extend(notes)
    external = [r for r in records if r.status == "error" and r.backend == "halide"]
    bad = [r for r in records if r.status == "FAIL" or (r.status == "error" and r.backend != "halide")]
    if external:
        out.append("")
        out.append(f"Halide errors ({len(external)}; not counted in the exit status):")
        out.extend(f"  {r.app} / {_method(r)}: {r.detail}" for r in external)
    if bad:
        out.append("")
        out.append(f"FAILED: {len(bad)} of {len(records)} rows:")
        out.extend(f"  {r.app} / {_method(r)}: {r.status}: {r.detail}" for r in bad)
    return "\n".join(out) + "\n"


def _first_per_app(records):
    seen, out = set(), []
    for r in records:
        if r.app not in seen:
            seen.add(r.app)
            out.append(r)
    return out


def bench_doc(records, environment: dict, options: dict | None = None) -> dict:
    """``{"tilesolve_bench": 1, "environment": {...}, "options": {...}, "suites": {...},
    "records": [...]}``; ``suites``: ``summary.suite_summaries``."""
    return {"tilesolve_bench": 1, "environment": environment, "options": options or {},
            "suites": suite_summaries(records),
            "records": [_clean(r.to_dict()) for r in records]}


def write_json(path, records, environment: dict, options: dict | None = None) -> None:
    """``bench_doc`` as a JSON file."""
    doc = bench_doc(records, environment, options)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json(path) -> dict:
    """A file ``write_json`` wrote, checked: its dict (records as plain dicts)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as exc:
        raise TilesolveError(f"bench JSON {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise TilesolveError(f"bench JSON {path}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("tilesolve_bench") != 1 or not isinstance(
            doc.get("records"), list):
        raise TilesolveError(f"bench JSON {path}: not a `tilesolve bench --json` file (no "
                             "\"tilesolve_bench\": 1 with a list of \"records\")")
    return doc


def _clean(d: dict) -> dict:
    """JSON has no inf/nan: they become null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def write_csv(path, records) -> None:
    """One line per record, columns ``FIELDS``; lists are space-separated."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for r in records:
            d = _clean(r.to_dict())
            w.writerow(["" if d[k] is None else
                        (" ".join(map(str, d[k])) if isinstance(d[k], list) else d[k])
                        for k in FIELDS])
