"""Sectors per output point against the compulsory minimum, measured without a GPU.

Every app's solver schedule for a GPU spec (default ``h100``), run on the CPU shim at the
app's small size with the sector counter (``emulate.run(..., count_sectors=True)``):

    python benchmarks/gpu_sectors.py [--spec h100] [--apps blur,harris] [--method greedy]
                                     [--solve-size small|paper] [--json FILE] [--detail]
                                     [--set COST_PARAM=VALUE ...]

Columns: kernels launched; the compulsory sectors per output point (every input read
once, every output written once); then three counts of the sectors the kernels move,
each over the compulsory ones: ``warp`` (summed over warp-level instructions: what the
load/store units request), ``block`` (distinct within each block: an L1 that keeps a
block's data) and ``launch`` (distinct within each launch: an L2 that keeps everything,
intermediates at root still counted once written and once per kernel reading them);
and the mean sectors per warp instruction of loads and of stores (4: 32 coalesced floats).
``--solve-size paper`` solves with the paper size's estimates (the schedule the GPU runs)
and still emulates at the small size; ``--set`` solves with a cost parameter changed
(``--set stage_weight=0``: every input the model may stage in shared memory staged).
Each output is checked against the app's numpy reference.  No figure is asserted.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS  # noqa: E402
from tilesolve.backend.cuda import emulate as EM  # noqa: E402
from tilesolve.backend.cuda.sectors import LEVELS, Traffic  # noqa: E402
from cost_sets import spec_with  # noqa: E402


def measure(name: str, spec, method: str | None, solve_size: str) -> dict:
    app = APPS[name]
    pipe, est = app.build(app.PAPER_SIZE if solve_size == "paper" else app.SMALL_SIZE)
    kw = {} if method is None else {"method": method}
    t0 = time.perf_counter()
    sched = ts.solve_schedule(pipe, spec, estimates=est, **kw)
    solve_s = time.perf_counter() - t0
    inputs = app.make_inputs(app.SMALL_SIZE)
    t0 = time.perf_counter()
    outs, rep = EM.run(pipe, sched, app.SMALL_SIZE, inputs, count_sectors=True)
    check_output(app, pipe, outs, inputs)
    loads, stores = Traffic(), Traffic()
    for launch in rep.launches:
        for b in launch.buffers:
            loads, stores = loads + b.loads, stores + b.stores
    return {"app": name, "sizes": list(app.SMALL_SIZE), "launches": len(rep.launches),
            "compulsory_per_point": rep.compulsory_sectors / rep.output_points,
            **{f"ratio_{lv}": rep.ratio(lv) for lv in LEVELS},
            "per_point": rep.per_output_point(),
            "load_sectors_per_request": loads.sectors_per_request,
            "store_sectors_per_request": stores.sectors_per_request,
            "solve_s": solve_s, "emulate_s": time.perf_counter() - t0,
            "schedule": str(sched), "report": rep.text()}


def check_output(app, pipe, outs, inputs) -> None:
    """The emulated outputs against the reference interpreter's (integers within 1,
    floats within 1e-5 relative: the GPU emulation tests' tolerances)."""
    want = ts.reference.realize(pipe, app.SMALL_SIZE, **inputs)
    got = outs if isinstance(outs, tuple) else (outs,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        if np.issubdtype(w.dtype, np.integer):
            ok = np.abs(g.astype(np.int64) - w.astype(np.int64)).max() <= 1
        else:
            ok = np.allclose(g, w, rtol=1e-5, atol=1e-6)
        if not ok:
            raise AssertionError("the emulated output differs from the reference")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", default="h100")
    p.add_argument("--apps", default=",".join(sorted(APPS)))
    p.add_argument("--method", default=None, help="solver method (default: solve_schedule's)")
    p.add_argument("--solve-size", choices=("small", "paper"), default="small")
    p.add_argument("--json", default=None)
    p.add_argument("--detail", action="store_true", help="print each launch's counts")
    p.add_argument("--set", action="append", default=[], metavar="COST_PARAM=VALUE",
                   help="solve with this cost parameter changed (docs/cost_params.md)")
    args = p.parse_args(argv)
    spec = spec_with(args.spec, args.set)
    rows = []
    print(f"{'app':16s} {'launches':>8s} {'compulsory/pt':>13s} {'warp':>6s} {'block':>6s} "
          f"{'launch':>6s} {'ld/req':>6s} {'st/req':>6s}")
    for name in args.apps.split(","):
        try:
            r = measure(name, spec, args.method, args.solve_size)
        except Exception as e:                 # reported; the other apps still run
            print(f"{name:16s} FAILED {type(e).__name__}: {str(e)[:200]}")
            continue
        rows.append(r)
        print(f"{name:16s} {r['launches']:8d} {r['compulsory_per_point']:13.3f} "
              f"{r['ratio_sectors']:6.2f} {r['ratio_block_sectors']:6.2f} "
              f"{r['ratio_launch_sectors']:6.2f} {r['load_sectors_per_request']:6.2f} "
              f"{r['store_sectors_per_request']:6.2f}", flush=True)
        if args.detail:
            print(r["report"])
    if args.json:
        Path(args.json).write_text(json.dumps({"spec": args.spec, "set": args.set,
                                               "method": args.method,
                                               "solve_size": args.solve_size, "rows": rows},
                                              indent=1))


if __name__ == "__main__":
    main()
