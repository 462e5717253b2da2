"""Hand schedules vs the solvers: naive, hand, greedy and ILP at paper size.

    python benchmarks/hand_vs_auto.py [--apps blur,unsharp,harris,stencil_chain]
                                      [--spec host] [--repeat 7] [--time-limit 10]

For each app (paper size, paper parameters, estimates from ``app.build()``):

* ``naive``: ``ts.compile(pipe)`` with no schedule (every Func at root, serial);
* ``hand``: the app module's ``hand_schedule(pipe)`` (Halide's app schedule);
* ``greedy``, ``ilp``: ``ts.solve_schedule(pipe, spec, estimates, method=...)``.

Each is compiled, run once to warm up, then ``--repeat`` times; the table shows
the min and median wall time, the speed-up of the min over naive's, the solve
and compile times, and whether the output equals naive's (exact for integer
outputs, ``rtol = atol = 1e-4`` for floats).  Nothing is asserted: this feeds
the notes, the tests check correctness.

A lowering bug (input regions over-approximated under tiles, so ``realize``
asks for a larger input than the algorithm reads) would stop a run; then the
inputs are padded at their far ends, the output checked against naive's on
the unpadded inputs, and the row marked ``padded``.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import numpy as np

import tilesolve as ts
from tilesolve.apps import get_app

DEFAULT_APPS = ("blur", "unsharp", "harris", "stencil_chain")
METHODS = ("naive", "hand", "greedy", "ilp")


def timed_runs(fn, repeat: int) -> tuple:
    """(min, median) seconds of ``repeat`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


_NEED = re.compile(r"input '(\w+)' is too small: dimension (\d+) .* must cover \[-?\d+, (\d+)\]")


def realize_padding(cp, sizes, inputs: dict, tries: int = 16):
    """``(output, inputs used, note)``: ``cp.realize``, growing an input at the far
    end of a dimension (edge values) each time realize asks for more of it."""
    args, note = dict(inputs), ""
    for _ in range(tries):
        try:
            return cp.realize(sizes, **args), args, note
        except ts.RealizeError as e:
            m = _NEED.search(str(e))
            if m is None:
                raise
            name, dim, hi = m.group(1), int(m.group(2)), int(m.group(3))
            arr = args[name]
            axis = arr.ndim - 1 - dim
            widths = [(0, 0)] * arr.ndim
            widths[axis] = (0, hi + 1 - arr.shape[axis])
            args[name] = np.pad(arr, widths, mode="edge")
            note = "padded"
    raise RuntimeError(f"realize still asks for larger inputs after {tries} paddings")


def same(a, b) -> bool:
    if a.dtype.kind == "f":
        return bool(np.allclose(a, b, rtol=1e-4, atol=1e-4))
    return bool(np.array_equal(a, b))


def schedule_for(app, pipe, est, method, spec, time_limit):
    """(schedule or None, solve seconds)."""
    if method == "naive":
        return None, 0.0
    if method == "hand":
        return app.hand_schedule(pipe), 0.0
    t0 = time.perf_counter()
    s = ts.solve_schedule(pipe, spec, estimates=est, method=method, time_limit=time_limit)
    return s, time.perf_counter() - t0


def bench_app(name: str, spec, repeat: int, time_limit: float) -> list:
    app = get_app(name)
    pipe, est = app.build()
    sizes = list(app.PAPER_SIZE)
    inputs = app.make_inputs(sizes, seed=0)
    rows, naive_out, naive_min = [], None, None
    for method in METHODS:
        sched, solve_s = schedule_for(app, pipe, est, method, spec, time_limit)
        t0 = time.perf_counter()
        cp = ts.compile(pipe, sched)
        compile_s = time.perf_counter() - t0
        out, args, note = realize_padding(cp, sizes, inputs)
        if naive_out is None:
            naive_out = out
        ok = "ok" if same(out, naive_out) else "DIFFERS"
        tmin, tmed = timed_runs(lambda: cp.realize(sizes, **args), repeat)
        naive_min = naive_min or tmin
        rows.append((name, method, tmin * 1e3, tmed * 1e3, naive_min / tmin, solve_s, compile_s,
                     ok + (f" ({note})" if note else "")))
        print(f"  {name:14s} {method:7s} {tmin * 1e3:10.2f} ms", file=sys.stderr, flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(DEFAULT_APPS))
    ap.add_argument("--spec", default="host")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--time-limit", type=float, default=10.0, help="ILP time limit (s)")
    args = ap.parse_args(argv)
    spec = ts.load_spec(args.spec)
    rows = []
    for name in args.apps.split(","):
        rows.extend(bench_app(name, spec, args.repeat, args.time_limit))
    print(f"spec {spec.name}: {spec.description}; {args.repeat} runs after a warm-up")
    print("| app | method | min ms | median ms | x naive (min) | solve s | compile s | output |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | "
              f"{r[6]:.1f} | {r[7]} |")


if __name__ == "__main__":
    main()
