"""Benchmark the CUDA backend on a real GPU, in two phases (see gpu_run.sh).

    # 1. where nvcc is (no GPU needed): lower, generate, compile to cubins, pickle
    python benchmarks/gpu_bench.py build --out build/gpu_bench [--apps blur,unsharp] [--size paper]
    # 2. on the GPU machine (pycuda, no nvcc needed): load the cubins, check, time
    python3 benchmarks/gpu_bench.py run --builds build/gpu_bench --json results.json
    # check this script without a GPU: the same builds and runtime, kernels on the CPU shim
    # (emulate.ShimDriver; small sizes only)
    python benchmarks/gpu_bench.py build --size small --out build/gpu_small
    python benchmarks/gpu_bench.py run --builds build/gpu_small --emulate

Schedules per app: ``solver`` (``ts.solve_schedule`` for the spec, when it
succeeds; with ``--fma`` also ``solver_fma``, the same schedule built with
``nvcc --fmad=true``), ``solver_staged`` and ``solver_registers`` (solved with
``stage_weight: 0`` or ``register_weight: 0``: inputs staged in shared memory, or
producers computed in each thread's registers, wherever the model can; built only where
the schedule then has one), ``solver_plain`` (without those two forms: built where the
solver's schedule uses one), ``solver_scalar`` (without vectorized tiles,
``gpu_vector: [1]``: built where the solver's schedule has one),
``gpu_inline`` and ``gpu_root`` (``backend/cuda/naive.py``: the naive
baselines), and for blur ``hand`` (Halide's GPU blur: 16x16 tiles, blur_x in
shared memory) and ``hand_vector`` (4 points a thread along x, float4 accesses).  Printed per case, all measured in the same run: device
milliseconds per realize (inputs resident, median), the ratio to the
memory-bandwidth bound (bytes in + out at the device-to-device copy bandwidth
measured on the spot), the ratio to the naive ``gpu_root`` schedule, the
speedup over the app's numpy reference on the host CPU, and the max error
against that reference; ``host ms`` is the host's time to issue a realize's launches
(``CudaPipeline.benchmark``'s ``host_ms``: the prepared plan, or with
``--interpreted`` the host plan interpreted per realize as before).  No timing is
ever asserted.
"""
from __future__ import annotations

import argparse
import json
import pickle
import signal
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS  # noqa: E402
from tilesolve.backend import cuda as C  # noqa: E402
from tilesolve.backend.cuda.naive import gpu_inline_schedule, gpu_root_schedule  # noqa: E402
from tilesolve.backend.cuda.plan import count_launches  # noqa: E402
from tilesolve.bench.runner import _tolerance  # noqa: E402
from tilesolve.tune.check import compare, transcendentals  # noqa: E402

DEFAULT_APPS = tuple(APPS)                       # every app of the suite


def hand_blur(pipe):
    blur_x, blur_y = pipe.func("blur_x"), pipe.func("blur_y")
    s = ts.Schedule(pipe, target="cuda")
    s[blur_y].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 16, 16)
    s[blur_x].compute_at(blur_y, "xo").gpu_threads("x", "y")
    return s


def hand_vector_blur(pipe):
    """blur with float4 accesses (``backend/cuda/vector.py``): blur_y in 128 x 8 tiles
    of 32 x 8 threads, 4 points a thread along x vectorized; blur_x per block in shared
    memory, 4 points a thread along x vectorized too."""
    s = ts.Schedule(pipe, target="cuda")
    s["blur_y"].split("x", "xo", "xi", 128).split("xi", "xt", "xv", 4) \
        .split("y", "yo", "yi", 8).reorder("xv", "xt", "yi", "xo", "yo") \
        .gpu_blocks("xo", "yo").gpu_threads("xt", "yi").vectorize("xv")
    s["blur_x"].compute_at("blur_y", "xo").store_in("shared") \
        .split("x", "xt", "xv", 4).gpu_threads("xt", "y").vectorize("xv")
    return s


def _deep(fn, *args):
    """``fn(*args)`` in a thread with a deep stack: pickling a big program (92 kernels
    and their host plan, as local_laplacian's) recurses once per level of its Exprs,
    past Python's default limit.  Only this script's files need it."""
    import threading
    box = {}

    def work():
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(200_000)
        try:
            box["value"] = fn(*args)
        except BaseException as e:                # re-raised in the caller
            box["error"] = e
        finally:
            sys.setrecursionlimit(old)
    size = threading.stack_size(512 << 20)
    try:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    finally:
        threading.stack_size(size)
    if "error" in box:
        raise box["error"]
    return box["value"]


