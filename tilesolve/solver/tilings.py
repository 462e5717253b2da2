"""The menu of tilings tried for a group (Mullapudi 2016 §4.2.3, Sioutas 2020 §4.2).

CPU: the two innermost pure dimensions of the group's output with extent > 1
are tiled; the innermost takes the spec's ``cost_params.tile_inner`` times the
vector width times its ``vector_multiple`` (so tiles vectorize), the next
``tile_outer`` (powers of two); sizes of at
least the extent collapse to "untiled in that dimension".  Outer dimensions
stay untiled (their loop runs inside the tile).  Plus the untiled column.

GPU: thread blocks: the innermost dimension takes warp-friendly extents
(8..256), the next 1..32, with the block's thread count a multiple of the warp
size and at most ``max_threads_per_block``.  Outer dimensions stay untiled (one
point of each per block).  Blocks of one warp are offered only where they make at
most ``MAX_ONE_WARP_BLOCKS`` blocks: beyond, each block's launch and scheduling cost
outweighs its warp's work, which the cost model does not see.
"""
from __future__ import annotations

from .space import Tiling

GPU_INNER = (8, 16, 32, 64, 128, 256)
GPU_OUTER = (1, 2, 4, 8, 16, 32)
MAX_ONE_WARP_BLOCKS = 1000


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

    def add(sizes):
        t = Tiling(tuple(sizes))
        if t not in seen:
            seen.add(t)
            out.append(t)

    exts = [hi - lo + 1 for lo, hi in region]
    if spec.is_gpu:
        if not dims:
            dims = [0]
        inner = dims[0]
        outer = dims[1] if len(dims) > 1 else None
        beyond = 1
        for i in range(max(dims) + 1, nd):
            beyond *= exts[i]
        for a in GPU_INNER:
            for b in (GPU_OUTER if outer is not None else (1,)):
                if a * b > spec.max_threads_per_block or (a * b) % spec.warp_size:
                    continue
                blocks = -(-exts[inner] // a) * (-(-exts[outer] // b) if outer is not None
                                                  else 1) * beyond
                if a * b <= spec.warp_size and blocks > MAX_ONE_WARP_BLOCKS:
                    continue
                sizes = [None] * nd
                sizes[inner] = a
                if outer is not None:
                    sizes[outer] = b
                add(sizes)
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
