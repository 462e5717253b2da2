"""Accumulator tiles (``lower/accumulate.py``): each app's solved schedule compiled with
the pass and without it, beside Halide's compile of the same schedule, in one process.

    python benchmarks/accumulator_tiles.py [--apps matmul,conv_layer,max_filter]
                                           [--methods greedy,ilp] [--rounds 7]

Interleaved rounds, each build run twice and the second timed, fastest run kept; the two
tilesolve builds are checked equal (bit for bit) before timing. A schedule the pass does
not change is reported as such. (paper size, 2 threads, ms, tile / no tile /
Halide: matmul greedy 134.7 / 238.2 / 204.9, ILP 138.6 / 240.4 / 208.8; conv_layer
0.97-0.99x of no tile; max_filter 0.99-1.01x.)
"""
from __future__ import annotations

import argparse
import importlib
import sys

import numpy as np
from _rounds import fastest

import tilesolve as ts
from tilesolve.apps import get_app


def measure(name: str, method: str, rounds: int) -> str:
    lowering = importlib.import_module("tilesolve.lower.lower")
    app = get_app(name)
    sizes = list(app.PAPER_SIZE)
    pipe, est = app.build(sizes)
    inputs = app.make_inputs(sizes, seed=0)
    sched = ts.solve_schedule(pipe, "host", estimates=est, method=method)
    tiled = ts.compile(pipe, sched)
    keep = lowering.promote_accumulators
    lowering.promote_accumulators = lambda body: body
    try:
        plain = ts.compile(pipe, sched)
    finally:
        lowering.promote_accumulators = keep
    if tiled.loop_ir() == plain.loop_ir():
        return f"{name:12s} {method:6s} no accumulator tile in this schedule"
    a, b = tiled.realize(sizes, **inputs), plain.realize(sizes, **inputs)
    if not np.array_equal(a, b, equal_nan=True):
        raise SystemExit(f"{name} {method}: the builds with and without tiles differ")
    from tilesolve.interop import halide as th
    hp = th.translate(pipe)
    hp.apply_schedule(sched)
    hp.bind(**inputs)
    runs = {"tile": lambda: tiled.realize(sizes, out=a, **inputs),
            "no tile": lambda: plain.realize(sizes, out=b, **inputs),
            "halide": lambda: hp.run(sizes)}
    best = fastest(runs, rounds)
    cells = "  ".join(f"{k} {v * 1e3:8.2f} ms" for k, v in best.items())
    return f"{name:12s} {method:6s} {cells}  tile / no tile {best['tile'] / best['no tile']:.3f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--apps", default="matmul,conv_layer,max_filter")
    p.add_argument("--methods", default="greedy,ilp")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    for name in args.apps.split(","):
        for method in args.methods.split(","):
            print(measure(name, method, args.rounds), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
