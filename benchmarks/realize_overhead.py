"""The fixed cost of one ``realize`` call: argument binding, region checks, the call.

    python benchmarks/realize_overhead.py [--calls 20000] [--threads 2]

A one-Func pipeline (``f[x, y] = in[x, y] * 2``) over 4 x 4 points, its output passed
with ``out=``, so the time per call is almost all overhead.  Prints microseconds per
call, after 1,000 warm-up calls.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tilesolve as ts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "inp")
    f = ts.Func("f")
    f[x, y] = inp[x, y] * 2
    pipe = ts.Pipeline(f)
    fast = ts.compile(pipe, ts.Schedule(pipe), num_threads=args.threads)
    a = np.ones((4, 4), np.float32)
    out = np.empty((4, 4), np.float32)
    for _ in range(1000):
        fast.realize([4, 4], inp=a, out=out)
    t0 = time.perf_counter()
    for _ in range(args.calls):
        fast.realize([4, 4], inp=a, out=out)
    print(f"{(time.perf_counter() - t0) / args.calls * 1e6:.1f} us per realize")


if __name__ == "__main__":
    main()
