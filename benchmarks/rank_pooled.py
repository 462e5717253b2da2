"""Separate the machine's noise from the cost model's error, with two timing runs.

    python benchmarks/rank_pooled.py RUN_A.json RUN_B.json [--app NAME]
                                     [--set tilesolve.solver.cost.NAME=VALUE ...]

Each file is what ``cpu_rank.py --json`` writes: the same candidates, timed in two
separate runs of it on one machine (hours apart, say).  For the schedules measured in
both, per app:

* ``runs``: Spearman's rho between the two runs' times.  Unlike ``cpu_rank``'s retest
  (even rounds against odd rounds of one run, a few seconds apart), this sees the
  machine's slow drifts too; it is the most rho any model can reproduce.  Below 0.85 the
  app is marked ``noise``: no cost model can be shown to reach the target on it here;
* ``model``: the current model's rho (every schedule re-priced, ``rank_offline``)
  against each run's times, and against their geometric mean (``pooled``, the
  measurement with the least noise).

``--set`` changes a module constant before pricing (a float), so a change to the model
can be judged offline, against both runs, before anything is compiled or timed::

    python benchmarks/rank_pooled.py A.json B.json --set tilesolve.solver.cost.TILE_OVERHEAD_OPS=400

Nothing is compiled or timed: this runs anywhere in a second or two.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from rank_offline import load, price_tuning  # noqa: E402

TARGET = 0.85


def _key(row) -> str:
    s = row["schedule_json"]
    return s if isinstance(s, str) else json.dumps(s, sort_keys=True)


def apply_sets(sets) -> None:
    """``MODULE.NAME=VALUE`` strings: set each module constant (a float)."""
    for item in sets or ():
        target, _, value = item.partition("=")
        mod, _, name = target.rpartition(".")
        if not mod or not value:
            raise SystemExit(f"--set {item!r}: expected MODULE.NAME=VALUE")
        module = importlib.import_module(mod)
        if not hasattr(module, name):
            raise SystemExit(f"--set {item!r}: {mod} has no {name}")
        setattr(module, name, float(value))


def compare(doc_a: dict, doc_b: dict, apps=None) -> list:
    """Per app of ``doc_b``: {app, n, runs, model_a, model_b, pooled}."""
    from tilesolve.tune.stats import spearman
    app_of = {t["key"]: t["app"] for t in doc_a["tunings"]}
    ms_a = {(app_of[r["key"]], _key(r)): r["measured_ms"] for r in doc_a["measurements"]
            if r["error"] is None and r["measured_ms"] is not None}
    rows_b: dict = {}
    for r in doc_b["measurements"]:
        if r["error"] is None and r["measured_ms"] is not None:
            rows_b.setdefault(r["key"], []).append(r)
    out = []
    for t in doc_b["tunings"]:
        if apps and t["app"] not in apps:
            continue
        both = [r for r in rows_b.get(t["key"], []) if (t["app"], _key(r)) in ms_a]
        res = price_tuning(t, both)
        cost = [c for c, *_ in res["points"]]
        a = [ms_a[(t["app"], _key(r))] for r in res["rows"]]
        b = [r["measured_ms"] for r in res["rows"]]
        pooled = [math.sqrt(x * y) for x, y in zip(a, b)]
        out.append({"app": t["app"], "n": len(cost), "runs": spearman(a, b),
                    "model_a": spearman(cost, a), "model_b": spearman(cost, b),
                    "pooled": spearman(cost, pooled)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("--app", action="append", help="only this app (repeatable)")
    ap.add_argument("--set", action="append", metavar="MODULE.NAME=VALUE",
                    help="change a model constant before pricing (repeatable)")
    a = ap.parse_args(argv)
    apply_sets(a.set)
    rows = compare(load(a.run_a), load(a.run_b), a.app)
    fmt = (lambda v: "   n/a" if v is None else f"{v:6.2f}")
    print(f"{'app':<16} {'n':>3} {'runs':>6} {'model A':>7} {'model B':>7} {'pooled':>6}")
    for r in rows:
        flag = "  noise" if r["runs"] is not None and r["runs"] < TARGET else ""
        print(f"{r['app']:<16} {r['n']:>3} {fmt(r['runs'])} {fmt(r['model_a']):>7} "
              f"{fmt(r['model_b']):>7} {fmt(r['pooled'])}{flag}")
    pooled = [r["pooled"] for r in rows if r["pooled"] is not None]
    if pooled:
        print(f"pooled rho: mean {statistics.mean(pooled):.3f}, {sum(p >= TARGET for p in pooled)}"
              f" of {len(pooled)} apps >= {TARGET}; runs >= {TARGET}: "
              f"{sum(r['runs'] is not None and r['runs'] >= TARGET for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
