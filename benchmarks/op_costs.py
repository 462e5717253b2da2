"""What each operation costs on this machine, against the op table's relative costs.

    python benchmarks/op_costs.py [--steps 9] [--runs 300] [--json FILE]

The cost model prices a point's arithmetic in units of one vectorized ``+`` or ``*``
(``model/ops.py``, ``analysis/costs.py``).  This measures each op's throughput in those
units: a pipeline ``f(x, y) = prod_i op(in(x, y) * c_i)`` over an image that stays in
L2 (512 x 64), vectorized by 16, on one core, with ``steps`` independent ops and with
one; the difference per step, less the two multiplies each step also does (measured
alone), over the cost of one multiply.  Each op gets its own constant ``c_i`` so no two
steps are alike (nothing is folded or shared).  Integer ops run on int32 inputs.
Fastest of ``runs`` realizations each; every build is checked against the reference
evaluator on a small size first.

Priced at the measured costs, the solvers' schedules ran slower (interpolate 1.97x and
2.06x, unsharp 1.20-1.22x, lens_blur 1.08-1.23x; no app faster): the table was kept
(``analysis/costs.py``).

This is not a test; nothing is asserted beyond the reference checks.
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import tilesolve as ts
from tilesolve.model.ops import OPS

W, H = 512, 64

def _float_ops():
    return {
        "mul": lambda e, c, i: e,
        "add": lambda e, c, i: e + c,
        "min": lambda e, c, i: ts.min(e, c),
        "div": lambda e, c, i: e / (3.0 + i),
        "div_pow2": lambda e, c, i: e / float(2 ** (i % 4 + 1)),
        "mod": lambda e, c, i: e % (3.0 + i),
        "floor": lambda e, c, i: ts.floor(e),
        "abs": lambda e, c, i: ts.abs(e - c),
        "sqrt": lambda e, c, i: ts.sqrt(e),
        "exp": lambda e, c, i: ts.exp(e * 0.01),
        "log": lambda e, c, i: ts.log(e),
        "pow": lambda e, c, i: ts.pow(e, c),
        "sin": lambda e, c, i: ts.sin(e),
        "atan2": lambda e, c, i: ts.atan2(e, c),
    }


def _int_ops():
    return {
        "mul": lambda e, c, i: e,
        "add": lambda e, c, i: e + (i + 1),
        "div": lambda e, c, i: e / (3 + 2 * i),
        "mod": lambda e, c, i: e % (3 + 2 * i),
        "div_pow2": lambda e, c, i: e / 8,
        "div_var": lambda e, c, i: e / (c + 1),
    }


def _pipeline(dtype, name, op, steps: int):
    x, y = ts.Var("x"), ts.Var("y")
    t = ts.float32 if dtype == "float32" else ts.int32
    inp = ts.ImageParam(t, 2, "input")
    d = ts.Param(t, "d")
    f = ts.Func(f"f_{name}")
    acc = None
    for i in range(steps):
        if dtype == "float32":
            c = 1.0 + 0.01 * i
            e = op(inp[x, y] * c, c, i)
        else:
            e = op(inp[x, y] * (2 * i + 1), d, i)
        acc = e if acc is None else acc * e
    f[x, y] = acc
    p = ts.Pipeline(f)
    s = ts.Schedule(p)
    s[f.name].vectorize("x", 16)
    return p, s


def _inputs(dtype):
    g = np.random.default_rng(0)
    if dtype == "float32":
        return {"input": (g.random((H, W), dtype=np.float32) + 1.0)}
    return {"input": g.integers(1, 1000, (H, W)).astype(np.int32)}


def _time(c, sizes, runs, inputs, params) -> float:
    out = c.realize(sizes, **inputs, **params)
    best = math.inf
    for _ in range(runs):
        t = time.perf_counter()
        c.realize(sizes, out=out, **inputs, **params)
        best = min(best, time.perf_counter() - t)
    return best


def measure(steps: int, runs: int) -> list:
    rows = []
    for dtype, table in (("float32", _float_ops()), ("int32", _int_ops())):
        inputs = _inputs(dtype)
        small = {k: v[:8, :40] for k, v in inputs.items()}
        per_step = {}
        for name, op in table.items():
            params = {"d": 6} if name == "div_var" else {}
            t = {}
            for k in (1, steps):
                p, s = _pipeline(dtype, name, op, k)
                c = ts.compile(p, s, num_threads=1)
                got = c.realize([32, 8], **small, **params)
                want = ts.reference.realize(p, [32, 8], **small, **params)
                if not np.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True):
                    raise AssertionError(f"{dtype} {name}: compiled result differs")
                t[k] = _time(c, [W, H], runs, inputs, params)
            per_step[name] = (t[steps] - t[1]) / (steps - 1)
        mul = per_step["mul"] / 2.0          # a step of "mul" is two multiplies
        vectors = W * H / 16
        for name, v in per_step.items():
            if name == "mul":
                continue
            units = (v - per_step["mul"]) / mul
            base = name.split("_")[0]
            op = OPS.get(base)
            table_cost = None
            if op is not None:
                table_cost = op.cost_of(ts.float32 if dtype == "float32" else ts.int32,
                                        pow2_divisor=name == "div_pow2")
            rows.append({"dtype": dtype, "op": name, "units": round(units, 2),
                         "ns_per_vector": round((v - per_step["mul"]) / vectors * 1e9, 3),
                         "table": table_cost})
        rows.append({"dtype": dtype, "op": "mul", "units": 1.0,
                     "ns_per_vector": round(mul / vectors * 1e9, 3),
                     "table": OPS["mul"].cost})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = measure(args.steps, args.runs)
    print(f"{'type':8s} {'op':9s} {'ns/vector':>9s} {'units':>7s} {'table':>6s}")
    for r in rows:
        print(f"{r['dtype']:8s} {r['op']:9s} {r['ns_per_vector']:9.3f} {r['units']:7.1f} "
              f"{'' if r['table'] is None else r['table']:>6}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "runs": args.runs, "ops": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
