"""Host time per realize of the CUDA backend: the interpreted host plan against the
prepared one, for every app of the suite.

    # here (no GPU): the solver's h100 schedule of every app at the paper size, compiled
    # for the no-op device (tilesolve.backend.cuda.drivers.NoopDriver)
    python benchmarks/gpu_host.py [--apps blur,lens_blur] [--repeats 200] [--json out.json]
    # on a GPU machine: gpu_bench.py's builds (their "solver" schedules), real launches
    python3 benchmarks/gpu_host.py --builds build/gpu_bench --device pycuda

For each app the same program is compiled twice: ``interpreted=True`` (``plan.run_plan``
on every realize: numpy evaluation of every HostLet and grid size, unprepared launches,
every device buffer allocated and freed) and the default prepared path (the plan
compiled once per sizes and Params, launches with prebuilt argument buffers, device
buffers from the pipeline's pool).  Printed per app, medians over ``--repeats`` after
``--warmup``:

* ``plan ms``: ``CudaPipeline.benchmark``'s ``host_ms``: the host's time to issue one
  realize's device work, inputs resident (before: ``run_plan``; after: the plan lookup
  and the launches);
* ``realize ms``: a whole ``realize`` call on the host (argument checks, copies, the
  launches; on the no-op device the copies and launches do nothing);
* ``kernel ms`` (a real GPU only): CUDA events around the launches;
* the device bytes of the inputs and outputs, of the intermediates the interpreter
  allocates (and frees) per realize, and of the pool's arena (inputs, outputs and
  intermediates, these sharing bytes where never alive together), allocated once.

The target is ``plan ms`` <= 0.05 for every app (``--check`` exits 1 when one is
over).  No timing is asserted in CI.
"""
from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET_MS = 0.05


def _programs(args):
    """(app name, program, defaults, pipeline, sizes, inputs, cubin) per app."""
    from tilesolve.apps import APPS
    if args.builds:
        from gpu_bench import _deep
        for path in sorted(Path(args.builds).glob(f"*__{args.schedule}.pkl")):
            rec = _deep(pickle.loads, path.read_bytes())
            if args.apps and rec["app"] not in args.apps.split(","):
                continue
            app, b = APPS[rec["app"]], rec["build"]
            pipe = app.build(rec["sizes"], **rec["build_kw"])[0]
            yield (rec["app"], b.program, b.defaults, pipe, rec["sizes"],
                   app.make_inputs(rec["sizes"], **rec["build_kw"]), b.cubin, 0.0)
        return
    import tilesolve as ts
    from tilesolve.backend import cuda as C
    spec = ts.load_spec(args.spec)
    for name in (args.apps.split(",") if args.apps else list(APPS)):
        app = APPS[name]
        kw = (getattr(app, "SMALL_BUILD", None) or {}) if args.size == "small" else {}
        sizes = app.SMALL_SIZE if args.size == "small" else app.PAPER_SIZE
        t0 = time.perf_counter()
        pipe, est = app.build(sizes, **kw)
        sched = ts.solve_schedule(pipe, spec, estimates=est)
        program = C.generate(C.lower_cuda(pipe, sched))
        C.check_program(program, spec)
        defaults = {n: p.default for n, p in pipe.params.items() if p.default is not None}
        yield (name, program, defaults, pipe, sizes, app.make_inputs(sizes, **kw), None,
               time.perf_counter() - t0)


def _pipeline(args, program, cubin, defaults, pipe, interpreted):
    from tilesolve.backend.cuda.runtime import CudaPipeline
    if args.device == "noop":
        from tilesolve.backend.cuda.drivers import NoopDriver
        return CudaPipeline(program, None, None, defaults, pipe, driver=NoopDriver(),
                            interpreted=interpreted)
    return CudaPipeline(program, cubin, None, defaults, pipe, interpreted=interpreted)


