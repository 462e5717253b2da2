"""Vector math: tilesolve's code against Halide's and against the per-lane C library.

    python benchmarks/vecmath_vs_halide.py [--size 2048] [--rounds 7] [--fns pow,sin,...]

For each function, a one-Func pipeline ``f(x, y) = fn(input(x, y)[, ...])`` over a
float32 image, vectorized by 16 and parallel over rows, compiled three ways: by
tilesolve (``backend/cpu/vecmath*.py``), by tilesolve with ``generate(...,
vector_math=False)`` (the LLVM intrinsics and C library calls, one a lane: "libm"), and
by Halide through the bridge.  The three are timed in interleaved rounds in one process
(each program twice per round, the second timed; min in ms), and each one's largest
error against numpy in float64 is printed in float32 ulps of the exact result.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tilesolve as ts
from tilesolve.interop import halide as th

F32 = np.float32
# name -> (the expression of inputs a and b, numpy in float64, inputs from a generator)
CASES = {
    "exp": (lambda a, b: ts.exp(a), np.exp, lambda g, s: [g.uniform(-10, 10, s)]),
    "log": (lambda a, b: ts.log(a), np.log, lambda g, s: [g.uniform(1e-3, 100, s)]),
    "pow": (lambda a, b: ts.pow(a, b), np.power,
            lambda g, s: [g.uniform(0, 1, s), g.uniform(0.3, 3, s)]),
    "pow2.4": (lambda a, b: ts.pow(a, 2.4), lambda a: np.power(a, F32(2.4).astype(float)),
               lambda g, s: [g.uniform(0, 1, s)]),
    "sin": (lambda a, b: ts.sin(a), np.sin, lambda g, s: [g.uniform(-100, 100, s)]),
    "cos": (lambda a, b: ts.cos(a), np.cos, lambda g, s: [g.uniform(-100, 100, s)]),
    "tan": (lambda a, b: ts.tan(a), np.tan, lambda g, s: [g.uniform(-10, 10, s)]),
    "atan2": (lambda a, b: ts.atan2(a, b), np.arctan2,
              lambda g, s: [g.uniform(-10, 10, s), g.uniform(-10, 10, s)]),
}


def pipeline(fn: str, nargs: int):
    x, y = ts.Var("x"), ts.Var("y")
    ins = [ts.ImageParam(ts.float32, 2, n) for n in ("a", "b")[:nargs]]
    f = ts.Func("f")
    f[x, y] = CASES[fn][0](*[i[x, y] for i in ins], *([None] * (2 - nargs)))
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, 16).parallel(y)
    return pipe, s


def compile_libm(pipe, s, num_threads: int):
    """``ts.compile`` without ``vecmath``: one C library call a lane."""
    from tilesolve.backend.cpu.codegen import generate
    from tilesolve.backend.cpu.compiled import CompiledPipeline
    from tilesolve.backend.cpu.runtime import NativeKernel
    from tilesolve.backend.cpu.target import host_target
    from tilesolve.lower import lower
    lowered = lower(pipe, s, target="cpu")
    tgt = host_target()
    gen = generate(lowered, tgt.info.triple, tgt.info.data_layout, vector_math=False)
    return CompiledPipeline(pipe, s, lowered, gen, NativeKernel(gen, tgt), num_threads, 0.0)


def max_ulps(got, want):
    w32 = want.astype(F32)
    spacing = np.maximum(np.spacing(np.abs(w32)).astype(np.float64), 2.0 ** -149)
    return float(np.max(np.abs(np.asarray(got, np.float64) - want) / spacing))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--fns", default=",".join(CASES), help="comma-separated, among "
                    + ", ".join(CASES))
    a = ap.parse_args(argv)
    n = a.size
    g = np.random.default_rng(0)
    print(f"{'fn':7s} {'ours ms':>8s} {'libm ms':>8s} {'Halide ms':>9s} {'libm/ours':>9s} "
          f"{'ours/Halide':>11s} {'ulps ours':>9s} {'libm':>6s} {'Halide':>8s}")
    for fn in a.fns.split(","):
        arrs = [v.astype(F32) for v in CASES[fn][2](g, (n, n))]
        kw = dict(zip(("a", "b"), arrs))
        pipe, s = pipeline(fn, len(arrs))
        cp = ts.compile(pipe, s)
        lm = compile_libm(pipe, s, cp.num_threads)
        hp = th.translate(pipe)
        hp.apply_schedule(s)
        hp.compile()
        hp.bind(**kw)
        outs = {k: np.empty((n, n), F32) for k in ("ours", "libm")}
        runs = {"ours": lambda: cp.realize([n, n], **kw, out=outs["ours"]),
                "libm": lambda: lm.realize([n, n], **kw, out=outs["libm"]),
                "halide": lambda: hp.run([n, n])}
        with np.errstate(all="ignore"):
            ref = CASES[fn][1](*[v.astype(np.float64) for v in arrs])
        runs["ours"](), runs["libm"]()
        errs = [max_ulps(outs["ours"], ref), max_ulps(outs["libm"], ref),
                max_ulps(np.asarray(hp.run([n, n])[0]), ref)]
        best = {k: float("inf") for k in runs}
        for _ in range(a.rounds):
            for k, run in runs.items():
                run()
                t0 = time.perf_counter()
                run()
                best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
        print(f"{fn:7s} {best['ours']:8.2f} {best['libm']:8.2f} {best['halide']:9.2f} "
              f"{best['libm'] / best['ours']:9.2f} {best['ours'] / best['halide']:11.2f} "
              f"{errs[0]:9.2f} {errs[1]:6.2f} {errs[2]:8.2f}", flush=True)


if __name__ == "__main__":
    main()
