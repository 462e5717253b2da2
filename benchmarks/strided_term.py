"""The cost model's ``strided`` term (transposed reads): what it predicts against what
runs, on a transpose ``out(x, y) = f(y, x) + 1`` with ``f(x, y) = in(x, y) * 2``.

    python benchmarks/strided_term.py [--sizes 1536x2560,768x2560,...] [--threads 2]
                                      [--rounds 7] [--json FILE]

For each output size (width x height), three kinds of schedule are compiled and timed
in interleaved rounds in one process (fastest run, into a preallocated output):

* ``root``: f and out at root, out vectorized along x: each sweep of x reads a column
  of f, one cache line a point, lines ``height x 4`` bytes apart;
* ``tiled TXxTY``: out in tiles, f at root: a sweep of a tile's row reads TX lines;
* ``fused TXxTY``: f computed per tile of out: the column is read from the tile's own
  buffer (a stride of TY words).

Each row prints the time per point (core-ns: ms x threads / points) and the model's
prediction with and without the term; the last lines give Spearman's rho between
prediction and time over all rows, with and without it.  (the development
machine, 2 threads: at root, sweeps of up to 768 lines cost 1.5 core-ns a point,
1024 lines 2.7, 1536 lines 6.2-7.0 for heights 512 to 5120, 3072 lines 7.7; fused
64 x 64 tiles 0.5-1.0.)
"""
from __future__ import annotations

import argparse
import json

import numpy as np
from _rounds import fastest

import tilesolve as ts
from tilesolve.solver import cost_terms
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling

TILES = ((16, 16), (64, 16), (64, 64), (256, 16), (1024, 16))


def build():
    inp = ts.ImageParam(ts.float32, 2, "inp")
    x, y = ts.Var("x"), ts.Var("y")
    f = ts.Func("f")
    f[x, y] = inp[x, y] * 2.0
    out = ts.Func("out")
    out[x, y] = f[y, x] + 1.0
    return ts.Pipeline(out), f, out


def schedule(pipe, f, out, kind: str, tx: int = 0, ty: int = 0):
    s = ts.Schedule(pipe)
    x, y = ts.Var("x"), ts.Var("y")
    xo, yo, xi, yi, tile = (ts.Var(n) for n in ("xo", "yo", "xi", "yi", "tile"))
    if kind == "root":
        s[f].compute_root().vectorize(x, 16).parallel(y)
        s[out].compute_root().vectorize(x, 16).parallel(y)
        return s
    s[out].compute_root().split(x, xo, xi, tx).split(y, yo, yi, ty).reorder(xi, yi, xo, yo) \
        .fuse(xo, yo, tile).parallel(tile).vectorize(xi, 16)
    if kind == "fused":
        s[f].compute_at(out, tile).vectorize(x, 16)
    else:
        s[f].compute_root().vectorize(x, 16).parallel(y)
    return s


def predict(model, kind: str, tx: int, ty: int) -> float:
    if kind == "fused":
        cols = [(Group("out", frozenset({"f", "out"})), Tiling((tx, ty)))]
    else:
        out_tiling = Tiling.untiled(2) if kind == "root" else Tiling((tx, ty))
        cols = [(Group.singleton("f"), Tiling.untiled(2)), (Group.singleton("out"), out_tiling)]
    return sum(sum(model.cost(g, t).terms().values()) for g, t in cols)


def _spearman(a, b) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def run(sizes, threads: int, rounds: int) -> dict:
    pipe, f, out = build()
    spec = ts.load_spec("host")
    rows = []
    for w, h in sizes:
        a = np.random.default_rng(0).random((w, h), dtype=np.float32)   # inp: h wide, w high
        ref = a.T * 2 + 1
        configs = [("root", 0, 0)] + [(k, tx, ty) for k in ("tiled", "fused") for tx, ty in TILES]
        runs = {}
        for cfg in configs:
            c = ts.compile(pipe, schedule(pipe, f, out, *cfg), num_threads=threads)
            o = c.realize([w, h], inp=a)
            if not np.allclose(o, ref):
                raise SystemExit(f"{cfg}: result differs from numpy's transpose")
            runs[cfg] = (lambda c=c, o=o: c.realize([w, h], out=o, inp=a))
        times = fastest(runs, rounds)
        problem = Problem(pipe, spec, {"out": [w, h]}, inline=False)
        with_term = {cfg: predict(CostModel(problem), *cfg) for cfg in configs}
        saved = cost_terms.strided_cost
        cost_terms.strided_cost = lambda *args, **kwargs: 0.0
        try:
            without = {cfg: predict(CostModel(problem), *cfg) for cfg in configs}
        finally:
            cost_terms.strided_cost = saved
        for cfg in configs:
            kind, tx, ty = cfg
            name = kind if kind == "root" else f"{kind} {tx}x{ty}"
            ns = times[cfg] * 1e9 * threads / (w * h)
            rows.append({"size": [w, h], "schedule": name, "ms": times[cfg] * 1e3,
                         "core_ns_per_point": ns, "predicted": with_term[cfg],
                         "predicted_without": without[cfg]})
            print(f"{w}x{h} {name:14s} {times[cfg] * 1e3:8.2f} ms {ns:6.2f} core-ns/pt  "
                  f"predicted {with_term[cfg] / 1e6:9.1f}M (without the term "
                  f"{without[cfg] / 1e6:9.1f}M)", flush=True)
    ms = [r["core_ns_per_point"] for r in rows]
    rho = _spearman([r["predicted"] / np.prod(r["size"]) for r in rows], ms)
    rho0 = _spearman([r["predicted_without"] / np.prod(r["size"]) for r in rows], ms)
    print(f"Spearman rho, predicted per point vs core-ns per point: {rho:.3f} with the term, "
          f"{rho0:.3f} without")
    return {"threads": threads, "rows": rows, "spearman": rho, "spearman_without": rho0}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1536x2560,768x2560,1024x2560,3072x2560,1536x512")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    res = run(sizes, a.threads, a.rounds)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
