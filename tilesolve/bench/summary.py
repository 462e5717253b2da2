"""Per-suite summaries of a bench run: how many rows, how many checks failed, and, with
``--compare-halide``, each app's best tilesolve time over the best of Halide's
autoschedulers, with their geometric mean.

``suite_summaries(records)`` takes Records or their dicts (a bench JSON's ``records``);
``format_summaries`` gives the lines the table ends with; ``write_json`` stores the
summaries under ``"suites"``.
"""
from __future__ import annotations

import math

__all__ = ["best_vs_halide", "suite_summaries", "format_summaries"]

HALIDE_PREFIX = "halide-"


def _d(r) -> dict:
    return r if isinstance(r, dict) else r.to_dict()


def _ms(r: dict) -> float | None:
    v = r.get("run_ms_min")
    return float(v) if r.get("status") == "ok" and isinstance(v, (int, float)) and v > 0 else None


def best_vs_halide(records) -> dict:
    """app -> {ours, ours_ms, halide, halide_ms, ratio}: the fastest tilesolve solver row
    (naive left out) and the fastest ``halide-<autoscheduler>`` row of each app that has
    both (``ts-schedule@halide`` rows are neither)."""
    best: dict = {}
    for r in map(_d, records):
        ms = _ms(r)
        method = str(r.get("method", ""))
        if ms is None:
            continue
        if r.get("backend") == "tilesolve-cpu" and method != "naive":
            side = "ours"
        elif method.startswith(HALIDE_PREFIX):
            side = "halide"
        else:
            continue
        row = best.setdefault(r["app"], {})
        if row.get(f"{side}_ms") is None or ms < row[f"{side}_ms"]:
            row[side], row[f"{side}_ms"] = method, ms
    out = {}
    for app, row in best.items():
        if "ours" in row and "halide" in row:
            out[app] = dict(row, ratio=row["ours_ms"] / row["halide_ms"])
    return out


def _geomean(values) -> float | None:
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def suite_summaries(records) -> dict:
    """suite -> {apps, rows, failed, vs_halide (``best_vs_halide``), geomean_vs_halide}."""
    by_suite: dict = {}
    for r in map(_d, records):
        by_suite.setdefault(r.get("suite") or "apps", []).append(r)
    out = {}
    for suite, rows in by_suite.items():
        vs = best_vs_halide(rows)
        out[suite] = {
            "apps": list(dict.fromkeys(r["app"] for r in rows)),
            "rows": len(rows),
            "failed": sum(r.get("status") == "FAIL" or (r.get("status") == "error"
                                                         and r.get("backend") != "halide")
                          for r in rows),
            "vs_halide": vs,
            "geomean_vs_halide": _geomean(v["ratio"] for v in vs.values()),
        }
    return out


def format_summaries(summaries: dict) -> list:
    """One paragraph per suite: its size, failures, and the ratios to Halide if any."""
    lines = []
    for suite, s in summaries.items():
        n = len(s["apps"])
        head = (f"suite {suite}: {n} pipeline{'s' * (n != 1)}, {s['rows']} rows, "
                f"{s['failed']} failed")
        g = s["geomean_vs_halide"]
        if g is None:
            lines.append(head)
            continue
        lines.append(f"{head}; best tilesolve / best Halide autoscheduler, geomean over "
                     f"{len(s['vs_halide'])}: {g:.3f}")
        lines.extend(f"  {app}: {v['ours']} {v['ours_ms']:.3g} ms / {v['halide']} "
                     f"{v['halide_ms']:.3g} ms = {v['ratio']:.3f}"
                     for app, v in s["vs_halide"].items())
    return lines
