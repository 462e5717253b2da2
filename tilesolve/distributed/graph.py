"""Dask graphs of chunk tasks: one task per output box, reading exactly the input region
that bounds inference gives for it.

How a task gets each input region, cheapest first:

* a numpy input is one key of the graph (sent once to each worker that needs it, never
  copied per task); the task reads a *view* of its region;
* a Dask input whose region lies inside one chunk: the task depends on that chunk and
  reads a view of it;
* otherwise the box is cut into row bands (:mod:`.bands`): view bands as above, and
  copy bands near chunk boundaries whose small regions are assembled from pieces;
* when bands do not help (chunks cut across columns too), or cost more than they save
  (what they recompute of the stages' halos, weighed against the copy they avoid, from
  the arithmetic bounds inference and the op costs give each band: bilateral_grid's
  deep halos), the region is assembled from its pieces, as one copy.  Chunks used whole are passed as they are, the others through
  a slicing task that runs where the chunk lives, so only halo strips travel between
  workers.

The task (:func:`.worker.run_box`) realizes each band of the compiled chunk pipeline
straight into its rows of the output chunk.
"""
from __future__ import annotations

import itertools
import math
from bisect import bisect_right

import numpy as np

from ..errors import ChunkingError
from .bands import row_bands
from .grid import grid_cut
from .worker import cut_strips, run_box

__all__ = ["BoxGraph", "block_boxes", "InGraphArray"]


def _sub_box(origin: dict, sizes: dict, a: int, b: int, c=None, d=None):
    """(origin, sizes) by output name of rows [a, b) (the outermost dimension) and, given
    ``c``, columns [c, d) (dimension 0) of a box."""
    o, s = {}, {}
    for n, v in origin.items():
        sz = list(sizes[n])
        o[n] = list(v[:-1]) + [v[-1] + a]
        s[n] = sz[:-1] + [b - a]
        if c is not None:
            o[n][0] += c
            s[n][0] = d - c
    return o, s


def block_boxes(chunks):
    """(block index, numpy origin, numpy shape) of every block of a chunks tuple."""
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int).tolist() for c in chunks]
    for idx in itertools.product(*(range(len(c)) for c in chunks)):
        yield (idx, [starts[k][i] for k, i in enumerate(idx)],
               [int(chunks[k][i]) for k, i in enumerate(idx)])


class InGraphArray:
    """A numpy input held by one key of the graph (``name``).  ``chunks``: a nominal
    chunking, used only to tile reductions over it."""

    def __init__(self, name: str, array: np.ndarray, chunks):
        self.name, self.array, self.chunks = name, array, chunks
        self.shape, self.dtype, self.ndim = array.shape, array.dtype, array.ndim


class _Source:
    """An input as a Dask array: its name and block boundaries per numpy axis."""

    def __init__(self, arr):
        self.arr = arr
        self.name = arr.name
        self.bounds = [np.concatenate([[0], np.cumsum(c)]).astype(int).tolist()
                       for c in arr.chunks]

    def block_of(self, region_np):
        """The block index holding all of ``region_np`` ([(lo, hi)] per numpy axis,
        inclusive), or None when it crosses a block boundary or leaves the array."""
        idx = []
        for (lo, hi), b in zip(region_np, self.bounds):
            if lo < 0 or hi >= b[-1]:
                return None
            i = bisect_right(b, lo) - 1
            if hi >= b[i + 1]:
                return None
            idx.append(i)
        return tuple(idx)

    def pieces(self, region_np):
        """(block index, block-local slice, region-local slice, whole block?) covering
        the part of ``region_np`` inside the array (the rest is padding: see
        ``ChunkPlan._with_code_reads``)."""
        per_axis = []
        for (lo, hi), b in zip(region_np, self.bounds):
            clo, chi = max(lo, 0), min(hi, b[-1] - 1)
            first, last = bisect_right(b, clo) - 1, bisect_right(b, chi) - 1
            axis = []
            for i in range(first, last + 1):
                a, z = max(clo, b[i]), min(chi + 1, b[i + 1])
                axis.append((i, (a - b[i], z - b[i]), (a - lo, z - lo), b[i + 1] - b[i]))
            per_axis.append(axis)
        for combo in itertools.product(*per_axis):
            yield (tuple(c[0] for c in combo), [c[1] for c in combo], [c[2] for c in combo],
                   all(c[1] == (0, c[3]) for c in combo))


