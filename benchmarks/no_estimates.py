"""Schedules solved with no estimates at all against schedules solved for the size they run at.

    python benchmarks/no_estimates.py [--spec xeon-e5-2620v3] [--method greedy]
                                      [--apps blur,harris] [--time --rounds 5]

For each app of the suite: ``solve_schedule(pipe, spec)`` with no estimates (the
outputs get ``solver.problem.default_sizes``, inputs read through a boundary condition
the output's sizes) and with the paper's estimates.  Prints the model's cost of both
schedules at the paper size and their ratio; with ``--time``, both compiled and timed
at the paper size in interleaved rounds (the fastest run of each), and their ratio.
"""
from __future__ import annotations

import argparse
import math
import time

import tilesolve as ts
from tilesolve.apps import APPS
from tilesolve.solver.predict import predict_cost

from _rounds import fastest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="xeon-e5-2620v3")
    ap.add_argument("--method", default="greedy")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--time", action="store_true", help="also time both at the paper size")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    model_ratios, time_ratios = [], []
    print(f"{'app':16} {'solve s':>8} {'model ratio':>12}" + (f" {'time ratio':>11}"
                                                             if args.time else ""))
    for name in args.apps.split(","):
        mod = APPS[name]
        pipe, est = mod.build()
        t0 = time.perf_counter()
        free = ts.solve_schedule(pipe, args.spec, None, method=args.method)
        solve_s = time.perf_counter() - t0
        fit = ts.solve_schedule(pipe, args.spec, est, method=args.method)
        ratio = predict_cost(pipe, free, args.spec, est) / predict_cost(pipe, fit, args.spec, est)
        model_ratios.append(ratio)
        line = f"{name:16} {solve_s:8.2f} {ratio:12.3f}"
        if args.time:
            sizes = est[pipe.output_names[0]]
            inputs = mod.make_inputs(sizes, seed=0)
            builds = {k: ts.compile(pipe, s) for k, s in (("free", free), ("fit", fit))}
            runs = {k: (lambda c=c: c.realize(sizes, **inputs)) for k, c in builds.items()}
            best = fastest(runs, args.rounds)
            time_ratios.append(best["free"] / best["fit"])
            line += f" {time_ratios[-1]:11.3f}"
        print(line)

    def geomean(v):
        return math.exp(sum(map(math.log, v)) / len(v))
    print(f"geomean model ratio {geomean(model_ratios):.3f}, max {max(model_ratios):.3f}")
    if time_ratios:
        print(f"geomean time ratio {geomean(time_ratios):.3f}, max {max(time_ratios):.3f}")


if __name__ == "__main__":
    main()
