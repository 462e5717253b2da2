"""Default output chunks: few, large tasks, as many as the cluster can run at once.

Every task costs the scheduler and the worker a roughly fixed time (graph entry,
scheduling, messages, the compiled code's region check: a few ms per Dask task, plus
~30 ms per compute, on a 2-core LocalCluster; see docs/distributed.md), so ``to_dask(..., chunks=None)`` or
``chunks="auto"`` picks chunks from

* the parallelism: ``TASKS_PER_WORKER`` tasks per worker thread of the current
  ``distributed`` Client (the CPUs of this machine without one), so every worker is busy;
* a minimum work per task, ``MIN_TASK_ELEMENTS`` output elements, so that small images
  get fewer tasks than workers (the pipeline's cost per element is not known here: for
  a cheap stencil such as blur, ~2.5 ns per element, the minimum task is ~10 ms, about
  the fixed cost, so such images still pay about as much overhead as compute; for
  heavier pipelines the fixed cost becomes a small fraction);
* a maximum output chunk, ``MAX_TASK_BYTES``, so a task's memory stays bounded
  however large the image.

Chunks are *row bands*: the image is cut along the outermost numpy axis that is long
enough (at least 8 rows per band), whole along the others.  A band of rows of a
C-contiguous chunk is contiguous, which lets a task write sub-bands with ``out=`` and
read numpy inputs as views (see :mod:`.graph`).  When a Dask input of the same rank is
cut along that axis, band boundaries move to its nearest chunk boundaries, so that a
task reads whole input chunks plus halo strips.  Chunks the caller gives are used as
given.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

__all__ = ["auto_chunks", "band_axis", "parallelism", "MIN_TASK_ELEMENTS", "MAX_TASK_BYTES",
           "TASKS_PER_WORKER"]

MIN_TASK_ELEMENTS = 4 * 2 ** 20      # ~4 M output elements: ~10 ms of a cheap stencil
MAX_TASK_BYTES = 512 * 2 ** 20       # largest output chunk of one task (all outputs)
TASKS_PER_WORKER = 1


def parallelism() -> int:
    """Worker threads of the current ``distributed`` Client, else this machine's CPUs."""
    if "distributed" in sys.modules:      # no Client can exist before it is imported
        try:
            from distributed import default_client
            n = sum(default_client().nthreads().values())
            if n > 0:
                return int(n)
        except (ValueError, OSError, RuntimeError, AttributeError):
            pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def band_axis(shape, tasks: int) -> int:
    """The outermost numpy axis with at least 8 rows per band, else the longest."""
    for k, s in enumerate(shape):
        if s >= 8 * tasks:
            return k
    return int(np.argmax(shape))


def _align(cuts, bounds, extent: int):
    """Each cut moved to the nearest of ``bounds`` (an input's chunk boundaries), keeping
    them strictly increasing inside (0, extent)."""
    inner = [b for b in bounds if 0 < b < extent]
    if not inner:
        return cuts
    out = []
    for c in cuts:
        b = min(inner, key=lambda v: (abs(v - c), v))
        if (not out or b > out[-1]) and b < extent:
            out.append(b)
    return out


def auto_chunks(shape, itemsize: int, *, workers: int | None = None, like=None) -> tuple:
    """Chunks (numpy axis order, Dask's tuple-of-tuples form) for an output of ``shape``
    whose element takes ``itemsize`` bytes over all outputs (see the module docstring).
    ``like``: Dask input arrays whose chunk boundaries the band cuts should follow."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        return ()
    total = math.prod(shape)
    workers = parallelism() if workers is None else max(1, int(workers))
    tasks = min(workers * TASKS_PER_WORKER, max(1, total // MIN_TASK_ELEMENTS))
    tasks = max(tasks, math.ceil(total * itemsize / MAX_TASK_BYTES), 1)
    axis = band_axis(shape, tasks)
    extent = shape[axis]
    tasks = min(tasks, extent)
    cuts = [round(extent * i / tasks) for i in range(1, tasks)]
    for arr in like or ():
        if getattr(arr, "ndim", None) == len(shape) and len(arr.chunks[axis]) > 1:
            bounds = np.cumsum(arr.chunks[axis]).tolist()
            cuts = _align(cuts, bounds, extent)
            break
    edges = [0] + cuts + [extent]
    band = tuple(b - a for a, b in zip(edges, edges[1:]))
    return tuple(band if k == axis else (s,) for k, s in enumerate(shape))
