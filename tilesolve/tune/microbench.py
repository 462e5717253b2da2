"""Microbenchmarks of this machine, for ``tilesolve calibrate``.

Each is a tiny tilesolve pipeline (or, for DRAM, the numpy copy that host
detection uses), compiled once and timed as the minimum of a few calls, the
fixed cost of a ``realize`` call (measured first) taken off:

* ``call_overhead``: ``realize`` of a 1x1 pipeline: argument checks, region
  checks, the call itself.  Calibration subtracts it from training times.
* ``cache_sweep``: per cache level of the spec, one core streams over a working
  set of half that level (its per-core share when shared) again and again
  (``acc(x) += A(x)``, the RDom loop outside the vectorized x loop): 2 loads
  and 1 store of 4 bytes per element and pass.  Plus one set beyond the caches
  (capped so the run stays short; the label says when it still fits the last
  level).  Reported as GB/s of that traffic.
* ``op_costs``: ns per arithmetic operation of a chain of 64 dependent
  multiply-adds per point on one core, with the x loop vectorized by the
  spec's lanes and without ``vectorize`` (LLVM may still vectorize it).
* ``parallel_overhead``: a trivial stage over many short rows, with the row
  loop ``parallel`` on the spec's threads and serial: the extra thread-time
  per task; and over many parallel loops of one task per thread (fork/join).
* ``memory_bandwidth``: ``specs.host.measure_memory_bandwidth`` (numpy copy,
  all threads, read + write bytes), as ``memory_bandwidth_gbs`` means.
* for a GPU spec, ``gpu_micro.py``: the kernel launch overhead and the device's
  copy bandwidth, where pycuda drives a GPU (elsewhere not measured: the spec's
  values are kept).

The numbers describe the machine as it is while measured: other load on it
inflates them.  Nothing here asserts anything about speed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

__all__ = ["Measurement", "MicroResults", "run_microbenchmarks", "call_overhead",
           "cache_sweep", "op_costs", "parallel_overhead", "memory_bandwidth"]

CHAIN_STEPS = 32            # multiply-adds per point in op_costs (2 ops each)


@dataclass
class Measurement:
    """One measured (or deliberately not measured) quantity and how it was obtained."""

    name: str
    value: Optional[float]
    unit: str
    how: str

    @property
    def measured(self) -> bool:
        return self.value is not None


@dataclass
class MicroResults:
    """All microbenchmark results, by name, and how long they took."""

    items: Dict[str, Measurement] = field(default_factory=dict)
    cache_levels: List[Measurement] = field(default_factory=list)
    seconds: float = 0.0

    def get(self, name: str) -> Optional[float]:
        m = self.items.get(name)
        return None if m is None else m.value

    def add(self, m: Measurement) -> Measurement:
        self.items[m.name] = m
        return m


def _best_ms(fn: Callable[[], object], runs: int) -> float:
    """Minimum wall time of ``runs`` calls of ``fn`` after one warm-up, in ms."""
    fn()
    best = float("inf")
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def _runner(fast, sizes, **inputs):
    out = fast.realize(sizes, **inputs)
    return lambda: fast.realize(sizes, out=out, **inputs)


def call_overhead(runs: int = 30) -> Measurement:
    """Fixed cost of one ``realize`` call (a 1x1 copy), in ms."""
    import tilesolve as ts
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.float32, 2, "A")
    f = ts.Func("cal_call")
    f[x, y] = a[x, y]
    pipe = ts.Pipeline(f)
    fast = ts.compile(pipe, ts.Schedule(pipe), num_threads=1)
    ms = _best_ms(_runner(fast, [1, 1], A=np.ones((1, 1), np.float32)), runs)
    return Measurement("call_overhead_ms", ms, "ms",
                       f"realize() of a 1x1 copy, best of {runs}")


def _sweep_pipeline(lanes: int):
    import tilesolve as ts
    x = ts.Var("x")
    a = ts.ImageParam(ts.float32, 1, "A")
    reps = ts.Param(ts.int32, "reps")
    acc = ts.Func("cal_sweep")
    r = ts.RDom((0, reps), name="r")
    acc[x] = ts.cast(ts.float32, 0)
    acc[x] = acc[x] + (a[x] + ts.cast(ts.float32, r.x))
    pipe = ts.Pipeline(acc)
    s = ts.Schedule(pipe)
    s[acc].vectorize(x, lanes)
    s[acc].update(0).reorder(x, r.x).vectorize(x, lanes)
    return ts.compile(pipe, s, num_threads=1)


def _kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB" if n < (1 << 20) else f"{n / (1 << 20):.0f} MiB"


def cache_sweep(spec, *, quick: bool = False, overhead_ms: float = 0.0) -> List[Measurement]:
    """Read-modify-write bandwidth of one core per cache level, and beyond them."""
    lanes = spec.vector_lanes(4)
    fast = _sweep_pipeline(lanes)
    cap = (16 << 20) if quick else (128 << 20)
    traffic = (40 << 20) if quick else (200 << 20)
    cores = spec.cores or 1
    sets = []
    for c in spec.caches:
        share = c.size_bytes // cores if c.shared else c.size_bytes
        sets.append((f"L{c.level}", share // 2, share))
    last_share = sets[-1][2]
    beyond = min(cap, max(4 * last_share, 32 << 20))
    sets.append(("memory", beyond, None))
    out = []
    for label, ws, _ in sets:
        if ws > cap:
            out.append(Measurement(label, None, "GB/s", f"not measured: a working set of "
                                   f"{_kib(ws)} is over the {_kib(cap)} cap of this mode"))
            continue
        n = max(lanes, (ws // 8) // lanes * lanes)
        reps = max(1, int(traffic / (12 * n)))
        arr = np.ones(n, np.float32)
        ms = _best_ms(_runner(fast, [n], A=arr, reps=reps), 2 if quick else 3)
        ms = max(ms - overhead_ms, 1e-6)
        gbs = 12.0 * n * reps / (ms * 1e-3) / 1e9
        note = ""
        if label == "memory" and ws <= last_share:
            note = (f"; capped at {_kib(cap)}, within the L{spec.caches[-1].level}'s "
                    f"{_kib(last_share)} per core, so partly cached")
        out.append(Measurement(label, round(gbs, 1), "GB/s",
                               f"one core, {_kib(8 * n)} working set swept {reps} times "
                               f"(2 loads + 1 store of 4 bytes per element){note}"))
    return out


def _chain_pipeline():
    import tilesolve as ts
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.float32, 2, "A")
    f = ts.Func("cal_chain")
    v = a[x, y]
    for _ in range(CHAIN_STEPS):
        v = v * 0.999 + 0.25
    f[x, y] = v
    return ts.Pipeline(f), f


def op_costs(spec, *, quick: bool = False, overhead_ms: float = 0.0) -> List[Measurement]:
    """ns per op on one core, vectorized by the spec's lanes and not."""
    import tilesolve as ts
    pipe, f = _chain_pipeline()
    w, h = 256, (32 if quick else 128)
    arr = np.random.default_rng(0).random((h, w), dtype=np.float32)
    ops = 2 * CHAIN_STEPS * w * h
    lanes = spec.vector_lanes(4)
    out = []
    for name, vec in (("vector_ns_per_op", True), ("scalar_ns_per_op", False)):
        s = ts.Schedule(pipe)
        if vec:
            s[f].vectorize("x", lanes)
        fast = ts.compile(pipe, s, num_threads=1)
        ms = max(_best_ms(_runner(fast, [w, h], A=arr), 3 if quick else 5) - overhead_ms, 1e-6)
        how = (f"one core, {2 * CHAIN_STEPS} dependent ops per point over {w}x{h}, "
               + (f"vectorize(x, {lanes})" if vec else "no vectorize directive"))
        out.append(Measurement(name, round(ms * 1e6 / ops, 5), "ns/op", how))
    return out


