"""The one cost model every solver uses (greedy, ILP, beam).

``CostModel(problem).cost(group, tiling) -> Cost`` is memoized per column.
CPU specs follow Mullapudi 2016 (Listings 1-2); GPU specs follow Sioutas 2020
(Listing 1).  Each term is a small named function below whose docstring says
where it comes from.  Units: CPU costs are in arithmetic operations (a load
from memory costs ``spec.load_cost`` of them); GPU costs are in cycles per
active thread.
"""
from __future__ import annotations

import math

from ..analysis.footprint import box_size, interior_tile, tile_facts
from .space import Cost, Group, Tiling

# Loads of intermediates inside a group hit in cache; they still cost about one
# operation each (Mullapudi charges them nothing; we charge the issue slot).
CACHED_LOAD_OPS = 1.0
# Fixed cost of one tile on a CPU, in operations: loop setup, bounds of the
# producers' regions, a parallel task's dispatch.  Mullapudi 2016 has no such
# term; without it, tilings that differ only in tile count tie, and a solver
# may pick thousands of one-row tiles.  (About a few hundred cycles.)
TILE_OVERHEAD_OPS = 200.0
# Registers per thread assumed before code exists (Sioutas 2020 estimate floor).
DEFAULT_REGISTERS_PER_THREAD = 32


def words(points: int, bytes_per_point: int) -> float:
    """Memory traffic in 4-byte words (uint8 traffic costs a quarter of float32)."""
    return points * bytes_per_point / 4.0


def num_tiles(region, sizes) -> int:
    """Number of tiles covering ``region`` (Mullapudi's num_tiles)."""
    n = 1
    for (lo, hi), t in zip(region, sizes):
        ext = hi - lo + 1
        n *= 1 if t is None else math.ceil(ext / t)
    return n


def arith_per_tile(problem, facts) -> float:
    """Arithmetic of one tile over all members, recompute included
    (Mullapudi's arith_cost(merged, tile_cbounds))."""
    total = 0.0
    for m, pts in facts.member_points.items():
        costs = problem.point_costs[m]
        ops, loads = costs[0]
        total += pts * (ops + CACHED_LOAD_OPS * loads)
        upd = facts.member_update_points.get(m, 0)
        if upd and len(costs) > 1:
            per = sum(o + CACHED_LOAD_OPS * l_ for o, l_ in costs[1:]) / (len(costs) - 1)
            total += upd * per
    return total


def input_words_per_tile(problem, facts) -> float:
    """Words read from outside the group for one tile (Mullapudi's
    group_tile_loads: each input element of the tile's footprint loaded once)."""
    return sum(words(box_size(b), problem.bytes_per_point(n)) for n, b in facts.input_regions.items())


def untiled_reduction_loads(problem, group) -> float:
    """Mullapudi Listing 1: an untiled non-pure Func's input accesses all miss
    (total_load_ops): every load of every update point goes to memory."""
    total = 0.0
    for m in group.members:
        costs = problem.point_costs[m]
        if len(costs) > 1:
            total += problem.region_points(m) * costs[0][1]
    return total


def footprint_bytes(problem, group, facts) -> int:
    """Bytes live per tile: member intermediates plus the inputs read
    (Mullapudi's group_tile_footprint)."""
    b = 0
    for m, box in facts.member_regions.items():
        if m != group.output:
            b += box_size(box) * problem.bytes_per_point(m)
    for n, box in facts.input_regions.items():
        b += box_size(box) * problem.bytes_per_point(n)
    return b


def recompute_ratio(problem, facts, n_tiles) -> float:
    """Points computed over points needed, across members (1.0 = no redundancy)."""
    done = sum(facts.member_points.values()) * n_tiles
    need = sum(problem.region_points(m) for m in facts.member_points)
    return done / need if need else 1.0


# ---------------------------------------------------------------------------
# GPU terms (Sioutas 2020, Listing 1)
# ---------------------------------------------------------------------------
def threads_per_block(group, facts, sizes) -> tuple[int, tuple]:
    """Thread block: the output tile's extents in the tiled dims, grown to the
    largest member region in each of those dims (Listing 1, lines 9-25)."""
    dims = [i for i, t in enumerate(sizes) if t is not None]
    block = []
    for i in dims:
        ext = max(box[i][1] - box[i][0] + 1 for box in facts.member_regions.values() if len(box) > i)
        block.append(ext)
    return math.prod(block) if block else 1, tuple(block)


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


def coalescing_factor(problem, facts, sizes) -> float:
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


