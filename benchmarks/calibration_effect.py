"""What a calibrated spec does to the apps' schedules: each app's schedule solved with
the default ``host`` spec and with a calibrated one, timed against each other in one
process.

    tilesolve calibrate --out cal.yaml
    python benchmarks/calibration_effect.py cal.yaml [--apps blur,max_filter] [--method greedy]
                                            [--rounds 7]

Apps whose schedule is the same under both specs are reported as such and not timed.
For each other app: both schedules compiled, run in interleaved rounds (the order
alternating), the fastest run of each; the outputs are compared (close within 1e-4).
The last line is the geomean of calibrated over default over the timed apps.  (At stop
22 a spec fitted with load_cost 15.4 gave 1.28 over the 11 apps whose schedule changed;
``tune/fit.py`` now keeps load_cost on such a flat fit.)
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import tilesolve as ts
from tilesolve.apps import get_app, list_apps


def _key(s) -> str:
    return "\n".join(ln for ln in str(s).splitlines() if not ln.startswith("#"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="the calibrated spec (a YAML path or a spec name)")
    ap.add_argument("--apps", default=",".join(list_apps()))
    ap.add_argument("--method", default="greedy")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    ratios = []
    for name in args.apps.split(","):
        app = get_app(name)
        pipe, est = app.build()
        sizes = est[pipe.output_names[0]]
        scheds = {tag: ts.solve_schedule(pipe, spec, estimates=est, method=args.method)
                  for tag, spec in (("default", "host"), ("calibrated", args.spec))}
        if _key(scheds["default"]) == _key(scheds["calibrated"]):
            print(f"{name:16s} same schedule", flush=True)
            continue
        inputs = app.make_inputs(sizes)
        runs, outs = {}, {}
        for tag, s in scheds.items():
            cp = ts.compile(pipe, s)
            outs[tag] = o = cp.realize(sizes, **inputs)
            runs[tag] = (lambda cp=cp, o=o: cp.realize(sizes, **inputs, out=o))
        best = {k: math.inf for k in runs}
        for r in range(args.rounds):
            for k in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                runs[k]()
                t0 = time.perf_counter()
                runs[k]()
                best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
        close = all(np.allclose(a, b, rtol=1e-4, atol=1e-4) for a, b in
                    zip(np.atleast_1d(outs["default"]), np.atleast_1d(outs["calibrated"])))
        ratio = best["calibrated"] / best["default"]
        ratios.append(ratio)
        print(f"{name:16s} default {best['default']:8.1f} ms  calibrated "
              f"{best['calibrated']:8.1f} ms  ratio {ratio:.3f}  outputs close {close}",
              flush=True)
    if ratios:
        print(f"geomean over {len(ratios)} apps: "
              f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