def _par_pipeline(dims: int):
    import tilesolve as ts
    vs = [ts.Var(n) for n in "xyz"[:dims]]
    a = ts.ImageParam(ts.float32, dims, "A")
    f = ts.Func(f"cal_par{dims}")
    f[tuple(vs)] = a[tuple(vs)] + 1.0
    return ts.Pipeline(f), f


def parallel_overhead(spec, *, quick: bool = False, overhead_ms: float = 0.0) -> List[Measurement]:
    """Extra thread-time per parallel task, and per parallel loop (fork/join), in us."""
    import tilesolve as ts
    threads = spec.threads or 1
    lanes = spec.vector_lanes(4)
    runs = 5 if quick else 10
    out = []
    shapes = (("parallel_task_us", 2, [lanes, 1024 if quick else 4096]),
              ("parallel_loop_us", 3, [lanes, threads, 64 if quick else 256]))
    for name, dims, sizes in shapes:
        pipe, f = _par_pipeline(dims)
        arr = np.ones(tuple(reversed(sizes)), np.float32)
        times = {}
        for par in (False, True):
            s = ts.Schedule(pipe)
            s[f].vectorize("x", lanes)
            if par:
                s[f].parallel("y")
            fast = ts.compile(pipe, s, num_threads=threads)
            times[par] = max(_best_ms(_runner(fast, sizes, A=arr), runs) - overhead_ms, 0.0)
        if dims == 2:
            count, what = sizes[1], f"{sizes[1]} tasks of one {lanes}-wide row"
            extra = threads * times[True] - times[False]
        else:
            count, what = sizes[2], f"{sizes[2]} parallel loops of {threads} one-row tasks"
            extra = times[True] - times[False] / threads
        us = max(0.0, extra) * 1e3 / count
        out.append(Measurement(name, round(us, 4), "us",
                               f"{what} on {threads} threads vs serial: "
                               f"{times[True]:.3f} vs {times[False]:.3f} ms"))
    return out


