"""The cost model's ``streams`` term (rows a tile touches beyond the prefetcher): what
it predicts against what runs, and what it changes in the solvers' schedules.

    python benchmarks/streams_term.py grid [--wide] [--threads 2] [--rounds 5] [--json FILE]
    python benchmarks/streams_term.py solvers [--apps blur,unsharp] [--methods greedy,ilp]
                                              [--rounds 5] [--json FILE]

``grid``: blur at 6400 x 4800 (float32), its blur_x computed per tile of blur_y, every
tile of 16-512 x 4-256, timed in interleaved rounds in one process (fastest run of each,
into a preallocated output); printed beside the model's prediction for the same column,
and Spearman's rho between them with and without the term.  (quiet machine,
2 threads: 128 x 64 15.9 ms, 128 x 16 10.0 ms; rho -0.62 without the term, 0.78 with
it.)

``grid --wide``: tiles 16-6400 wide (6400: whole rows) and 4-64 high instead, every
width dividing 6400.  (quiet machine, 2 threads: 16 x 4 ran 9.2 ms, 32 x 4
9.6, 128 x 8 and 256 x 8 10.9, 640 x 8 14.5, 3200 x 8 16.8, 6400 x 8 14.2; the model's
rho over the 50 tiles: 0.11, results/blur_wide_tiles_2026-11-25.json.  Wider tiles run slower with nothing the model prices growing;
a term for it (extra cost per word of rows read in runs over 64 bytes, growing to 2 KB,
gated by the balance of arithmetic and memory) raised this grid's rho to 0.65 but made
the solvers' schedules of 8 other apps up to 2.4x slower, and was not kept.)

``solvers``: each app's greedy and ILP schedule at the paper size solved twice, with
the term and without it (the spec's ``stream_miss_loads`` set to 0); where the schedules differ,
both are compiled and timed against each other in one process (interleaved rounds,
fastest run).  The last line gives the geomean of with / without over all schedules
(a schedule that did not change counts 1).  (the 15 apps, quiet machine:
0.954; blur 0.71 and 0.69, unsharp 0.83 and 0.89; none above 1.024.)
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import tilesolve as ts
from tilesolve.apps import get_app, list_apps
from tilesolve.solver.cost_terms import stream_miss_loads

XS = (16, 32, 64, 128, 256, 512)
YS = (4, 8, 16, 32, 64, 128, 256)
XS_WIDE = (16, 32, 64, 128, 256, 320, 640, 1280, 3200, 6400)
YS_WIDE = (4, 8, 16, 32, 64)


def _blur_tiled(pipe, tx: int, ty: int):
    s = ts.Schedule(pipe)
    by, bx = pipe.func("blur_y"), pipe.func("blur_x")
    x, y = ts.Var("x"), ts.Var("y")
    xo, yo, xi, yi, tile = (ts.Var(n) for n in ("xo", "yo", "xi", "yi", "tile"))
    s[by].compute_root().split(x, xo, xi, tx).split(y, yo, yi, ty).reorder(xi, yi, xo, yo) \
        .fuse(xo, yo, tile).parallel(tile).vectorize(xi, 16)
    s[bx].compute_at(by, tile).vectorize(x, 16)
    return s


def _spearman(a, b) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def grid(threads: int, rounds: int, wide: bool = False) -> dict:
    from tilesolve.solver.cost import CostModel
    from tilesolve.solver.problem import Problem
    from tilesolve.solver.space import Group, Tiling
    app = get_app("blur")
    sizes = [6400, 4800]
    pipe, est = app.build(sizes)
    inputs = app.make_inputs(sizes, seed=0)
    xs, ys = (XS_WIDE, YS_WIDE) if wide else (XS, YS)
    builds = {}
    for tx in xs:
        for ty in ys:
            c = ts.compile(pipe, _blur_tiled(pipe, tx, ty), num_threads=threads)
            builds[(tx, ty)] = (c, c.realize(sizes, **inputs))
    times = {k: math.inf for k in builds}
    for r in range(rounds):
        for k in (list(builds) if r % 2 == 0 else reversed(list(builds))):
            c, out = builds[k]
            t = time.perf_counter()
            c.realize(sizes, out=out, **inputs)
            times[k] = min(times[k], time.perf_counter() - t)
    host = ts.load_spec("host")
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))

    def predict(spec):
        m = CostModel(Problem(pipe, spec, est))
        return {k: sum(m.cost(group, Tiling(k)).terms().values()) for k in builds}
    with_term = predict(host.replace(stream_miss_loads=stream_miss_loads(host) or None))
    without = predict(host.replace(stream_miss_loads=0.0))
    keys = list(builds)
    ms = [times[k] * 1e3 for k in keys]
    print(f"blur {sizes}, {threads} threads: ms (predicted, 1e9) per tile width x height")
    print("width " + " ".join(f"{y:>13d}" for y in ys))
    for tx in xs:
        print(f"{tx:5d} " + " ".join(f"{times[(tx, y)] * 1e3:6.1f} ({with_term[(tx, y)] / 1e9:4.2f})"
                                     for y in ys))
    rho = _spearman([with_term[k] for k in keys], ms)
    rho0 = _spearman([without[k] for k in keys], ms)
    print(f"Spearman rho, predicted vs measured: {rho:.3f} with the term, {rho0:.3f} without")
    return {"sizes": sizes, "threads": threads,
            "tiles": [{"tile": list(k), "ms": times[k] * 1e3, "predicted": with_term[k],
                       "predicted_without": without[k]} for k in keys],
            "spearman": rho, "spearman_without": rho0}


def solvers(apps, methods, rounds: int) -> dict:
    host = ts.load_spec("host")
    specs = {True: host.replace(stream_miss_loads=stream_miss_loads(host) or None),
             False: host.replace(stream_miss_loads=0.0)}
    rows = []
    for name in apps:
        app = get_app(name)
        sizes = list(app.PAPER_SIZE)
        pipe, est = app.build(sizes)
        inputs = app.make_inputs(sizes, seed=0)
        for method in methods:
            sched = {}
            for on in (False, True):
                sched[on] = ts.solve_schedule(pipe, specs[on], estimates=est, method=method)
            if str(sched[False]) == str(sched[True]):
                rows.append({"app": name, "method": method, "ratio": 1.0, "same": True})
                print(f"{name:16s} {method:6s} same schedule", flush=True)
                continue
            builds = [ts.compile(pipe, sched[on]) for on in (False, True)]
            for c in builds:
                c.realize(sizes, **inputs)
            best = [math.inf, math.inf]
            for r in range(rounds):
                for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                    t = time.perf_counter()
                    builds[i].realize(sizes, **inputs)
                    best[i] = min(best[i], time.perf_counter() - t)
            rows.append({"app": name, "method": method, "ms_without": best[0] * 1e3,
                         "ms_with": best[1] * 1e3, "ratio": best[1] / best[0], "same": False})
            print(f"{name:16s} {method:6s} without {best[0] * 1e3:8.2f} ms  with "
                  f"{best[1] * 1e3:8.2f} ms  ratio {best[1] / best[0]:.3f}", flush=True)
    geo = float(np.exp(np.mean([np.log(r["ratio"]) for r in rows]))) if rows else 1.0
    print(f"geomean with / without over {len(rows)} schedules: {geo:.3f}")
    return {"rows": rows, "geomean": geo}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("grid", "solvers"))
    ap.add_argument("--apps", default=",".join(list_apps()))
    ap.add_argument("--methods", default="greedy,ilp")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--wide", action="store_true", help="grid: tiles up to whole rows")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.what == "grid":
        res = grid(a.threads, a.rounds, a.wide)
    else:
        res = solvers(a.apps.split(","), a.methods.split(","), a.rounds)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
