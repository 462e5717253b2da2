"""One A/B measurement: each app's schedule solved with the spec as shipped (A) and with
changes (B), both compiled, checked and timed against each other in one process (apps of
the app suite, the validation suite or the first five random pipelines); prints
B/A per schedule and the geomean.

    python benchmarks/ab.py --set NAME=VALUE [--set NAME=VALUE ...] [--apps blur,matmul]
                            [--methods greedy,ilp] [--spec host] [--size paper|small|W,H,..]
                            [--param NAME=INT] [--rounds 7] [--threads N] [--budget 30]
                            [--json FILE]

NAME is one of:

* a cost parameter (``docs/cost_params.md``): B's spec has it changed
  (``--set stream_miss_loads=0``, ``--set strided_reads=false``, ``--set block_rows=1,2,4,8``);
* a spec field: B's spec has it (``--set load_cost=15.4``);
* ``spec``: B solves with another spec (``--set spec=cal.yaml``: what a calibrated spec
  does to the schedules);
* ``estimates``: ``--set estimates=none``: B solves with no estimates at all (the outputs
  get ``solver.problem.default_sizes``, the inputs read through a boundary condition),
  A with the run's sizes;
* a code-generation option (``Schedule.set_codegen``): B compiles A's schedule with it
  (``--set fma=true``, ``--set unroll_threshold=100``, ``--set accumulator_tiles=false``,
  ``--set free_early=false``, ``--set window_gathers=false``);
* an option of ``ts.autotune`` (with ``--methods autotune``: ``--set climb_share=0``).

VALUE is YAML (``true``, ``0.5``, ``[1, 2, 4]``; ``1,2,4`` is a list too).  Methods: the
solvers (``greedy``, ``ilp``, ``beam``, ``auto``), ``autotune`` (``--budget`` seconds a
side, no tuning database, the same seed) and ``hand`` (the app's hand schedule, for
code-generation options).  ``--size``: the paper's sizes (default), the apps' small ones,
or explicit sizes for every app (innermost first, with ``--param`` for the app's build
parameters); the estimates are those sizes.

A schedule that B leaves the same (or whose loops a lowering option leaves the same)
counts 1 and is not timed.  Otherwise both builds are
checked close (rtol 1e-4, atol 1e-3: FMA rounds once where strict code rounds twice) and
timed in interleaved rounds, each build run twice a round and the second run timed
(``fastest``), the fastest kept; the minor page faults of the timed runs (``getrusage``:
``--set free_early=false``; run under ``TILESOLVE_HEAP_CACHE_MB=0`` or
``TILESOLVE_MALLOC_TUNING=0`` for the runtime's heap cache and glibc's own thresholds)
are printed a run.  Findings are in ``benchmarks/results/README.md``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import resource
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS, suite  # noqa: E402
from tilesolve.model.schedule import CODEGEN_OPTIONS  # noqa: E402
from tilesolve.specs.cost_params import CostParams  # noqa: E402
from tilesolve.specs.schema import fields_for_kind  # noqa: E402

TUNE_OPTIONS = ("climb_share",)
LOWERING_OPTIONS = ("accumulator_tiles", "free_early")     # code-generation options that act on the loops
SOLVERS = ("greedy", "ilp", "beam", "auto")


def _value(text: str):
    v = yaml.safe_load(text)
    if isinstance(v, str) and "," in v:
        v = [yaml.safe_load(x) for x in v.split(",")]
    return v


def side_b(spec, items) -> tuple:
    """(B's spec, its code-generation options, its autotune options, whether it solves
    without estimates) from ``--set``s."""
    params, fields, codegen, tune, no_estimates = {}, {}, {}, {}, False
    cost_names = {f.name for f in dataclasses.fields(CostParams)}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected NAME=VALUE")
        value = _value(text)
        if name == "spec":
            spec = ts.load_spec(str(value))
        elif name == "estimates" and value in (None, "none"):
            no_estimates = True
        elif name in cost_names:
            params[name] = value
        elif name in CODEGEN_OPTIONS:
            codegen[name] = value
        elif name in TUNE_OPTIONS:
            tune[name] = value
        elif name in fields_for_kind(spec.kind):
            fields[name] = value
        else:
            raise SystemExit(f"--set {name}: not a cost parameter (docs/cost_params.md), a "
                             f"spec field, 'spec', 'estimates=none', a code-generation option "
                             f"({', '.join(sorted(CODEGEN_OPTIONS))}) or an autotune option "
                             f"({', '.join(TUNE_OPTIONS)})")
    if fields:
        spec = spec.replace(**fields)
    if params:
        spec = spec.with_cost_params(**params)
    return spec, codegen, tune, no_estimates


def fastest(runs: dict, rounds: int) -> tuple:
    """Seconds of the fastest run of each callable of ``runs``, timed in ``rounds``
    interleaved rounds (each round runs every callable twice and times the second run,
    so a slow spell of the machine costs every build alike), and each one's minor page
    faults a timed run."""
    best, faults = dict.fromkeys(runs, math.inf), dict.fromkeys(runs, 0)
    for _ in range(rounds):
        for k, run in runs.items():
            run()
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            run()
            best[k] = min(best[k], time.perf_counter() - t0)
            faults[k] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    return best, {k: n / rounds for k, n in faults.items()}


def _body(schedule) -> str:
    return "\n".join(ln for ln in str(schedule).splitlines() if not ln.startswith("#"))


def _schedule(method, app, pipe, est, spec, tune, budget):
    if method == "hand":
        return app.hand_schedule(pipe) if hasattr(app, "hand_schedule") else None
    if method == "autotune":
        return ts.autotune(pipe, spec, estimates=est, budget_s=budget, db=False,
                           progress=False, **tune).schedule
    return ts.solve_schedule(pipe, spec, estimates=est, method=method)


def _outputs(o) -> tuple:
    return o if isinstance(o, tuple) else (o,)


def measure(name, method, spec_a, side, size, params, rounds, threads, budget) -> dict:
    spec_b, codegen, tune, no_estimates = side
    known = {**suite("apps"), **suite("validation"), **suite("random")}
    if name not in known:
        raise SystemExit(f"--apps {name}: not an app of the app suite, the validation suite "
                         "or the first five random pipelines")
    app = known[name]
    sizes = list(app.PAPER_SIZE if size == "paper" else app.SMALL_SIZE if size == "small"
                 else size)
    build = dict(params) if params else dict(
        (getattr(app, "SMALL_BUILD", None) or {}) if size == "small" else {})
    pipe, est = app.build(sizes, **build)
    inputs = app.make_inputs(sizes, seed=0, **build)
    if size != "paper":                  # estimates at the sizes asked for
        est = {**{o: list(sizes) for o in pipe.output_names},
               **{n: list(reversed(a.shape)) for n, a in inputs.items()
                  if isinstance(a, np.ndarray)}}
    row = {"app": name, "method": method}
    a = _schedule(method, app, pipe, est, spec_a, {}, budget)
    if a is None:
        return {**row, "ratio": None, "note": "no hand schedule"}
    b = a.copy() if method == "hand" else _schedule(
        method, app, pipe, None if no_estimates else est, spec_b, tune, budget)
    if codegen:
        b = b.copy().set_codegen(**codegen)
    if _body(a) == _body(b):
        return {**row, "ratio": 1.0, "same": True}
    builds = {"A": ts.compile(pipe, a, num_threads=threads),
              "B": ts.compile(pipe, b, num_threads=threads)}
    if (_body(a) == _body(b.copy().set_codegen(**dict.fromkeys(codegen)))
            and set(codegen) <= set(LOWERING_OPTIONS)
            and builds["A"].loop_ir() == builds["B"].loop_ir()):
        return {**row, "ratio": 1.0, "same": True}      # the option changed no loop
    outs = {k: c.realize(sizes, **inputs) for k, c in builds.items()}
    for x, y in zip(_outputs(outs["A"]), _outputs(outs["B"])):
        if not np.allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                           rtol=1e-4, atol=1e-3, equal_nan=True):
            raise SystemExit(f"{name} {method}: the builds A and B differ")
    runs = {k: (lambda c=c, k=k: c.realize(sizes, **inputs, **(
        {} if isinstance(outs[k], tuple) else {"out": outs[k]})))
        for k, c in builds.items()}
    best, faults = fastest(runs, rounds)
    return {**row, "ms_a": best["A"] * 1e3, "ms_b": best["B"] * 1e3,
            "ratio": best["B"] / best["A"], "same": False,
            "faults_a": faults["A"], "faults_b": faults["B"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, metavar="NAME=VALUE")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--methods", default="greedy")
    ap.add_argument("--spec", default="host", help="A's spec (default host)")
    ap.add_argument("--size", default="paper", help="paper, small or W,H,... (innermost first)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=INT")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--budget", type=float, default=30.0, help="autotune: seconds a side")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    for m in a.methods.split(","):
        if m not in SOLVERS + ("autotune", "hand"):
            raise SystemExit(f"--methods: {m!r} is not one of {', '.join(SOLVERS)}, "
                             "autotune, hand")
    spec_a = ts.load_spec(a.spec)
    side = side_b(spec_a, a.set)
    size = a.size if a.size in ("paper", "small") else [int(v) for v in a.size.split(",")]
    params = {k: int(v) for k, _, v in (p.partition("=") for p in a.param)}
    print(f"A: spec {spec_a.name}; B: {' '.join(a.set)}", flush=True)
    rows = []
    for name in a.apps.split(","):
        for method in a.methods.split(","):
            r = measure(name, method, spec_a, side, size, params, a.rounds, a.threads,
                        a.budget)
            rows.append(r)
            if r["ratio"] is None:
                print(f"{name:16s} {method:8s} {r['note']}", flush=True)
            elif r["same"]:
                print(f"{name:16s} {method:8s} same schedule", flush=True)
            else:
                print(f"{name:16s} {method:8s} A {r['ms_a']:9.2f} ms  B {r['ms_b']:9.2f} ms  "
                      f"B/A {r['ratio']:.3f}  faults a run A {r['faults_a']:.0f} B "
                      f"{r['faults_b']:.0f}", flush=True)
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else 1.0
    changed = sum(1 for r in rows if r.get("same") is False)
    print(f"geomean B/A over {len(ratios)} schedules ({changed} changed): {geo:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"spec": spec_a.name, "set": a.set, "rows": rows, "geomean": geo}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
