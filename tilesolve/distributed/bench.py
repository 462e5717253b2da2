"""``tilesolve bench --dask N``: scaling of chunked pipelines on a Dask LocalCluster.

For each app (default: blur) at ``scale`` times the paper's image area, on clusters of
1..N workers of one thread each, worker processes (``processes=True``, Dask's default
for a LocalCluster) or workers in this process (``processes=False``: threads, which
suits code that releases the GIL as compiled pipelines do; no transfers between
workers, one process's figures for all of them):

* the input is cut into ``TASKS`` chunks and scattered over the workers, as data
  already loaded on a cluster would be.  ``layout="rows"`` (the default): row bands,
  consecutive bands on the same worker (as a previous chunked stage would leave them),
  and the output chunks are ``to_dask``'s default (about one row band per worker);
  ``layout="tiles"``: 2-D tiles spread over the workers, and output chunks equal to
  them (one task per tile: every task copies its region together from its tile and its
  neighbours' halos);
* the chunk pipeline is compiled on every worker first;
* a timed run builds the graph with ``to_dask`` and stores each chunk into a sink that
  drops it (as writing to a fast store would, with no gather to the client), with
  ``store="tilesolve"`` (:func:`tilesolve.distributed.store`: the task that computes a
  chunk writes it) or ``"dask"`` (``da.store``: a write task a chunk and a final task);
  best of ``repeat`` runs, and the breakdown below is that run's;
* the baseline is one in-memory ``realize`` of the whole image with k threads (k the
  number of workers: equal parallelism);
* where the time went: graph building on the client, inputs made ready in the tasks
  (views, copies of halo strips or regions) and ``realize`` in the tasks (summed over the
  workers), and the rest (scheduling, transfers, stores);
* each worker's peak RSS and peak data held (Dask's managed memory plus the largest
  task's slices and outputs) are sampled during the timed runs;
* CPU seconds, which other jobs on a shared machine disturb far less than wall-clock
  time: those of the workers and of this process (graph building, the scheduler) per
  run, against those of the in-memory realize; and a predicted speedup for free cores,
  the 1-worker run's CPU seconds over the busiest process's in the k-worker run (or
  their total over the cores, if that is larger).

The output checks against ``ts.reference.realize`` happen in the tests, not here; this
checks the chunked result against the in-memory one at the largest cluster.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..apps import get_app
from ..backend.compile import compile as ts_compile

__all__ = ["run_dask_bench", "main_dask", "format_records", "TASKS", "LAYOUTS"]

TASKS = 16           # input chunks per image: 8 per worker at N = 2
LAYOUTS = ("rows", "tiles")


def _scaled(sizes, scale: float):
    """``sizes`` with the first two dimensions grown so the area grows by ``scale``."""
    f = float(np.sqrt(scale))
    return [int(round(s * f)) if i < 2 else s for i, s in enumerate(sizes)]


def _chunks_for(shape, pixels: int):
    """Chunks of about ``pixels`` elements over the two innermost numpy axes (the
    image plane), whole along the others."""
    h, w = shape[-2], shape[-1]
    ch = max(1, int(np.sqrt(pixels * h / w)))
    cw = max(1, pixels // ch)
    return tuple(shape[:-2]) + (min(h, ch), min(w, cw))


def _row_chunks(shape, bands: int):
    """Row bands over the axis ``to_dask``'s default chunks cut (the outermost numpy
    axis with at least 8 rows per band: rows, not the channels of a planar image),
    whole along the others."""
    from .chunking import band_axis
    k = band_axis(shape, bands)
    rows = -(-shape[k] // bands)
    cut = (rows,) * (shape[k] // rows) + ((shape[k] % rows,) if shape[k] % rows else ())
    return tuple(cut if i == k else (s,) for i, s in enumerate(shape))


def _scatter(client, da, arr, chunks, grouped: bool):
    """``arr`` as a Dask array whose chunks are scattered over the workers under the
    array's own keys, as ``persist`` leaves data (computing it runs no task for the
    input): consecutive chunks on one worker (``grouped``), else placed by Dask."""
    import uuid

    from dask.array.core import normalize_chunks

    from .graph import block_boxes
    chunks = normalize_chunks(chunks, arr.shape, dtype=arr.dtype)
    name = f"bench-input-{uuid.uuid4().hex}"
    boxes = list(block_boxes(chunks))
    blocks = {(name,) + idx: np.ascontiguousarray(
        arr[tuple(slice(o, o + s) for o, s in zip(org, shp))]) for idx, org, shp in boxes}
    if grouped:
        workers = sorted(client.nthreads())
        futures = {}
        for i, (key, b) in enumerate(blocks.items()):
            w = workers[i * len(workers) // len(blocks)]
            futures.update(client.scatter({key: b}, workers=[w]))
    else:
        futures = client.scatter(blocks)
    return da.Array(dict(futures), name, chunks, dtype=arr.dtype)


class Discard:
    """A store target of ``shape`` that drops what it is given."""

    def __init__(self, shape=()):
        self.shape = tuple(shape)

    def __setitem__(self, key, value):
        pass


def _app_case(name: str, scale: float, seed: int):
    app = get_app(name)
    sizes = _scaled(list(app.PAPER_SIZE), scale)
    pipe, _ = app.build(sizes)
    sched = app.hand_schedule(pipe) if hasattr(app, "hand_schedule") else None
    inputs = app.make_inputs(sizes, seed=seed)
    return pipe, sched, sizes, inputs


def _per_process(stats: dict) -> dict:
    """``client.run`` results of a cluster, one per process (the workers of a threaded
    cluster all report their one process)."""
    seen, out = set(), {}
    for w, st in stats.items():
        pid = st.get("pid", w) if isinstance(st, dict) else w
        if pid not in seen:
            seen.add(pid)
            out[w] = st
    return out


def run_dask_bench(n_workers: int, apps=None, *, scale: float = 4.0, repeat: int = 3,
                   chunk_pixels: int | None = None, seed: int = 0, log=None,
                   layout: str = "rows", processes: bool = True,
                   store: str = "tilesolve") -> list:
    """One record per (app, worker count): see the module docstring."""
    import dask.array as da
    import distributed

    from . import store as store_chunks
    from . import to_dask, warm_up
    from .worker import process_stats, start_memory_sampler, stop_memory_sampler
    log = log or (lambda s: None)
    records = []
    for name in apps or ["blur"]:
        pipe, sched, sizes, inputs = _app_case(name, scale, seed)
        shape = tuple(reversed(sizes))
        plane = sizes[0] * sizes[1]
        pixels_per_chunk = chunk_pixels or max(512 * 512, plane // TASKS)
        tiles = _chunks_for(shape, pixels_per_chunk)
        chunks = tiles if layout == "tiles" else None          # None: to_dask's default
        pixels = int(np.prod(sizes))
        log(f"{name}: sizes {sizes}, layout {layout}, output chunks {chunks or 'auto'}")
        baseline, baseline_cpu = {}, {}
        for k in range(1, n_workers + 1):
            fast = ts_compile(pipe, sched, num_threads=k)
            fast.realize(sizes, **inputs)
            best = best_cpu = float("inf")
            for _ in range(repeat):
                t, c = time.perf_counter(), time.process_time()
                whole = fast.realize(sizes, **inputs)
                best = min(best, time.perf_counter() - t)
                best_cpu = min(best_cpu, time.process_time() - c)
            baseline[k], baseline_cpu[k] = best, best_cpu
        fast1 = ts_compile(pipe, sched, num_threads=1)
        for k in range(1, n_workers + 1):
            cluster = distributed.LocalCluster(n_workers=k, threads_per_worker=1,
                                               processes=processes, dashboard_address=None,
                                               silence_logs=40)
            client = distributed.Client(cluster)
            try:
                images = {n: a for n, a in inputs.items() if isinstance(a, np.ndarray)}
                params = {n: v for n, v in inputs.items() if n not in images}
                srcs = {n: _scatter(client, da, a, _row_chunks(a.shape, TASKS), True)
                        if layout == "rows" else
                        _scatter(client, da, a, tiles if a.shape == shape else
                                 _chunks_for(a.shape, pixels_per_chunk), False)
                        for n, a in images.items()}
                distributed.wait(list(srcs.values()))
                out = to_dask(fast1, sizes, chunks, **srcs, **params)
                warm_up(client, *(out if isinstance(out, tuple) else (out,)))
                client.run(start_memory_sampler)
                best, graph_s = float("inf"), 0.0
                for _ in range(repeat):        # the breakdown is that of the best run
                    b = _per_process(client.run(process_stats))
                    t, c0 = time.perf_counter(), time.process_time()
                    out = to_dask(fast1, sizes, chunks, **srcs, **params)
                    t_graph = time.perf_counter() - t
                    outs = out if isinstance(out, tuple) else (out,)
                    sinks = [Discard(o.shape) for o in outs]
                    if store == "dask":
                        da.store(list(outs), sinks, lock=False)
                    else:
                        store_chunks(list(outs), sinks)
                    dt = time.perf_counter() - t
                    c1 = time.process_time() - c0
                    a = _per_process(client.run(process_stats))
                    if dt < best:
                        best, graph_s, client_cpu, before, after = dt, t_graph, c1, b, a
                peaks = _per_process(client.run(stop_memory_sampler))

                def spent(key):
                    return sum(after[w].get(key, 0) - before[w].get(key, 0) for w in after)
                tasks = int(spent("tasks"))
                bands, copied = spent("bands"), spent("copied_bytes")
                out_chunks = [list(c) for c in outs[0].chunks]
                assemble_s, realize_s = spent("assemble_s"), spent("realize_s")
                worker_cpu = [after[w]["process_cpu_s"] - before[w]["process_cpu_s"]
                              for w in after] if processes else []   # threads: client_cpu
                task_cpu = spent("task_cpu_s")
                if k == n_workers:
                    got = client.compute(list(outs), sync=True)
                    _compare(name, tuple(got), whole)
            finally:
                client.close()
                cluster.close()
            rec = {"app": name, "sizes": sizes, "layout": layout, "store": store,
                   "chunks": out_chunks,
                   "workers": k, "worker_kind": "processes" if processes else "threads",
                   "tasks": tasks, "bands": bands, "copied_mb": copied / 2 ** 20,
                   "seconds": best, "graph_seconds": graph_s,
                   "task_assemble_seconds": assemble_s, "task_realize_seconds": realize_s,
                   "cpu_workers": worker_cpu, "cpu_client": client_cpu, "cpu_tasks": task_cpu,
                   "cpu_total": sum(worker_cpu) + client_cpu,
                   "realize_cpu_seconds": baseline_cpu[k],
                   "cpu_overhead": (sum(worker_cpu) + client_cpu) / baseline_cpu[k] - 1,
                   "mpix_per_s": pixels / best / 1e6, "realize_seconds": baseline[k],
                   "overhead": best / baseline[k] - 1,
                   "peak_rss_mb": [p["rss"] / 2 ** 20 for p in peaks.values()],
                   "peak_data_mb": [(p["managed"] + p["task"]) / 2 ** 20
                                    for p in peaks.values()],
                   "image_mb": sum(a.nbytes for a in inputs.values()
                                   if isinstance(a, np.ndarray)) / 2 ** 20}
            records.append(rec)
            log(f"{name}: {k} worker(s): {best:.3f} s")
        base = next(r for r in records if r["app"] == name and r["workers"] == 1)
        for r in records:
            if r["app"] == name and "speedup" not in r:
                r["speedup"] = base["seconds"] / r["seconds"]
                if r["cpu_workers"]:
                    busiest = max(max(r["cpu_workers"]), r["cpu_client"],
                                  r["cpu_total"] / r["workers"])
                else:          # threads: one process's CPU, shared by its workers
                    busiest = r["cpu_total"] / r["workers"]
                r["predicted_speedup"] = base["cpu_total"] / busiest
    return records


def _compare(name, got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        if not (np.array_equal(g, w) or (g.dtype.kind == "f" and np.allclose(g, w, 1e-5, 1e-5))):
            raise AssertionError(f"{name}: the chunked result differs from realize()")


def format_records(records) -> str:
    head = (f"{'app':8s} {'layout':6s} {'kind':4s} {'wk':>2s} {'tasks':>5s} {'bands':>5s} "
            f"{'seconds':>7s} {'Mpx/s':>7s} {'speedup':>7s} {'realize':>7s} {'overhead':>8s} "
            f"{'graph':>6s} {'in tasks':>13s} {'rest':>6s} {'copy MB':>7s} {'CPU s':>6s} {'CPU ovh':>7s} "
            f"{'pred.':>6s}  peak RSS / data per worker (MB)")
    lines = [head, "-" * len(head)]
    for r in records:
        mem = ", ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(r["peak_rss_mb"], r["peak_data_mb"]))
        in_tasks = r["task_assemble_seconds"] + r["task_realize_seconds"]
        rest = r["seconds"] - r["graph_seconds"] - in_tasks / r["workers"]
        kind = "thr" if r.get("worker_kind") == "threads" else "proc"
        lines.append(f"{r['app']:8s} {r['layout']:6s} {kind:4s} {r['workers']:2d} "
                     f"{r['tasks']:5d} {r['bands']:5.0f} {r['seconds']:7.3f} "
                     f"{r['mpix_per_s']:7.1f} {r['speedup']:6.2f}x {r['realize_seconds']:7.3f} {r['overhead']:+7.0%} "
                     f"{r['graph_seconds']:6.3f} {r['task_assemble_seconds']:5.3f}+"
                     f"{r['task_realize_seconds']:<7.3f} {rest:6.3f} {r['copied_mb']:7.1f} "
                     f"{r['cpu_total']:6.3f} {r['cpu_overhead']:+6.0%} "
                     f"{r['predicted_speedup']:5.2f}x  {mem}")
    if records:
        r = records[0]
        lines.append(
            f"sizes {r['sizes']} (image {r['image_mb']:.0f} MB); kind: worker processes "
            "(proc) or workers in this process (thr: threads; CPU s and peak memory are "
            "the one process's, the client's included); layout rows: input in "
            f"{TASKS} row bands, output chunks to_dask's default; tiles: input and output in "
            f"{TASKS} tiles of {r['chunks'][0][0] if r['layout'] == 'tiles' else '...'}; "
            "seconds: to_dask + compute, each chunk stored into a sink that drops it, best "
            "run (the breakdown is that run's); realize: the whole image in memory with as "
            "many threads as workers; graph: to_dask on the client (its region answers are "
            "memoized per plan: runs after the first reuse them); in tasks: inputs made "
            "ready (views, copies) + realize(), "
            "summed over the workers; rest: seconds - graph - in tasks / workers (scheduling, "
            "transfers, stores); copy MB: input bytes copied by the tasks per run; CPU s: "
            "CPU seconds of the workers and of this process per run (CPU ovh: against "
            "realize's); pred.: speedup predicted from CPU seconds for free cores")
    return "\n".join(lines) + "\n"


def main_dask(args, out=None, err=None) -> int:
    """``tilesolve bench --dask N`` (uses --apps, --repeat, --seed, --json, --quiet,
    --dask-workers, --dask-store)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        err.write("tilesolve bench --dask: needs Dask: pip install 'tilesolve[dask]'\n")
        return 2
    quiet = getattr(args, "quiet", False)
    records = []
    kinds = getattr(args, "dask_workers", None) or "processes"
    for processes in [k == "processes" for k in
                      (("processes", "threads") if kinds == "both" else (kinds,))]:
        records += _both_layouts(args, processes, quiet, err)
    out.write(format_records(records))
    if getattr(args, "json", None):
        import json
        with open(args.json, "w") as f:
            json.dump({"dask": records}, f, indent=1)
    return 0


def _both_layouts(args, processes: bool, quiet: bool, err) -> list:
    """The records of both layouts on clusters of one kind."""
    records = []
    for layout in LAYOUTS:
        records += run_dask_bench(args.dask, args.apps, repeat=args.repeat,
                                  seed=args.seed, layout=layout, processes=processes,
                                  store=getattr(args, "dask_store", None) or "tilesolve",
                                  log=None if quiet else (lambda s: err.write(f"[dask] {s}\n")))
    return records
