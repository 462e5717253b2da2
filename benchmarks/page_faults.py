"""Page faults a run, and time, for an app's solved schedule: tilesolve's compile with and
without the early release of buffers (``lower/free.py``), without the runtime's heap
cache (``backend/cpu/heap.py``, ``TILESOLVE_HEAP_CACHE_MB=0``), without its fixed glibc
thresholds (``TILESOLVE_MALLOC_TUNING=0``), and Halide's compile of the same schedule.

    python benchmarks/page_faults.py [--apps stencil_chain,max_filter] [--method ilp]
                                     [--runs 10] [--size paper|small]
                                     [--builds no-mallopt,tilesolve] [--processes 3]

With ``--processes K`` each build runs in K processes and the cells give the range of
faults and of times over them (glibc without fixed thresholds runs some builds in one of
two modes from one process to the next: ``--apps unsharp,harris --builds
no-mallopt,tilesolve --processes 3``).

Each (app, build) runs in a process of its own, since the allocator's state (what glibc
keeps and what it hands back to the kernel) belongs to the process: three warm-up runs,
then ``--runs`` runs, counting minor page faults with ``getrusage``.  ``ms`` is the
fastest of those runs; times from separate processes vary more than ratios taken in
one process, so read the faults here and time in ``tilesolve bench``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

BUILDS = ("no-free", "no-cache", "no-mallopt", "tilesolve", "halide")


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
        if build == "no-free":                                  # the pass left out
            sched = sched.copy().set_codegen(free_early=False)
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
    p.add_argument("--builds", default=",".join(BUILDS))
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--one", nargs=2, metavar=("APP", "BUILD"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    builds = args.builds.split(",")
    unknown = sorted(set(builds) - set(BUILDS))
    if unknown:
        p.error(f"unknown build {unknown[0]!r} (known: {', '.join(BUILDS)})")
    if args.one:
        print(json.dumps(_one(args.one[0], args.method, args.one[1], args.runs, args.size)))
        return 0
    print(f"{'app':16s} {'method':7s} " + "  ".join(f"{b + ' faults/run':>22s} {'ms':>13s}"
                                                 for b in builds))
    for app in args.apps.split(","):
        cells = []
        for build in builds:
            env = dict(os.environ)
            if build == "no-mallopt":
                env["TILESOLVE_MALLOC_TUNING"] = "0"
            got = []
            for _ in range(args.processes):
                cmd = [sys.executable, __file__, "--one", app, build, "--method", args.method,
                       "--runs", str(args.runs), "--size", args.size]
                res = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if res.returncode != 0:
                    sys.stderr.write(res.stderr[-2000:])
                    continue
                got.append(json.loads(res.stdout.strip().splitlines()[-1]))
            if not got:
                cells.append(f"{'failed':>22s} {'':>13s}")
                continue
            f = sorted(r["faults_per_run"] for r in got)
            ms = sorted(r["ms"] for r in got)
            cells.append(f"{f'{f[0]:.0f}-{f[-1]:.0f}' if len(f) > 1 else f'{f[0]:.1f}':>22s} "
                         f"{f'{ms[0]:.1f}-{ms[-1]:.1f}' if len(ms) > 1 else f'{ms[0]:.1f}':>13s}")
        print(f"{app:16s} {args.method:7s} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
