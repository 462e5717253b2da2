"""Parallel loops on a quiet and on a busy machine: tilesolve's thread pool, libgomp, and
Halide compiling the same schedule.

    python benchmarks/parallel_runtime.py [--apps max_pool,harris,...] [--rounds 5]
                                          [--load N] [--json FILE]

Each app's greedy schedule (spec ``xeon-e5-2620v3``, paper size) is compiled three ways:
tilesolve with its pool (``install_runtime("pool")``), tilesolve with libgomp
(``install_runtime("gomp")``) and Halide through the bridge (the same schedule, when the
``halide`` package is installed).  The runtime is chosen once per process, so each way
runs in its own child process; the children run in rounds, interleaved, quiet and then
with ``--load`` busy processes started by this script (default: one per core), which it
stops at the end.  Each child times 15 realizes (2 threads) and reports the min and the
median; a row is the min over rounds of each.  The figure that matters is the median
under load over the median quiet, for each way.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

CHILD = r"""
import sys, time, json
from tilesolve.backend.cpu import parallel
way, names = sys.argv[1], sys.argv[2].split(",")
if way != "halide":
    parallel.install_runtime(way)
import tilesolve as ts
from tilesolve.apps import APPS
from tilesolve.apps.validation import PIPELINES
reg = {**APPS, **PIPELINES}
out = {}
for name in names:
    app = reg[name]
    p, est = app.build()
    s = ts.solve_schedule(p, "xeon-e5-2620v3", est, method="greedy")
    sizes = app.PAPER_SIZE
    inp = app.make_inputs(sizes)
    if way == "halide":
        from tilesolve.interop import halide as th
        hp = th.translate(p)
        hp.apply_schedule(s)
        hp.compile()
        run = lambda: hp.realize(sizes, **inp)
    else:
        c = ts.compile(p, s, num_threads=2)
        run = lambda: c.realize(sizes, **inp)
    run()
    ts_ = []
    for _ in range(15):
        t = time.perf_counter(); run(); ts_.append(time.perf_counter() - t)
    ts_.sort()
    out[name] = (ts_[0] * 1e3, ts_[7] * 1e3)
print(json.dumps(out))
"""

WAYS = ("pool", "gomp", "halide")


def child(way, apps):
    env = dict(os.environ, HL_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-c", CHILD, way, ",".join(apps)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def spin():
    while True:
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="max_pool,avg_pool,corners,harris,blur,unsharp")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--load", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    apps = args.apps.split(",")
    try:
        import halide  # noqa: F401
        ways = WAYS
    except ImportError:
        ways = WAYS[:2]
    best = {}
    for phase in ("quiet", "loaded"):
        load = []
        if phase == "loaded":
            load = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
            for p in load:
                p.start()
            time.sleep(0.5)
        try:
            for _ in range(args.rounds):
                for way in ways:
                    res = child(way, apps)
                    for name, (mn, med) in (res or {}).items():
                        k = (phase, way, name)
                        old = best.get(k, (float("inf"), float("inf")))
                        best[k] = (min(old[0], mn), min(old[1], med))
        finally:
            for p in load:
                p.terminate()
    print(f"{'app':<12}{'way':<8}{'quiet min':>10}{'quiet med':>10}{'load min':>10}"
          f"{'load med':>10}{'med load/quiet':>16}")
    rows = []
    for name in apps:
        for way in ways:
            q, lo = best.get(("quiet", way, name)), best.get(("loaded", way, name))
            if q is None or lo is None:
                continue
            rows.append({"app": name, "way": way, "quiet": q, "loaded": lo})
            print(f"{name:<12}{way:<8}{q[0]:>10.3f}{q[1]:>10.3f}{lo[0]:>10.3f}{lo[1]:>10.3f}"
                  f"{lo[1] / q[1]:>16.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
