"""Naive vs greedy vs ILP (vs a hand schedule) on the Mullapudi 2016 pipelines.

    python benchmarks/solvers.py [--apps blur,unsharp,harris,stencil_chain]
                                 [--spec host] [--size paper|small] [--repeat 7]

For each app, in one run: solve time and predicted cost of every method, then
compile time and measured run time (min/median of --repeat runs after a
warm-up) at the chosen size, each output checked against the reference at
the app's small size first.  Prints one table; ratios are against naive.
This is a benchmark, not a test: nothing here asserts a speed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import tilesolve as ts
from tilesolve.apps import get_app

DEFAULT_APPS = ("blur", "unsharp", "harris", "stencil_chain")


def timed_runs(fn, repeat):
    fn()  # warm-up
    ts_ = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts_.append(time.perf_counter() - t0)
    return min(ts_), statistics.median(ts_)


def check(app, pipe, sched):
    sizes = list(app.SMALL_SIZE)
    inputs = app.make_inputs(sizes, seed=1)
    ref = ts.reference.realize(pipe, sizes, **inputs)
    got = ts.compile(pipe, sched).realize(sizes, **inputs)
    refs = ref if isinstance(ref, tuple) else (ref,)
    gots = got if isinstance(got, tuple) else (got,)
    for r, g in zip(refs, gots):
        if r.dtype.kind == "f":
            if not np.allclose(r, g, rtol=1e-4, atol=1e-4):
                return "FAIL"
        elif not np.array_equal(r, g):
            return "FAIL"
    return "ok"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(DEFAULT_APPS))
    ap.add_argument("--spec", default="host")
    ap.add_argument("--size", choices=("paper", "small"), default="paper")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--time-limit", type=float, default=10.0)
    args = ap.parse_args(argv)
    spec = ts.load_spec(args.spec)
    rows = []
    for name in args.apps.split(","):
        app = get_app(name)
        pipe, est = app.build()
        sizes = list(app.PAPER_SIZE if args.size == "paper" else app.SMALL_SIZE)
        est = {k: v for k, v in est.items()}
        if args.size == "small":
            pipe, est = app.build(**getattr(app, "SMALL_PARAMS", {})) if hasattr(app, "SMALL_PARAMS") else (pipe, est)
            out = pipe.output_names[0]
            est[out] = sizes
        inputs = app.make_inputs(sizes, seed=0)
        methods = [("naive", None, 0.0, float("nan"))]
        for method in ("greedy", "ilp"):
            t0 = time.perf_counter()
            s = ts.solve_schedule(pipe, spec, estimates=est, method=method, time_limit=args.time_limit)
            methods.append((method, s, time.perf_counter() - t0, s.provenance.get("predicted_cost")))
        hand = getattr(app, "hand_schedule", None)
        if hand is not None:
            methods.append(("hand", hand(pipe), 0.0, float("nan")))
        base = None
        for method, sched, solve_s, pred in methods:
            ok = check(app, pipe, sched)
            t0 = time.perf_counter()
            cp = ts.compile(pipe, sched)
            comp_s = time.perf_counter() - t0
            tmin, tmed = timed_runs(lambda: cp.realize(sizes, **inputs), args.repeat)
            base = base or tmin
            rows.append((name, len(pipe.funcs), method, solve_s, comp_s, tmin * 1e3, tmed * 1e3,
                         base / tmin, pred, ok))
            print(f"  {name:14s} {method:7s} done", file=sys.stderr, flush=True)
    hdr = ("app", "funcs", "method", "solve s", "compile s", "min ms", "median ms",
           "x naive", "pred cost", "check")
    print(" | ".join(hdr))
    for r in rows:
        print(f"{r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | "
              f"{r[7]:.2f} | {r[8]:.4g} | {r[9]}")


if __name__ == "__main__":
    main()
