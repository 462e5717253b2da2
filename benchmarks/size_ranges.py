"""One schedule for a range of sizes against a schedule solved for each exact size.

    python benchmarks/size_ranges.py [--apps blur,unsharp,harris,local_laplacian,camera_pipe]
        [--lo 256 --hi 8192] [--sizes 5] [--max-measure 8192] [--rounds 3]
        [--method greedy] [--spec xeon-e5-2620v3]

For each app: ``solve_schedule`` over the range lo^2 .. hi^2 of its output (further
dimensions, such as channels, at the paper's extent), then at ``--sizes`` sizes spaced
geometrically across the range (those above ``--max-measure`` left out, to bound the
run's time and memory), the range's dispatched build and the build of a schedule
solved for that exact size are timed in interleaved rounds (the fastest run of each);
prints their ratio, and the range solve's time over a point solve's at the paper size
(each the faster of two fresh processes).
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys

import tilesolve as ts
from tilesolve.apps import APPS

from _rounds import fastest


_SOLVE = """
import sys, time
import tilesolve as ts
from tilesolve.apps import APPS
name, kind, lo, hi, spec, method = sys.argv[1:]
pipe, est = APPS[name].build()
out = pipe.output_names[0]
rest = est[out][2:]
e = est if kind == "point" else {out: ([int(lo)] * 2 + rest, [int(hi)] * 2 + rest)}
t0 = time.perf_counter()
ts.solve_schedule(pipe, spec, e, method=method)
print(time.perf_counter() - t0)
"""


def _solve_seconds(name: str, kind: str, args) -> float:
    """Seconds of one solve in a fresh process (the solvers' caches would favour the
    second solve of one process)."""
    res = subprocess.run([sys.executable, "-c", _SOLVE, name, kind, str(args.lo),
                          str(args.hi), args.spec, args.method],
                         capture_output=True, text=True, check=True)
    return float(res.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="blur,unsharp,harris,local_laplacian,camera_pipe")
    ap.add_argument("--lo", type=int, default=256)
    ap.add_argument("--hi", type=int, default=8192)
    ap.add_argument("--sizes", type=int, default=5)
    ap.add_argument("--max-measure", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--method", default="greedy")
    ap.add_argument("--spec", default="xeon-e5-2620v3")
    args = ap.parse_args()
    worst, solve_ratios = [], []
    for name in args.apps.split(","):
        mod = APPS[name]
        pipe, est = mod.build()
        out = pipe.output_names[0]
        rest = est[out][2:]
        rng = {out: ([args.lo, args.lo] + rest, [args.hi, args.hi] + rest)}
        point_s = min(_solve_seconds(name, "point", args) for _ in range(2))
        range_s = min(_solve_seconds(name, "range", args) for _ in range(2))
        solve_ratios.append(range_s / max(point_s, 1e-9))
        classes = ts.solve_schedule(pipe, args.spec, rng, method=args.method)
        dispatched = ts.compile(pipe, classes)
        print(f"{name}: {len(classes.classes)} classes, solve {range_s:.2f} s against "
              f"{point_s:.2f} s for a point ({range_s / max(point_s, 1e-9):.2f}x)")
        for i in range(args.sizes):
            e = round(args.lo * (args.hi / args.lo) ** (i / max(1, args.sizes - 1)))
            if e > args.max_measure:
                print(f"  {e} x {e}: not measured (--max-measure {args.max_measure})")
                continue
            sizes = [e, e] + rest
            exact = ts.solve_schedule(pipe, args.spec, {out: sizes}, method=args.method)
            build = ts.compile(pipe, exact)
            inputs = mod.make_inputs(sizes, seed=0)
            best = fastest({"range": lambda: dispatched.realize(sizes, **inputs),
                            "exact": lambda: build.realize(sizes, **inputs)}, args.rounds)
            r = best["range"] / best["exact"]
            worst.append(r)
            print(f"  {e} x {e}: range {best['range'] * 1e3:.2f} ms, exact "
                  f"{best['exact'] * 1e3:.2f} ms, ratio {r:.3f}")
    print(f"worst time ratio {max(worst):.3f}, geomean "
          f"{math.exp(sum(map(math.log, worst)) / len(worst)):.3f}; solve time ratio max "
          f"{max(solve_ratios):.2f}")


if __name__ == "__main__":
    main()