class _Timeout(Exception):
    pass


def _alarm(_sig, _frame):
    raise _Timeout()


# the solver with one schedule form favoured (its cost parameter)
# (or, for solver_plain, without the staged and register forms), built only where the
# schedule then uses it (differs from the solver's)
VARIANTS = {
    "solver_staged": ({"stage_weight": 0.0}, lambda s, base: bool(s.wrappers)),
    "solver_registers": ({"register_weight": 0.0},
                         lambda s, base: any(g.cost.gpu and g.cost.gpu.in_registers
                                             for g in s.provenance.groups)),
    "solver_plain": ({"stage_inputs": False, "register_producers": False},
                     lambda s, base: base is None or _body(s) != _body(base)),
    "solver_scalar": ({"gpu_vector": [1]},
                      lambda s, base: base is None or _body(s) != _body(base)),
}


def _body(s) -> str:
    return "\n".join(ln for ln in str(s).splitlines() if not ln.startswith("#"))


def schedules(name, pipe, est, spec, which):
    out = {}
    if "solver" in which:
        try:
            out["solver"] = ts.solve_schedule(pipe, spec, estimates=est)
        except Exception as e:                   # reported, and the other cases still built
            print(f"  {name}: solver failed: {type(e).__name__}: {str(e)[:200]}")
    for variant, (params, uses) in VARIANTS.items():     # A/B of a schedule form
        if variant not in which:
            continue
        try:
            sched = ts.solve_schedule(pipe, spec.with_cost_params(**params), estimates=est)
            if uses(sched, out.get("solver")):
                out[variant] = sched
        except Exception as e:
            print(f"  {name}: {variant} failed: {type(e).__name__}: {str(e)[:200]}")
    if "gpu_inline" in which:
        out["gpu_inline"] = gpu_inline_schedule(pipe)
    if "gpu_root" in which:
        out["gpu_root"] = gpu_root_schedule(pipe)
    if name == "blur" and "hand" in which:
        out["hand"] = hand_blur(pipe)
    if name == "blur" and "hand_vector" in which:
        out["hand_vector"] = hand_vector_blur(pipe)
    return out


def build(args):
    spec = ts.load_spec(args.spec)
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)
    for name in args.apps.split(","):
        app = APPS[name]
        kw = (getattr(app, "SMALL_BUILD", None) or {}) if args.size == "small" else {}
        sizes = app.SMALL_SIZE if args.size == "small" else app.PAPER_SIZE
        pipe, est = app.build(sizes, **kw)
        cases = []
        for sname, sched in schedules(name, pipe, est, spec, args.schedules.split(",")).items():
            cases.append((sname, sched, None))
            if sname == "solver" and args.fma:       # the same schedule, nvcc --fmad=true
                cases.append(("solver_fma", sched, True))
        for sname, sched, fmad in cases:
            t0 = time.perf_counter()
            signal.alarm(args.timeout)
            try:
                b = C.build_cuda(pipe, sched, spec, fmad=fmad)
            except _Timeout:
                print(f"  {name}/{sname}: lowering + compiling took over {args.timeout} s; skipped")
                continue
            except Exception as e:
                print(f"  {name}/{sname}: FAILED {type(e).__name__}: {str(e)[:300]}")
                continue
            finally:
                signal.alarm(0)
            serial = sum("single GPU thread" in n for n in b.program.notes)
            rec = {"app": name, "schedule": sname, "sizes": list(sizes), "build_kw": kw,
                   "schedule_text": str(sched), "build": b, "serial_kernels": serial}
            (outdir / f"{name}__{sname}.pkl").write_bytes(_deep(pickle.dumps, rec))
            regs = max((r.registers for r in b.resources.values()), default=0)
            print(f"  {name}/{sname}: {len(b.program.kernels)} kernels, max {regs} registers, "
                  f"{serial} serial, built in {time.perf_counter() - t0:.1f} s", flush=True)


