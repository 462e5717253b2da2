"""What runs on a Dask worker: compile once per process, then realize boxes.

A :class:`ShippedPipeline` is what travels to the workers: the rewritten pipeline as
plain data (:mod:`.serialize`), its schedule as JSON (``Schedule.to_json``; the schedule
is replayed, never solved again) and the thread count.  The first task of a process that
needs it decodes and compiles it (``ts.compile``: lowering and LLVM, or a load from the
on-disk cache ``TILESOLVE_CACHE_DIR`` that several worker processes share); later tasks
reuse the CompiledPipeline, memoized per process by the blob's digest.
"""
from __future__ import annotations

import hashlib
import pickle
import threading
import time

import numpy as np

from ..backend.compile import compile as ts_compile
from ..model.schedule import Schedule
from .buffers import OutputPool
from .serialize import decode, encode

__all__ = ["ShippedPipeline", "compiled_for", "run_box", "cut_strips", "band_pieces",
           "pieces_used", "assemble", "combine", "process_stats", "start_memory_sampler",
           "stop_memory_sampler"]

_COMPILED: dict = {}
_LOCK = threading.Lock()
_STATS = {"compiles": 0, "tasks": 0, "bands": 0, "task_bytes": 0, "copied_bytes": 0,
          "assemble_s": 0.0, "realize_s": 0.0, "task_cpu_s": 0.0}
_SAMPLER: dict = {}


class ShippedPipeline:
    """A pipeline + schedule to compile on a worker (small and picklable)."""

    __slots__ = ("blob", "key", "name")

    def __init__(self, pipeline, schedule, num_threads: int = 1):
        sched = None if schedule is None else schedule.to_json()
        self.blob = pickle.dumps((encode(pipeline), sched, int(num_threads)), protocol=4)
        self.key = hashlib.sha256(self.blob).hexdigest()[:24]
        self.name = "+".join(pipeline.output_names)

    def __getstate__(self):
        return (self.blob, self.key, self.name)

    def __setstate__(self, st):
        self.blob, self.key, self.name = st

    def __repr__(self):
        return f"<ShippedPipeline {self.name} {self.key}>"

    def build(self, checked: bool = False):
        """Decode and compile (no memo; see :func:`compiled_for`).  ``checked``: a checked
        build, whose every load and store is tested against its buffer (for tests)."""
        enc, sched, nthreads = pickle.loads(self.blob)
        pipe = decode(enc)
        schedule = None if sched is None else Schedule.from_json(sched, pipe)
        return ts_compile(pipe, schedule, num_threads=nthreads, checked=checked)


def compiled_for(shipped: ShippedPipeline):
    """The CompiledPipeline of ``shipped`` in this process (compiled at most once)."""
    c = _COMPILED.get(shipped.key)
    if c is None:
        with _LOCK:
            c = _COMPILED.get(shipped.key)
            if c is None:
                c = shipped.build()
                _COMPILED[shipped.key] = c
                _STATS["compiles"] += 1
    return c


_POOL = threading.local()          # per thread: (shape, dtype) -> scratch input arrays
OUTPUTS = OutputPool()             # output arrays to reuse once Dask and all views let go


def assemble(shape: tuple, dtype, pieces, scratch: np.ndarray | None = None) -> np.ndarray:
    """One array of numpy ``shape`` from ``pieces``: (array, target slices) pairs that
    tile it.  A single piece covering everything is passed through without a copy.
    ``scratch``: an array of that shape and dtype to fill instead of a new one."""
    if len(pieces) == 1:
        arr, where = pieces[0]
        if arr.shape == tuple(shape):
            return np.asarray(arr)
    out = scratch if scratch is not None else np.empty(shape, dtype)
    if sum(int(np.prod([b - a for a, b in where])) for _, where in pieces) < out.size:
        out[...] = 0                  # padding past the input: read, never used
    for arr, where in pieces:
        out[tuple(slice(a, b) for a, b in where)] = arr
    return out


def _scratch_pool() -> dict:
    """This thread's scratch arrays for assembled inputs, by (shape, dtype): an input is
    only read while its task runs, so the next task of the same shape (interior chunks
    all share one) refills it, saving a fresh allocation's page faults: about a third
    of the copy's time for chunks of megabytes."""
    pool = getattr(_POOL, "arrays", None)
    if pool is None:
        pool = _POOL.arrays = {}
    return pool


def _input(spec, pieces, k, pool, used):
    """The array of one input spec, from ``pieces[k:]``: (array, pieces consumed)."""
    name, kind, data = spec
    if kind == "view":                 # a view of one chunk or of the whole input
        arr = pieces[k]
        return arr[tuple(slice(a, b) for a, b in data)], 1
    shape, dtype, wheres = data
    mine = [(p if local is None else p[local] if isinstance(local, int) else
             p[tuple(slice(a, b) for a, b in local)], where)
            for p, (where, local) in zip(pieces[k:k + len(wheres)], wheres)]
    if len(mine) == 1 and mine[0][0].shape == tuple(shape):
        return assemble(shape, dtype, mine), 1           # the piece itself: never pooled
    key = (tuple(shape), np.dtype(dtype).str)
    free = pool.get(key)
    a = assemble(shape, dtype, mine, free.pop() if free else None)
    used.append((key, a))             # our own copy: reused once the task is done
    _STATS["copied_bytes"] += a.nbytes
    return a, len(wheres)


