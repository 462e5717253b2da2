"""Where a chunked blur's time goes on a Dask cluster of this machine, beyond the tasks.

    python benchmarks/dask_cpu.py [--runs 20] [--kind processes|threads]

Blur at 4x the paper's area, input scattered in 16 row bands as ``tilesolve bench --dask``
places it, written with ``tilesolve.distributed.store`` into a sink:

* ``local``: Dask's threaded scheduler in this process, 1 and 2 threads (no messages
  between scheduler and workers): how far the tasks themselves scale;
* ``cluster``: LocalClusters of 1 and 2 one-thread workers; per run, the mean wall time
  and the CPU time of every thread of the workers and of this process (scheduler and
  client), read from /proc (Linux), against the same span with the cluster idle;
* ``round trip``: on a 1-worker cluster, a task with no inputs and no work under a fresh
  key each time, from the call until it starts and until its result is back (median).
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np


def threads_cpu() -> dict:
    """Thread name -> CPU seconds, for the threads of this process (Linux /proc)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tck, out = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        name = names.get(int(tid), "other")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tck
    return out


def _case():
    from tilesolve.distributed.bench import _app_case
    import tilesolve as ts
    pipe, sched, sizes, inputs = _app_case("blur", 4.0, 0)
    return ts.compile(pipe, sched, num_threads=1), sizes, inputs["input"]


def local(runs: int) -> None:
    import dask
    import dask.array as da

    from tilesolve.distributed import store, to_dask
    from tilesolve.distributed.bench import Discard
    fast, sizes, img = _case()
    src = da.from_array(img, chunks=(-(-img.shape[0] // 16), img.shape[1]))
    walls = {}
    for k in (1, 2):
        chunks = ((sizes[1],), (sizes[0],)) if k == 1 else None
        with dask.config.set(scheduler="threads", num_workers=k):
            for _ in range(runs + 2):
                out = to_dask(fast, sizes, chunks or ((sizes[1] // 2, sizes[1] - sizes[1] // 2),
                                                      (sizes[0],)), input=src)
                t = time.perf_counter()
                store(out, Discard(out.shape), client=False)
                walls.setdefault(k, []).append(time.perf_counter() - t)
    a, b = np.mean(walls[1][2:]), np.mean(walls[2][2:])
    print(f"local threaded scheduler: 1 thread {1e3 * a:.1f} ms, 2 threads {1e3 * b:.1f} ms "
          f"(mean of {runs}): {a / b:.2f}x")


def cluster(runs: int, processes: bool) -> None:
    import dask.array as da
    import distributed

    from tilesolve.distributed import store, to_dask, warm_up
    from tilesolve.distributed.bench import TASKS, Discard, _row_chunks, _scatter
    fast, sizes, img = _case()
    for k in (1, 2):
        cl = distributed.LocalCluster(n_workers=k, threads_per_worker=1, processes=processes,
                                      dashboard_address=None, silence_logs=40)
        client = distributed.Client(cl)
        try:
            src = _scatter(client, da, img, _row_chunks(img.shape, TASKS), True)
            out = to_dask(fast, sizes, None, input=src)
            warm_up(client, out)
            store(out, Discard(out.shape))

            def span(busy: bool):
                before = client.run(threads_cpu) if processes else {}
                mine = threads_cpu()
                t = time.perf_counter()
                for _ in range(runs):
                    if busy:
                        o = to_dask(fast, sizes, None, input=src)
                        store(o, Discard(o.shape))
                    else:
                        time.sleep(0.1)
                wall = (time.perf_counter() - t) / runs
                after = client.run(threads_cpu) if processes else {}
                d = {f"worker {i} {n}": (after[w][n] - before[w].get(n, 0.0)) / runs
                     for i, w in enumerate(sorted(after)) for n in after[w]}
                d.update({f"this process {n}": (c - mine.get(n, 0.0)) / runs
                          for n, c in threads_cpu().items()})
                return wall, d
            wall, busy = span(True)
            _, idle = span(False)
        finally:
            client.close()
            cl.close()
        print(f"{k} worker(s) ({'processes' if processes else 'threads'}): "
              f"{1e3 * wall:.1f} ms a run (mean of {runs}); CPU ms a run, busy (idle a 100 ms):")
        for name in sorted(busy):
            if busy[name] > 0.0005 or idle.get(name, 0) > 0.0005:
                print(f"  {name[:60]:60s} {1e3 * busy[name]:6.1f} ({1e3 * idle.get(name, 0):.1f})")


def round_trip(runs: int, processes: bool) -> None:
    import uuid

    import distributed
    cl = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=processes,
                                  dashboard_address=None, silence_logs=40)
    client = distributed.Client(cl)
    try:
        starts, ends = [], []
        for i in range(runs + 5):
            key = f"round-trip-{uuid.uuid4().hex}"
            t = time.time()
            started = client.get({key: (time.time,)}, key, sync=True)
            if i >= 5:                               # the first calls warm the cluster up
                starts.append(started - t)
                ends.append(time.time() - t)
    finally:
        client.close()
        cl.close()
    print(f"round trip ({'processes' if processes else 'threads'}): an empty task starts "
          f"{1e3 * np.median(starts):.1f} ms after the call, its result is back after "
          f"{1e3 * np.median(ends):.1f} ms (medians of {runs})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--kind", choices=("processes", "threads"), default="processes")
    args = p.parse_args()
    local(args.runs)
    cluster(args.runs, args.kind == "processes")
    round_trip(args.runs, args.kind == "processes")


if __name__ == "__main__":
    main()
