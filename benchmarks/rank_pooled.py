"""Separate the machine's noise from the cost model's error, with two or more timing runs.

    python benchmarks/rank_pooled.py RUN_A.json RUN_B.json [RUN_C.json ...] [--app NAME]
                                     [--set tilesolve.solver.cost.NAME=VALUE ...]

Each file is what ``cpu_rank.py --json`` writes: the same candidates, timed in separate
runs of it on one machine (hours apart, say); schedules are matched between runs by
their schedule.  Per app:

* ``runs``: Spearman's rho between two runs' times over the schedules both measured (the
  mean over pairs of runs; ``min`` the lowest pair).  Unlike ``cpu_rank``'s retest (even rounds against odd rounds of one
  run, seconds apart), this sees the machine's slow drifts too; it is the most rho any
  model can reproduce.  Below 0.85 the app is marked ``noise``: no cost model can be
  shown to reach the target on it here;
* ``pooled``: the current model's rho (every schedule of the last run re-priced,
  ``rank_offline``) against the geometric mean of the times the runs measured for it (the
  measurement with the least noise), and ``model per run``: against each run's times,
  over the schedules that run measured.

``--set`` changes a module constant before pricing (a float), so a change to the model
can be judged offline, against every run, before anything is compiled or timed::

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


MIN_COMMON = 4     # schedules two runs must share for their rho to count


def _times(doc) -> dict:
    app_of = {t["key"]: t["app"] for t in doc["tunings"]}
    return {(app_of[r["key"]], _key(r)): r["measured_ms"] for r in doc["measurements"]
            if r["error"] is None and r["measured_ms"] is not None}


def compare(docs: list, apps=None) -> list:
    """Per app of the last run: {app, n, runs (the mean rho over the pairs of runs that
    share ``MIN_COMMON`` schedules or more), runs_min, model (its rho against each run),
    pooled}.  ``n`` and ``pooled`` cover the last run's schedules, each at the geometric
    mean of the runs that measured it."""
    from itertools import combinations

    from tilesolve.tune.stats import spearman
    times = [_times(d) for d in docs]
    last = docs[-1]
    rows_last: dict = {}
    for r in last["measurements"]:
        if r["error"] is None and r["measured_ms"] is not None:
            rows_last.setdefault(r["key"], []).append(r)
    out = []
    for t in last["tunings"]:
        if apps and t["app"] not in apps:
            continue
        res = price_tuning(t, rows_last.get(t["key"], []))
        cost = [c for c, *_ in res["points"]]
        keys = [(t["app"], _key(r)) for r in res["rows"]]
        pooled = [math.exp(statistics.mean(math.log(ms[k]) for ms in times if k in ms))
                  for k in keys]
        pairs = []
        for a, b in combinations(times, 2):
            common = [k for k in a if k[0] == t["app"] and k in b]
            if len(common) >= MIN_COMMON:
                v = spearman([a[k] for k in common], [b[k] for k in common])
                if v is not None:
                    pairs.append(v)
        model = []
        for ms in times:
            have = [(c, ms[k]) for c, k in zip(cost, keys) if k in ms]
            model.append(spearman([c for c, _ in have], [m for _, m in have])
                         if len(have) >= MIN_COMMON else None)
        out.append({"app": t["app"], "n": len(cost),
                    "runs": statistics.mean(pairs) if pairs else None,
                    "runs_min": min(pairs) if pairs else None,
                    "model": model, "pooled": spearman(cost, pooled)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN.json", help="two or more cpu_rank exports")
    ap.add_argument("--app", action="append", help="only this app (repeatable)")
    ap.add_argument("--set", action="append", metavar="MODULE.NAME=VALUE",
                    help="change a model constant before pricing (repeatable)")
    a = ap.parse_args(argv)
    if len(a.runs) < 2:
        ap.error("give at least two runs")
    apply_sets(a.set)
    rows = compare([load(f) for f in a.runs], a.app)
    fmt = (lambda v: "   n/a" if v is None else f"{v:6.2f}")
    print(f"{'app':<16} {'n':>3} {'runs':>6} {'min':>6} {'pooled':>6}  model per run")
    for r in rows:
        flag = "  noise" if r["runs"] is not None and r["runs"] < TARGET else ""
        per = " ".join(fmt(v).strip() for v in r["model"])
        print(f"{r['app']:<16} {r['n']:>3} {fmt(r['runs'])} {fmt(r['runs_min'])} "
              f"{fmt(r['pooled'])}  {per}{flag}")
    pooled = [r["pooled"] for r in rows if r["pooled"] is not None]
    if pooled:
        print(f"pooled rho: mean {statistics.mean(pooled):.3f}, {sum(p >= TARGET for p in pooled)}"
              f" of {len(pooled)} apps >= {TARGET}; runs >= {TARGET}: "
              f"{sum(r['runs'] is not None and r['runs'] >= TARGET for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
