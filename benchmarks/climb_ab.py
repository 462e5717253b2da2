"""Autotune with and without its climb, each answer timed against the other.

    python benchmarks/climb_ab.py [--apps blur,hist_eq] [--budget 30] [--rounds 7]
                                  [--json FILE]

For each app at the paper size: ``ts.autotune`` without the climb (``CLIMB_SHARE`` 0:
the rounds use its share of the budget instead) and with it, each with ``budget_s``,
no tuning database and the same seed; then the two answers and greedy's schedule are
compiled, checked equal to each other, and timed in one process in interleaved rounds
(``_rounds.fastest``: each build run twice a round, the second timed, fastest kept).
Prints, per app, the climb's steps and the three times, and the geomean of
with / without and of with / greedy over the apps.  A schedule that is the same with
and without counts 1.

Nothing is asserted: this measures.
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np
from _rounds import fastest

import tilesolve as ts
from tilesolve.apps import APPS, get_app
from tilesolve.tune import autotune as tat


def _body(schedule) -> str:
    return str(schedule).split("\n", 2)[2]


def measure(name: str, budget: float, rounds: int) -> dict:
    app = get_app(name)
    sizes = list(app.PAPER_SIZE)
    pipe, est = app.build(sizes)
    inputs = app.make_inputs(sizes, seed=0)
    saved = tat.CLIMB_SHARE
    try:
        tat.CLIMB_SHARE = 0.0
        without = ts.autotune(pipe, "host", estimates=est, budget_s=budget, db=False,
                              progress=False)
    finally:
        tat.CLIMB_SHARE = saved
    with_ = ts.autotune(pipe, "host", estimates=est, budget_s=budget, db=False,
                        progress=False)
    greedy = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    scheds = {"without": without.schedule, "with": with_.schedule, "greedy": greedy}
    builds = {k: ts.compile(pipe, s) for k, s in scheds.items()}
    outs = {k: b.realize(sizes, **inputs) for k, b in builds.items()}
    for k in ("with", "greedy"):
        a, b = np.asarray(outs[k], dtype=float), np.asarray(outs["without"], dtype=float)
        if not np.allclose(a, b, rtol=1e-4, atol=1e-3):
            raise SystemExit(f"{name}: the {k} build differs from the one without the climb")
    best = fastest({k: (lambda b=b, k=k: b.realize(sizes, out=outs[k], **inputs))
                    for k, b in builds.items()}, rounds)
    same = _body(scheds["with"]) == _body(scheds["without"])
    return {"app": name, "climbed": with_.climbed, "same": same,
            "ms": {k: v * 1e3 for k, v in best.items()},
            "source_with": with_.best.source, "source_without": without.best.source}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = []
    for name in a.apps.split(","):
        r = measure(name, a.budget, a.rounds)
        rows.append(r)
        ms = r["ms"]
        ratio = 1.0 if r["same"] else ms["with"] / ms["without"]
        print(f"{name:16s} climbed {r['climbed']}  without {ms['without']:9.3f} ms  with "
              f"{ms['with']:9.3f} ms  greedy {ms['greedy']:9.3f} ms  with/without "
              f"{ratio:.3f}{'  (same schedule)' if r['same'] else ''}", flush=True)

    def geomean(v):
        return math.exp(sum(math.log(x) for x in v) / len(v))
    ww = geomean([1.0 if r["same"] else r["ms"]["with"] / r["ms"]["without"] for r in rows])
    wg = geomean([r["ms"]["with"] / r["ms"]["greedy"] for r in rows])
    og = geomean([r["ms"]["without"] / r["ms"]["greedy"] for r in rows])
    print(f"geomean with/without {ww:.3f}; with/greedy {wg:.3f}; without/greedy {og:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"budget_s": a.budget, "rounds": a.rounds, "apps": rows,
                       "with_over_without": ww, "with_over_greedy": wg,
                       "without_over_greedy": og}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
