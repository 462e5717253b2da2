"""LLVM's unroll threshold against the apps' schedules: each app's solver schedule
compiled under several values of ``tilesolve.backend.cpu.jit.UNROLL_THRESHOLD`` and
timed against each other in one process.

    python benchmarks/unroll_threshold.py [--apps blur,nl_means] [--methods greedy,ilp]
                                          [--thresholds 300,100,50] [--rounds 5]
                                          [--scale 1] [--threads N] [--json FILE]

``--methods hand`` uses the app's hand schedule (blur, unsharp...); ``--scale 4`` times
the paper's area; ``--threads 1`` one thread (the blur figure below:
``--apps blur --methods hand --scale 4 --threads 1``).

The first threshold is the baseline (300: LLVM's own at O3).  Each build runs in
interleaved rounds (the order alternating), the fastest run of each counts; outputs
are compared exactly with the baseline's.  The last lines give, per threshold, the
geomean over all schedules of its time over the baseline's.  (paper sizes,
2 threads, greedy and ILP schedules of the 15 apps: 100 -> 1.000, per schedule
0.89-1.07; 50 -> 1.003.  Blur's hand schedule at 4x the paper size on one thread:
300 -> 0.217 s, 100 -> 0.134 s: there LLVM fully unrolls the 16-vector rows of a
256-wide tile and that code is slower.)
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import tilesolve as ts
from tilesolve.apps import get_app, list_apps
from tilesolve.backend.cpu import jit


def _same(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return all(np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True) for x, y in zip(a, b))


def _scaled(sizes, scale: float) -> list:
    """``sizes`` with the area of the first two dimensions times ``scale``."""
    f = math.sqrt(scale)
    return [round(s * f) if d < 2 else s for d, s in enumerate(sizes)]


def run(apps, methods, thresholds, rounds: int, log=print, scale: float = 1.0,
        threads=None) -> list:
    rows = []
    for name in apps:
        app = get_app(name)
        sizes = _scaled(list(app.PAPER_SIZE), scale)
        for method in methods:
            pipe, est = app.build(sizes)
            if method == "hand":
                if not hasattr(app, "hand_schedule"):
                    log(f"{name}: no hand schedule")
                    continue
                sched = app.hand_schedule(pipe)
            else:
                sched = ts.solve_schedule(pipe, "host", estimates=est, method=method)
            inputs = app.make_inputs(sizes, seed=0)
            builds, outs = {}, {}
            try:
                for th in thresholds:
                    jit.UNROLL_THRESHOLD = th
                    builds[th] = ts.compile(pipe, sched, num_threads=threads)
                    outs[th] = builds[th].realize(sizes, **inputs)
            finally:
                jit.UNROLL_THRESHOLD = None
            same = all(_same(outs[th], outs[thresholds[0]]) for th in thresholds)
            best = {th: float("inf") for th in thresholds}
            for r in range(rounds):
                for th in (thresholds if r % 2 == 0 else thresholds[::-1]):
                    kw = {} if isinstance(outs[th], tuple) else {"out": outs[th]}
                    builds[th].realize(sizes, **inputs, **kw)
                    t0 = time.perf_counter()
                    builds[th].realize(sizes, **inputs, **kw)
                    best[th] = min(best[th], time.perf_counter() - t0)
            row = {"app": name, "method": method, "same_output": same,
                   "ms": {str(th): round(best[th] * 1e3, 2) for th in thresholds}}
            rows.append(row)
            log(f"{name:16s} {method:6s} " + " ".join(
                f"{th}: {best[th] * 1e3:8.2f} ms ({best[th] / best[thresholds[0]]:.3f})"
                for th in thresholds) + ("" if same else "  OUTPUTS DIFFER"))
    for th in thresholds[1:]:
        r = [row["ms"][str(th)] / row["ms"][str(thresholds[0])] for row in rows]
        if r:
            log(f"threshold {th} over {thresholds[0]}: geomean "
                f"{math.exp(sum(map(math.log, r)) / len(r)):.3f} over {len(r)} schedules "
                f"(min {min(r):.3f}, max {max(r):.3f})")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default=",".join(list_apps()))
    ap.add_argument("--methods", default="greedy,ilp")
    ap.add_argument("--thresholds", default="300,100,50")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = run(a.apps.split(","), a.methods.split(","),
               [int(t) for t in a.thresholds.split(",")], a.rounds,
               scale=a.scale, threads=a.threads)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