def _solve(v0: float, slope: float, bound: float, y0: int, rows: int, at_least: bool):
    """The rows y in [0, rows - 1] (as a real interval) where ``v0 + slope * (y - y0)`` is
    at least (``at_least``) or at most ``bound``."""
    if slope == 0:
        ok = v0 >= bound if at_least else v0 <= bound
        return (0.0, rows - 1.0) if ok else (1.0, 0.0)
    y = y0 + (bound - v0) / slope
    if (slope > 0) == at_least:
        return (max(0.0, y), rows - 1.0)
    return (0.0, min(rows - 1.0, y))


# A byte copied into an assembled input, in ops and loads (ChunkPlan.point_costs units),
# measured on the development machine: copies ran at ~0.2 ns a byte, compiled pipelines
# at 0.024-0.086 ns a unit (blur, harris, unsharp, bilateral_grid at 4x the paper size).
COPY_BYTE_COST = 4.0


class BoxGraph:
    """A graph layer of ``plan`` realized over boxes (collects tasks and dependencies).
    ``bands``: whether boxes may be cut into row bands (see the module docstring)."""

    def __init__(self, plan, sources: dict, extents: dict, params: dict, token: str,
                 bands: bool = True):
        self.plan = plan
        self.sources = {n: a if isinstance(a, InGraphArray) else _Source(a)
                        for n, a in sources.items()}
        self.extents = extents
        self.params = params
        self.token = token
        self.bands = bands
        self.layer: dict = {}
        for s in self.sources.values():
            if isinstance(s, InGraphArray):
                self.layer[s.name] = s.array
        self._halo_of: dict = {}      # chunk key -> (its halo task's key, {slices: index})
        self._boxes: list = []        # the run_box task keys
        self.read: dict = {}          # task key -> {input: region}, for tests and reports
        self.split: dict = {}         # task key -> [(row lo, row hi, view?)] when banded

    def _piece_key(self, src: _Source, bidx, local, whole):
        """(key of the piece, index in it): the chunk itself (index None) when used
        whole, else the halo task of the chunk (one per chunk, whatever the tasks cut from
        it: each Dask task costs about half a millisecond of a worker) and the index of
        this slice in the strips it returns."""
        key = (src.name,) + bidx
        if whole:
            return key, None
        hit = self._halo_of.get(key)
        if hit is None:
            hit = self._halo_of[key] = ((f"tilesolve-halo-{self.token}", len(self._halo_of)),
                                        {})
        return hit[0], hit[1].setdefault(tuple(local), len(hit[1]))

    def finish(self) -> None:
        """Add the halo tasks, and make every task that reads a chunk also wait for the
        halos cut from that chunk for other tasks.  The cut then runs before it on the
        worker holding the chunk (where Dask places both), instead of queueing behind
        that worker's own long task while the task that needs the halo, on another
        worker, idles: the two boxes would run one after the other.  ``run_box`` ignores
        these extra arguments."""
        for chunk, (hkey, index) in self._halo_of.items():
            self.layer[hkey] = (cut_strips, chunk, tuple(
                tuple(slice(a, b) for a, b in local) for local in index))
        for key in self._boxes:
            deps = set(self.layer[key][3:])
            extra = [self._halo_of[c][0] for c in deps if c in self._halo_of
                     and self._halo_of[c][0] not in deps]
            if extra:
                self.layer[key] = self.layer[key] + tuple(extra)

    def _regions(self, origin, sizes, extra):
        regions = self.plan.regions(origin, sizes, self.params, self.extents, extra)
        for name in self.plan.rw.mins:
            if regions.get(name) is None:    # read nowhere: one element satisfies realize()
                regions[name] = [(0, 0)] * len(self.extents[name])
        return regions

    def _copy_bytes(self, regions) -> int:
        """Bytes of the Dask inputs' ``regions`` (what assembling them copies)."""
        total = 0
        for n, s in self.sources.items():
            reg = regions.get(n)
            if isinstance(s, InGraphArray) or not reg:
                continue
            total += int(np.prod([hi - lo + 1 for lo, hi in reg])) * s.arr.dtype.itemsize
        return total

    def _bands_pay(self, bands, whole, work_of, rows) -> bool:
        """Whether ``bands`` cost less than one copy of the box's input ``whole``: what
        they recompute (their work less the box's: the halos of the stages above each
        band) plus their copy bands' strips, against copying the whole region.  Costs in
        the units of :attr:`.plan.ChunkPlan.point_costs` (ops and loads): a byte copied
        costs ``COPY_BYTE_COST`` of them."""
        return self._cuts_pay([(work_of(a, b), r, view) for a, b, r, view in bands], whole,
                              work_of(0, rows))

    def _cuts_pay(self, pieces, whole, whole_work) -> bool:
        """Whether the sub-boxes ``pieces`` [(work, regions, view?)] of a box cost less than
        one copy of its input ``whole`` (see :meth:`_bands_pay`)."""
        recompute = sum(w for w, _, _ in pieces) - whole_work
        strips = sum(self._copy_bytes(r) for _, r, view in pieces if not view)
        return recompute + COPY_BYTE_COST * strips < COPY_BYTE_COST * self._copy_bytes(whole)

    def _inside(self, regions) -> bool:
        """Whether each input region lies inside one chunk (a numpy input: inside the
        array; a region the code reads past the input is padded, so copied)."""
        return all(all(lo >= 0 and hi < e for (lo, hi), e in
                       zip(reversed(regions[n]), s.shape)) if isinstance(s, InGraphArray)
                   else s.block_of(list(reversed(regions[n]))) is not None
                   for n, s in self.sources.items() if n in regions)

    def _crosses_columns(self, regions) -> bool:
        """Whether some input region crosses a chunk boundary along dimension 0 (chunks
        cut across columns: where row bands cannot help and a grid can)."""
        for n, s in self.sources.items():
            if isinstance(s, InGraphArray) or not regions.get(n):
                continue
            lo, hi = regions[n][0]
            b = s.bounds[-1]
            if lo < 0 or hi >= b[-1] or bisect_right(b, lo) != bisect_right(b, hi):
                return True
        return False

    def _reach(self, r0, r1):
        """How many rows from a row reading ``r0`` (the next one reading ``r1``) stay in
        the chunks of ``r0``, if regions move linearly with the row; None: unbounded."""
        best = None
        for n, s in self.sources.items():
            if isinstance(s, InGraphArray) or n not in r0:
                continue
            a, b = list(reversed(r0[n])), list(reversed(r1[n]))
            idx = s.block_of(a)
            if idx is None:
                return 1
            for (lo0, hi0), (lo1, hi1), bnd, i in zip(a, b, s.bounds, idx):
                m = None
                if hi1 > hi0:
                    m = (bnd[i + 1] - 1 - hi0) // (hi1 - hi0) + 1
                elif lo1 < lo0:
                    m = (lo0 - bnd[i]) // (lo0 - lo1) + 1
                if m is not None:
                    best = m if best is None else min(best, m)
        return best

    def _predict(self, regions_of, rows: int):
        """Bands [(row lo, row hi, view?)] predicted from the regions of two rows of the
        box, assuming each bound of each region moves linearly with the row; rows whose
        predicted region crosses a chunk boundary (widened by a row on each side) make
        the copy bands.  None when no prediction is made, [] when every row is predicted
        to cross a boundary (chunks cut across columns too: no bands are searched for);
        :func:`.bands.row_bands` checks every band it is given."""
        if rows < 8:
            return None
        a, b = rows // 4, (3 * rows) // 4
        try:
            ra, rb = regions_of(a, a + 1), regions_of(b, b + 1)
        except ChunkingError:
            return None
        bad = []
        for n, s in self.sources.items():
            if isinstance(s, InGraphArray) or n not in ra:
                continue
            for (la, ha), (lb, hb), bnd in zip(reversed(ra[n]), reversed(rb[n]), s.bounds):
                sl, sh = (lb - la) / (b - a), (hb - ha) / (b - a)
                for edge in bnd[1:-1]:   # crossing: lo(y) <= edge - 1 and hi(y) >= edge
                    y0, y1 = _solve(ha, sh, edge, a, rows, True)
                    z0, z1 = _solve(la, sl, edge - 1, a, rows, False)
                    lo, hi = max(y0, z0), min(y1, z1)
                    if lo <= hi:
                        bad.append((max(0, math.floor(lo) - 1), min(rows, math.ceil(hi) + 2)))
        bad.sort()
        out, y = [], 0
        for lo, hi in bad:
            if out and not out[-1][2] and lo <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], hi), False)
                y = out[-1][1]
                continue
            if lo > y:
                out.append((y, lo, True))
            out.append((max(lo, y), hi, False))
            y = max(y, hi)
        if y < rows:
            out.append((y, rows, True))
        out = [band for band in out if band[1] > band[0]]
        return out if any(v for *_, v in out) else []

    def _inputs(self, regions, keys, held=frozenset()):
        """The input specs of one band, appending the keys of its pieces to ``keys``.
        ``held``: chunk keys the task depends on anyway (for its views): pieces of them
        are sliced inside the task rather than by a task of their own."""
        specs = []
        for name in self.plan.rw.mins:
            src = self.sources[name]
            reg_np = list(reversed(regions[name]))
            if isinstance(src, InGraphArray):
                keys.append(src.name)
                if all(lo >= 0 and hi < n for (lo, hi), n in zip(reg_np, src.shape)):
                    specs.append((name, "view", tuple((lo, hi + 1) for lo, hi in reg_np)))
                    continue
                clip = [(max(lo, 0), min(hi, n - 1)) for (lo, hi), n in zip(reg_np, src.shape)]
                specs.append((name, "copy", (tuple(hi - lo + 1 for lo, hi in reg_np),
                                             np.dtype(src.dtype).str, ((
                    tuple((a - lo, b - lo + 1) for (a, b), (lo, _) in zip(clip, reg_np)),
                    tuple((a, b + 1) for a, b in clip)),))))
                continue
            bidx = src.block_of(reg_np)
            if bidx is not None:       # a view of one chunk, sliced inside the task
                keys.append((src.name,) + bidx)
                specs.append((name, "view", tuple(
                    (lo - b[i], hi + 1 - b[i]) for (lo, hi), b, i in zip(reg_np, src.bounds, bidx))))
                continue
            wheres = []
            for bidx, local, target, whole in src.pieces(reg_np):
                key = (src.name,) + bidx
                if key in held and not whole:
                    keys.append(key)
                    wheres.append((tuple(target), tuple(local)))
                    continue
                piece, index = self._piece_key(src, bidx, local, whole)
                keys.append(piece)
                wheres.append((tuple(target), index))
            shape = tuple(hi - lo + 1 for lo, hi in reg_np)
            specs.append((name, "copy", (shape, np.dtype(src.arr.dtype).str, tuple(wheres))))
        return tuple(specs)

    def add_box(self, key, origin: dict, sizes: dict, extra: dict | None = None):
        """A task ``key`` realizing the plan's outputs over the box (origin and sizes by
        output name, innermost first)."""
        regions = self._regions(origin, sizes, extra)
        first = list(next(iter(sizes.values())))
        rows = first[-1]
        cut = None
        if self.bands and extra is None and rows > 1 and not self._inside(regions):
            def regions_of(a, b):
                return self._regions(*_sub_box(origin, sizes, a, b), None)

            def work_of(a, b):
                return self.plan.work(*_sub_box(origin, sizes, a, b), self.params, self.extents)

            def worth(bands):
                return self._bands_pay(bands, regions, work_of, rows)
            cut = row_bands(regions_of, rows, self._inside, self._reach,
                            self._predict(regions_of, rows), worth)
        if cut is None and self.bands and extra is None and len(first) == 2 and \
                self._crosses_columns(regions):
            cut = self._grid(origin, sizes, first, regions)
        if cut is None:
            cut = [(0, rows, regions, None)]
        cut = [c if len(c) == 6 else (c[0], c[1], None, None, c[2], c[3]) for c in cut]
        bands, keys, held = [], [], set()
        for *_, reg, view in cut:
            if view:                   # the chunks this task reads views of
                viewed: list = []
                self._inputs(reg, viewed)
                held.update(k for k in viewed if isinstance(k, tuple))
        for a, b, c, d, reg, view in cut:
            o, sz = _sub_box(origin, sizes, a, b, c, d)
            scalars = self.plan.scalars(o, reg, self.params, self.extents, extra)
            band = (a, b, tuple(next(iter(sz.values()))), scalars, self._inputs(reg, keys, held))
            bands.append(band if c is None else band + ((c, d),))
        self.layer[key] = (run_box, self.plan.shipped, (tuple(reversed(first)), tuple(bands))) + \
            tuple(keys)
        self._boxes.append(key)
        self.read[key] = regions
        if len(cut) > 1:
            self.split[key] = [(a, b, v) if c is None else (a, b, c, d, v)
                               for a, b, c, d, _, v in cut]
        return key

    def _grid(self, origin, sizes, first, regions):
        """The box cut into a grid of sub-boxes (:func:`.grid.grid_cut`), or None."""
        def regions_of(a, b, c, d):
            return self._regions(*_sub_box(origin, sizes, a, b, c, d), None)

        def work_of(a, b, c, d):
            return self.plan.work(*_sub_box(origin, sizes, a, b, c, d), self.params,
                                  self.extents)

        def worth(subs):
            return self._cuts_pay([(work_of(*s[:4]), s[4], s[5]) for s in subs], regions,
                                  work_of(0, first[-1], 0, first[0]))
        return grid_cut(regions_of, first[-1], first[0], self._inside, worth)
