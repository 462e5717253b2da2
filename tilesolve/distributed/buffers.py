"""Output buffers a worker process reuses once nothing refers to them any more.

A task's output chunk is a fresh array of tens or hundreds of megabytes.  Writing a fresh
allocation costs the kernel a page fault per page (per 2 MB with transparent huge pages,
plus, under the ``madvise`` defrag policy, a compaction that can stall a task for a
second), about a fifth of a cheap stencil's task.  So each worker process keeps the
output arrays of its latest tasks, and a new task of the same shape and dtype takes one
back **only when no one else holds it**: Dask released the chunk, and no view, slice,
memoryview or pickled frame of it is alive anywhere in the process.  In CPython every one
of those holds a reference to the array (a view through its ``.base``, a buffer export
through the exporter), so the array's reference count tells exactly whether it is free.
Data a consumer keeps is therefore never overwritten: the pool just allocates a new
array.

The pool is bounded (``MAX_ARRAYS`` arrays and ``MAX_BYTES`` in all): while Dask holds
the chunks they cost nothing extra; once released, at most that much stays mapped.
``TILESOLVE_DASK_REUSE=0`` turns reuse off (every output is a fresh array).
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

__all__ = ["OutputPool", "MAX_ARRAYS", "MAX_BYTES"]

MAX_ARRAYS = 4      # a threaded cluster's workers share one pool, and store() cuts a box
                    # into a run that needs no halo and the band next to a chunk edge
MAX_BYTES = 512 * 2 ** 20        # as chunking.MAX_TASK_BYTES: one task's outputs


def _refs(items: list, i: int) -> int:
    return sys.getrefcount(items[i])


def _baseline() -> int:
    probe = [np.empty(1)]
    return _refs(probe, 0)          # the list's reference and the call's argument


_FREE_REFS = _baseline()


class OutputPool:
    """Arrays to reuse as task outputs (one per worker process; thread-safe)."""

    def __init__(self, max_arrays: int = MAX_ARRAYS, max_bytes: int = MAX_BYTES):
        self.max_arrays, self.max_bytes = max_arrays, max_bytes
        self.enabled = os.environ.get("TILESOLVE_DASK_REUSE", "1") != "0"
        self._items: list = []
        self._lock = threading.Lock()
        self.reused = 0

    def take(self, shape, dtype) -> np.ndarray:
        """A free pooled array of ``shape`` and ``dtype`` (removed from the pool: the
        caller gives it back with :meth:`keep`), else a new one."""
        shape, dtype = tuple(int(s) for s in shape), np.dtype(dtype)
        if self.enabled:
            with self._lock:
                for i in range(len(self._items) - 1, -1, -1):
                    a = self._items[i]
                    if a.shape == shape and a.dtype == dtype:
                        del a
                        if _refs(self._items, i) <= _FREE_REFS:
                            self.reused += 1
                            return self._items.pop(i)
        return np.empty(shape, dtype)

    def keep(self, arrays) -> None:
        """Remember ``arrays`` (just handed to Dask) for later tasks; the oldest
        beyond the bounds are forgotten (freed once Dask drops them)."""
        if not self.enabled:
            return
        with self._lock:
            for a in arrays:
                if a.base is None and a.flags.c_contiguous and a.nbytes <= self.max_bytes:
                    self._items.append(a)
            while len(self._items) > self.max_arrays or \
                    sum(x.nbytes for x in self._items) > self.max_bytes:
                self._items.pop(0)
