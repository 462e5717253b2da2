"""How well can any cost model rank these schedules on this machine?  The test-retest
agreement of the measurements themselves, beside the model's rho.

    python benchmarks/rank_ceiling.py [FILE] [--app NAME] [--rounds 8] [--spec host]
                                      [--json OUT]

Reads an export of the autotuner's measurements (``rank_offline.py``'s input: every
schedule ``ts.autotune`` timed), and for each app's tuning at its largest size (the one
with the most measurements) compiles every schedule the model prices, checks each output
against the first schedule's, and times them all in ``--rounds`` rounds, each round in
a new random order, each schedule run twice a round with the second run timed, into
one output buffer as ``ts.autotune`` times.  Then, per app:

* ``rho model``: Spearman's rho between the current model's predicted cost (under
  ``--spec``: ``host``, this machine, by default; ``stored``: the spec the tuning
  recorded) and the fastest time over all rounds: the figure issue-style targets ask
  of the model;
* ``rho retest``: rho between the fastest times of the even rounds and of the odd
  rounds, the same schedules measured twice on the same machine.  A predictor whose
  cost were the true time would still meet the measurement with about this agreement
  (noise on both halves) and above it at best (noise on one side only): where it is
  low, the schedules differ by less than the machine's noise and their order is not a
  property of the schedules;
* ``spread``: slowest over fastest schedule.

Wall-clock times need a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from rank_offline import DEFAULT, MIN_POINTS, load, price_tuning  # noqa: E402


def _one_per_app(doc: dict, counts: dict, apps) -> list:
    """Each app's tuning at its largest size (no build parameters), with the most
    measurements there (the latest of equals)."""
    best: dict = {}
    for t in doc["tunings"]:
        if t["build_params"] or (apps and t["app"] not in apps):
            continue
        area = int(np.prod(next(iter(t["estimates"].values()))))
        rank = (area, counts.get(t["key"], 0))
        if t["app"] not in best or rank >= best[t["app"]][0]:
            best[t["app"]] = (rank, t)
    return [t for _, t in best.values()]


def _spec_for(tuning: dict, which: str) -> dict:
    if which == "stored":
        return tuning
    from tilesolve.specs import load_spec
    return dict(tuning, spec=load_spec(which).to_dict())


def _time_rounds(builds: list, inputs: dict, sizes, rounds: int, seed: int,
                 out=None) -> np.ndarray:
    """Seconds [round, build]: each round in a new order, the second of two runs.  With
    ``out`` (an output of the pipeline, as ``realize`` returns it), every run writes
    into it, as ``ts.autotune`` times: a fresh output's page faults are left out."""
    rng = random.Random(seed)
    res = np.full((rounds, len(builds)), np.inf)
    order = list(range(len(builds)))
    kw = {} if out is None else {"out": out}
    for r in range(rounds):
        rng.shuffle(order)
        for i in order:
            builds[i].realize(sizes, **kw, **inputs)
            t0 = time.perf_counter()
            builds[i].realize(sizes, **kw, **inputs)
            res[r, i] = time.perf_counter() - t0
    return res


def ceiling(tuning: dict, rows: list, rounds: int, spec: str, log) -> dict | None:
    import tilesolve as ts
    from tilesolve.apps import get_app
    from tilesolve.tune.check import compare
    from tilesolve.model.schedule import Schedule
    from tilesolve.tune.stats import spearman
    priced = price_tuning(_spec_for(tuning, spec), rows)
    if len(priced["points"]) < MIN_POINTS:
        return None
    app = get_app(tuning["app"])
    pipe, _ = app.build(None)
    sizes = list(priced["sizes"])
    inputs = app.make_inputs(sizes, seed=0)
    builds, costs, first = [], [], None
    for (cost, *_), row in zip(priced["points"], priced["rows"]):
        sched = Schedule.from_json(row["schedule_json"], pipe)
        c = ts.compile(pipe, sched, num_threads=tuning["threads"])
        got = c.realize(sizes, **inputs)
        if first is None:
            first = got
        elif not compare(got, first)[0]:
            raise AssertionError(f"{tuning['app']}: a schedule's output differs")
        builds.append(c)
        costs.append(cost)
    log(f"{tuning['app']}: {len(builds)} schedules compiled, timing {rounds} rounds")
    t = _time_rounds(builds, inputs, sizes, rounds, seed=len(builds), out=first)
    best, even, odd = t.min(axis=0), t[0::2].min(axis=0), t[1::2].min(axis=0)
    return {"app": tuning["app"], "sizes": sizes, "schedules": len(builds),
            "rho_model": spearman(costs, list(best)),
            "rho_retest": spearman(list(even), list(odd)),
            "spread": float(best.max() / best.min()),
            "fastest_ms": float(best.min() * 1e3), "ms": [float(v * 1e3) for v in best],
            "predicted": costs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--app", action="append", help="only this app (repeatable)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--spec", default="host", help="host (this machine), a spec name, "
                                                   "or 'stored' (the tuning's own)")
    ap.add_argument("--json", help="write the records here")
    a = ap.parse_args(argv)
    doc = load(a.file)
    by_key: dict = {}
    for row in doc["measurements"]:
        by_key.setdefault(row["key"], []).append(row)
    records = []
    fmt = (lambda v: "   n/a" if v is None else f"{v:6.2f}")
    print(f"{'app':<16} {'n':>3} {'rho model':>9} {'rho retest':>10} {'spread':>7} "
          f"{'fastest ms':>10}")
    for tuning in _one_per_app(doc, {k: len(v) for k, v in by_key.items()}, a.app):
        rec = ceiling(tuning, by_key.get(tuning["key"], []), a.rounds, a.spec,
                      lambda s: print(f"  [{s}]", file=sys.stderr))
        if rec is None:
            continue
        records.append(rec)
        print(f"{rec['app']:<16} {rec['schedules']:>3} {fmt(rec['rho_model']):>9} "
              f"{fmt(rec['rho_retest']):>10} {rec['spread']:6.2f}x {rec['fastest_ms']:10.2f}",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"file": Path(a.file).name, "rounds": a.rounds, "spec": a.spec,
                       "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
