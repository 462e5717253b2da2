"""Re-rank measured schedules with the current cost model, offline.

    python benchmarks/rank_offline.py [FILE] [--app NAME] [--detail] [--all]

Reads an export of the autotuner's measurements (by default
``results/autotune_measurements_2026-11-24.json``: every schedule ``ts.autotune``
timed, with the predicted cost of its day and the measured time), rebuilds each
app's pipeline from ``tilesolve.apps`` (by name, with the stored build parameters
and estimates), prices every stored schedule again with the *current* cost model
(``solver.predict``: the sum of each recorded column's terms, under the spec the
measurements were taken with) and prints Spearman's rho between predicted cost and
measured time per tuning, then the median over tunings with at least
``MIN_POINTS`` schedules.  Nothing is compiled or timed: this runs anywhere.

As ``ts.autotune`` does, only the schedules the model describes count: the
variants with no predicted cost of their own (``serial(...)``, ``vec2x(...)``:
their recorded groups are their base's) are left out, and so are schedules
without recorded groups (they cannot be priced); both are counted.  ``--all``
prices the variants too (as their base), to show what the model misses.
``--detail`` prints each schedule's terms, fastest first.  ``--no-climb`` leaves out the
schedules the autotuner's climb measured (their note says so): near
neighbours of the fastest, within a few per cent of it, they weigh on rho as ties do.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "results" / "autotune_measurements_2026-11-24.json"
MIN_POINTS = 5
TERMS = ("arith", "lanes", "registers", "reduction", "l1", "loads", "stores", "parallel", "streams",
         "overhead")


def load(path) -> dict:
    with open(path) as f:
        return json.load(f)


def _is_variant(row) -> bool:
    return row["predicted_cost"] is None


def _is_climb(row) -> bool:
    return (row.get("note") or "").startswith("climb")


def price_tuning(tuning: dict, rows: list, include_variants: bool = False) -> dict:
    """Price ``rows`` (measurements of ``tuning``) with the current model.

    Returns {"points": [(cost, ms, source, costs)], "rows": the row of each point,
    "variants": n, "unpriced": n, "failed": n}."""
    from tilesolve.apps import get_app
    from tilesolve.model.schedule import Schedule
    from tilesolve.solver.cost import CostModel
    from tilesolve.solver.predict import cost_of_terms, schedule_costs
    from tilesolve.solver.problem import Problem
    from tilesolve.specs.spec import HardwareSpec

    app = get_app(tuning["app"])
    pipe, _ = app.build(None, **tuning["build_params"])
    est = {k: list(v) for k, v in tuning["estimates"].items()}
    spec = HardwareSpec.from_dict(tuning["spec"], source="stored spec")
    model = CostModel(Problem(pipe, spec, est))
    out = {"points": [], "rows": [], "variants": 0, "unpriced": 0, "failed": 0,
           "sizes": est[pipe.output_names[0]]}
    for row in rows:
        if row["error"] is not None or row["measured_ms"] is None:
            out["failed"] += 1
            continue
        if _is_variant(row):
            out["variants"] += 1
            if not include_variants:
                continue
        sched = Schedule.from_json(row["schedule_json"], pipe)
        try:
            costs = schedule_costs(model, sched)
        except Exception:                     # no recorded groups, or not this problem's
            out["unpriced"] += 1
            continue
        out["points"].append((sum(cost_of_terms(c) for c in costs), row["measured_ms"],
                              row["source"], costs))
        out["rows"].append(row)
    return out


def label(tuning: dict, sizes) -> str:
    small = " (small build)" if tuning["build_params"] else ""
    return f"{tuning['app']}{small} {'x'.join(str(s) for s in sizes)}"


def rank(doc: dict, apps=None, detail: bool = False, include_variants: bool = False,
         out=sys.stdout, no_climb: bool = False) -> dict:
    """Print rho per tuning; returns {label: rho or None}."""
    from tilesolve.tune.stats import spearman
    by_key: dict = {}
    for row in doc["measurements"]:
        by_key.setdefault(row["key"], []).append(row)
    result = {}
    print(f"{'tuning':<42} {'n':>3} {'var':>4} {'unpr':>4} {'rho':>6} {'rho@day':>8}", file=out)
    for t in doc["tunings"]:
        if apps and t["app"] not in apps:
            continue
        rows = [r for r in by_key.get(t["key"], []) if not (no_climb and _is_climb(r))]
        res = price_tuning(t, rows, include_variants)
        pts = res["points"]
        rho = spearman([p for p, *_ in pts], [m for _, m, *_ in pts])
        day = [(r["predicted_cost"], r["measured_ms"]) for r in rows
               if r["error"] is None and r["measured_ms"] is not None
               and isinstance(r["predicted_cost"], (int, float))
               and math.isfinite(r["predicted_cost"])]
        rho_day = spearman([p for p, _ in day], [m for _, m in day])
        name = label(t, res["sizes"])
        result[name] = (rho, len(pts))
        fmt = (lambda v: "   n/a" if v is None else f"{v:6.2f}")
        print(f"{name:<42} {len(pts):>3} {res['variants']:>4} {res['unpriced']:>4} "
              f"{fmt(rho)} {fmt(rho_day):>8}", file=out)
        if detail:
            print("      ms      predicted  " + " ".join(f"{n:>9}" for n in TERMS)
                  + "  source", file=out)
            for cost, ms, src, costs in sorted(pts, key=lambda p: p[1]):
                terms = [sum(c.terms()[n] for c in costs) for n in TERMS]
                print(f"{ms:8.3f} {cost:14.5g}  " + " ".join(f"{v:9.3g}" for v in terms)
                      + f"  {src}", file=out)
    counted = [r for r, n in result.values() if r is not None and n >= MIN_POINTS]
    if counted:
        print(f"median rho over {len(counted)} tunings with >= {MIN_POINTS} schedules: "
              f"{statistics.median(counted):.3f} (min {min(counted):.2f})", file=out)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--app", action="append", help="only this app (repeatable)")
    ap.add_argument("--detail", action="store_true", help="every schedule's terms")
    ap.add_argument("--all", action="store_true",
                    help="price the serial/vec2x variants too (as their base)")
    ap.add_argument("--no-climb", action="store_true",
                    help="leave out the schedules autotune's climb measured")
    a = ap.parse_args(argv)
    rank(load(a.file), a.app, a.detail, a.all, no_climb=a.no_climb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
