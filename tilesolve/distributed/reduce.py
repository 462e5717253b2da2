"""Pipelines that output chunks cannot split: reductions over the whole input.

A chunk task of ``eq[x, y] = cdf[hist[...]]`` with ``hist[inp[r.x, r.y]] += 1`` needs the
whole image, whatever the chunk.  :func:`overreads` finds such inputs from the regions
bounds inference gives for one chunk: an input is *over-read* when the chunk reads more
than ``AMPLIFICATION`` times its share of it (its share: the chunk's fraction of the
output) and more elements than the chunk has.  Halos, downsampling and upsampling stay
near 1; small tables (weights, lookup tables) read whole are not counted.

The culprit is a Func with an update over an RDom that reaches the input.  When that
update is associative (``f[s] = f[s] + e`` with the same site on both sides; ``*``,
``max``, ``min`` likewise) it is computed as partial results, one per tile of its RDom
(tiles follow the input's chunks), combined by a tree of elementwise reductions; the
rest of the pipeline then reads the result as an input.  Otherwise :class:`ChunkingError`
names the Func and the input.  Integer sums wrap, so integer results are exact; float
sums and products are reassociated (results differ in the last bits).
"""
from __future__ import annotations

import itertools
import math

from ..analysis.intervals import required_regions
from ..analysis.intervals.regions import rdom_bounds
from ..errors import ChunkingError
from ..model.params import ImageParam
from .shift import FIRST, associative_op

__all__ = ["overreads", "culprits", "Reduction", "plan_reduction", "AMPLIFICATION"]

AMPLIFICATION = 8.0


def _volume(region) -> int:
    return math.prod(hi - lo + 1 for lo, hi in region) if region else 0


def overreads(regions: dict, extents: dict, chunk_sizes, out_sizes, chunk_volumes: dict):
    """``(over, big)``: input -> amplification for the inputs one chunk over-reads (see
    the module doc), and for those it reads more than ``AMPLIFICATION`` of its own chunks
    of (a reduction is then worth splitting, e.g. a histogram as the only output)."""
    v_chunk, v_out = math.prod(chunk_sizes), math.prod(out_sizes)
    over, big = {}, {}
    for name, reg in regions.items():
        if not reg:
            continue
        v_read, v_all = _volume(reg), math.prod(extents[name])
        amp = (v_read / v_all) * (v_out / v_chunk)
        if amp > AMPLIFICATION and v_read > max(v_chunk, 4096):
            over[name] = amp
        elif v_read > AMPLIFICATION * chunk_volumes.get(name, v_all):
            big[name] = v_read / chunk_volumes[name]
    return over, big


def _closure(pipeline, names) -> set:
    seen, stack = set(), list(names)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in pipeline.funcs:
            stack.extend(pipeline.producers(n))
    return seen


def culprits(pipeline, image: str, skip=()) -> list:
    """(Func name, update index) of the updates over an RDom that read ``image``
    (directly or through other Funcs), consumers last."""
    from ..model.visit import calls
    from ..model.pipeline import definition_exprs
    out = []
    for name, f in pipeline.funcs.items():
        if name in skip:
            continue
        for k, d in enumerate(f.updates):
            if d.rdom is None:
                continue
            called = {c.name for e in definition_exprs(d) for c in calls(e)} - {name}
            if image in _closure(pipeline, called):
                out.append((name, k))
    return out


class Reduction:
    """One Func computed as a tree of partial results: ``func``, ``update`` index, ``op``,
    its numeric ``region`` ([(lo, hi)] innermost first) and the RDom ``tiles`` (each a
    list of (min, extent) per RDom dimension)."""

    def __init__(self, func, update, op, region, tiles):
        self.func, self.update, self.op = func, update, op
        self.region, self.tiles = region, tiles

    def image(self, pipeline) -> ImageParam:
        f = pipeline.func(self.func)
        return ImageParam(f.type, f.dimensions(), self.func)


def _tile_ranges(lo: int, ext: int, cuts) -> list:
    """Split [lo, lo + ext) at the cut points ``cuts`` (sorted)."""
    pts = [lo] + [c for c in cuts if lo < c < lo + ext] + [lo + ext]
    return [(a, b - a) for a, b in zip(pts, pts[1:])]


