"""Dask graphs of chunk tasks: one task per output box, reading exactly the input region
that bounds inference gives for it.

For each box and input, the region (clipped to the input) is cut along the input's Dask
chunks: chunks used whole are passed as they are, the others through a slicing task that
runs where the chunk lives, so only the halo strip travels between workers.  The task
(:func:`.worker.run_box`) puts the pieces together (no copy when one chunk covers the
region) and realizes the compiled chunk pipeline.
"""
from __future__ import annotations

import itertools
import operator
from bisect import bisect_right

import numpy as np

from .worker import run_box

__all__ = ["BoxGraph", "block_boxes"]


def block_boxes(chunks):
    """(block index, numpy origin, numpy shape) of every block of a chunks tuple."""
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int).tolist() for c in chunks]
    for idx in itertools.product(*(range(len(c)) for c in chunks)):
        yield (idx, [starts[k][i] for k, i in enumerate(idx)],
               [int(chunks[k][i]) for k, i in enumerate(idx)])


class _Source:
    """An input as a Dask array: its name and block boundaries per numpy axis."""

    def __init__(self, arr):
        self.arr = arr
        self.name = arr.name
        self.bounds = [np.concatenate([[0], np.cumsum(c)]).astype(int).tolist()
                       for c in arr.chunks]

    def pieces(self, region_np):
        """(block index, block-local slice, region-local slice) covering ``region_np``
        ([(lo, hi)] per numpy axis, inclusive)."""
        per_axis = []
        for (lo, hi), b in zip(region_np, self.bounds):
            first, last = bisect_right(b, lo) - 1, bisect_right(b, hi) - 1
            axis = []
            for i in range(first, last + 1):
                a, z = max(lo, b[i]), min(hi + 1, b[i + 1])
                axis.append((i, (a - b[i], z - b[i]), (a - lo, z - lo), b[i + 1] - b[i]))
            per_axis.append(axis)
        for combo in itertools.product(*per_axis):
            yield (tuple(c[0] for c in combo), [c[1] for c in combo], [c[2] for c in combo],
                   all(c[1] == (0, c[3]) for c in combo))


class BoxGraph:
    """A graph layer of ``plan`` realized over boxes (collects tasks and dependencies)."""

    def __init__(self, plan, sources: dict, extents: dict, params: dict, token: str):
        self.plan = plan
        self.sources = {n: _Source(a) for n, a in sources.items()}
        self.extents = extents
        self.params = params
        self.token = token
        self.layer: dict = {}
        self.spec_key = f"tilesolve-spec-{plan.shipped.key}"
        self.layer[self.spec_key] = plan.shipped
        self._slices: dict = {}
        self.read: dict = {}          # task key -> {input: region}, for tests and reports

    def _piece_key(self, src: _Source, bidx, local, whole):
        key = (src.name,) + bidx
        if whole:
            return key
        memo = (src.name, bidx, tuple(local))
        hit = self._slices.get(memo)
        if hit is None:
            hit = (f"tilesolve-halo-{self.token}", len(self._slices))
            self.layer[hit] = (operator.getitem, key, tuple(slice(a, b) for a, b in local))
            self._slices[memo] = hit
        return hit

    def add_box(self, key, origin: dict, sizes: dict, extra: dict | None = None):
        """A task ``key`` realizing the plan's outputs over the box (origin and sizes by
        output name, innermost first)."""
        regions = self.plan.regions(origin, sizes, self.params, self.extents, extra)
        scalars = self.plan.scalars(origin, regions, self.params, self.extents, extra)
        inputs, keys = [], []
        for name in self.plan.rw.mins:
            src = self.sources[name]
            reg = regions.get(name)
            if reg is None:          # read nowhere: any one element satisfies realize()
                reg = [(0, 0)] * len(self.extents[name])
                regions[name] = reg
                scalars.update(zip(self.plan.rw.mins[name], [0] * len(reg)))
            reg_np = list(reversed(reg))
            wheres = []
            for bidx, local, target, whole in src.pieces(reg_np):
                keys.append(self._piece_key(src, bidx, local, whole))
                wheres.append(tuple(target))
            shape = tuple(hi - lo + 1 for lo, hi in reg_np)
            inputs.append((name, shape, np.dtype(src.arr.dtype).str, tuple(wheres)))
        first = next(iter(sizes.values()))
        layout = (tuple(first), scalars, tuple(inputs))
        self.layer[key] = (run_box, self.spec_key, layout) + tuple(keys)
        self.read[key] = regions
        return key
