"""What a store to memory costs beside a load, with our compiled code.

    python benchmarks/store_vs_load.py [--width 4096] [--height 16384] [--rounds 15]

Three element-wise pipelines over ``W x H`` float32 buffers, each solved by greedy on
the ``host`` spec and compiled: ``a`` reads one buffer and writes one (``out = in0 * 2``),
``b`` reads two, ``c`` reads three.  One read of a buffer costs ``b - a`` (and ``c - b``:
the two are averaged), one write ``a - read``.  Every output is checked against numpy;
the timing is ``_rounds.fastest`` (interleaved rounds, the second of two runs, into one
output buffer).

Why: a cache that allocates on write reads a line before writing it, so a store to a
buffer larger than the last-level cache could cost two transfers.  The cost model
charges a word stored as one load (``load_cost``).  A variant tried charging two for the
stores of root buffers over half the LLC, which moved iir_blur's and max_filter's rho up;
this measures whether the machine does that.  On the 2-core AMD EPYC development
machine (two runs each): 67 MB buffers, write / read 1.11-1.16; 268 MB, 1.37-1.39; 8 MB
(in the LLC) 0.77-1.11, too short to tell.  Not two: the term was not kept.
"""
from __future__ import annotations

import argparse

import numpy as np
from _rounds import fastest

import tilesolve as ts
from tilesolve import model as M


def builds(w: int, h: int) -> dict:
    x, y = M.Var("x"), M.Var("y")
    images = [M.ImageParam(M.float32, 2, f"in{i}") for i in range(3)]
    rng = np.random.default_rng(0)
    arrays = {f"in{i}": rng.random((h, w), dtype=np.float32) for i in range(3)}
    runs = {}
    for name, reads in (("a", 1), ("b", 2), ("c", 3)):
        out = M.Func("out")
        e = images[0][x, y] * 2.0
        for i in range(1, reads):
            e = e + images[i][x, y]
        out[x, y] = e
        pipe = M.Pipeline(out)
        est = {"out": [w, h], **{f"in{i}": [w, h] for i in range(reads)}}
        compiled = ts.compile(pipe, ts.solve_schedule(pipe, "host", est, method="greedy"))
        kw = {f"in{i}": arrays[f"in{i}"] for i in range(reads)}
        got = compiled.realize([w, h], **kw)
        want = arrays["in0"] * 2 + sum(arrays[f"in{i}"] for i in range(1, reads))
        if not np.allclose(got, want):
            raise AssertionError(f"pipeline {name}: output differs from numpy")
        runs[name] = (lambda c=compiled, kw=kw, o=got: c.realize([w, h], out=o, **kw))
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--height", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args(argv)
    t = fastest(builds(a.width, a.height), a.rounds)
    mb = a.width * a.height * 4 / 1e6
    read = ((t["b"] - t["a"]) + (t["c"] - t["b"])) / 2
    write = t["a"] - read
    print(f"buffer {mb:.0f} MB: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in t.items()))
    print(f"one read {read * 1e3:.2f} ms ({mb / read / 1e3:.1f} GB/s), one write "
          f"{write * 1e3:.2f} ms ({mb / write / 1e3:.1f} GB/s), write / read {write / read:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