class CostModel:
    """Memoized costs of (group, tiling) columns for one Problem."""

    def __init__(self, problem):
        self.problem = problem
        self.spec = problem.spec
        self._memo: dict = {}
        self.evaluations = 0

    def cost(self, group: Group, tiling: Tiling) -> Cost:
        key = (group, tiling)
        hit = self._memo.get(key)
        if hit is None:
            self.evaluations += 1
            hit = self._gpu(group, tiling) if self.spec.is_gpu else self._cpu(group, tiling)
            self._memo[key] = hit
        return hit

    # -- CPU: Mullapudi 2016 -------------------------------------------------------
    def _cpu(self, group, tiling) -> Cost:
        p, spec = self.problem, self.spec
        region = p.regions[group.output]
        sizes = tiling.sizes
        n = num_tiles(region, sizes)
        facts = tile_facts(p, group, interior_tile(region, sizes))
        arith = n * arith_per_tile(p, facts)
        load_cost = spec.load_cost
        out_words = words(p.region_points(group.output), p.bytes_per_point(group.output))
        fp = footprint_bytes(p, group, facts)
        if tiling.is_untiled():
            in_words = input_words_per_tile(p, facts) + untiled_reduction_loads(p, group)
            loads = load_cost * in_words
            stores = load_cost * out_words
            # untiled groups are legal only as singletons (nothing to fuse into)
            ok, why = (len(group.members) == 1), "an untiled group cannot hold producers"
        else:
            loads = load_cost * n * input_words_per_tile(p, facts)
            stores = load_cost * out_words
            reasons = []
            if fp > spec.tile_cache_bytes:
                reasons.append(f"footprint {fp} B > cache for tiles {spec.tile_cache_bytes} B")
            max_tiles = num_tiles(region, tuple(1 if t is not None else None for t in sizes))
            need = min(spec.parallelism_threshold, max_tiles)
            if n < need:
                reasons.append(f"{n} tiles < parallelism threshold {need}")
            ok, why = not reasons, "; ".join(reasons)
        overhead = TILE_OVERHEAD_OPS * n * len(group.members)
        total = arith + loads + stores + overhead if ok else math.inf
        return Cost(total, arith, loads, stores, overhead, ok, why, n, fp,
                    recompute_ratio(p, facts, n))

    # -- GPU: Sioutas 2020 -----------------------------------------------------------
    def _gpu(self, group, tiling) -> Cost:
        p, spec = self.problem, self.spec
        region = p.regions[group.output]
        sizes = tiling.sizes
        if tiling.is_untiled():
            return Cost(math.inf, feasible=False, reason="a GPU kernel needs a tiling (thread block)")
        n = num_tiles(region, sizes)
        facts = tile_facts(p, group, interior_tile(region, sizes))
        threads, block = threads_per_block(group, facts, sizes)
        out_threads = math.prod(t for t in sizes if t is not None)
        shared = sum(box_size(b) * p.bytes_per_point(m)
                     for m, b in facts.member_regions.items() if m != group.output)
        regs = registers_estimate(spec, threads)
        occ, blocks_per_sm = occupancy(spec, threads, shared, regs)
        active_sms = min(spec.sm_count, n)
        active_threads = max(1, min(n, blocks_per_sm * spec.sm_count) * threads)
        gpu = {"threads": threads, "block": block, "shared_bytes": shared, "registers": regs,
               "occupancy": occ, "blocks_per_sm": blocks_per_sm, "active_sms": active_sms,
               "blocks": n}
        why = ""
        if threads > spec.max_threads_per_block:
            why = f"{threads} threads per block > {spec.max_threads_per_block}"
        elif out_threads % spec.warp_size:
            why = f"{out_threads} output threads per block is not a multiple of the warp size {spec.warp_size}"
        elif shared > spec.shared_mem_per_block_bytes:
            why = f"shared memory {shared} B > {spec.shared_mem_per_block_bytes} B per block"
        elif occ < spec.occupancy_threshold:
            why = f"occupancy {occ:.2f} < threshold {spec.occupancy_threshold}"
        elif active_sms < min(spec.sm_count, max_blocks(region, sizes, spec.warp_size)):
            why = f"{n} blocks keep only {active_sms} of {spec.sm_count} SMs busy"
        ok = not why
        bal = gpu_balance(spec)
        arith = n * arith_per_tile(p, facts)
        loads = bal * n * input_words_per_tile(p, facts) / coalescing_factor(p, facts, sizes)
        stores = bal * words(p.region_points(group.output), p.bytes_per_point(group.output))
        scale = max(occ, 1e-9) * active_threads
        overhead = (spec.launch_overhead_us or 0.0) * 1e-6 * spec.clock_ghz * 1e9
        total = (arith + loads + stores) / scale + overhead if ok else math.inf
        return Cost(total, arith / scale, loads / scale, stores / scale, overhead, ok, why, n,
                    shared, recompute_ratio(p, facts, n), gpu)