def reference(app, name, inputs, sizes, kw, cache_dir):
    """The app's numpy reference and the seconds it took, cached in ``cache_dir`` (one
    file an app and size) so that each schedule, and gpu_halide.py, compute it once."""
    path = Path(cache_dir) / f"{name}_{'x'.join(map(str, sizes))}.npz" if cache_dir else None
    if path is not None and path.exists():
        z = np.load(path)
        outs = tuple(z[f"out{i}"] for i in range(len(z.files) - 1))
        return (outs[0] if len(outs) == 1 else outs), float(z["seconds"])
    t0 = time.perf_counter()
    ref = app.numpy_reference(inputs, sizes, **kw)
    seconds = time.perf_counter() - t0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        outs = ref if isinstance(ref, tuple) else (ref,)
        np.savez(path, seconds=seconds, **{f"out{i}": o for i, o in enumerate(outs)})
    return ref, seconds


def verdict(app, pipe, out, ref):
    """``(ok, max_error, tolerance)`` as the CPU bench judges an output: the app's float
    tolerance, integers exact (within 1 where the pipeline calls exp, pow, ...: no two
    math libraries agree on their last bit, and the GPU's are not numpy's)."""
    rtol, atol = _tolerance(app)
    slack = 1 if transcendentals(pipe) else 0
    return compare(out, ref, rtol, atol, slack)


# what matters most first
ORDER = ("solver", "solver_fma", "solver_plain", "solver_scalar", "solver_staged",
         "solver_registers", "hand",
         "hand_vector", "gpu_root", "gpu_inline")


def _print_row(r, naive):
    if "error" in r or "skipped" in r:
        print(f"{r['app']:16s} {r['schedule']:11s} {r.get('error') or r['skipped']}", flush=True)
        return
    g = r.get("gpu_ms")
    fmt = lambda v, f: (f % v) if v is not None else "-"  # noqa: E731
    base = naive.get(r["app"])
    print(f"{r['app']:16s} {r['schedule']:11s} {r['kernels']:7d} {r.get('launches', 0):8d} "
          f"{fmt(g, '%9.3f'):>9s} {fmt(r.get('host_ms'), '%8.4f'):>8s} "
          f"{fmt(g / r['bound_ms'] if g else None, '%8.2f'):>8s} "
          f"{fmt(g / base if g and base else None, '%8.2f'):>8s} "
          f"{fmt(r['numpy_ms'] / g if g else None, '%8.1fx'):>9s} {r['max_err']:9.2e}  "
          f"{'ok' if r['ok'] else 'WRONG (' + r['tolerance'] + ')'}", flush=True)


def _naive(results) -> dict:
    """app -> the gpu_root schedule's time: the 'x naive' column's base."""
    return {r["app"]: r.get("gpu_ms") for r in results if r["schedule"] == "gpu_root"}


def _rank(path) -> tuple:
    """Sort key of a build file ``app__schedule.pkl``: by ORDER, then by name."""
    sched = path.stem.split("__")[1]
    return (ORDER.index(sched) if sched in ORDER else len(ORDER), path.stem)


def _header():
    print(f"\n{'app':16s} {'schedule':11s} {'kernels':>7s} {'launches':>8s} {'gpu ms':>9s} "
          f"{'host ms':>8s} {'x bound':>8s} {'x naive':>8s} {'vs numpy':>9s} {'max err':>9s}  check",
          flush=True)