def _realize_ms(fast, sizes, inputs, repeats, warmup) -> float:
    times = []
    for i in range(warmup + repeats):
        t0 = time.perf_counter()
        fast.realize(sizes, **inputs)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def measure(args, name, program, defaults, pipe, sizes, inputs, cubin) -> dict:
    row = {"app": name, "sizes": list(sizes), "kernels": len(program.kernels)}
    for path, interpreted in (("before", True), ("after", False)):
        fast = _pipeline(args, program, cubin, defaults, pipe, interpreted)
        reps = args.repeats if interpreted else max(args.repeats, args.prepared_repeats)
        t = fast.benchmark(sizes, repeats=reps, warmup=args.warmup, **inputs)
        row[f"plan_ms_{path}"] = t.host_ms
        row[f"kernel_ms_{path}"] = t.kernel_ms
        row["launches"] = t.launches
        row[f"realize_ms_{path}"] = _realize_ms(fast, sizes, inputs, max(3, args.repeats // 4),
                                                 max(1, args.warmup // 4))
        row["device"] = t.device
        if not interpreted:
            plan = fast.plan(sizes, **inputs)
            row["allocated_mb_before"] = plan.allocated_bytes / 1e6
            row["arena_mb_after"] = plan.arena_bytes / 1e6
            row["io_mb"] = sum(b.nbytes for b in plan.buffers if b.role != "intermediate") / 1e6
            drv = fast.driver
            if hasattr(drv, "allocs"):                 # the no-op device counts its calls
                before = drv.allocs
                fast.realize(sizes, **inputs)
                row["allocs_per_realize_after"] = drv.allocs - before
        fast.release_memory()
    return row


def _print(rows, device):
    kern = any(r.get("kernel_ms_after") is not None for r in rows)
    print(f"\nhost time per realize on {device} (ms, medians)")
    head = (f"{'app':16s} {'kernels':>7s} {'launches':>8s} {'plan before':>11s} {'plan after':>10s} "
            f"{'speedup':>8s} {'realize before':>14s} {'realize after':>13s} "
            f"{'I/O MB':>8s} {'interm. MB/realize':>18s} {'arena MB':>8s}")
    if kern:
        head += f" {'kernel before':>13s} {'kernel after':>12s}"
    print(head)
    for r in rows:
        line = (f"{r['app']:16s} {r['kernels']:7d} {r['launches']:8d} {r['plan_ms_before']:11.3f} "
                f"{r['plan_ms_after']:10.4f} {r['plan_ms_before'] / r['plan_ms_after']:7.0f}x "
                f"{r['realize_ms_before']:14.3f} {r['realize_ms_after']:13.4f} "
                f"{r['io_mb']:8.1f} {r['allocated_mb_before']:18.1f} {r['arena_mb_after']:8.1f}")
        if kern:
            line += f" {r['kernel_ms_before'] or 0:13.3f} {r['kernel_ms_after'] or 0:12.3f}"
        print(line)
    worst = max(rows, key=lambda r: r["plan_ms_after"])
    print(f"\nslowest prepared plan: {worst['app']} {worst['plan_ms_after']:.4f} ms "
          f"(target <= {TARGET_MS} ms: {'met' if worst['plan_ms_after'] <= TARGET_MS else 'NOT met'})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--apps", default="", help="comma-separated apps (default: all)")
    p.add_argument("--size", choices=("paper", "small"), default="paper")
    p.add_argument("--spec", default="h100")
    p.add_argument("--device", choices=("noop", "pycuda"), default="noop")
    p.add_argument("--builds", default="",
                   help="gpu_bench.py build's folder: time its programs instead of solving here")
    p.add_argument("--schedule", default="solver", help="with --builds: which case")
    p.add_argument("--repeats", type=int, default=None,
                   help="realizes timed per path (default: 200 on the no-op device, 20 on a GPU)")
    p.add_argument("--prepared-repeats", type=int, default=None,
                   help="realizes timed on the prepared path (default: 2000 on the no-op "
                        "device, --repeats on a GPU)")
    p.add_argument("--warmup", type=int, default=None, help="default: 20 (no-op), 3 (GPU)")
    p.add_argument("--json", default=None)
    p.add_argument("--check", action="store_true",
                   help=f"exit 1 when an app's prepared plan takes over {TARGET_MS} ms")
    args = p.parse_args(argv)
    noop = args.device == "noop"
    if args.repeats is None:
        args.repeats = 200 if noop else 20
    if args.prepared_repeats is None:
        args.prepared_repeats = 2000 if noop else args.repeats
    if args.warmup is None:
        args.warmup = 20 if noop else 3
    if args.device == "pycuda":
        from tilesolve.backend.cuda.runtime import availability
        reason = availability()
        if reason:
            sys.exit(f"cannot run on a GPU: {reason}")
    rows, device = [], args.device
    for name, program, defaults, pipe, sizes, inputs, cubin, build_s in _programs(args):
        try:
            row = measure(args, name, program, defaults, pipe, sizes, inputs, cubin)
        except Exception as e:                      # reported; the other apps still run
            print(f"  {name}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        row["build_s"] = build_s
        device = row["device"]
        rows.append(row)
        print(f"  {name}: {row['launches']} launches, plan {row['plan_ms_before']:.3f} -> "
              f"{row['plan_ms_after']:.4f} ms", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    if not rows:
        sys.exit("nothing measured")
    _print(rows, device)
    if args.check and any(r["plan_ms_after"] > TARGET_MS for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