def run_box(shipped: ShippedPipeline, layout, *pieces):
    """Realize ``shipped`` over one box.  ``layout``: (numpy shape of the box, bands); a
    band is (first row, end row, its sizes innermost first, scalars (user Params and the
    band's origin, slice mins, whole extents), input specs[, (first column, end
    column)]), realized into those rows (numpy axis 0), and those columns (the last axis)
    when given, of the output chunk.  An input spec is (name, "view", slices of its
    piece) or (name, "copy", (numpy shape, dtype, per piece: (target slices, slices of the
    piece to take, or None for all of it, or the index of the strip to take from a
    piece that is a tuple of halo strips))).
    ``pieces``: the arrays, in that order (positional, so that Dask resolves their
    keys)."""
    shape, bands = layout
    c = compiled_for(shipped)
    cpu0 = time.thread_time()
    names = c.pipeline.output_names
    outs = tuple(OUTPUTS.take(shape, c.pipeline.func(n).type.dtype) for n in names)
    k, pool, used, held, t_in, t_run = 0, _scratch_pool(), [], 0, 0.0, 0.0
    for a, b, sizes, scalars, inputs, *cols in bands:
        t0 = time.perf_counter()
        arrays = {}
        for spec in inputs:
            arrays[spec[0]], n = _input(spec, pieces, k, pool, used)
            k += n
        t1 = time.perf_counter()
        if cols:                      # a window of rows and columns (row stride kept)
            (c0, c1), = cols
            rows = tuple(o[(slice(a, b),) + (slice(None),) * (o.ndim - 2) + (slice(c0, c1),)]
                         for o in outs)
        else:
            rows = tuple(o[a:b] for o in outs) if len(bands) > 1 else outs
        c.realize(list(sizes), out=rows[0] if len(rows) == 1 else rows, **arrays, **scalars)
        t_in += t1 - t0
        t_run += time.perf_counter() - t1
        held = max(held, sum(x.nbytes for x in arrays.values()))
    for key, a in used:               # the task is done with its inputs: reuse them
        pool.setdefault(key, []).append(a)
    while len(pool) > 4:              # bounded: the shapes of the latest tasks only
        del pool[next(iter(pool))]
    _STATS["tasks"] += 1
    _STATS["bands"] += len(bands)
    _STATS["assemble_s"] += t_in
    _STATS["realize_s"] += t_run
    _STATS["task_cpu_s"] += time.thread_time() - cpu0
    held += sum(o.nbytes for o in outs)
    _STATS["task_bytes"] = max(_STATS["task_bytes"], held)
    OUTPUTS.keep(outs)
    return outs[0] if len(outs) == 1 else outs


def cut_strips(chunk: np.ndarray, slices) -> tuple:
    """The halo strips other tasks need from ``chunk``, as copies: a view would keep the
    whole chunk in this worker's memory for as long as the strips are held."""
    return tuple(np.array(chunk[s], copy=True) for s in slices)


def band_pieces(band) -> int:
    """How many of a ``run_box`` task's ``pieces`` one band reads."""
    return sum(1 if spec[1] == "view" else len(spec[2][2]) for spec in band[4])


def pieces_used(layout) -> int:
    """How many of a ``run_box`` task's ``pieces`` its bands read; any after them are
    dependencies for ordering only (see ``BoxGraph.finish``)."""
    return sum(band_pieces(band) for band in layout[1])


def combine(op: str, *parts):
    """The elementwise reduction of ``parts`` under ``op`` (same dtype: integers wrap as
    in the compiled code)."""
    fn = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[op]
    acc = np.array(parts[0], copy=True)
    for p in parts[1:]:
        fn(acc, p, out=acc)
    return acc


def process_stats() -> dict:
    """Compiles and tasks run by this process, the largest working set of one task (its
    input slices and outputs, bytes), time in tasks, the process's CPU seconds and its
    pid (workers of a threaded cluster share one process, and these figures), for tests
    and the benchmark."""
    import os
    t = os.times()
    return dict(_STATS, pipelines=len(_COMPILED), process_cpu_s=t.user + t.system,
                reused_outputs=OUTPUTS.reused, pid=os.getpid())


def start_memory_sampler(dask_worker=None, interval: float = 0.02) -> None:
    """In a Dask worker (``client.run(start_memory_sampler)``, which passes
    ``dask_worker``): sample, until :func:`stop_memory_sampler`, the process's RSS and the
    bytes of data the worker holds (Dask's managed memory).  Workers sharing a process
    (a threaded cluster) share the first one's sampler."""
    import os
    running = _SAMPLER.get("thread")
    if running is not None and running.is_alive():
        return                        # a threaded cluster: one sampler for the process
    state = getattr(dask_worker, "state", None)
    stop = threading.Event()
    peaks = {"rss": 0, "managed": 0, "rss_start": _rss(os.getpid())}
    _STATS["task_bytes"] = 0

    def loop():
        while not stop.is_set():
            peaks["rss"] = max(peaks["rss"], _rss(os.getpid()))
            if state is not None:
                peaks["managed"] = max(peaks["managed"], int(state.nbytes))
            time.sleep(interval)
    t = threading.Thread(target=loop, daemon=True)
    _SAMPLER.update(stop=stop, thread=t, peaks=peaks)
    t.start()


def stop_memory_sampler() -> dict:
    """The peaks since :func:`start_memory_sampler`: ``rss`` and ``rss_start`` (bytes of
    the process), ``managed`` (data held by the worker) and ``task`` (largest working
    set of one task), and the process's ``pid``."""
    import os
    _SAMPLER["stop"].set()
    _SAMPLER["thread"].join()
    return dict(_SAMPLER["peaks"], task=_STATS["task_bytes"], pid=os.getpid())


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            import os
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        try:
            import psutil
            return psutil.Process(pid).memory_info().rss
        except ImportError:
            return 0
