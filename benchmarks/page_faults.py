"""Page faults a run, and time, for an app's solved schedule: tilesolve's compile with and
without the early release of buffers (``lower/free.py``), without the runtime's heap
cache (``backend/cpu/heap.py``, ``TILESOLVE_HEAP_CACHE_MB=0``), and Halide's compile of
the same schedule.

    python benchmarks/page_faults.py [--apps stencil_chain,max_filter] [--method ilp]
                                     [--runs 10] [--size paper|small]

Each (app, build) runs in a process of its own, since the allocator's state (what glibc
keeps and what it hands back to the kernel) belongs to the process: three warm-up runs,
then ``--runs`` runs, counting minor page faults with ``getrusage``.  ``ms`` is the
fastest of those runs; times from separate processes vary more than ratios taken in
one process, so read the faults here and time in ``tilesolve bench``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import time

BUILDS = ("no-free", "no-cache", "tilesolve", "halide")


def _one(app_name: str, method: str, build: str, runs: int, size: str) -> dict:
    import tilesolve as ts
    from tilesolve.apps import get_app
    app = get_app(app_name)
    sizes = app.PAPER_SIZE if size == "paper" else app.SMALL_SIZE
    pipe, est = app.build(sizes)
    inputs = app.make_inputs(sizes)
    sched = ts.solve_schedule(pipe, "host", estimates=est, method=method)
    if build == "halide":
        from tilesolve.interop import halide as th
        hp = th.translate(pipe)
        hp.apply_schedule(sched)
        hp.compile()
        hp.bind(**inputs)
        run = lambda: hp.run(sizes)                             # noqa: E731
    else:
        if build == "no-free":                                  # the pass disabled
            importlib.import_module("tilesolve.lower.lower").free_early = lambda body: body
        if build == "no-cache":                                 # every block back to libc
            from tilesolve.backend.cpu import heap
            heap.set_limit(0)
        cp = ts.compile(pipe, sched)
        out = cp.realize(sizes, **inputs)
        run = lambda: cp.realize(sizes, **inputs, out=out)      # noqa: E731
    for _ in range(3):
        run()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    return {"app": app_name, "method": method, "build": build,
            "faults_per_run": faults / runs, "ms": best * 1e3}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--apps", default="stencil_chain,max_filter,iir_blur,camera_pipe")
    p.add_argument("--method", default="greedy")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--size", choices=("paper", "small"), default="paper")
    p.add_argument("--one", nargs=2, metavar=("APP", "BUILD"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one[0], args.method, args.one[1], args.runs, args.size)))
        return 0
    print(f"{'app':16s} {'method':7s} " + "  ".join(f"{b + ' faults/run':>20s} {'ms':>7s}"
                                                 for b in BUILDS))
    for app in args.apps.split(","):
        cells = []
        for build in BUILDS:
            cmd = [sys.executable, __file__, "--one", app, build, "--method", args.method,
                   "--runs", str(args.runs), "--size", args.size]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                cells.append(f"{'failed':>20s} {'':>7s}")
                sys.stderr.write(res.stderr[-2000:])
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            cells.append(f"{r['faults_per_run']:20.1f} {r['ms']:7.1f}")
        print(f"{app:16s} {args.method:7s} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
