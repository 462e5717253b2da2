"""CPU time of one thread running each pipeline's greedy schedule: a figure a busy
machine disturbs far less than wall time (time the process is not running is not
counted), for comparing two trees of tilesolve side by side.

    PYTHONPATH=TREE python benchmarks/thread_time.py [--apps resize_down,matvec]
                                                     [--calls 10] [--spec host]

Each app (looked up in the app suite, the validation suite and the first five random
pipelines of seed 0) is solved with ``greedy`` on ``--spec`` at the paper size,
compiled for one thread and run ``--calls`` times; printed as JSON: the fastest call's
``time.thread_time`` in milliseconds.  Run it with the tree before a change and after,
alternately.
"""
from __future__ import annotations

import argparse
import json
import time

import tilesolve as ts
from tilesolve.apps import suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="resize_down,resize_up,matvec")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--spec", default="host")
    args = ap.parse_args()
    known = {**suite("apps"), **suite("validation"), **suite("random")}
    out = {}
    for name in args.apps.split(","):
        app = known[name]
        pipe, est = app.build()
        sizes = getattr(app, "PAPER_SIZE", None) or est["output"]
        sched = ts.solve_schedule(pipe, args.spec, estimates=est, method="greedy")
        compiled = ts.compile(pipe, sched, num_threads=1, cache_dir=False)
        inputs = app.make_inputs(sizes)
        result = compiled.realize(sizes, **inputs)
        best = float("inf")
        for _ in range(args.calls):
            t0 = time.thread_time()
            compiled.realize(sizes, out=result, **inputs)
            best = min(best, time.thread_time() - t0)
        out[name] = round(best * 1e3, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
