"""The client side of a chunked realize: the rewritten pipeline, its schedule, and the
exact input region of every output box from bounds inference.

    plan = ChunkPlan(pipe, sched)
    regions = plan.regions(origin, sizes, params, extents)   # input -> [(lo, hi)] per dim
    scalars = plan.scalars(origin, regions, params, extents)  # what run_box passes
    work = plan.work(origin, sizes, params, extents)         # its arithmetic, for choices
"""
from __future__ import annotations

import math
import threading

from ..analysis.intervals import required_regions
from ..errors import ChunkingError, ScheduleError
from ..model.schedule import Schedule
from ..model.schedule_io import replay
from .shift import rewrite
from .worker import ShippedPipeline

__all__ = ["ChunkPlan", "transfer_schedule", "REGION_MEMO"]

REGION_MEMO = 4096     # region answers a plan keeps (each a few hundred bytes)


def transfer_schedule(schedule, pipeline):
    """``schedule``'s directives replayed on ``pipeline`` (a rewritten copy of its
    pipeline: the same Func names): ``(Schedule or None, skipped directives)``.

    Directives for Funcs the new pipeline lacks, ``bound`` on its outputs (a chunk has
    its own sizes), and directives the new pipeline rejects (e.g. ``compute_at`` a Func
    that became an input) are skipped; the Funcs concerned keep their defaults."""
    if schedule is None:
        return None, []
    s = Schedule(pipeline, schedule.target)
    prov = schedule.provenance       # a solver's typed provenance is read-only: shared
    s.provenance = prov if hasattr(prov, "to_dict") else dict(prov)
    s.codegen = dict(schedule.codegen)
    skipped = []
    for d in schedule.directives:
        if (d.method != "wrap" and d.func not in s.view.funcs) \
                or (d.method == "bound" and pipeline.is_output(d.func)):
            skipped.append(d)
            continue
        try:
            replay(s, [d])
        except ScheduleError:
            skipped.append(d)
    try:
        s.validate()
    except ScheduleError:
        # a skipped directive left the rest inconsistent: keep only what stands alone
        return Schedule(pipeline, schedule.target), list(schedule.directives)
    return s, skipped


def _int_box(box, what):
    out = []
    for d, iv in enumerate(box):
        if iv.is_empty():
            return None
        lo, hi = float(iv.lo), float(iv.hi)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ChunkingError(f"{what}: the region read in dimension {d} is unbounded "
                                f"({iv}); clamp the index that reads it")
        out.append((int(math.floor(lo)), int(math.ceil(hi))))
    return out