def memory_bandwidth(spec, *, quick: bool = False) -> Measurement:
    """DRAM copy bandwidth over all threads (read + write bytes), GB/s."""
    from ..specs.host import measure_memory_bandwidth
    nbytes = (64 << 20) if quick else (256 << 20)
    threads = min(spec.threads or 1, 32)
    gbs = measure_memory_bandwidth(nbytes=nbytes, workers=threads,
                                   budget_s=0.3 if quick else 1.5)
    return Measurement("memory_bandwidth_gbs", gbs, "GB/s",
                       f"numpy copy of {_kib(nbytes)} over {threads} threads, read+write "
                       "bytes, best run")


def run_microbenchmarks(spec, *, quick: bool = False,
                        progress: Optional[Callable[[str], None]] = None) -> MicroResults:
    """Every microbenchmark that applies to ``spec``'s kind (a GPU spec: its launch
    overhead and copy bandwidth where a GPU is driven, and the CPU figures of this
    host for reference)."""
    t0 = time.perf_counter()
    res = MicroResults()
    say = progress or (lambda _s: None)
    over = res.add(call_overhead(10 if quick else 30))
    say(f"call overhead: {over.value:.4f} ms")
    cpu = spec if spec.is_cpu else None
    if cpu is None:
        from ..specs import load_spec
        cpu = load_spec("host", measure_bandwidth=False)
    res.add(memory_bandwidth(cpu, quick=quick))
    say(f"memory bandwidth: {res.get('memory_bandwidth_gbs')} GB/s")
    res.cache_levels = cache_sweep(cpu, quick=quick, overhead_ms=over.value)
    for m in res.cache_levels:
        say(f"sweep {m.name}: {m.value} GB/s ({m.how})")
    for m in op_costs(cpu, quick=quick, overhead_ms=over.value) + \
            parallel_overhead(cpu, quick=quick, overhead_ms=over.value):
        res.add(m)
        say(f"{m.name}: {m.value} {m.unit} ({m.how})")
    if spec.is_gpu:
        from .gpu_micro import gpu_measurements
        for m in gpu_measurements(spec):
            res.add(m)
            say(f"{m.name}: {m.value} {m.unit} ({m.how})")
    res.seconds = time.perf_counter() - t0
    return res
