"""Solve time against pipeline depth: a chain of N stages, every third one a 2-tap
stencil of the one before (``f[x, y] = (prev[x - 1, y] + prev[x + 1, y]) * 0.5``), the
others pointwise (``f[x, y] = prev[x, y] * 0.999 + 0.001``), over a ``repeat_edge``
input (``mixed_chain`` of tests/test_deep_pipelines.py).

    python benchmarks/deep_chain.py                       # N = 15,30,45,60,100,200,400
    python benchmarks/deep_chain.py 100 400 --methods greedy,beam --timeout 120

Each N is solved in a process of its own (killed after ``--timeout`` seconds), with
estimates [24, 20] for the last stage and the input.  A line per (N, method): the solve seconds, the
seconds per stage, and that relative to the first N's (constant: linear time; a
solve's fixed cost, about 0.1 s, weighs on the small N).  For N <= ``--check-max`` (100) the solved schedule is compiled and its result
at 11 x 9 compared with ``ts.reference.realize``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import tilesolve as ts  # noqa: E402
from test_deep_pipelines import mixed_chain  # noqa: E402

DEFAULT_NS = (15, 30, 45, 60, 100, 200, 400)
SIZE = [24, 20]
CHECK_SIZE = [11, 9]


def solve_one(n: int, method: str, check: bool) -> dict:
    pipe = mixed_chain(n)
    est = {f"s{n - 1}": SIZE, "input": SIZE}
    t0 = time.perf_counter()
    sched = ts.solve_schedule(pipe, "host", estimates=est, method=method, time_limit=10.0)
    out = {"seconds": time.perf_counter() - t0}
    if check:
        img = np.random.default_rng(0).random(CHECK_SIZE[::-1], dtype=np.float32)
        got = ts.compile(pipe, sched).realize(CHECK_SIZE, input=img)
        ref = ts.reference.realize(pipe, CHECK_SIZE, input=img)
        out["equal"] = bool(np.allclose(got, ref, rtol=1e-5, atol=1e-6))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ns", nargs="*", type=int, default=list(DEFAULT_NS))
    p.add_argument("--methods", default="greedy")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds one solve may take (its process is killed after)")
    p.add_argument("--check-max", type=int, default=100,
                   help="compile and compare with the reference for N up to this")
    p.add_argument("--one", nargs=2, metavar=("N", "METHOD"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        n = int(a.one[0])
        print(json.dumps(solve_one(n, a.one[1], n <= a.check_max)))
        return
    print(f"{'N':>5} {'method':>7} {'seconds':>9} {'ms/stage':>9} {'ratio':>6}  check")
    for m in a.methods.split(","):
        first = None
        for n in a.ns:
            cmd = [sys.executable, __file__, "--one", str(n), m, "--check-max", str(a.check_max)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                print(f"{n:>5} {m:>7} {'>' + str(int(a.timeout)):>9}", flush=True)
                continue
            if r.returncode != 0:
                print(f"{n:>5} {m:>7} failed: {r.stderr.strip().splitlines()[-1:]}", flush=True)
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            per = res["seconds"] / n
            first = first or per
            check = {True: "equal", False: "DIFFERS"}.get(res.get("equal"), "-")
            print(f"{n:>5} {m:>7} {res['seconds']:>9.3f} {1e3 * per:>9.2f} {per / first:>6.2f}"
                  f"  {check}", flush=True)


if __name__ == "__main__":
    main()
