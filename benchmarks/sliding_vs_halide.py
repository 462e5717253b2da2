"""Sliding windows against Halide, the same schedules: tilesolve's compile and Halide's.

    python benchmarks/sliding_vs_halide.py [--apps blur,harris,unsharp] [--repeat 9]
                                           [--size paper|small] [--json FILE]

For each app, two schedules in the style of Halide's own app schedules:

* ``strip``: the output split into 32-row strips run in parallel; the stencil
  stages ``store_at`` the strip and ``compute_at`` its rows, so they slide down
  the strip one row at a time and their storage folds to a few rows;
* ``tile``: the same Funcs computed per 32-row strip (``compute_at`` the strip,
  whole regions, no sliding): the overlapped-tile form to compare with.

Each schedule is compiled by tilesolve and by Halide (through the bridge),
checked against the app's numpy reference, and timed in ``--repeat`` rounds in
one process: each round runs every program twice and times the second run (min
over rounds, in ms).  Ratios within
one run are what to read: this VM's speed varies between runs.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.interop import halide as th

STRIP = 32
VEC = 16
STENCILS = {"blur": ["blur_x"], "harris": ["gray", "Ix", "Iy"],
            "unsharp": ["gray", "blur_y", "ratio"]}
KEEP_ROOT = {"unsharp": ["kernel"]}


def schedule(app: str, pipe, sliding: bool):
    out = pipe.outputs[0].name
    s = ts.Schedule(pipe)
    h = s[out]
    if len(pipe.outputs[0].args) == 3:
        h.reorder("x", "c", "y")
    h.split("y", "yo", "yi", STRIP).parallel("yo").vectorize("x", VEC)
    for f in KEEP_ROOT.get(app, []):
        s[f].compute_root()
    for f in STENCILS[app]:
        if sliding:
            s[f].store_at(out, "yo").compute_at(out, "yi").vectorize("x", VEC)
        else:
            s[f].compute_at(out, "yo").vectorize("x", VEC)
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="blur,harris,unsharp")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--size", default="paper", choices=["paper", "small"])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    print(f"{'app':10s} {'schedule':9s} {'tilesolve ms':>12s} {'Halide ms':>10s} {'ratio':>6s}  notes")
    for name in a.apps.split(","):
        app = get_app(name)
        sizes = app.PAPER_SIZE if a.size == "paper" else app.SMALL_SIZE
        pipe, _ = app.build(sizes)
        inputs = app.make_inputs(sizes)
        ref = app.numpy_reference(inputs, sizes)
        runs = {}                   # (form, who) -> a function running it once
        notes = {}
        for form in ("strip", "tile"):
            s = schedule(name, pipe, form == "strip")
            cp = ts.compile(pipe, s)
            hp = th.translate(pipe)
            hp.apply_schedule(s)
            hp.compile()
            hp.bind(**inputs)
            out = cp.realize(sizes, **inputs)
            theirs = np.asarray(hp.run(sizes)[0])
            for who, o in (("tilesolve", out), ("Halide", theirs)):
                if not np.allclose(o, ref, rtol=1e-4, atol=1e-4):
                    raise SystemExit(f"{name} {form}: {who}'s output differs from the reference")
            runs[form, "tilesolve"] = (lambda cp=cp, o=out: cp.realize(sizes, **inputs, out=o))
            runs[form, "Halide"] = (lambda hp=hp: hp.run(sizes))
            notes[form] = [n for n in cp.lowered.notes if "sliding" in n or "folded" in n]
        # Rounds: each program runs twice per round (the second is timed), in the same
        # order, so a slow spell of the VM or another runtime's spinning threads hit all.
        best = {k: float("inf") for k in runs}
        for _ in range(a.repeat):
            for k, fn in runs.items():
                fn()
                t0 = time.perf_counter()
                fn()
                best[k] = min(best[k], (time.perf_counter() - t0) * 1e3)
        for form in ("strip", "tile"):
            row = {"app": name, "schedule": form, "tilesolve_ms": best[form, "tilesolve"],
                   "halide_ms": best[form, "Halide"], "sizes": list(sizes), "notes": notes[form]}
            row["ratio"] = row["tilesolve_ms"] / row["halide_ms"]
            rows.append(row)
            print(f"{name:10s} {form:9s} {row['tilesolve_ms']:12.2f} {row['halide_ms']:10.2f} "
                  f"{row['ratio']:6.2f}  {len(row['notes'])} sliding/folding notes")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"rows": rows, "repeat": a.repeat, "size": a.size}, fh, indent=1)


if __name__ == "__main__":
    main()