def _spans_input(pipeline, rdom) -> str | None:
    """The input whose extent bounds ``rdom`` (an RDom over the whole input), or None."""
    from ..model import expr as E
    from ..model.visit import walk
    for e in rdom.mins + rdom.extents:
        for n in walk(e):
            if isinstance(n, E.BufferExtent):
                return n.image
    return None


def plan_reduction(pipeline, image: str, amp: float, out_sizes: dict, extents: dict,
                   params: dict, image_chunks: dict, done=()):
    """How to remove the over-read of ``image``: a :class:`Reduction`, or None when the
    over-read is only large halos (no reduction causes it: the caller warns and goes
    on); ChunkingError for a reduction over the whole input that cannot be split."""
    found = culprits(pipeline, image, skip=done)
    boxes = required_regions(pipeline, dict(out_sizes), input_sizes=extents, params=params)
    v_image = math.prod(extents[image])
    bad = []
    for name, k in reversed(found):
        f = pipeline.func(name)
        region = [(int(iv.lo), int(iv.hi)) for iv in boxes[name]]
        summary = _volume(region) * AMPLIFICATION <= v_image
        spans = _spans_input(pipeline, f.updates[k].rdom)
        if not summary and spans is None:
            continue                      # e.g. a convolution's window: halos, not a reduction
        op = associative_op(f, k)
        if op is None or len(f.updates) != 1 or not summary:
            why = ("it is as large as the image, so partial results would not fit"
                   if not summary and op is not None else
                   "it has more than one update" if op is not None else
                   "its update is not an associative reduction (f[s] = f[s] + e, *, max or min "
                   "with the same site s on both sides)")
            what = f"RDom {f.updates[k].rdom.name} spans input {spans}" if spans else \
                f"it reduces input {image} to {_volume(region)} values"
            bad.append(f"Func {name}: {what}, and {why}")
            continue
        rdom = f.updates[k].rdom
        scope = rdom_bounds(pipeline, rdom, name, params, extents)
        ranges = [(int(scope[rdom[i].name].lo),
                   int(scope[rdom[i].name].hi - scope[rdom[i].name].lo + 1))
                  for i in range(len(rdom))]
        per_dim = [_tile_ranges(lo, ext, _matching_cuts(i, lo, ext, extents, image_chunks,
                                                        prefer=image))
                   for i, (lo, ext) in enumerate(ranges)]
        tiles = [list(t) for t in itertools.product(*per_dim)]
        return Reduction(name, k, op, region, tiles)
    if bad:
        raise ChunkingError(
            f"{bad[0]}; so every output chunk would read {amp:.0f}x its share of input "
            f"{image} and the pipeline cannot be split into output chunks (realize it in "
            "memory, or write the reduction as one associative update, f[s] = f[s] + e, so "
            "that it can be computed as partial results per input chunk)")
    return None


def _matching_cuts(i: int, lo: int, ext: int, extents: dict, image_chunks: dict,
                   prefer: str) -> list:
    """Chunk boundaries of an input dimension whose extent RDom dimension ``i`` spans
    (input ``prefer`` and dimension ``i`` first), or [] (no split).  Any tiling is
    correct; one that follows the chunks reads each chunk once."""
    names = [prefer] + [n for n in extents if n != prefer]
    for n in names:
        if n not in image_chunks:
            continue
        dims = list(range(len(extents[n])))
        if i in dims:
            dims.remove(i)
            dims.insert(0, i)
        for d in dims:
            e = extents[n][d]
            if lo == 0 and ext == e:
                sizes = image_chunks[n][len(extents[n]) - 1 - d]
                cuts, acc = [], 0
                for s in sizes[:-1]:
                    acc += s
                    cuts.append(acc)
                return cuts
    return []


def tile_params(plan, tile, first: bool) -> dict:
    """The Params of one RDom tile of a partial plan."""
    _, mins, exts = plan.rw.tile
    out = dict(zip(mins, [m for m, _ in tile]))
    out.update(zip(exts, [e for _, e in tile]))
    out[FIRST] = 1 if first else 0
    return out