class ChunkPlan:
    """The chunk form of ``pipeline`` under ``schedule`` (see :mod:`.shift`).

    ``outputs``, ``as_images``, ``tile``: as in :func:`.shift.rewrite`.  ``shipped``: what
    the tasks carry to the workers."""

    def __init__(self, pipeline, schedule=None, *, outputs=None, as_images=None, tile=None,
                 num_threads: int = 1):
        self.source = pipeline
        self.rw = rewrite(pipeline, outputs=outputs, as_images=as_images, tile=tile)
        self.pipeline = self.rw.pipeline                 # for bounds inference
        run = rewrite(pipeline, outputs=outputs, as_images=as_images, tile=tile,
                      slice_clamps=True).pipeline        # what the workers compile
        self.schedule, self.skipped = transfer_schedule(schedule, run)
        self._run = run
        self._lowered = None
        self.shipped = ShippedPipeline(run, self.schedule, num_threads)
        self._memo: dict = {}
        self._memo_lock = threading.Lock()

    @property
    def output_names(self):
        return self.pipeline.output_names

    def scalars(self, origin: dict, regions: dict, params: dict, extents: dict,
                extra: dict | None = None) -> dict:
        """Every Param of the rewritten pipeline for one box: the user's ``params``, the
        outputs' ``origin`` (name -> per dim), the slice mins from ``regions`` and the
        whole ``extents`` (input -> per dim, innermost first)."""
        out = {k: v for k, v in params.items() if k in self.pipeline.params}
        for n, names in self.rw.origins.items():
            out.update(zip(names, origin[n]))
        for n, names in self.rw.mins.items():
            reg = regions.get(n)
            out.update(zip(names, [lo for lo, _ in reg] if reg else [0] * len(names)))
        for n, names in self.rw.extents.items():
            out.update(zip(names, extents[n]))
        if extra:
            out.update(extra)
        return {k: v for k, v in out.items() if k in self.pipeline.params}

    @property
    def point_costs(self) -> dict:
        """Func -> the arithmetic ops and loads of computing one point of it, over all its
        definitions (an update over a constant RDom counts once per RDom point)."""
        pc = getattr(self, "_point_costs", None)
        if pc is None:
            from ..analysis.costs import expr_cost
            from ..model import expr as E
            pc = {}
            for n, f in self.pipeline.funcs.items():
                total = 0
                for d in f.definitions():
                    ops, loads = expr_cost(d.value)
                    times = 1
                    for ext in (d.rdom.extents if d.rdom is not None else ()):
                        times *= int(ext.value) if isinstance(ext, E.Const) else 1
                    total += (ops + loads) * times
                pc[n] = total
            self._point_costs = pc
        return pc

    def work(self, origin: dict, sizes: dict, params: dict, extents: dict,
             extra: dict | None = None) -> float:
        """The arithmetic a box costs (ops and loads, in :attr:`point_costs` units) over
        the regions bounds inference gives every Func: what cutting a box into bands
        recomputes is the bands' work less the box's."""
        return self._answer(origin, sizes, params, extents, extra)[1]

    def regions(self, origin: dict, sizes: dict, params: dict, extents: dict,
                extra: dict | None = None) -> dict:
        """Input name -> [(lo, hi)] per dimension (innermost first): the region that
        bounds inference says the box (output ``origin`` and ``sizes`` by name) reads,
        in the coordinates of the whole input, clipped to it; None where it reads nothing.
        Raises ChunkingError when the box would touch an output outside itself.

        Answers are memoized (a bounded table per plan, keyed by every argument): a graph
        asks for the regions of each band of each box, and building the graph again for
        the same sizes and chunks (the next image of a series) asks the same questions."""
        return dict(self._answer(origin, sizes, params, extents, extra)[0])

    def _answer(self, origin, sizes, params, extents, extra):
        """(regions, work) of one box, memoized."""
        key = tuple(tuple((k, tuple(v) if isinstance(v, (list, tuple)) else v)
                          for k, v in sorted(d.items()))
                    for d in (origin, sizes, params, extents, extra or {}))
        hit = self._memo.get(key)
        if hit is None:                  # a ChunkingError propagates, unmemoized
            hit = self._compute_regions(origin, sizes, params, extents, extra)
            with self._memo_lock:
                while len(self._memo) >= REGION_MEMO:
                    del self._memo[next(iter(self._memo))]
                self._memo[key] = hit
        return hit

    def _compute_regions(self, origin, sizes, params, extents, extra):
        """:meth:`regions` and :meth:`work` without the memo."""
        scal = self.scalars(origin, {}, params, extents, extra)
        boxes = required_regions(self.pipeline, dict(sizes), params=scal)
        work = 0.0
        for n, c in self.point_costs.items():
            box = boxes.get(n)
            if c and box is not None:
                vol = 1.0
                for iv in box:
                    vol *= 0.0 if iv.is_empty() else max(0.0, float(iv.hi) - float(iv.lo) + 1)
                work += c * vol if math.isfinite(vol) else 0.0
        for n, s in sizes.items():
            box = _int_box(boxes[n], f"output {n}")
            for d, ((lo, hi), size) in enumerate(zip(box or [], s)):
                if lo < 0 or hi >= size:
                    raise ChunkingError(
                        f"Func {n}: computing one chunk of output {n} touches {n} outside the "
                        f"chunk (dimension {d}: [{lo}, {hi}] for a chunk of size {size}); an "
                        f"output that another Func reads, or whose update writes sites that do "
                        f"not follow its pure Vars, cannot be split into chunks")
        out = {}
        for n in self.rw.mins:
            box = boxes.get(n)
            if box is None:
                out[n] = None
                continue
            ib = _int_box(box, f"input {n}")
            if ib is None:
                out[n] = None
                continue
            clipped = [(max(lo, 0), min(hi, e - 1)) for (lo, hi), e in zip(ib, extents[n])]
            out[n] = None if any(lo > hi for lo, hi in clipped) else clipped
        return self._with_code_reads(out, origin, sizes, params, extents, extra), work

    @property
    def lowered(self):
        """The chunk program as the workers compile it, lowered (once, on demand)."""
        if self._lowered is None:
            from ..lower import lower
            try:
                self._lowered = lower(self._run, self.schedule)
            except ScheduleError as e:
                # e.g. vectorize() without a width on a loop whose extent was constant
                # for the whole image and is a run-time value for a chunk
                raise ChunkingError(f"the schedule does not hold for chunks of the "
                                    f"image: {e}") from None
        return self._lowered

    def _with_code_reads(self, regions, origin, sizes, params, extents, extra):
        """``regions`` grown to what the chunk program's code reads, not only what the
        algorithm needs: a schedule's ``round_up`` split computes a few points of a
        stage past the region asked of it, and reads their inputs.  Those points feed no
        output, so where they lie beyond the whole input the task pads its copy (with
        zeros); inside it, the task is simply given more.  The code's regions come from
        the lowered program (:func:`..lower.input_regions`), for the slice passed."""
        from ..lower import input_regions
        regions = dict(regions)
        for _ in range(4):            # each pass passes the grown slices
            scal = self.scalars(origin, regions, params, extents, extra)
            bufs = {n: list(s) for n, s in sizes.items()}
            bufs.update({n: [hi - lo + 1 for lo, hi in r] if r else [1] * len(extents[n])
                         for n, r in regions.items()})
            grown = False
            for n, local in input_regions(self.lowered, bufs, scal).items():
                have = regions.get(n)
                if have is None or any(hi < lo for lo, hi in local):
                    continue
                want = [(min(a, m + lo), max(b, m + hi))
                        for (a, b), (lo, hi), m in zip(have, local, (a for a, _ in have))]
                if want != have:
                    regions[n], grown = want, True
            if not grown:
                return regions
        return regions