def run(args):
    paths = sorted(Path(args.builds).glob("*.pkl"), key=_rank)
    if not paths:
        sys.exit(f"no builds in {args.builds}; run the build phase first")
    bw = None
    from tilesolve.backend.cuda.runtime import CudaPipeline
    if not args.emulate:
        from tilesolve.backend.cuda.runtime import availability
        reason = availability()
        if reason:
            sys.exit(f"cannot run on a GPU: {reason} (use --emulate to check the script on the CPU)")
        import pycuda.autoprimaryctx  # noqa: F401
        import pycuda.driver as cuda
        from tilesolve.tune.gpu_micro import copy_bandwidth
        dev = pycuda.autoprimaryctx.device
        bw = copy_bandwidth(cuda).value
        print(f"device: {dev.name()} (cc {dev.compute_capability()}), measured copy bandwidth "
              f"{bw:.0f} GB/s", flush=True)
    results, start = [], time.perf_counter()
    _header()
    for path in paths:
        rec = _deep(pickle.loads, path.read_bytes())
        name, sname, sizes, kw = rec["app"], rec["schedule"], rec["sizes"], rec["build_kw"]
        app, b = APPS[name], rec["build"]
        row = {"app": name, "schedule": sname, "sizes": sizes, "kernels": len(b.program.kernels)}
        row.update({k: rec[k] for k in ("predicted_cost", "source", "spec") if k in rec})
        if time.perf_counter() - start > args.deadline:
            row["skipped"] = f"not run: past the {args.deadline:g} s deadline"
        elif rec["serial_kernels"] and np.prod(sizes) > 1 << 16 and not args.emulate:
            row["skipped"] = "a serial (one-thread) kernel at a large size"
        if "skipped" in row:
            results.append(row)
            _print_row(row, {})
            continue
        try:
            pipe = app.build(sizes, **kw)[0]
            inputs = app.make_inputs(sizes, **kw)
            ref, seconds = reference(app, name, inputs, sizes, kw, args.refs)
            row["numpy_ms"] = seconds * 1e3
            driver = None                          # pycuda on the GPU
            if args.emulate:                       # the same runtime, kernels on the CPU shim
                from tilesolve.backend.cuda.emulate import ShimDriver
                driver = ShimDriver(b.program)
            fast = CudaPipeline(b.program, b.cubin, None, b.defaults, pipeline=pipe,
                                driver=driver, interpreted=args.interpreted)
            t0 = time.perf_counter()
            out = fast.realize(sizes, **inputs)
            first_s = time.perf_counter() - t0
            outs = out if isinstance(out, tuple) else (out,)
            ok, row["max_err"], row["tolerance"] = verdict(app, pipe, out, ref)
            row["ok"] = bool(ok)
            row["launches"] = count_launches(b.program, sizes, inputs, b.defaults)
            if not args.emulate:
                slow = first_s > args.slow_s               # a few runs only: say so
                row["repeats"] = 3 if slow else args.repeats
                t = fast.benchmark(sizes, repeats=row["repeats"], warmup=0 if slow else 2,
                                   **inputs)
                row["gpu_ms"], row["host_ms"], row["host_path"] = t.kernel_ms, t.host_ms, t.path
                fast.release_memory()                  # the next case gets the whole GPU
                nbytes = sum(np.asarray(v).nbytes for v in inputs.values()) + sum(o.nbytes for o in outs)
                row["bound_ms"] = nbytes / (bw * 1e9) * 1e3
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            traceback.print_exc()
        results.append(row)
        _print_row(row, _naive(results))
        if args.json:
            Path(args.json).write_text(json.dumps({"bandwidth_gbs": bw, "results": results}, indent=1))
    naive = _naive(results)
    _header()
    for r in sorted(results, key=lambda r: (r["app"], r["schedule"])):
        _print_row(r, naive)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="lower, generate and compile the cases (needs nvcc)")
    b.add_argument("--out", default="build/gpu_bench")
    b.add_argument("--apps", default=",".join(DEFAULT_APPS))
    b.add_argument("--size", choices=("paper", "small"), default="paper")
    b.add_argument("--spec", default="h100", help="GPU spec: compute capability and limits")
    b.add_argument("--schedules", default="solver,gpu_inline,gpu_root,hand,hand_vector",
                   help="which cases to build (hand: blur only)")
    b.add_argument("--timeout", type=int, default=300, help="seconds per case")
    b.add_argument("--fma", action="store_true",
                   help="also build the solver's schedule with fused multiply-adds (solver_fma)")
    r = sub.add_parser("run", help="check and time the built cases (needs pycuda + a GPU)")
    r.add_argument("--builds", default="build/gpu_bench")
    r.add_argument("--json", default=None)
    r.add_argument("--repeats", type=int, default=20)
    r.add_argument("--slow-s", type=float, default=1.0,
                   help="a case whose first realize takes longer is timed over 3 runs only")
    r.add_argument("--deadline", type=float, default=1e9,
                   help="start no case after this many seconds (the rest are reported skipped)")
    r.add_argument("--refs", default="build/gpu_refs",
                   help="folder caching each app's numpy reference ('' for none)")
    r.add_argument("--emulate", action="store_true", help="run on the CPU shim instead (small sizes)")
    r.add_argument("--interpreted", action="store_true",
                   help="interpret the host plan on every realize (the path before prepared plans)")
    a = p.parse_args(argv)
    (build if a.cmd == "build" else run)(a)


if __name__ == "__main__":
    main()
