"""Vector exp and log: tilesolve's code against Halide's, the same one-Func pipelines.

    python benchmarks/vecmath_vs_halide.py [--size 2048] [--rounds 7] [--libm]

``f(x, y) = exp(input(x, y))`` (and ``log``) over a float32 image, vectorized by
16 and parallel over rows, compiled by tilesolve and by Halide (through the
bridge), timed in rounds in one process (each program twice per round, the
second timed; min in ms).  Also prints each one's largest error relative to
numpy in float64.  ``--libm`` compiles ours as before ``backend/cpu/vecmath.py``
(one C library call per lane), for the before/after comparison.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tilesolve as ts
from tilesolve.interop import halide as th


def pipeline(fn: str):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    f = ts.Func("f")
    f[x, y] = getattr(ts, fn)(inp[x, y])
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, 16).parallel(y)
    return pipe, s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--libm", action="store_true", help="ours without vecmath (per-lane libm)")
    a = ap.parse_args(argv)
    if a.libm:
        from tilesolve.backend.cpu import vecmath
        vecmath.applies = lambda *args: False
    n = a.size
    g = np.random.default_rng(0)
    inputs = {"exp": (g.random((n, n), dtype=np.float32) * 20 - 10),
              "log": (g.random((n, n), dtype=np.float32) * 100 + 1e-3)}
    print(f"{'fn':4s} {'tilesolve ms':>12s} {'Halide ms':>10s} {'ratio':>6s} "
          f"{'max rel err ours':>17s} {'Halide':>9s}")
    for fn, arr in inputs.items():
        pipe, s = pipeline(fn)
        cp = ts.compile(pipe, s)
        hp = th.translate(pipe)
        hp.apply_schedule(s)
        hp.compile()
        hp.bind(input=arr)
        out = cp.realize([n, n], input=arr)
        ref = getattr(np, fn)(arr.astype(np.float64))
        errs = [float(np.max(np.abs(o - ref) / np.abs(ref)))
                for o in (out, np.asarray(hp.run([n, n])[0]))]
        runs = {"ours": lambda: cp.realize([n, n], input=arr, out=out),
                "halide": lambda: hp.run([n, n])}
        best = {k: float("inf") for k in runs}
        for _ in range(a.rounds):
            for k, run in runs.items():
                run()
                t0 = time.perf_counter()
                run()
                best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
        print(f"{fn:4s} {best['ours']:12.2f} {best['halide']:10.2f} "
              f"{best['ours'] / best['halide']:6.2f} {errs[0]:17.2e} {errs[1]:9.2e}")


if __name__ == "__main__":
    main()
