"""GPU terms of the cost model (Sioutas 2020, Listing 1).

``gpu_costs(model, group, facts, tilings, n_tiles)`` prices every tiling of a
group's menu from the menu facts (``analysis.footprint.MenuFacts``); units
are cycles per active thread plus the launch overhead.
"""
from __future__ import annotations

import math

import numpy as np

from ..analysis.footprint import box_extents
from .space import Cost, GpuCost

# Registers per thread assumed before code exists (Sioutas 2020 estimate floor).
DEFAULT_REGISTERS_PER_THREAD = 32


def occupancy(spec, threads: int, shared_bytes: int, regs_per_thread: int) -> tuple[float, int]:
    """CUDA occupancy calculator: (active warps / max warps per SM, blocks per SM).

    Blocks per SM are limited by threads, max blocks, shared memory and
    registers (allocated per warp in units of ``register_allocation_unit``)."""
    warp = spec.warp_size
    warps = math.ceil(threads / warp)
    if threads <= 0 or threads > spec.max_threads_per_block:
        return 0.0, 0
    max_warps = spec.max_threads_per_sm // warp
    lim_threads = max_warps // warps
    lim_blocks = spec.max_blocks_per_sm
    lim_smem = spec.shared_mem_per_sm_bytes // shared_bytes if shared_bytes > 0 else lim_blocks
    unit = spec.register_allocation_unit or 256
    regs_per_warp = math.ceil(regs_per_thread * warp / unit) * unit
    lim_regs = spec.registers_per_sm // (regs_per_warp * warps) if regs_per_warp else lim_blocks
    blocks = max(0, min(lim_threads, lim_blocks, lim_smem, lim_regs))
    return blocks * warps / max_warps, blocks


def registers_estimate(spec, threads: int) -> int:
    """Sioutas 2020: N_regs <= min(MAX_REGS_PER_THREAD, TOTAL_REGS_PER_SM / N_threads),
    with a floor of DEFAULT_REGISTERS_PER_THREAD."""
    return max(1, min(spec.max_registers_per_thread, max(DEFAULT_REGISTERS_PER_THREAD // 2,
               min(DEFAULT_REGISTERS_PER_THREAD, spec.registers_per_sm // max(threads, 1)))))


def coalescing_factor(sizes) -> float:
    """Consecutive words a warp loads in one transaction from outside inputs
    (Listing 1, lines 3-4), capped at 32 (a 128-byte transaction of words)."""
    if not sizes or sizes[0] is None:
        return 1.0
    return float(max(1, min(sizes[0], 32)))


def max_blocks(region, sizes, warp: int) -> int:
    """The most blocks any legal tiling of ``region`` can have: one warp of
    threads per block along the innermost tiled dimension (so a small Func,
    such as a 256-entry LUT, is not required to fill every SM)."""
    tiled = [i for i, t in enumerate(sizes) if t is not None]
    n = 1
    for k, i in enumerate(tiled):
        ext = region[i][1] - region[i][0] + 1
        n *= math.ceil(ext / warp) if k == 0 else ext
    return n


def gpu_balance(spec) -> float:
    """Cost of one word of global memory in arithmetic operations: the
    machine balance (peak lane-ops per second over words per second)."""
    ops_per_s = spec.sm_count * 128 * spec.clock_ghz * 1e9
    words_per_s = spec.memory_bandwidth_gbs * 1e9 / 4
    return ops_per_s / words_per_s


def gpu_costs(model, group, gf, tilings, n_tiles, arith_pt, in_words_pt) -> list:
    """Cost of each tiling (a list of Cost), from the group's menu facts ``gf``."""
    p, spec = model.problem, model.spec
    region = p.regions[group.output]
    bpp = p.bytes_per_point
    shared_v = sum(gf.member_points[m] * bpp(m) for m in gf.member_points if m != group.output)
    if not isinstance(shared_v, np.ndarray):
        shared_v = np.zeros(len(tilings))
    ext = {m: box_extents(box) for m, box in gf.member_regions.items()}
    bal = gpu_balance(spec)
    out_words = p.region_points(group.output) * bpp(group.output) / 4.0
    launch = (spec.launch_overhead_us or 0.0) * 1e-6 * spec.clock_ghz * 1e9
    out = []
    for i, t in enumerate(tilings):
        sizes = t.sizes
        if t.is_untiled():
            out.append(Cost(math.inf, feasible=False, reason="a GPU kernel needs a tiling (thread block)"))
            continue
        n = int(n_tiles[i])
        block = tuple(int(max(e[d][i] for e in ext.values() if len(e) > d))
                      for d, s in enumerate(sizes) if s is not None)
        threads = math.prod(block) if block else 1
        out_threads = math.prod(s for s in sizes if s is not None)
        shared = int(shared_v[i])
        regs = registers_estimate(spec, threads)
        occ, blocks_per_sm = occupancy(spec, threads, shared, regs)
        active_sms = min(spec.sm_count, n)
        active_threads = max(1, min(n, blocks_per_sm * spec.sm_count) * threads)
        gpu = GpuCost(threads, block, shared, regs, occ, blocks_per_sm, active_sms, n)
        why = ""
        if threads > spec.max_threads_per_block:
            why = f"{threads} threads per block > {spec.max_threads_per_block}"
        elif out_threads % spec.warp_size:
            why = (f"{out_threads} output threads per block is not a multiple of the warp size "
                   f"{spec.warp_size}")
        elif shared > spec.shared_mem_per_block_bytes:
            why = f"shared memory {shared} B > {spec.shared_mem_per_block_bytes} B per block"
        elif occ < spec.occupancy_threshold:
            why = f"occupancy {occ:.2f} < threshold {spec.occupancy_threshold}"
        elif active_sms < min(spec.sm_count, max_blocks(region, sizes, spec.warp_size)):
            why = f"{n} blocks keep only {active_sms} of {spec.sm_count} SMs busy"
        ok = not why
        arith = n * float(arith_pt[i])
        loads = bal * n * float(in_words_pt[i]) / coalescing_factor(sizes)
        stores = bal * out_words
        scale = max(occ, 1e-9) * active_threads
        total = (arith + loads + stores) / scale + launch if ok else math.inf
        done = sum(float(gf.member_points[m][i]) for m in gf.member_points) * n
        need = sum(p.region_points(m) for m in gf.member_points)
        out.append(Cost(total, arith / scale, loads / scale, stores / scale, launch, ok, why, n,
                        shared, done / need if need else 1.0, gpu))
    return out
