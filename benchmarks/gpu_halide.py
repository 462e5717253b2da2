"""Halide's GPU autoschedulers on the apps, beside ``gpu_bench.py``, on a real GPU.

    # on the GPU machine (halide importable, a CUDA driver; no nvcc needed: Halide
    # emits PTX itself), after gpu_bench.py run has cached the references:
    python3 benchmarks/gpu_halide.py --json halide_gpu.json [--apps blur,harris]
        [--autoschedulers anderson2021,li2018] [--search-timeout 60] [--deadline 300]

For each app at the papers' size and each autoscheduler, one child process
translates the pipeline to Halide (``tilesolve.interop``), sets the estimates,
runs the autoscheduler for a CUDA target (``host-cuda-cuda_capability_86``, the
highest capability this Halide knows), JIT-compiles, realizes once (the inputs
then stay on the device), checks the output against the app's numpy reference
(the tolerance of ``tilesolve bench``), and times ``realize`` followed by
``device_sync`` (median of the repeats, milliseconds of wall clock).  Each
schedule is compiled twice: ``strict`` (``strict_float``: IEEE float as in
tilesolve's default CUDA builds, no fused multiply-adds) and ``fma`` (Halide's
default float semantics; compare with tilesolve's ``set_codegen(fma=True)``).

Children run a few at a time, since a search uses the CPU alone, but the first
realize and the timing hold a file lock, so one process at a time uses the GPU.
A child that overruns ``--search-timeout`` (Anderson2021's search can take
minutes) is killed and reported as such; nothing is started after
``--deadline`` seconds.  No timing is asserted anywhere.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = "host-cuda-cuda_capability_86"


def child(app_name: str, sched: str, refs: str, repeats: int, sm_count: int, lock: str,
          size: str) -> dict:
    """Runs in the child process: one app under one autoscheduler; a result row."""
    os.environ.setdefault("HL_JIT_TARGET", TARGET)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    from gpu_bench import reference, verdict
    from tilesolve.apps import APPS
    from tilesolve.interop.halide import translate
    from tilesolve.interop.halide_auto import autoschedule, set_estimates

    app = APPS[app_name]
    kw = (getattr(app, "SMALL_BUILD", None) or {}) if size == "small" else {}
    sizes = app.SMALL_SIZE if size == "small" else app.PAPER_SIZE
    pipe, _ = app.build(sizes, **kw)
    inputs = app.make_inputs(sizes, **kw)
    ref, _ = reference(app, app_name, inputs, sizes, kw, refs)
    row = {"app": app_name, "schedule": f"halide-{sched}", "sizes": list(sizes)}
    hp = translate(pipe)
    images = {n: v for n, v in inputs.items() if n in pipe.images}
    params = {n: v for n, v in inputs.items() if n in pipe.params}
    set_estimates(hp, sizes, images, params)
    row["search_s"], _ = autoschedule(hp, sched, parallelism=sm_count)
    hp.bind(**inputs)
    for variant, strict in (("strict", True), ("fma", False)):
        hp.strict_float = strict
        hp._compiled = False
        row[f"compile_s_{variant}"] = hp.compile()
        with open(lock, "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            bufs = hp.run(sizes)                   # uploads the inputs, warms the kernels
            outs = []
            for b in bufs:
                b.copy_to_host()
                outs.append(np.array(np.asarray(b)))
            ok, err, tol = verdict(app, pipe, outs[0] if len(outs) == 1 else tuple(outs), ref)
            row[f"max_err_{variant}"], row[f"ok_{variant}"], row["tolerance"] = err, bool(ok), tol
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                hp.pipeline.realize(bufs if len(bufs) > 1 else bufs[0])
                for b in bufs:
                    b.device_sync()
                times.append((time.perf_counter() - t0) * 1e3)
            row[f"gpu_ms_{variant}"] = float(np.median(times))
    return row


def _run_one(app_name, sched, args, lock):
    cmd = [sys.executable, __file__, "--child", app_name, sched, "--refs", args.refs,
           "--repeats", str(args.repeats), "--sm-count", str(args.sm_count), "--lock", lock, "--size", args.size]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.search_timeout)
    except subprocess.TimeoutExpired:
        return {"app": app_name, "schedule": f"halide-{sched}",
                "error": f"did not finish in {args.search_timeout} s (search, compile and run)"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"app": app_name, "schedule": f"halide-{sched}", "error": tail[:300]}
    row = json.loads(lines[-1])
    row["wall_s"] = time.perf_counter() - t0
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--apps", default=None, help="comma-separated (default: every app)")
    p.add_argument("--autoschedulers", default="li2018,anderson2021")
    p.add_argument("--refs", default="build/gpu_refs")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--size", choices=("paper", "small"), default="paper",
                   help="small: check the script itself (HL_JIT_TARGET=host runs it on the CPU)")
    p.add_argument("--sm-count", type=int, default=132, help="Anderson2021's parallelism")
    p.add_argument("--search-timeout", type=int, default=60)
    p.add_argument("--deadline", type=float, default=300, help="start nothing after this many s")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--json", default=None)
    p.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    p.add_argument("--lock", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a.refs, a.repeats, a.sm_count, a.lock,
                               a.size)))
        return
    sys.path.insert(0, str(ROOT))
    from tilesolve.apps import APPS
    apps = a.apps.split(",") if a.apps else list(APPS)
    lock = str(Path(a.refs or ".") / ".gpu.lock")
    Path(lock).parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = []

    done = []

    def job(pair):
        if time.perf_counter() - start > a.deadline:
            return {"app": pair[0], "schedule": f"halide-{pair[1]}", "error": "not started: deadline"}
        row = _run_one(pair[0], pair[1], a, lock)
        print(json.dumps(row), flush=True)
        done.append(row)                             # written as it goes: a kill keeps them
        if a.json:
            Path(a.json).write_text(json.dumps({"target": TARGET, "results": list(done)}, indent=1))
        return row

    pairs = [(app, s) for s in a.autoschedulers.split(",") for app in apps]
    with ThreadPoolExecutor(a.workers) as pool:
        rows = list(pool.map(job, pairs))
    print(f"\n{'app':16s} {'schedule':20s} {'search s':>8s} {'strict ms':>9s} {'fma ms':>9s} "
          f"{'max err':>9s}  check (strict; fma)")
    for r in rows:
        if "error" in r:
            print(f"{r['app']:16s} {r['schedule']:20s} {r['error']}")
            continue
        checks = "; ".join("ok" if r[f"ok_{v}"] else f"differs ({r[f'max_err_{v}']:.3g}, {r['tolerance']})"
                           for v in ("strict", "fma"))
        print(f"{r['app']:16s} {r['schedule']:20s} {r['search_s']:8.1f} {r['gpu_ms_strict']:9.3f} "
              f"{r['gpu_ms_fma']:9.3f} {r['max_err_strict']:9.2e}  {checks}")
    if a.json:
        Path(a.json).write_text(json.dumps({"target": TARGET, "results": rows}, indent=1))


if __name__ == "__main__":
    main()
