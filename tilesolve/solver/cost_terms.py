"""CPU terms of the cost model beyond Mullapudi 2016, per tile and per tiling.

Mullapudi's model charges one unit per arithmetic operation and ``load_cost``
per word from memory; it has no notion of vector lanes, of how tasks fill the
cores, of the caches below the tile's cache level, or of what a reduction loop
costs.  These terms add that, in the same unit (one operation of fully
vectorized, perfectly parallel code).  Their weights are the spec's
``cost_params`` (``specs/cost_params.py``); ``docs/cost_params.md`` gives each
one's value and the measurements behind the terms.

* ``lanes``: vector-lane utilization.  ``schedule_gen`` vectorizes each
  stage's innermost pure dimension by the spec's lanes for its type; a loop
  of extent ``e`` runs ``ceil(e / lanes)`` vectors (the last one shifted
  inward), so a stage costs ``1 / u`` of its arithmetic, with
  ``u = e / (ceil(e / lanes) * lanes)``.  A loop shorter than the lanes keeps
  ``e / lanes``; an update's such loop is priced scalar, ``u = 1 / lanes`` (a
  scan there waits on one chain a point), as is an update with no pure
  dimension to vectorize.
* ``parallel``: the last wave.  ``n`` equal tasks on ``w`` workers take
  ``ceil(n / w)`` waves, so the compute terms cost ``ceil(n / w) * w / n``
  times their work (a serial loop nest: ``w`` times).  Tasks are the tiles of
  a tiled group, the rows of the outermost dimension of an untiled one (none
  when that is its innermost dimension), and, for an output's update stages
  (which run at root), the rows of their parallel dimension, times the chunks
  their vector dimension is cut into when those rows are too few to fill the
  cores evenly (``root_update_chunks``).  Memory traffic is left alone
  (``load_cost`` already prices the machine's bandwidth).
* ``l1``: L1 pressure of fused groups.  A producer computed per tile is
  written over its whole tile region before its consumers read it back; when
  the tile's working set (``footprint_bytes``) exceeds the L1, the fraction
  ``1 - L1 / footprint`` of those words comes back from the next level, at
  ``l2_word_ops`` per word.  The ``strided`` cost below is reported as part of
  this term.
* ``streams``: rows a tile touches in memory, beyond the prefetcher.  Each row
  of a buffer wider than the tile is a separate run of memory, a stream of its
  own for the hardware prefetcher (a buffer read in whole rows is one stream).
  When the rows a tile touches (``S``, over its buffers) outnumber
  ``prefetch_streams``, the fraction ``1 - prefetch_streams / S`` of its runs
  start cold: their first ``stream_detect_bytes`` arrive unprefetched, each
  word costing ``stream_miss_loads`` more loads (``tilesolve calibrate`` fits
  it, ``tune/streams.py``).  A core stalls on those misses only as far as the
  tile is bound by memory: the term is scaled by ``1 - compute / memory``
  (arithmetic and lanes against loads and stores, clipped to [0, 1]).
* ``registers``: a stage whose expression (inlined producers substituted)
  loads more distinct values than the vector registers hold spills the
  excess: ``spill_ops`` per extra value per point.
* ``reduction``: the loop of an update definition (``plain_update_point``).
  Each point pays the innermost RDom loop's iteration (``loop_iter_ops``)
  and, amortized over its extent, its setup (``loop_setup_ops``).  An update
  that accumulates in place keeps the accumulator in a register across the
  RDom loops (``acc_ops`` per traversal); one that does not (a scan) loads it
  as one of its loads and stores it at every point (``acc_store_ops``).  An
  in-place update also waits on its accumulator where a step's latency
  exceeds what the step issues (``register_block.chain_extra``).  A
  register-blocked update (``register_block``, chosen where cheaper) shares
  its operand loads across the block, interleaves ``nb * by`` accumulator
  chains and pays one loop iteration per block and unrolled RDom step.  The
  group output's update that is tiled with its group blocks its vector
  dimension only.
* ``strided``: transposed reads (``Problem.accesses``, ``access.py``; off with
  ``strided_reads: false``).  When the callee's stride is
  ``far_stride_bytes`` or more, each point of a sweep of the vectorized loop
  (the stage's extent in that dimension: the tile, or at root the whole
  region; one vector for an update whose RDom loop runs inside the vector
  loop) touches its own cache line; the next sweep finds those lines in L1
  only if they fit.  Past that, an LRU cache swept cyclically loses the
  fraction ``min(1, sweep_thrash_slope (1 - L1 / (lines x line)))`` of the
  lines: those points bring a whole line back from memory.  When the lines
  fit, a tile still uses of each line only its extent in the dimension that
  moves the callee's innermost: the other words of the line are charged too.
* scattered writes (``access.py``), in the ``lanes`` term: an update that
  writes at a place computed from data varying across its lanes (a
  histogram) stores lane by lane, ``scatter_lane_ops`` a point.

Each term is reported separately in ``Cost``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.footprint import box_extents
from .register_block import chain_extra, choose_block, x_only

def vector_registers(spec) -> int:
    """Vector registers of the ISA: 32 with 512-bit vectors (AVX-512), else 16
    (AVX2/SSE; a conservative count for 128-bit NEON, which has 32)."""
    return 32 if (spec.vector_bits or 0) >= 512 else 16


def l2_bytes(spec) -> float:
    """One core's L2 in bytes (the spec's tile cache where it names no level 2)."""
    levels = [c.size_bytes for c in spec.caches if c.level == 2]
    return float(levels[0] if levels else spec.tile_cache_bytes)


def workers(spec) -> int:
    return spec.threads or spec.cores or 1


def lane_utilization(extent, lanes: int):
    """Useful lanes over lanes issued for a vectorized loop of ``extent``."""
    ext = np.maximum(np.asarray(extent, dtype=float), 1.0)
    return ext / (np.ceil(ext / lanes) * lanes)


def update_lane_utilization(extent, lanes: int):
    """``lane_utilization`` of an update's vector loop: scalar (``1 / lanes``) when
    shorter than the lanes, where ``schedule_gen`` does not vectorize it."""
    ext = np.asarray(extent, dtype=float)
    return np.where(ext < lanes, 1.0 / lanes, lane_utilization(ext, lanes))


def wave_imbalance(tasks, w: int):
    """Time of ``tasks`` equal tasks on ``w`` workers over that of perfect balance."""
    t = np.maximum(np.asarray(tasks, dtype=float), 1.0)
    return np.ceil(t / w) * w / t


def root_update_chunks(params, x_extent, tasks: int, lanes: int, w: int) -> int:
    """Chunks of its vector dimension a root update runs in parallel beside its
    parallel dimension (``schedule_gen._parallel_root_update``): 1 when the ``tasks``
    of that dimension fill the ``w`` workers' waves evenly (an imbalance of at most
    ``params.root_balance_tolerance``), else the fewest chunks (at most
    ``root_chunks_max``, each of two vectors or more) with the least imbalance (an RGB
    image's 3 channels on 2 cores: 2 chunks, 6 tasks)."""
    if wave_imbalance(tasks, w) <= params.root_balance_tolerance:
        return 1
    most = params.root_chunks_max
    vectors = int(np.ceil(float(x_extent) / max(1, lanes)))
    best, best_imb = 1, float(wave_imbalance(tasks, w))
    for k in range(2, most + 1):
        if vectors < 2 * k:
            break
        imb = float(wave_imbalance(tasks * k, w))
        if imb < best_imb - 1e-9:
            best, best_imb = k, imb
    return best


@dataclass
class TileTerms:
    """Per tile, one entry per tiling: the arithmetic and the new terms;
    ``root_updates`` is the part of the compute terms from the output's update
    stages (they run at root, with their own parallelism)."""

    arith: np.ndarray
    lanes: np.ndarray
    registers: np.ndarray
    reduction: np.ndarray
    root_updates: np.ndarray
    root_update_imbalance: np.ndarray
    strided: np.ndarray
    moving: float            # arithmetic of the stages that move the group's memory traffic, per run


def strided_cost(problem, gf, reads, pts, sweep, extent):
    """What the transposed ``reads`` (``Problem.accesses``: (callee, dim, inner)) of a
    stage cost over its ``pts`` points per tile, when its vectorized loop sweeps
    ``sweep`` points and ``extent(d)`` is the stage's extent in its dimension ``d``
    per tile (see ``strided`` in the module docstring).  A callee computed in the
    group has its per-tile buffer; any other its whole region."""
    spec = problem.spec
    cp = spec.cost_params
    if not cp.strided_reads:
        return 0.0
    line = float(spec.caches[0].line_bytes)
    lines = np.maximum(sweep * line, 1.0)            # bytes of the lines one sweep touches
    sweep_thrash = np.clip(cp.sweep_thrash_slope * (1.0 - float(spec.cache_bytes(1)) / lines),
                           0.0, 1.0)
    total = 0.0
    for callee, dim, inner in reads:
        box = gf.member_regions.get(callee)
        if box is not None:
            ext = [np.maximum(e, 1.0) for e in box_extents(box)]
        else:
            ext = [float(hi - lo + 1) for lo, hi in problem.regions[callee]]
        bpp = float(problem.bytes_per_point(callee))
        stride = bpp
        for d in range(dim):
            stride = stride * ext[d]
        far = stride >= cp.far_stride_bytes
        thrash = np.where(far, sweep_thrash, 0.0)
        # the part of each line the sweeps of one tile use before moving on
        used = 1.0 if inner is None else np.clip(
            np.asarray(extent(inner), dtype=float) * bpp / line, bpp / line, 1.0)
        extra = (thrash * (line - bpp) / 4.0
                 + (1.0 - thrash) * np.where(far, bpp / 4.0 * (1.0 / used - 1.0), 0.0))
        total = total + pts * (spec.load_cost * extra)
    return total


def _ext(box, d):
    return box_extents(box)[d]


def moves_memory(problem, group, name: str) -> bool:
    """Whether stage ``name`` of ``group`` moves the group's memory traffic: the output
    stores it, a member reading from outside the group loads it (their arithmetic may
    overlap it: ``cost.hidden_arithmetic``)."""
    return name == group.output or not problem.callees[name] <= group.members


def tiled_stage(problem, group) -> int:
    """The output's update that ``schedule_gen`` tiles for this group (its members read
    only by that update are computed per tile of it), or 0."""
    return max((problem.member_stage(m, group.output) for m in group.members
                if m != group.output), default=0)


def tile_terms(problem, group, gf, k: int) -> TileTerms:
    spec = problem.spec
    cp = spec.cost_params
    cached_load_ops = cp.cached_load_ops
    tiled_k = tiled_stage(problem, group)
    regs_avail = vector_registers(spec)
    zero = np.zeros(k)
    arith, lanes, regs, red, root_upd = zero.copy(), zero.copy(), zero.copy(), zero.copy(), zero.copy()
    root_imb_work, strided, moving = zero.copy(), zero.copy(), 0.0
    w = workers(spec)
    for m, pts in gf.member_points.items():
        (ops, loads), updates = problem.stage_info[m]
        box = gf.member_regions[m]
        access = problem.accesses[m]
        transposed, scatters = access[0]
        if transposed:
            strided += strided_cost(problem, gf, transposed, pts, _ext(box, 0),
                                    lambda d, b=box: _ext(b, d))
        if scatters:
            lanes += pts * (cp.scatter_lane_ops * scatters)
        L = spec.vector_lanes(problem.bytes_per_point(m))
        pure_arith = pts * (ops + cached_load_ops * loads)
        arith += pure_arith
        if moves_memory(problem, group, m):
            # the points the output needs, not those a tile recomputes: a halo's
            # recomputation reads memory again and hides nothing
            moving += problem.region_points(m) * (ops + cached_load_ops * loads)
        if ops + loads:
            lanes += pure_arith * (1.0 / lane_utilization(_ext(box, 0), L) - 1.0)
        if loads > regs_avail:
            regs += pts * cp.spill_ops * (loads - regs_avail)
        full = problem.regions[m]
        for i, u in enumerate(updates):
            # the output's updates run at root, except the one tiled with the group
            is_root = m == group.output and i + 1 != tiled_k
            pts_u = float(u.rdom_points)
            for d in u.pure_dims:
                pts_u = pts_u * _ext(box, d)

            def extent(d):
                if d is None:
                    return 1.0
                return float(full[d][1] - full[d][0] + 1) if is_root else _ext(box, d)
            util = 1.0 / L if u.vector_dim is None else update_lane_utilization(
                extent(u.vector_dim), L)
            per, loop = plain_update_point(cp, u, util)
            a = pts_u * per
            lane_u = a * (1.0 / util - 1.0)
            red_u = pts_u * loop
            blk = u.block
            if blk is not None and m == group.output and not is_root:
                # the tiled update: ``schedule_gen._tile_update`` blocks x only
                blk = x_only(blk) if blk.x_dim == 0 else None
            if blk is not None:
                _, nb, by, b_arith, b_util, b_loop = block_choice(
                    spec, u, L, util, extent(blk.x_dim), extent(blk.y_dim), blk)
                on = nb > 0
                ba = pts_u * b_arith
                a = np.where(on, ba, a)
                lane_u = np.where(on, ba * (1.0 / b_util - 1.0), lane_u)
                red_u = np.where(on, pts_u * b_loop, red_u)
            st_u = 0.0
            transposed, scatters = access[i + 1]
            if transposed:
                # an RDom loop runs inside the vector loop: each sweep is one vector
                sweep = float(L) if u.has_rdom else extent(u.vector_dim)
                st_u = strided_cost(problem, gf, transposed, pts_u, sweep, extent)
                strided += st_u
            if scatters:
                lane_u = lane_u + pts_u * (cp.scatter_lane_ops * scatters)
            arith += a
            lanes += lane_u
            red += red_u
            if is_root:
                work = a + lane_u + red_u + st_u
                root_upd += work
                if u.parallel_dim is None:
                    tasks = 1
                else:
                    lo, hi = full[u.parallel_dim]
                    tasks = hi - lo + 1
                    k = root_update_chunks(cp, extent(u.vector_dim), tasks, L, w)
                    tasks = tasks * k if blk is None else np.where(on, tasks, tasks * k)
                root_imb_work += work * (wave_imbalance(tasks, w) - 1.0)
    return TileTerms(arith, lanes, regs, red, root_upd, root_imb_work, strided, moving)


def rdom_loop_ops(params, inner_extent: int, rdom_points: int) -> float:
    """Per point, the RDom loop of an in-place update in the default order: an
    iteration, the innermost loop's setup over its extent, and the accumulator's
    load and store over the whole traversal (``params``: the spec's CostParams)."""
    return (params.loop_iter_ops + params.loop_setup_ops / max(1, inner_extent)
            + params.acc_ops / max(1, rdom_points))


def plain_update_point(params, u, util=1.0) -> tuple:
    """(arithmetic with loads, reduction overhead) per point of an update in
    ``schedule_gen``'s default loop order (RDom loops innermost; lane utilization
    ``util``).  An update that accumulates in place keeps its accumulator in a
    register across the RDom loops: it is loaded and stored once per traversal
    (``acc_ops`` over the RDom's points), not at every point, and each RDom step
    waits for the step before (``register_block.chain_extra``, one accumulator);
    otherwise every point loads it (one of its loads) and stores it
    (``acc_store_ops``)."""
    cached = params.cached_load_ops
    if not u.has_rdom:
        return u.ops + cached * u.loads, params.acc_store_ops
    if u.in_place:
        loop = rdom_loop_ops(params, u.inner_extent, u.rdom_points)
        return u.ops + cached * (u.loads - u.self_loads), loop + chain_extra(
            u.chain, 1, loop, util)
    loop = params.loop_iter_ops + params.loop_setup_ops / max(1, u.inner_extent)
    return u.ops + cached * u.loads, loop + params.acc_store_ops


def block_choice(spec, u, lanes: int, util, e_x, e_y, blk=None):
    """``register_block.choose_block`` for update ``u`` (with a BlockInfo; ``blk``
    when another block shape than ``u.block``) over extents ``e_x`` x ``e_y``,
    against its unblocked cost per point (lane utilization ``util``):
    (cost, nb, by, arith, util, loop) per tiling."""
    cp = spec.cost_params
    per, loop = plain_update_point(cp, u, util)
    return choose_block(cp, u, blk or u.block, lanes, vector_registers(spec), e_x, e_y,
                        per / util + loop, cp.acc_ops / max(1, u.rdom_points))


def tile_tasks(problem, group, menu):
    """Parallel tasks of each tiling: tiles when tiled; else the rows of the
    outermost non-trivial dimension unless that is the innermost (serial)."""
    region = problem.regions[group.output]
    nontrivial = [i for i, (lo, hi) in enumerate(region) if hi > lo]
    rows = 1.0
    if nontrivial and nontrivial[-1] != 0:
        lo, hi = region[nontrivial[-1]]
        rows = float(hi - lo + 1)
    return np.where(menu.untiled, rows, menu.n_tiles)


def l1_miss_fraction(spec, footprint):
    """Fraction of a tile's working set beyond the L1."""
    l1 = spec.cache_bytes(1)
    fp = np.maximum(np.asarray(footprint, dtype=float), 1.0)
    return np.clip(1.0 - l1 / fp, 0.0, 1.0)


def intermediate_words(problem, group, gf):
    """Words of the producers' buffers written per tile (read back by consumers)."""
    out = 0.0
    for m, pts in gf.member_points.items():
        if m != group.output:
            out = out + pts * problem.bytes_per_point(m) / 4.0
    return out


def stream_words(problem, group, gf):
    """Words a tile moves from and to memory without prefetch (see ``streams`` in
    the module docstring), per tiling: the buffers read from outside the group and
    the group output's tile."""
    cp = problem.spec.cost_params
    boxes = list(gf.input_regions.items())
    boxes.append((group.output, gf.member_regions[group.output]))
    streams, cold = 0.0, 0.0
    for name, box in boxes:
        ext = np.maximum(box_extents(box), 1.0)
        full = problem.regions.get(name)
        whole_rows = ext[0] >= (full[0][1] - full[0][0] + 1) if full else False
        rows = np.prod(ext[1:], axis=0) if len(ext) > 1 else np.ones_like(ext[0])
        run = ext[0] * problem.bytes_per_point(name)
        streams = streams + np.where(whole_rows, 1.0, rows)
        cold = cold + np.where(whole_rows, 0.0, rows * np.minimum(run, cp.stream_detect_bytes) / 4.0)
    miss = np.clip(1.0 - cp.prefetch_streams / np.maximum(streams, 1.0), 0.0, 1.0)
    return miss * cold
