"""GPU terms of the cost model: predicted kernel time in microseconds.

``gpu_costs(model, group, facts, tilings, n_tiles, ...)`` prices every tiling of a
group's menu (one kernel: a block per output tile, the producers in shared memory) as

    time = max(issue, load/store unit, L2, DRAM, latency) + launches x launch overhead

each bound for the busiest SM, so a grid that does not fill its last wave pays for it:

* **issue**: warp instructions (each member's active warps x points per thread x the
  instructions of a point: its arithmetic, two per load and store, a fixed overhead)
  over the SM's warp schedulers;
* **load/store unit**: the 32-byte sectors of each global access per warp
  (``gpu_sectors.site_sectors``: coalescing, strides, misalignment, clamps,
  gathers) and one wavefront per shared-memory access, at ``l1_bytes_per_cycle``;
* **L2**: the sectors each block reads (its input boxes, halo and row misalignment
  included) and writes, over the whole grid, at ``l2_bandwidth_gbs``;
* **DRAM**: every input region once (or the blocks' boxes, if smaller) and the output
  once, at ``memory_bandwidth_gbs``;
* **latency**: each block waits a DRAM round trip per phase of loads (a member that
  loads from global memory, every few iterations of an update loop that does), plus a
  barrier per producer and a fixed cost per block; the SM holds ``blocks_per_sm`` blocks
  at once (occupancy), so its waves of blocks run one after another: what too few bytes
  in flight costs.

A tiling with a per-thread serial tile (``Tiling.serial``) or a dimension run whole in
each thread (colour channels) has fewer threads per block, each computing several points
in an unrolled loop: its warps run more steps, an address its points share is loaded once
(``gpu_sectors.unrolled_loads``), the index arithmetic of a point after the first costs
``unrolled_point_instructions`` rather than ``point_instructions``, and each point kept
live takes ``serial_point_registers`` more registers per thread (occupancy).  The
block's shared memory holds its whole tile, as for any tiling.  These weights and the
model's others are fields of the spec's ``cost_params`` (``specs/cost_params.py``).

A producer whose region in the tiled dimensions does not match the block's threads (a
half-resolution member of a full-resolution kernel idles three quarters of the lanes; a
halo wider than the block grows it) may be spread over all the block's threads: its
thread loops fused and split by the block's threads, each thread a serial step per
``bx * by`` of its points (``spread_steps``), a run of the tiling's serial points or one
point each, ``spread_point_instructions`` more a point for its coordinates, no loads
shared between steps.  Each member takes the mapping (one thread a point, or spread)
that costs its SM the fewest issue and load/store cycles, and the block is the tile
grown to every member's halo or the output's own threads with the members that do not
fit spread over them, whichever kernel is cheaper; ``GpuCost.spread`` records the
spread members, and ``schedule_gen`` writes them so (``_spread_member``).

Two more forms of Anderson 2021's space are priced per tiling beside the plain one, the
cheapest kept: a buffer outside the group that the members read at several sites staged
in shared memory first (``_staging``: a copy spread over the block's threads, then the
members' reads of it are shared-memory accesses; ``GpuCost.staged``, written as a
``Schedule.wrap`` by ``schedule_gen``), and, with a serial tile, producers read only by
the output computed by each thread for its own points in registers (``_in_registers``:
no shared memory or barrier for them, their halo recomputed by every thread;
``GpuCost.in_registers``).

A kernel's interior blocks run its steady state (``lower/partition.py``): the clamps of
the coordinates its members read (``repeat_edge``'s ``min``/``max``) and the selects of
``constant_exterior`` are gone there, and the instructions of a point count them only
in the blocks at the image's borders (the first and last along each tiled dimension:
``steady_fraction``).

The kernel's time goes to the term of the bound that decides it (``arith``: issue,
``loads``/``stores``: a memory bound, split by direction, ``parallel``: latency) and
the launches to ``overhead``.  A producer whose per-block region depends on run-time
values cannot live in a constant-size shared buffer: the schedule computes it at root
in a kernel of its own (``schedule_gen``), and so is it priced here.

A kernel's counts are the sum of its members' (``_member_counts``), which are kept: per
menu (``gpu_costs``' ``memo``, under the member's facts key and the members among the
buffers it reads), and across the problems of one pipeline and spec, such as
``inline_refine``'s trials (``_COUNTS``, under a number for all the member's counts read
of the problem, ``_member_context``, and their other arguments).  Kept or not, they are
added to the kernel in member order, so no cost depends on what was kept.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..analysis.costs import node_cost
from ..analysis.footprint import box_extents, rdom_scope
from ..model import expr as E
from ..model.visit import walk
from .gpu_sectors import (SECTOR_BYTES, active_warps, bank_ways, box_sectors, member_sites,
                          shared_windows, site_context, site_sectors, store_site,
                          unrolled_loads, vector_accesses)
from .space import Cost, GpuCost, Group, Tiling


# Defaults of the spec's optional GPU timing fields (specs/SCHEMA.md): NVIDIA GPUs since Volta.
DEFAULTS = {"warp_schedulers_per_sm": 4, "l1_bytes_per_cycle": 128.0,
            "dram_latency_cycles": 600.0, "block_overhead_cycles": 300.0,
            "barrier_cycles": 40.0}


@dataclass(frozen=True)
class GpuMachine:
    """The hardware numbers the model reads from a GPU spec (its optional fields left out:
    ``DEFAULTS``)."""

    sms: int
    clock_hz: float
    dram_bytes_per_s: float
    l2_bytes_per_s: float
    issue_per_cycle: float          # warp instructions an SM issues a cycle (schedulers)
    l1_bytes_per_cycle: float       # bytes an SM's L1 / shared memory delivers a cycle
    dram_latency_cycles: float      # a load's round trip to DRAM
    block_cycles: float             # starting and retiring a block
    barrier_cycles: float           # a __syncthreads() and the pipeline drain around it
    launch_s: float                 # one kernel launch

    @staticmethod
    def of(spec) -> "GpuMachine":
        def field(name):
            v = getattr(spec, name)
            return DEFAULTS[name] if v is None else v
        l2 = spec.l2_bandwidth_gbs or spec.cost_params.l2_over_dram * spec.memory_bandwidth_gbs
        return GpuMachine(spec.sm_count, spec.clock_ghz * 1e9, spec.memory_bandwidth_gbs * 1e9,
                          l2 * 1e9, field("warp_schedulers_per_sm"), field("l1_bytes_per_cycle"),
                          field("dram_latency_cycles"), field("block_overhead_cycles"),
                          field("barrier_cycles"), (spec.launch_overhead_us or 0.0) * 1e-6)



def _machine(model) -> GpuMachine:
    """``GpuMachine.of`` the model's spec (kept on the model)."""
    hit = model.__dict__.get("_gpu_machine")
    if hit is None:
        hit = model.__dict__["_gpu_machine"] = GpuMachine.of(model.spec)
    return hit


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
    between half and all of the spec's ``cost_params.default_registers_per_thread``."""
    regs = spec.cost_params.default_registers_per_thread
    return max(1, min(spec.max_registers_per_thread, max(regs // 2,
               min(regs, spec.registers_per_sm // max(threads, 1)))))


def coalescing_factor(sizes) -> float:
    """Consecutive words a warp loads in one transaction from outside inputs
    (Sioutas 2020, Listing 1, lines 3-4), capped at 32: the figure the sector count
    (``gpu_sectors``) replaces; kept for reports that quote it."""
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
    """Cost of one word of global memory in arithmetic operations: the machine
    balance (peak lane-ops per second over words per second)."""
    m = GpuMachine.of(spec)
    ops_per_s = m.sms * m.issue_per_cycle * spec.warp_size * m.clock_hz
    return ops_per_s / (m.dram_bytes_per_s / 4)


def _extent(ext, d, i: int) -> int:
    """Extent ``d`` (None: 1) of a box's ``box_extents`` at tiling ``i``."""
    return int(ext[d][i]) if d is not None and d < len(ext) else 1


@dataclass
class KernelCounts:
    """One kernel's counts (per block unless said) and its grid: what ``launch_bounds``
    turns into time."""

    blocks: int = 1
    blocks_per_sm: int = 1
    instructions: float = 0.0       # warp instructions
    lsu_cycles: float = 0.0         # load/store unit cycles (sectors / 4, shared wavefronts)
    load_lsu: float = 0.0           # of which global loads
    rounds: float = 0.0             # DRAM round trips a block waits for, one after another
    barriers: int = 0
    l2_load_sectors: float = 0.0    # distinct sectors a block reads from L2
    l2_store_sectors: float = 0.0   # and writes
    dram_load_sectors: float = 0.0  # the whole grid's, from DRAM
    dram_store_sectors: float = 0.0
    spread: dict = field(default_factory=dict)   # {member spread over the block's
    #                                                threads: its serial run}


def _whole_sectors(p, name) -> float:
    """Sectors of ``name``'s whole region (contiguous rows: its bytes / 32, rounded up)."""
    return float(-(-p.region_points(name) * p.bytes_per_point(name) // SECTOR_BYTES))


def stage_candidates(p, group) -> dict:
    """The buffers outside ``group`` a kernel of it may stage in shared memory, each with
    the number of distinct sites its members read it at (a read through a loaded index,
    a lookup, ``GATHER_SITES``): read only by pure definitions (memoized per problem).
    Clamped reads qualify: lowering bounds the box of a ``repeat_edge`` read by its
    taps (``analysis.simplify.clamped_extent_upper``)."""
    cache = p.memo("gpu_stage_candidates")
    hit = cache.get(group)
    if hit is not None:
        return hit
    sites, bad = {}, set()
    for m in group.members:
        for s in member_sites(p, m):
            if s.callee in group.members:
                continue
            if s.stage or s.callee not in p.regions:
                bad.add(s.callee)
            else:
                sites[s.callee] = sites.get(s.callee, 0) + (GATHER_SITES if s.data_dependent
                                                            else 1)
    hit = cache[group] = {c: n for c, n in sorted(sites.items())
                          if c not in bad and staging_consumers(p, group, c) is not None}
    return hit


def staging_consumers(p, group, c: str):
    """The Funcs of the pipeline whose calls to ``c`` a kernel of ``group`` redirects to
    its copy of ``c`` in shared memory (``Schedule.wrap``): the members that call it, and
    the inlined Funcs that call it and are used, through inlined Funcs, only by members.
    None where an inlined Func that calls ``c`` is used by the group and outside it too
    (its calls cannot be redirected for the group alone)."""
    graph = p.pipeline.graph
    out = []
    for f in sorted(graph.successors(c)):
        if f in group.members:
            out.append(f)
        elif f in p.inlined:
            users, stack, seen = set(), [f], {f}
            while stack:
                for u in graph.successors(stack.pop()):
                    if u in p.inlined:
                        if u not in seen:
                            seen.add(u)
                            stack.append(u)
                    else:
                        users.add(u)
            if users & group.members:
                if not users <= group.members:
                    return None
                out.append(f)
    return tuple(out) or None


def _sites(p, group, m, staged=(), regs=()):
    """(global, shared) accesses of member ``m`` per stage: {stage: [Site]}, {stage: n};
    the reads of the ``staged`` buffers are shared, those of the members in ``regs``
    (computed in the thread, in registers) neither (memoized per problem; not to be
    modified)."""
    cache = p.memo("gpu_group_sites")
    key = (group.output, group.members, m, staged, regs)
    hit = cache.get(key)
    if hit is not None:
        return hit
    glob, shared = {}, {}
    for s in member_sites(p, m):
        if s.callee in regs:
            continue
        outside = s.callee not in group.members or (s.callee == group.output and s.stage)
        if outside and s.callee in p.regions and s.callee not in staged:
            glob.setdefault(s.stage, []).append(s)
        else:
            shared[s.stage] = shared.get(s.stage, 0) + 1
    hit = cache[key] = (glob, shared)
    return hit


_NO_REUSE = {"global": 1.0, "shared": 1.0, "all": 1.0, "points": 1.0}
# a read through a loaded index (a lookup table's) counts as this many sites towards
# ``stage_min_sites``: a warp's lanes may each read a sector of their own
GATHER_SITES = 32


def _unrolled_reuse(p, group, m, ext, i, mdims, serial, whole, staged=()) -> dict:
    """Loads per point of member ``m``'s pure stage in a thread that computes several
    points unrolled, each as a fraction of its sites (``global``: outside the group,
    ``shared``: members, ``all``), and ``points``: the points one thread's unrolled
    loops cover (1 and no saving for a plain tiling)."""
    steps = {}
    for d, t in zip(mdims, serial):
        if t > 1 and d is not None:
            steps[d] = t
    if whole:
        nd = len(ext)
        for d in whole:
            if d < nd and _extent(ext, d, i) > 1:
                steps[d] = _extent(ext, d, i)
    if not steps:
        return _NO_REUSE
    key = (group.members, m, tuple(sorted(steps.items())), staged)
    cache = p.memo("gpu_unrolled_reuse")
    hit = cache.get(key)
    if hit is not None:
        return hit
    out = cache[key] = {"global": 1.0, "shared": 1.0, "all": 1.0,
                        "points": float(math.prod(steps.values()))}
    sites = [(k, s) for k, s in enumerate(member_sites(p, m)) if s.stage == 0]
    glob = tuple(k for k, s in sites if s.callee not in group.members and s.callee in p.regions
                 and s.callee not in staged)
    mine = tuple(k for k, _ in sites if k not in glob)
    for name, part in (("global", glob), ("shared", mine), ("all", tuple(k for k, _ in sites))):
        if part:
            out[name] = unrolled_loads(p, m, part, steps) / len(part)
    return out


def _stage_sectors(p, group, m, j, glob, mdims, bx, tx, ty, off, sy, staged=(),
                   sx=1) -> float:
    """Sectors of one warp instruction of each of stage ``j``'s global accesses of member
    ``m`` (``glob``: ``_sites``' first answer for ``staged``), summed, the thread's
    points ``sx`` apart along the inner dimension and ``sy`` along the outer (memoized
    per problem)."""
    sites = glob.get(j, ())
    if not sites:
        return 0
    key = (group.members, m, j, mdims, int(bx), int(tx), int(ty), off, int(sy), staged,
           int(sx))
    cache = p.memo("gpu_stage_sectors")
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = sum(site_sectors(p, m, s, mdims, bx, tx, ty, off, sy, sx)
                               for s in sites)
    return hit


def _vector_reuse(p, m, glob, shared, reuse, mdims, bx, tx, ty, off, sx, sy,
                  regs=()) -> tuple:
    """(``_pure_counts``' reuse, sectors a warp step) of the output ``m`` whose ``sx``
    points a thread along the inner dimension are a vectorized loop (``vector.py``): its
    global loads as windows (``vector_accesses``), its loads of the members in shared
    memory too (``shared_windows``: their wavefronts, bank conflicts included), none
    shared between rows; ``reuse`` the unrolled loop's (``_unrolled_reuse``), kept
    where the member has no loads."""
    sites = tuple(glob.get(0, ()))
    n_shared = shared.get(0, 0)
    if not len(sites) + n_shared:
        return reuse, 0
    g_instr, sectors = (vector_accesses(p, m, sites, mdims, bx, tx, ty, off, sx, sy)
                        if sites else (0.0, 0.0))
    s_instr = s_wave = 0.0
    if n_shared:
        mine = tuple(s for s in member_sites(p, m)
                     if s.stage == 0 and s not in sites and s.callee not in regs)
        s_instr, s_wave = shared_windows(p, m, mine, mdims, sx)
    out = dict(reuse)
    out["global"] = 1.0
    out["shared"] = s_wave / sx / n_shared if n_shared else 1.0
    out["all"] = (g_instr + s_instr) / sx / (len(sites) + n_shared)
    return out, sectors / sx


def _bounds_test(c) -> bool:
    """A node of a condition the steady state decides: an order comparison, a logical
    operator, a name, a constant or index arithmetic (not ``==`` or ``%``: a parity)."""
    if isinstance(c, E.BinOp):
        return c.op in ("lt", "le", "gt", "ge", "and", "or", "add", "sub", "mul", "min", "max")
    return isinstance(c, (E.Not, E.Var, E.Param, E.Const))


def boundary_ops(p, m: str) -> int:
    """The arithmetic of one point of ``m``'s pure stage that a steady block drops: the
    integer ``min``/``max`` inside the coordinates of its reads and the selects (their
    conditions included) that compare coordinates with bounds, each distinct node once; a
    clamp of a loaded value (a lookup's index) and a parity test stay (memoized per
    problem)."""
    cache = p.memo("gpu_boundary_ops")
    hit = cache.get(m)
    if hit is not None:
        return hit
    d = p.definitions[m][0]
    seen, ops = set(), 0

    def data(e) -> bool:
        return any(isinstance(n, E.Call) for n in walk(e))
    for e in (d.value,) + tuple(d.args):
        for n in walk(e):
            if isinstance(n, E.Call):
                for a in n.args:
                    for c in walk(a):
                        if (id(c) not in seen and isinstance(c, E.BinOp)
                                and c.op in ("min", "max") and c.type.is_int()
                                and not data(c)):
                            seen.add(id(c))
                            ops += node_cost(c)
            elif isinstance(n, E.Select) and id(n) not in seen and not data(n.cond) \
                    and any(isinstance(v, E.Var) for v in walk(n.cond)) \
                    and all(_bounds_test(c) for c in walk(n.cond)):
                seen.add(id(n))
                ops += node_cost(n)
                for c in walk(n.cond):
                    if id(c) not in seen:
                        seen.add(id(c))
                        ops += node_cost(c)
    cache[m] = ops
    return ops


def steady_fraction(region, sizes, dims) -> float:
    """The share of a kernel's blocks that run its steady state: along each tiled
    dimension of ``dims`` all but the first and the last block (``sizes`` the tile's
    extents, ``region`` the output's)."""
    frac = 1.0
    for d in dims:
        if d is None:
            continue
        n = math.ceil((region[d][1] - region[d][0] + 1) / max(int(sizes[d]), 1))
        frac *= max(0, n - 2) / n if n else 0.0
    return frac


def _box_extents(gf) -> dict:
    """``box_extents`` of every member's and input's box of the menu facts ``gf`` (arrays
    over its tilings; the functions that take them take them as nested lists too)."""
    return {n: box_extents(b) for n, b in {**gf.member_regions, **gf.input_regions}.items()}


def spread_steps(bx: int, by: int, mx: int, my: int, warp: int = 32) -> tuple:
    """(warp executions, serial steps) of a member whose ``mx`` x ``my`` points (x fastest)
    are spread over all the threads of a ``bx`` x ``by`` block: point ``f`` (row-major)
    on the thread of linear index ``f % (bx * by)``, in step ``f // (bx * by)`` (the
    last step's threads past the points idle, whole warps of them skipped)."""
    threads, points = max(1, int(bx) * int(by)), max(1, int(mx) * int(my))
    steps = -(-points // threads)
    last = points - (steps - 1) * threads
    return (steps - 1) * -(-threads // warp) + -(-last // warp), steps


def _pure_counts(cp, x0, steps, ops, loads, reuse, sectors, shared_sites,
                 extra_point: float = 0.0) -> tuple:
    """(warp instructions, global load/store unit cycles, all load/store unit cycles) of a
    member's pure stage run in ``x0`` warp executions of ``steps`` points a thread
    (``reuse``: ``_unrolled_reuse``; ``sectors``: of one warp's global loads;
    ``extra_point``: instructions a point adds to ``point_instructions``)."""
    unr = min(steps, reuse["points"])
    point = (cp.point_instructions + extra_point
             + (unr - 1) * cp.unrolled_point_instructions) / unr
    instructions = x0 * (ops + cp.load_instructions * loads * reuse["all"] + point)
    load_lsu = x0 * sectors * reuse["global"] / 4.0
    return instructions, load_lsu, x0 * shared_sites * reuse["shared"]


def _member_cycles(mach, counts) -> float:
    """An SM's issue cycles and load/store unit cycles of a member's counts (what it adds
    to the kernel's two per-SM bounds)."""
    return (counts[0] / mach.issue_per_cycle
            + (counts[1] + counts[2]) * 128.0 / mach.l1_bytes_per_cycle)


def _main_kernel(model, group, gf, i: int, dims: tuple, block: tuple, per_block: dict,
                 n: int, serial: tuple = (1, 1), whole: tuple = (), exts=None,
                 steady: float = 0.0, staged: tuple = (), traffic=None,
                 regs: dict | None = None, memo: dict | None = None,
                 keys: dict | None = None) -> KernelCounts:
    """The kernel of tiling ``i`` (its members' pure stages and their updates in shared
    memory): ``dims`` the tiled pure dimensions (inner, outer or None), ``block`` the
    thread block's extents in them, ``per_block`` each member's share of a tile that a
    block computes, ``n`` blocks; ``serial`` the points a thread computes along each of
    ``dims``, ``whole`` the dimensions each thread computes whole (unrolled); ``exts``
    ``_box_extents(gf)`` where the caller has it; ``steady`` the share of the blocks that
    run the steady state (``steady_fraction``); ``staged`` the buffers outside the group
    copied into shared memory first (``_staging``), which the members read there;
    ``traffic`` its ``_traffic`` where the caller has it; ``regs`` the producers each
    thread computes itself, in registers (``register_members``: their points a thread,
    rows).  ``memo``: a dict that keeps each member's counts (``_member_counts``) for
    the kernels of other groups of the menu with this tiling, block, staging and
    registers, under the member's key in ``keys`` (``_member_keys``); the counts are
    added in member order either way, so the sums are the same."""
    p = model.problem
    k = KernelCounts(blocks=n)
    exts = exts or _box_extents(gf)
    regs = regs or {}
    on_sm = tuple(sorted(regs))
    for m in sorted(gf.member_points):
        c = memo.get(keys[m]) if memo is not None else None
        if c is None:
            c = _member_counts(model, group, gf, m, i, dims, block, per_block, serial, whole,
                               exts[m], steady, staged, regs, on_sm)
            if memo is not None:
                memo[keys[m]] = c
        if not c:
            return None                             # it fits no mapping of this block
        instructions, load_lsu, lsu_cycles, rounds, barriers, how = c
        for v in instructions:
            k.instructions += v
        for v in load_lsu:
            k.load_lsu += v
        for v in lsu_cycles:
            k.lsu_cycles += v
        k.rounds += rounds
        k.barriers += barriers
        if how is not None:
            k.spread[m] = how
    for c in staged:
        _staging(model, k, c, exts[c], i, dims, block, per_block[c])
    k.lsu_cycles += k.load_lsu
    (k.l2_load_sectors, k.dram_load_sectors, k.l2_store_sectors,
     k.dram_store_sectors) = traffic or _traffic(p, gf, group, i, exts, per_block, n)
    return k


def _callees(p, m: str) -> frozenset:
    """The buffers member ``m``'s definitions read (memoized per problem)."""
    cache = p.memo("gpu_callees")
    hit = cache.get(m)
    if hit is None:
        hit = cache[m] = frozenset(s.callee for s in member_sites(p, m))
    return hit


def _member_keys(p, group, gf) -> dict:
    """Each member's key for ``_main_kernel``'s ``memo``: all its counts depend on besides
    the tiling, block, staging and registers: its facts' key in the menu
    (``GroupFactsVec.member_keys``: its box and points) and which of the buffers it
    reads are members of ``group`` (its accesses' split into global and shared)."""
    return {m: (gf.member_keys[m], _callees(p, m) & group.members) for m in gf.member_points}


def _member_context(p, m: str) -> int:
    """A number for all that ``_member_counts`` reads of problem ``p`` about member ``m``
    (memoized per problem): its definitions (hash-consed Exprs: equal ones are the same
    objects) with the scopes of their RVars, and ``gpu_sectors.site_context`` of each
    access it makes (its store included: its pure Vars and region, the buffer's region,
    extents and point size, the Params' values) with whether the buffer has a region.
    Problems of one pipeline that differ in other Funcs (another inlining choice) get
    the same number where the member is the same; a number is never given to another
    context."""
    cache = p.memo("gpu_member_context")
    hit = cache.get(m)
    if hit is None:
        defs = tuple((d.value, tuple(d.args),
                      tuple((r, iv.lo, iv.hi) for r, iv in rdom_scope(p, d).items()) if k else ())
                     for k, d in enumerate(p.definitions[m]))
        sites = tuple((site_context(p, m, s), s, s.callee in p.regions)
                      for s in member_sites(p, m) + (store_site(p, m),))
        context = (m, defs, sites)
        hit = _CONTEXTS.get(context)
        if hit is None:
            if len(_CONTEXTS) >= _COUNTS_LIMIT:
                _CONTEXTS.clear()
            hit = _CONTEXTS[context] = next(_NUMBERS)
        cache[m] = hit
    return hit


# _member_counts' answers, shared by the problems of one pipeline and spec (the inlining
# trials of ``inline_refine``), under the number of the member's context and all its
# other arguments
_COUNTS: dict = {}
_COUNTS_LIMIT = 1 << 18
_CONTEXTS: dict = {}            # member context -> its number
_NUMBERS = itertools.count()


def _member_counts(model, group, gf, m: str, i: int, dims: tuple, block: tuple,
                   per_block: dict, serial: tuple, whole: tuple, ext, steady: float,
                   staged: tuple, regs: dict, on_sm: tuple) -> tuple:
    """What member ``m`` adds to ``_main_kernel``'s kernel (its arguments; ``ext``: the
    member's ``box_extents``, ``on_sm`` the members in ``regs``, sorted): its warp
    instructions, global load/store unit cycles and load/store unit cycles, each as
    the terms added one after another, its DRAM round trips, its barriers, and the
    serial run of a member spread over the block's threads (None: a thread a point);
    () where it fits no mapping of the block.  Remembered across problems in
    ``_COUNTS``, under what it reads: the spec, ``_member_context``, the group's output
    and the members among the buffers ``m`` reads, the member's facts at tiling ``i``
    and the other arguments."""
    p = model.problem
    spec = model.spec
    box = gf.member_regions[m]
    out_box = gf.member_regions[group.output]
    nd = len(box[0])
    off = tuple(int(box[0][d][i] - out_box[0][d][i]) if d is not None and d < nd else 0
                for d in dims)
    points, share = float(gf.member_points[m][i]), per_block[m]
    key = (id(spec), _member_context(p, m), group.output, _callees(p, m) & group.members,
           tuple(e[i] for e in ext), off, points, share, dims, block, serial, whole, steady,
           staged, on_sm, regs.get(m))
    hit = _COUNTS.get(key)
    if hit is not None and hit[0] is spec:
        return hit[1]
    cp = spec.cost_params
    mach = _machine(model)
    bx, by = block
    sx, sy = serial
    inner, outer = dims
    mx, my = _extent(ext, inner, i), _extent(ext, outer, i)
    tx, ty = -(-mx // sx), -(-my // sy)          # the member's threads
    lanes_pts = max(1, tx * ty)
    warps = float(active_warps(bx, by, tx, ty))
    steps = max(1.0, points * share / lanes_pts)
    x0 = warps * steps                          # warp executions of the pure stage
    mdims = tuple(d if d is not None and d < nd else None for d in dims)
    (ops, loads), updates = p.stage_info[m]
    glob, shared = _sites(p, group, m, staged, on_sm)
    ops = ops - steady * boundary_ops(p, m)
    if m in regs:
        counts, rounds = _in_registers(model, group, m, ext, i, mdims, block, off, regs[m],
                                       whole, staged, ops, loads, glob, shared)
        return _kept(key, spec, ((counts[0],), (counts[1],), (counts[2],), rounds, 0, None))
    pts = points * share
    best, sec0 = None, 0
    # a producer's threads ``sx`` points apart along x reach its shared buffer and the
    # others' that many words apart: bank conflicts (the output's vector loop: below)
    ways = bank_ways(sx, p.bytes_per_point(m)) if m != group.output else 1
    if m == group.output or (tx <= bx and ty <= by):
        # thread (tx, ty) of the block: the member's point (x0 + tx, y0 + ty * sy), its
        # serial points below it
        reuse = _unrolled_reuse(p, group, m, ext, i, mdims, serial, whole, staged)
        if m == group.output and sx > 1:
            reuse, sec0 = _vector_reuse(p, m, glob, shared, reuse, mdims, bx, tx, ty, off,
                                        sx, sy, on_sm)
        else:
            sec0 = _stage_sectors(p, group, m, 0, glob, mdims, bx, tx, ty, off, sy, staged,
                                  sx)
        best = (_pure_counts(cp, x0, steps, ops, loads, reuse, sec0,
                             shared.get(0, 0) * ways), None, x0, sec0)
    if m != group.output and not updates and None not in mdims:
        # or its threads (tx, ty') fused and spread over all the block's threads
        # (``spread_steps``), a serial run of ``t`` points each (the tiling's, or one)
        for t in sorted({1, int(sy)}):
            ty_t = -(-my // t)
            warp_steps, _ = spread_steps(bx, by, mx, ty_t, model.spec.warp_size)
            x0_t = warp_steps * max(1.0, pts / (mx * ty_t))
            reuse = _unrolled_reuse(p, group, m, ext, i, mdims, (1, t), whole, staged)
            sec = _stage_sectors(p, group, m, 0, glob, mdims, mx, mx, ty_t, off, t,
                                 staged)
            alt = _pure_counts(cp, x0_t, x0_t / warp_steps, ops, loads, reuse, sec,
                               shared.get(0, 0), cp.spread_point_instructions)
            if best is None or _member_cycles(mach, alt) < _member_cycles(mach, best[0]):
                best = (alt, t, x0_t, sec)
    if best is None:
        return _kept(key, spec, ())
    pure, how, x0, sec0 = best
    instructions, load_lsu, lsu_cycles = [pure[0]], [pure[1]], [pure[2]]
    rounds = 1 if sec0 else 0
    if m == group.output:
        if sx > 1:          # a vectorized store
            store = vector_accesses(p, m, (store_site(p, m),), mdims, bx, tx, ty, off, sx,
                                    sy)[1] / sx
        else:
            store = site_sectors(p, m, store_site(p, m), mdims, bx, tx, ty, off, sy)
        lsu_cycles.append(x0 * store / 4.0)
        # its updates: kernels of their own
        return _kept(key, spec, (tuple(instructions), tuple(load_lsu), tuple(lsu_cycles),
                                    rounds, 0, how))
    if how is not None:
        ways = 1                                # spread: a thread a point, consecutive
    lsu_cycles.append(x0 * ways)                # its store to shared memory
    barriers = 1
    for j, u in enumerate(updates, start=1):
        pure_pts = math.prod(_extent(ext, d, i) for d in u.pure_dims)
        parallel = inner in u.pure_dims
        per_thread = u.rdom_points * (pure_pts / lanes_pts if parallel else pure_pts)
        xu = (warps if parallel else 1.0) * max(1.0, per_thread * per_block[m])
        secu = _stage_sectors(p, group, m, j, glob, mdims, bx, tx, ty, off, sy, staged, sx)
        instructions.append(xu * (u.ops + cp.load_instructions * u.loads
                                  + cp.point_instructions + cp.loop_instructions))
        load_lsu.append(xu * secu / 4.0)
        lsu_cycles.append(xu * (shared.get(j, 0) + 1) * ways)
        rounds += math.ceil(per_thread * per_block[m] / cp.update_unroll) if secu else 0
        barriers += 1
    return _kept(key, spec, (tuple(instructions), tuple(load_lsu), tuple(lsu_cycles), rounds,
                             barriers, how))


def _kept(key, spec, counts):
    """``counts`` (``_member_counts``'), kept in ``_COUNTS`` under ``key`` with the spec
    whose ``id`` the key holds."""
    if len(_COUNTS) >= _COUNTS_LIMIT:
        _COUNTS.clear()
    _COUNTS[key] = (spec, counts)
    return counts


def _box_sectors(p, gf, group, exts) -> dict:
    """``box_sectors`` of each input's box and of the output's tile of the menu facts
    ``gf``, for every tiling (``exts``: ``_box_extents(gf)``), as a list."""
    out = {}
    for c in (*gf.input_regions, group.output):
        sec = box_sectors(p, c, exts[c])
        out[c] = np.broadcast_to(sec, (len(exts[c][0]) if len(exts[c]) else 1,)).tolist()
    return out


def _traffic(p, gf, group, i: int, exts, per_block: dict, n: int, sectors=None) -> tuple:
    """(L2 load sectors a block, DRAM load sectors, L2 store sectors a block, DRAM store
    sectors) of the kernel of tiling ``i`` in ``n`` blocks: each block's input boxes and
    output tile, the inputs read and the output written once (the same for every block
    shape and staging of the tiling); ``sectors``: ``_box_sectors`` where the caller has
    it."""
    def boxed(c):
        if sectors is not None:
            return sectors[c][i if len(sectors[c]) > 1 else 0]
        return float(box_sectors(p, c, [e[i] for e in exts[c]]))
    l2_load = dram_load = 0.0
    for c in gf.input_regions:
        sec = boxed(c) * per_block.get(c, 1.0)
        l2_load += sec
        dram_load += min(_whole_sectors(p, c) if c in p.regions else n * sec, n * sec)
    return (l2_load, dram_load, boxed(group.output) * per_block[group.output],
            _whole_sectors(p, group.output))


def _in_registers(model, group, m: str, ext, i: int, mdims: tuple, block: tuple,
                  off: tuple, per_thread: tuple, whole: tuple, staged: tuple, ops: float,
                  loads: float, glob: dict, shared: dict) -> tuple:
    """(``_pure_counts``, DRAM round trips) of producer ``m`` computed by every thread of
    the block for its own points (``per_thread``: its points a thread and their rows
    along the outer tiled dimension), in registers: each warp runs them unrolled, the
    loads the rows share issued once; no shared memory, no barrier (the halo is
    recomputed by each thread)."""
    cp = model.spec.cost_params
    bx, by = block
    points, rows = per_thread
    x0 = float(active_warps(bx, by, bx, by)) * points
    reuse = _unrolled_reuse(model.problem, group, m, ext, i, mdims, (1, rows), whole, staged)
    sec = _stage_sectors(model.problem, group, m, 0, glob, mdims, bx, bx, by, off, 1, staged)
    counts = _pure_counts(cp, x0, points, ops, loads, reuse, sec, shared.get(0, 0))
    return counts, 1 if sec else 0


def _staging(model, k: KernelCounts, c: str, ext, i: int, dims: tuple, block: tuple,
             share: float) -> None:
    """Add to ``k`` the copy of buffer ``c``'s box (``ext``: its ``box_extents``) into
    shared memory at the start of each block: its points spread over the block's threads
    (``spread_steps``, the dimensions past ``dims`` a loop in each thread), one load and
    one shared store a point, the box's sectors moved once (a warp that straddles two
    rows one more), a DRAM round trip and a barrier."""
    cp = model.spec.cost_params
    inner, outer = dims
    mx, my = _extent(ext, inner, i), _extent(ext, outer, i)
    rest = math.prod(_extent(ext, d, i) for d in range(len(ext)) if d not in dims) * share
    warp_steps, _ = spread_steps(block[0], block[1], mx, my, model.spec.warp_size)
    x0 = warp_steps * max(1.0, rest)
    k.instructions += x0 * (cp.load_instructions + cp.point_instructions
                            + cp.spread_point_instructions)
    sectors = float(box_sectors(model.problem, c, [e[i] for e in ext])) * share
    k.load_lsu += (sectors + x0) / 4.0
    k.lsu_cycles += x0
    k.rounds += 1
    k.barriers += 1


def staged_bytes(p, staged, i: int, per_block: dict, exts) -> int:
    """Shared memory a block of tiling ``i`` holds for the ``staged`` buffers' boxes."""
    return int(sum(math.prod(int(e[i]) for e in exts[c]) * p.bytes_per_point(c) * per_block[c]
                   for c in staged))


def register_members(model, group, t, tiled: list, whole: tuple) -> dict:
    """The producers of ``group`` that each thread of a block of tiling ``t`` (a serial
    tile, or dimensions run whole in the thread) may compute itself in registers, each
    with (its points a thread, their rows along the outer tiled dimension): those read
    only by the output, with no update, whose region for one thread's points and for
    the block's have a constant size (memoized per problem)."""
    p = model.problem
    if not model.spec.cost_params.register_producers or len(tiled) < 2 \
            or all(t.serial_of(d) == 1 for d in tiled):
        return {}
    region = p.regions[group.output]
    tile = tuple(t.serial_of(d) if d in tiled else t.sizes[d] if d in whole
                 else (1 if d > max(tiled) else None) for d in range(len(region)))
    cache = p.memo("gpu_register_members")
    key = (group, tile)
    if key in cache:
        return cache[key]
    from ..analysis.footprint import interior_tile, tile_facts
    from .schedule_gen import _changing, _moved_tile_facts, _runtime_sized
    block = [t.sizes[d] if d in tiled or d in whole else (1 if d > max(tiled) else None)
             for d in range(len(region))]
    names = {m for m in group.producers() if not p.stage_info[m][1]
             and p.consumers.get(m, frozenset()) & group.members == {group.output}}
    # (one whose block's region depends on run-time values goes to root: schedule_gen)
    names -= _runtime_sized(p, group, block) if names else set()
    out = {}
    facts = _moved_tile_facts(p, group, list(tile)) if names else None
    if facts is not None:
        names -= _changing([f.member_regions for f in facts], names)
        boxes = tile_facts(p, group, interior_tile(region, tile)).member_regions
        outer = tiled[1]
        for m in sorted(names):
            box = boxes.get(m)
            if box is None or len(box) <= outer:
                continue
            out[m] = (math.prod(hi - lo + 1 for lo, hi in box),
                      box[outer][1] - box[outer][0] + 1)
    cache[key] = out
    return out


def _staging_options(model, group, gf, tilings, dims) -> list:
    """The sets of buffers a kernel of ``group`` over tilings ``tilings`` may stage in
    shared memory (none first, then all, then each alone) among those its members read
    at ``cost_params.stage_min_sites`` sites or more (``stage_candidates``), in two
    tiled dimensions (or, one-dimensional, a lookup table, in the first), with a box of
    constant size (``schedule_gen.runtime_sized_inputs``)."""
    cp = model.spec.cost_params
    if not cp.stage_inputs or dims[1] is None:
        return [()]
    top = max(d for d in dims if d is not None)
    names = [c for c, n in stage_candidates(model.problem, group).items()
             if n >= cp.stage_min_sites and c in gf.input_regions
             and (gf.input_regions[c].shape[1] > top          # its box spans both
                  or (gf.input_regions[c].shape[1] == 1 and dims[0] == 0))]   # a table
    if names:
        names = sorted(set(names) - _runtime_inputs(model, group, tilings))
    # none, all, each alone (all may not fit in shared memory beside the members)
    return [()] + ([tuple(names)] if len(names) > 1 else []) + [(c,) for c in names]


def _staging_may_gain(spec, mach, plain) -> bool:
    """Whether staging could make a block's kernel cheaper than its unstaged form
    ``plain`` (the reason it is infeasible, its counts; None: no mapping fits): only where
    that kernel's time is decided by the load/store unit or by latency (staging moves
    global loads to shared memory and waits one round trip for them; it adds
    instructions and changes no DRAM or L2 traffic), or where the spec's
    ``stage_weight`` favours staging."""
    if spec.cost_params.stage_weight < 1.0:
        return True
    if plain is None or plain[0]:     # no mapping fits, or a limit is passed: staged too
        return False
    bounds = launch_bounds(mach, plain[1])
    return max(bounds, key=bounds.get) in ("lsu", "latency")


def _runtime_inputs(model, group, tilings) -> set:
    """Buffers outside ``group`` whose per-block box depends on run-time values (asked
    once per group for its first tiling, as ``_root_producers``)."""
    cache = model.__dict__.setdefault("_gpu_runtime_inputs", {})
    hit = cache.get(group)
    if hit is None:
        from .schedule_gen import runtime_sized_inputs
        block = _first_block(model.problem, group, tilings)
        hit = set()
        if block is not None:
            hit = runtime_sized_inputs(model.problem, group, block)
            if hit is None:
                hit = set(stage_candidates(model.problem, group))
        cache[group] = hit
    return hit


def _first_block(p, group, tilings):
    """What a block of the first tiled tiling of ``tilings`` covers of ``group``'s output
    (its tile in the tiled dimensions, one point past them, all in the others), or None
    where none is tiled."""
    t = next((t for t in tilings if not t.is_untiled()), None)
    if t is None:
        return None
    tiled = [d for d, s in enumerate(t.sizes) if s is not None][:2]
    return [t.sizes[d] if d in tiled else (1 if d > max(tiled) else None)
            for d in range(len(p.regions[group.output]))]


def _update_launches(model, group, dims) -> list:
    """The kernels of the group output's update stages: each at root over its pure
    dimensions among the tiled ones (``dims``), in blocks of ``update_block`` threads over two of
    them or a warp over one (``schedule_gen._gpu_updates``), its other pure dimensions
    on blocks, its RDom a loop in each thread."""
    p, spec = model.problem, model.spec
    cp = spec.cost_params
    o = group.output
    region = p.regions[o]
    exts = [hi - lo + 1 for lo, hi in region]
    glob, _ = _sites(p, group, o)
    out = []
    for j, u in enumerate(p.stage_info[o][1], start=1):
        mine = [d for d in dims if d is not None and d in u.pure_dims]
        if len(mine) >= 2:
            tile = dict(zip(mine[:2], cp.update_block))
        elif mine:
            tile = {mine[0]: spec.warp_size}
        else:
            tile = {}
        threads = math.prod(tile.values()) if tile else 1
        blocks = 1
        for d in u.pure_dims:
            blocks *= math.ceil(exts[d] / tile.get(d, 1))
        inner = mine[0] if mine else None
        outer = mine[1] if len(mine) > 1 else None
        bx = tile.get(inner, 1)
        by = tile.get(outer, 1)
        sec = sum(site_sectors(p, o, s, (inner, outer), bx, bx, by, (0, 0))
                  for s in glob.get(j, ()))
        warps = math.ceil(threads / spec.warp_size)
        x = warps * u.rdom_points
        k = KernelCounts(blocks=blocks)
        k.instructions = x * (u.ops + cp.load_instructions * u.loads + cp.point_instructions
                              + cp.loop_instructions)
        k.load_lsu = x * sec / 4.0
        k.lsu_cycles = k.load_lsu + x * site_sectors(p, o, store_site(p, o), (inner, outer),
                                                     bx, bx, by, (0, 0)) / 4.0
        k.rounds = math.ceil(u.rdom_points / cp.update_unroll) if sec else 0
        whole_in = sum(_whole_sectors(p, s.callee) for s in
                       {s.callee: s for s in glob.get(j, ()) if s.callee != o}.values())
        k.dram_load_sectors = whole_in + _whole_sectors(p, o)
        k.dram_store_sectors = _whole_sectors(p, o)
        k.l2_load_sectors = k.dram_load_sectors / blocks
        k.l2_store_sectors = k.dram_store_sectors / blocks
        regs = registers_estimate(spec, threads)
        k.blocks_per_sm = max(1, occupancy(spec, threads, 0, regs)[1])
        out.append(k)
    return out


def _per_block(p, gf, group, extra_dims, i, exts=None) -> dict:
    """Each member's (and input's) share of a tile that one block computes: the output's
    dimensions past the tiled ones go on blocks, one point of each per block."""
    out = {}
    boxes = {**gf.member_regions, **gf.input_regions}
    for name, box in boxes.items():
        share = 1.0
        ext = exts[name] if exts is not None else box_extents(box)
        for d in extra_dims:
            if d < len(ext):
                share /= max(1.0, float(ext[d][i]))
        out[name] = share
    return out


def gpu_costs(model, group, gf, tilings, n_tiles, arith_pt=None, in_words_pt=None,
              memo: dict | None = None) -> list:
    """Cost of each tiling (a list of Cost), from the group's menu facts ``gf``
    (``arith_pt`` and ``in_words_pt``, the CPU model's per-tile figures, are not used:
    the kernel's counts come from each member's accesses).  ``memo``: a dict kept with
    the menu (``cost._Menu``), in which what the menu's groups share is remembered
    between them (each member's counts in a kernel: ``_main_kernel``); None: nothing
    is kept."""
    p, spec = model.problem, model.spec
    region = p.regions[group.output]
    mach = _machine(model)
    at_root = _root_producers(model, group, tilings)
    if at_root:
        return _with_root_producers(model, group, gf, tilings, n_tiles, at_root)
    bpp = p.bytes_per_point
    shared_members = [m for m in gf.member_points if m != group.output]
    exts = _box_extents(gf)
    sectors = _box_sectors(p, gf, group, exts)
    exts = {name: e.tolist() for name, e in exts.items()}     # read one by one below
    ext = {m: exts[m] for m in gf.member_regions}
    keys = _member_keys(p, group, gf) if memo is not None and gf.member_keys else None
    by_dims = {}                # dims -> (update launches, staging options)
    out = []
    for i, t in enumerate(tilings):
        sizes = t.sizes
        if t.is_untiled():
            out.append(Cost(math.inf, feasible=False, reason="a GPU kernel needs a tiling (thread block)"))
            continue
        tiled = [d for d, s in enumerate(sizes) if s is not None][:2]
        whole = tuple(d for d in range(max(tiled) + 1, len(sizes)) if sizes[d] is not None)
        extra_dims = [d for d in range(max(tiled) + 1, len(sizes))
                      if region[d][1] > region[d][0] and d not in whole]
        extra = math.prod(region[d][1] - region[d][0] + 1 for d in extra_dims)
        n = int(n_tiles[i]) * extra
        # the block: the tile, grown to the largest member's extent (a halo), over the
        # points each thread computes one after another; or the output's own threads,
        # the members that do not fit spread over them (``_main_kernel``): the cheaper
        grown = tuple(-(-max(int(sizes[d]),
                             int(max(e[d][i] for e in ext.values() if len(e) > d)))
                        // t.serial_of(d)) for d in tiled)
        own = tuple(t.threads_of(d) for d in tiled)
        out_threads = math.prod(own)
        per_block = _per_block(p, gf, group, extra_dims, i, exts)
        # each member's buffer holds its share of the tile (a member without the output's
        # dimensions past the tiled ones holds all of its tile in every block)
        member_bytes = {m: float(gf.member_points[m][i]) * bpp(m) * per_block[m]
                        for m in shared_members}
        per_thread = math.prod(t.serial_of(d) for d in tiled) * math.prod(sizes[d] for d in whole)
        active_sms = min(spec.sm_count, n)
        dims = (tiled[0], tiled[1] if len(tiled) > 1 else None)
        serial = tuple(t.serial_of(d) if d is not None else 1 for d in dims)
        steady = steady_fraction(region, sizes, dims)
        if dims not in by_dims:
            by_dims[dims] = (_update_launches(model, group, dims),
                             _staging_options(model, group, gf, tilings, dims))
        updates, staging = by_dims[dims]
        best = None
        plain = {}                  # block -> its unstaged kernel's (reason, counts)
        traffic = _traffic(p, gf, group, i, exts, per_block, n, sectors)
        fill = None                 # the SMs the tiling's blocks must keep busy
        in_regs = register_members(model, group, t, tiled, whole)
        options = itertools.product(staging, [{}] + ([in_regs] if in_regs else []),
                                    dict.fromkeys((grown, own)))
        for staged, rg, block in options:
            if (staged and not rg and not _staging_may_gain(spec, mach, plain.get(block))) \
                    or (rg and block != own):
                continue            # (a thread's own producers: the output's threads)
            shape = (block[0], block[1] if len(block) > 1 else 1)
            kept = None
            if keys is not None:
                kept = memo.setdefault(("members", i, shape, staged, tuple(sorted(rg.items()))),
                                       {})
            main = _main_kernel(model, group, gf, i, dims, shape, per_block, n, serial, whole,
                                exts, steady, staged, traffic, rg, kept, keys)
            if main is None:
                continue
            shared = int(sum(b for m, b in member_bytes.items() if m not in rg)) \
                + staged_bytes(p, staged, i, per_block, exts)
            threads = math.prod(block) if block else 1
            regs = min(spec.max_registers_per_thread, registers_estimate(spec, threads)
                       + spec.cost_params.serial_point_registers * (per_thread - 1)
                       + sum(-(-pts * bpp(m) // 4) for m, (pts, _) in rg.items()))
            occ, blocks_per_sm = occupancy(spec, threads, shared, regs)
            why = ""
            if threads > spec.max_threads_per_block:
                why = f"{threads} threads per block > {spec.max_threads_per_block}"
            elif out_threads % spec.warp_size:
                why = (f"{out_threads} output threads per block is not a multiple of the warp "
                       f"size {spec.warp_size}")
            elif shared > spec.shared_mem_per_block_bytes:
                why = f"shared memory {shared} B > {spec.shared_mem_per_block_bytes} B per block"
            elif occ < spec.occupancy_threshold:
                why = f"occupancy {occ:.2f} < threshold {spec.occupancy_threshold}"
            elif active_sms < (fill if fill is not None else (fill := min(
                    spec.sm_count, max_blocks(region, [s if d in tiled else None
                                                       for d, s in enumerate(sizes)],
                                              spec.warp_size)))):
                why = f"{n} blocks keep only {active_sms} of {spec.sm_count} SMs busy"
            main.blocks_per_sm = max(blocks_per_sm, 1)
            if not staged and not rg:
                plain[block] = (why, main)
            terms = _terms(mach, [main] + updates)
            weight = ((spec.cost_params.stage_weight if staged else 1.0)
                      * (spec.cost_params.register_weight if rg else 1.0))
            key = (bool(why), sum(terms.values()) * weight)
            if best is None or key < best[0]:
                gpu = GpuCost(threads, block, shared, regs, occ, blocks_per_sm, active_sms, n,
                              t.serial, tuple(sorted(main.spread.items())), staged,
                              tuple(sorted(rg)))
                best = (key, why, terms, gpu)
        _, why, terms, gpu = best
        shared = gpu.shared_bytes
        total = sum(terms.values()) if not why else math.inf
        done = sum(float(gf.member_points[m][i]) for m in gf.member_points) * n_tiles[i]
        need = sum(p.region_points(m) for m in gf.member_points)
        out.append(Cost(total, terms["arith"], terms["loads"], terms["stores"],
                        terms["overhead"], not why, why, n, shared,
                        float(done) / need if need else 1.0, gpu, parallel=terms["parallel"]))
    return out


def launch_bounds(mach: GpuMachine, k: KernelCounts) -> dict:
    """A kernel's time bounds in seconds: issue, lsu, l2, dram, latency (see the module
    docstring), each for the busiest SM where it is an SM's."""
    on_sm = math.ceil(k.blocks / mach.sms)
    waves = math.ceil(on_sm / max(k.blocks_per_sm, 1))
    hz = mach.clock_hz
    dram = (k.dram_load_sectors + k.dram_store_sectors) * SECTOR_BYTES / mach.dram_bytes_per_s
    return {
        "issue": on_sm * k.instructions / (mach.issue_per_cycle * hz),
        "lsu": on_sm * k.lsu_cycles * (128.0 / mach.l1_bytes_per_cycle) / hz,
        "l2": k.blocks * (k.l2_load_sectors + k.l2_store_sectors) * SECTOR_BYTES
        / mach.l2_bytes_per_s,
        "dram": dram,
        "latency": waves * (k.rounds * mach.dram_latency_cycles + k.barriers * mach.barrier_cycles
                            + mach.block_cycles) / hz,
    }


def _terms(mach: GpuMachine, launches: list) -> dict:
    """The launches' times (each the largest of its bounds) as Cost terms, microseconds."""
    us = 1e6
    terms = {"arith": 0.0, "loads": 0.0, "stores": 0.0, "parallel": 0.0,
             "overhead": len(launches) * mach.launch_s * us}
    for k in launches:
        b = launch_bounds(mach, k)
        which = max(b, key=b.get)
        t = b[which] * us
        if which == "issue":
            terms["arith"] += t
        elif which == "latency":
            terms["parallel"] += t
        else:
            if which == "dram":
                ld, st = k.dram_load_sectors, k.dram_store_sectors
            elif which == "l2":
                ld, st = k.l2_load_sectors, k.l2_store_sectors
            else:
                ld, st = k.load_lsu, k.lsu_cycles - k.load_lsu
            share = ld / max(ld + st, 1e-30)
            terms["loads"] += t * share
            terms["stores"] += t * (1.0 - share)
    return terms


def _root_producers(model, group, tilings) -> set:
    """Producers of ``group`` the schedule computes at root in kernels of their own
    (``schedule_gen._runtime_sized``, asked once per group for its first tiling)."""
    producers = group.producers()
    if not producers:
        return set()
    cache = model.__dict__.setdefault("_gpu_root_producers", {})
    hit = cache.get(group)
    if hit is None:
        from .schedule_gen import _runtime_sized
        block = _first_block(model.problem, group, tilings)
        hit = set() if block is None else set(_runtime_sized(model.problem, group, block))
        cache[group] = hit
    return hit


def _with_root_producers(model, group, gf, tilings, n_tiles, at_root) -> list:
    """Costs of ``group`` whose producers ``at_root`` run at root: the rest of the group
    as one kernel (reading them from global memory), plus each of them alone in blocks
    of ``cost_params.root_block_rows`` warps (as ``schedule_gen`` writes them)."""
    p, spec = model.problem, model.spec
    rest = model.costs(Group(group.output, frozenset(group.members - at_root)))
    extra = {"arith": 0.0, "loads": 0.0, "stores": 0.0, "parallel": 0.0, "overhead": 0.0}
    for r in sorted(at_root):
        region = p.regions[r]
        wide = [d for d, (lo, hi) in enumerate(region) if hi > lo][:2] or [0]
        sizes = [None] * len(region)
        sizes[wide[0]] = spec.warp_size
        if len(wide) > 1:
            sizes[wide[1]] = spec.cost_params.root_block_rows
        c = model.cost(Group.singleton(r), Tiling(tuple(sizes)))
        for name in extra:
            extra[name] += getattr(c, name)
    add = sum(extra.values())
    out = []
    for i in range(len(tilings)):
        c = rest.cost(i)
        out.append(Cost(c.total + add, c.arith + extra["arith"], c.loads + extra["loads"],
                        c.stores + extra["stores"], c.overhead + extra["overhead"], c.feasible,
                        c.reason, c.n_tiles, c.footprint_bytes, c.recompute, c.gpu,
                        parallel=c.parallel + extra["parallel"]))
    return out
