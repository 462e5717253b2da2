"""Fused multiply-adds (``Schedule.set_codegen(fma=True)``): each app's solved schedule
compiled strict (IEEE, the default) and with FMA, beside Halide's compile of the same
schedule in both modes and, for matmul, numpy's BLAS, in one process.

    python benchmarks/fma.py [--apps matmul,conv_layer] [--methods greedy]
                             [--rounds 5] [--threads 2]

Interleaved rounds, each build run twice and the second timed, fastest run kept; every
build is checked against the strict build first (``allclose``: FMA rounds once where
the strict code rounds twice).  Prints ms per build and the ratios to strict and to
BLAS.  (``--apps matmul,conv_layer --methods greedy,ilp``: matmul greedy
strict 86.9 / fma 65.7 / BLAS 43.5 ms, ILP 96.8 / 70.3 / 48.7; conv_layer fma 0.745x
of strict.)
"""
from __future__ import annotations

import argparse

import numpy as np
from _rounds import fastest

import tilesolve as ts
from tilesolve.apps import get_app


def measure(name: str, method: str, rounds: int, threads: int) -> str:
    app = get_app(name)
    sizes = list(app.PAPER_SIZE)
    pipe, est = app.build(sizes)
    inputs = app.make_inputs(sizes, seed=0)
    strict = ts.solve_schedule(pipe, "host", estimates=est, method=method)
    fused = strict.copy().set_codegen(fma=True)
    runs, outs = {}, {}
    from tilesolve.interop import halide as th
    for tag, sched in (("strict", strict), ("fma", fused)):
        c = ts.compile(pipe, sched, num_threads=threads)
        outs[tag] = c.realize(sizes, **inputs)
        runs[tag] = lambda c=c, tag=tag: c.realize(sizes, out=outs[tag], **inputs)
        hp = th.translate(pipe)
        hp.apply_schedule(sched)
        hp.bind(**inputs)
        outs[f"halide {tag}"] = hp.realize(sizes, **inputs)
        runs[f"halide {tag}"] = lambda hp=hp: hp.run(sizes)
    if name == "matmul":
        a, b = inputs["A"], inputs["B"]
        outs["blas"] = a @ b
        runs["blas"] = lambda: np.matmul(a, b, out=outs["blas"])
    for k, o in outs.items():
        if not np.allclose(o, outs["strict"], rtol=1e-4, atol=1e-3):
            raise SystemExit(f"{name} {method}: build {k!r} differs from the strict build")
    best = fastest(runs, rounds)
    cells = "  ".join(f"{k} {v * 1e3:7.1f}" for k, v in best.items())
    ratio = f"fma/strict {best['fma'] / best['strict']:.3f}"
    if "blas" in best:
        ratio += (f"  strict/blas {best['strict'] / best['blas']:.2f}"
                  f"  fma/blas {best['fma'] / best['blas']:.2f}")
    return f"{name:10s} {method:6s} ms: {cells}\n{'':17s} {ratio}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default="matmul")
    ap.add_argument("--methods", default="greedy")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    for name in args.apps.split(","):
        for method in args.methods.split(","):
            print(measure(name, method, args.rounds, args.threads), flush=True)


if __name__ == "__main__":
    main()
