"""The menu of tilings tried for a group (Mullapudi 2016 §4.2.3, Sioutas 2020 §4.2).

CPU: the two innermost pure dimensions of the group's output with extent > 1
are tiled; the innermost takes the spec's ``cost_params.tile_inner`` times the
vector width times its ``vector_multiple`` (so tiles vectorize), the next
``tile_outer`` (powers of two); sizes of at
least the extent collapse to "untiled in that dimension".  Outer dimensions
stay untiled (their loop runs inside the tile).  Plus the untiled column.

GPU (the spec's ``cost_params.gpu_*``): thread blocks: the innermost dimension takes
warp-friendly extents (``gpu_inner``: 8..256), the next ``gpu_outer`` (1..32), with the
block's thread count a multiple of the warp size and at most ``max_threads_per_block``.
Outer dimensions stay untiled (one point of each per block).  Blocks of one warp are
offered only where they make at most ``max_one_warp_blocks`` blocks: beyond, each
block's launch and scheduling cost outweighs its warp's work, which the cost model does
not see.  Then the same blocks with a per-thread serial tile (Anderson 2021's block /
thread / serial levels): each thread computes ``gpu_serial`` consecutive points of the
outer tiled dimension in an unrolled loop, the block's tile that many times taller (at
most ``gpu_serial_rows`` rows, and no taller than the region), for blocks at least a
warp wide and two warps large (a narrower block's warps already straddle rows; a
one-warp block has nothing to trade).  Then those serial tiles again, each thread
computing ``gpu_vector`` consecutive points along the inner dimension too, as a
vectorized loop (float2/float4 accesses, ``backend/cuda/vector.py``), where that many
of the output's points fit a vector and the tile is no wider than the region or the
widest plain block (a vector tile of one row a thread is not offered: the model chose
none at the apps' paper sizes, and each costs solve time).  Then, where the first dimension past the tiled ones is short (2
to ``gpu_unroll_extent`` points: colour channels), every tiling above again with that
dimension whole in the tile: each thread computes all its points, unrolled, instead of
one block per point of it on the grid.  The plain blocks come
first, so the solvers' first-of-equal-costs rule keeps them on ties.
"""
from __future__ import annotations

from .gpu_sectors import VECTOR_BYTES
from .space import Tiling


def _tiled_dims(region) -> list[int]:
    dims = [i for i, (lo, hi) in enumerate(region) if hi > lo]
    return dims[:2]


def candidate_tilings(problem, group) -> list[Tiling]:
    region = problem.regions[group.output]
    nd = len(region)
    dims = _tiled_dims(region)
    spec = problem.spec
    out = []
    seen = set()

    def add(sizes, serial=None):
        t = Tiling(tuple(sizes), serial)
        if t not in seen:
            seen.add(t)
            out.append(t)

    exts = [hi - lo + 1 for lo, hi in region]
    if spec.is_gpu:
        _gpu_tilings(spec, dims or [0], exts, add, problem.bytes_per_point(group.output))
        return out
    add([None] * nd)
    if not dims:
        return out
    mult = spec.innermost_tile_multiple(problem.bytes_per_point(group.output))
    inner = dims[0]
    outer = dims[1] if len(dims) > 1 else None
    for a in spec.cost_params.tile_inner:
        ta = a * mult
        ta = None if ta >= exts[inner] else ta
        for b in (spec.cost_params.tile_outer if outer is not None else (None,)):
            tb = None if (b is None or b >= exts[outer]) else b
            sizes = [None] * nd
            sizes[inner] = ta
            if outer is not None:
                sizes[outer] = tb
            if all(s is None for s in sizes):
                continue
            add(sizes)
    return out


def _gpu_tilings(spec, dims, exts, add, bpp: int = 4) -> None:
    """The GPU menu (see the module docstring) through ``add(sizes, serial=None)``
    (``bpp``: the bytes of an output point)."""
    nd = len(exts)
    inner = dims[0]
    outer = dims[1] if len(dims) > 1 else None
    cp = spec.cost_params
    past = [i for i in range(max(dims) + 1, nd) if exts[i] > 1]
    unroll = past[0] if past and exts[past[0]] <= cp.gpu_unroll_extent else None
    beyond = 1
    for i in range(max(dims) + 1, nd):
        beyond *= exts[i]
    blocks_of = []                                  # (a, b): thread block extents
    for a in cp.gpu_inner:
        for b in (cp.gpu_outer if outer is not None else (1,)):
            if a * b > spec.max_threads_per_block or (a * b) % spec.warp_size:
                continue
            blocks = -(-exts[inner] // a) * (-(-exts[outer] // b) if outer is not None
                                              else 1) * beyond
            if a * b <= spec.warp_size and blocks > cp.max_one_warp_blocks:
                continue
            blocks_of.append((a, b))
    shapes = [(a, b, 1, 1) for a, b in blocks_of]
    if outer is not None:
        shapes += [(a, b, t, 1) for t in cp.gpu_serial for a, b in blocks_of
                   if a >= spec.warp_size and a * b >= 2 * spec.warp_size
                   and b * t <= min(cp.gpu_serial_rows, exts[outer])]
    shapes += [(a, b, t, v) for v in cp.gpu_vector for a, b, t, _ in list(shapes)
               if v > 1 and t > 1 and v * bpp <= VECTOR_BYTES
               and a * v <= min(exts[inner], max(cp.gpu_inner))]
    for whole in ((False, True) if unroll is not None else (False,)):
        for a, b, t, v in shapes:
            sizes = [None] * nd
            sizes[inner] = a * v
            if outer is not None:
                sizes[outer] = b * t
            serial = None
            if t > 1 or v > 1:
                serial = [1] * nd
                serial[inner] = v
                if outer is not None:
                    serial[outer] = t
                serial = tuple(serial)
            if whole:
                sizes[unroll] = exts[unroll]
            add(sizes, serial)
