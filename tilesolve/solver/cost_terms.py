"""CPU terms of the cost model beyond Mullapudi 2016, per tile and per tiling.

Mullapudi's model charges one unit per arithmetic operation and ``load_cost``
per word from memory; it has no notion of vector lanes, of how tasks fill the
cores, of the caches below the tile's cache level, or of what a reduction loop
costs.  These terms add that, in the same unit (one operation of fully
vectorized, perfectly parallel code):

* ``lanes``: vector-lane utilization.  ``schedule_gen`` vectorizes each
  stage's innermost pure dimension by the spec's lanes for its type; a loop
  of extent ``e`` runs ``ceil(e / lanes)`` vectors (the last one shifted
  inward), so a stage costs ``1 / u`` of its arithmetic, with
  ``u = e / (ceil(e / lanes) * lanes)``.  (A loop shorter than the lanes runs
  scalar, yet pricing it so, ``u = 1 / lanes``, made the solvers unfuse
  interpolate's small pyramid levels and run 1.5x slower; vectorizing such
  loops at the widest power of two they hold ran no faster on the five apps
  it changed.  The term keeps ``e / lanes`` for them; an update's such loop is
  priced scalar, ``u = 1 / lanes``: a scan there waits on one chain a point, and
  iir_blur's tiles 8 rows high, whose column scans run 8 wide, took 39.4 ms
  against 21.9 ms for 16 rows, priced 9 % apart before.)  A short inner extent
  (a 3-wide dimension, a tile plus a halo of 2) wastes lanes; an update with no
  pure dimension to vectorize (a scan, a scatter) runs scalar (``u = 1 / lanes``).
* ``parallel``: the last wave.  ``n`` equal tasks on ``w`` workers take
  ``ceil(n / w)`` waves, so the compute terms cost ``ceil(n / w) * w / n``
  times their work (a serial loop nest: ``w`` times).  Tasks are the tiles of
  a tiled group, the rows of the outermost dimension of an untiled one (none
  when that is its innermost dimension), and, for an output's update stages
  (which run at root), the rows of their parallel dimension, times the chunks
  their vector dimension is cut into when those rows are too few to fill the
  cores evenly (``root_update_chunks``: 3 colour channels on 2 cores).  Memory traffic
  is left alone (``load_cost`` already prices the machine's bandwidth).
* ``l1``: L1 pressure of fused groups.  A producer computed per tile is
  written over its whole tile region before its consumers read it back; when
  the tile's working set (``footprint_bytes``) exceeds the L1, the fraction
  ``1 - L1 / footprint`` of those words comes back from the next level, at
  ``L2_WORD_OPS`` per word.  Deep fused chains and wide tiles pay it.  The
  ``strided`` cost below (transposed reads) is reported as part of this term.
* ``streams``: rows a tile touches in memory, beyond the prefetcher.  A
  tile of a group reads each outside buffer, and writes its output, row by
  row: each row of a buffer wider than the tile is a separate run of
  memory, which the hardware prefetcher must pick up as a stream of its own
  (a buffer read in whole rows is one stream).  When the rows a tile touches
  (``S``, over its buffers) outnumber the streams the prefetcher keeps
  (``PREFETCH_STREAMS``), the fraction ``1 - PREFETCH_STREAMS / S`` of its
  runs start cold: their first ``STREAM_DETECT_BYTES`` (until the prefetcher
  has seen the run) arrive unprefetched, each word costing
  ``STREAM_MISS_LOADS`` more loads (the spec's ``stream_miss_loads`` where it
  has one: ``tilesolve calibrate`` fits it, ``tune/streams.py``).  A core stalls on those misses only as far
  as the tile is bound by memory: the term is scaled by ``1 - compute /
  memory`` (arithmetic and lanes against loads and stores, clipped to
  [0, 1]); a tile with more arithmetic than memory traffic overlaps them
  (max_filter's, measured: charging it made the solvers leave its fusion and
  run 2.7x slower).  Measured on the development machine (blur, 6400 x 4800
  float32, every tile of 16-512 x 4-256 at 2 threads, ``python
  benchmarks/streams_term.py grid``): tiles of 128 x 64 ran 1.6x slower than
  128 x 16, and 16 x 64 4x slower than 16 x 16, which Mullapudi's terms rank
  the other way (fewer recomputed halo rows).
* ``registers``: register pressure of deeply inlined chains.  A stage whose
  expression (inlined producers substituted) loads more distinct values than
  the vector registers hold spills the excess: ``SPILL_OPS`` per extra value
  per point.
* ``reduction``: the loop of an update definition (``plain_update_point``).
  Each point pays the innermost RDom loop's iteration (``LOOP_ITER_OPS``)
  and, amortized over its extent, its setup (``LOOP_SETUP_OPS``).  An update
  that accumulates in place keeps the accumulator in a register across the
  RDom loops (loaded and stored once per traversal, ``ACC_OPS``); one that
  does not (a scan) loads it as one of its loads and stores it at every point
  (``ACC_STORE_OPS``).  An in-place update also waits on its accumulator:
  where a step's latency (a float ``max`` or ``+``: 4-5 cycles) exceeds what
  the step issues, the difference is charged (``register_block.chain_extra``).
  A register-blocked update (``register_block``, chosen where cheaper) shares
  its operand loads across the block, interleaves ``nb * by`` accumulator
  chains and pays one loop iteration per block and unrolled RDom step; its
  arithmetic (with loads) and lanes reflect that.  The group output's update
  that is tiled with its group blocks its vector dimension only.
* ``strided``: transposed reads (``Problem.accesses``, ``access.py``).  A read
  whose index follows the stage's vectorized Var in a dimension other than the
  callee's innermost loads each lane from its own place: a gather,
  ``GATHER_LANE_OPS`` per point.  When the callee's stride is long
  (``FAR_STRIDE_BYTES`` or more: no prefetcher follows it), each point of a
  sweep of the vectorized loop (the stage's extent in that dimension: the
  tile, or at root the whole region; one vector for an update whose RDom loop
  runs inside the vector loop) touches its own cache line; the next sweep
  reads the neighbouring words of the same lines, which are still in L1 only
  if the sweep's lines fit.  Past that, an LRU cache swept cyclically loses
  nearly every line: the fraction ``min(1, 2 (1 - L1 / (lines x line)))`` of
  the points bring a whole line back from memory (``load_cost`` per word
  beyond the point's own).  When the lines fit, a tile still uses of each line
  only its extent in the dimension that moves the callee's innermost (its
  height, for a transpose): a tile 1 row high uses one word a line, and the
  next row's tile, a whole row of tiles later, finds the line gone; the other
  words of the line are charged too (iir_blur's output in 32 x 1 tiles over a
  transposed root buffer: 71.6 ms, 32 x 4: 39.7, 32 x 16: 35.7; 256 x 2: 52.0,
  256 x 8: 38.7; the term ranks the five alike).  Measured on the development
  machine (``python benchmarks/strided_term.py``, a transpose at 2 threads):
  at root, sweeps of up to 768 lines (48 KB) cost 1.5 core-ns a point, 1024
  lines 2.7 core-ns, 1536 lines and more 6-8 core-ns, for strides of 2 to 20
  KB alike, against 0.5 core-ns for the transpose computed in 64 x 64 tiles; a
  1024-point sweep over a per-tile buffer (a 64-byte stride) costs 0.4 core-ns
  more than a 256-point one, which the term leaves out.  iir_blur's schedule
  that transposes at root ran 4x slower than its tiled ones, which the model
  had priced alike.
* scattered writes and gathered reads (``access.py``), in the ``lanes`` term.
  An update that writes at a place computed from data varying across its lanes
  (bilateral_grid's histogram) stores lane by lane: ``SCATTER_LANE_OPS`` a point.
  Pricing it makes the solvers stop recomputing the histogram in every tile of
  the output: bilateral_grid 0.84-0.85x (``python benchmarks/solver_rules.py
  --rule scatters``).  Other gathered reads (long strides, divisions,
  lane-varying lookups) are counted but priced ``GATHER_LANE_OPS`` = 0: priced
  at 8, 24 or 64 operations a point they made the solvers fuse local_laplacian's
  and lens_blur's pyramids otherwise, and those ran 1.03-1.38x and 1.07x
  slower; the recompute of their groups is what the model prices too low, and
  a cost added per point there tips the balance the wrong way.

The constants are first estimates in operations (cycles of one issue slot),
to be fitted by measurement; each term is reported separately in ``Cost``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.footprint import box_extents
from .register_block import chain_extra, choose_block, x_only

SPILL_OPS = 2.0          # a spill store and its reload
L2_WORD_OPS = 1.0        # one 4-byte word brought back to L1 from L2
ACC_STORE_OPS = 1.0      # the store of an update's accumulator
ACC_OPS = 2.0            # loading and storing an accumulator kept in a register over a loop
LOOP_ITER_OPS = 1.0      # increment, compare and branch of an RDom loop iteration
LOOP_SETUP_OPS = 4.0     # entering an RDom loop
PREFETCH_STREAMS = 32.0  # rows of memory a core's prefetcher follows at once (fitted)
STREAM_MISS_LOADS = 6.0  # extra cost of an unprefetched word, in loads from memory (fitted)
STREAM_DETECT_BYTES = 512.0  # bytes of a cold run read before the prefetcher follows it
GATHER_LANE_OPS = 0.0    # a gathered point (see ``scattered writes`` above: not priced yet)
SCATTER_LANE_OPS = 64.0  # a scattered point: its lane extracted and stored alone
FAR_STRIDE_BYTES = 1024.0  # a transposed read's stride no prefetcher follows


def stream_miss_loads(spec) -> float:
    """The spec's ``stream_miss_loads`` (``tilesolve calibrate`` fits it to this
    machine), else ``STREAM_MISS_LOADS``."""
    v = spec.stream_miss_loads
    return STREAM_MISS_LOADS if v is None else float(v)


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


def root_update_chunks(x_extent, tasks: int, lanes: int, w: int, most: int = 8) -> int:
    """Chunks of its vector dimension a root update runs in parallel beside its
    parallel dimension (``schedule_gen._parallel_root_update``): 1 when the ``tasks``
    of that dimension fill the ``w`` workers' waves evenly (a 5 % loss at most), else
    the fewest chunks (at most ``most``, each of two vectors or more) with the least
    imbalance (an RGB image's 3 channels on 2 cores: 2 chunks, 6 tasks)."""
    if wave_imbalance(tasks, w) <= 1.05:
        return 1
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


def strided_cost(problem, gf, reads, pts, sweep, extent):
    """What the transposed ``reads`` (``Problem.accesses``: (callee, dim, inner)) of a
    stage cost over its ``pts`` points per tile, when its vectorized loop sweeps
    ``sweep`` points and ``extent(d)`` is the stage's extent in its dimension ``d``
    per tile (see ``strided`` in the module docstring).  A callee computed in the
    group has its per-tile buffer; any other its whole region."""
    spec = problem.spec
    line = float(spec.caches[0].line_bytes) if spec.caches else 64.0
    lines = np.maximum(sweep * line, 1.0)            # bytes of the lines one sweep touches
    sweep_thrash = np.clip(2.0 * (1.0 - float(spec.cache_bytes(1)) / lines), 0.0, 1.0)
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
        far = stride >= FAR_STRIDE_BYTES
        thrash = np.where(far, sweep_thrash, 0.0)
        # the part of each line the sweeps of one tile use before moving on
        used = 1.0 if inner is None else np.clip(
            np.asarray(extent(inner), dtype=float) * bpp / line, bpp / line, 1.0)
        extra = (thrash * (line - bpp) / 4.0
                 + (1.0 - thrash) * np.where(far, bpp / 4.0 * (1.0 / used - 1.0), 0.0))
        total = total + pts * (GATHER_LANE_OPS + spec.load_cost * extra)
    return total


def _ext(box, d):
    return box_extents(box)[d]


def tiled_stage(problem, group) -> int:
    """The output's update that ``schedule_gen`` tiles for this group (its members read
    only by that update are computed per tile of it), or 0."""
    return max((problem.member_stage(m, group.output) for m in group.members
                if m != group.output), default=0)


def tile_terms(problem, group, gf, k: int, cached_load_ops: float) -> TileTerms:
    spec = problem.spec
    tiled_k = tiled_stage(problem, group)
    regs_avail = vector_registers(spec)
    zero = np.zeros(k)
    arith, lanes, regs, red, root_upd = zero.copy(), zero.copy(), zero.copy(), zero.copy(), zero.copy()
    root_imb_work, strided = zero.copy(), zero.copy()
    w = workers(spec)
    for m, pts in gf.member_points.items():
        (ops, loads), updates = problem.stage_info[m]
        box = gf.member_regions[m]
        access = problem.accesses[m]
        transposed, gathers, scatters = access[0]
        if transposed:
            strided += strided_cost(problem, gf, transposed, pts, _ext(box, 0),
                                    lambda d, b=box: _ext(b, d))
        if gathers or scatters:
            lanes += pts * (GATHER_LANE_OPS * gathers + SCATTER_LANE_OPS * scatters)
        L = spec.vector_lanes(problem.bytes_per_point(m))
        pure_arith = pts * (ops + cached_load_ops * loads)
        arith += pure_arith
        if ops + loads:
            lanes += pure_arith * (1.0 / lane_utilization(_ext(box, 0), L) - 1.0)
        if loads > regs_avail:
            regs += pts * SPILL_OPS * (loads - regs_avail)
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
            per, loop = plain_update_point(u, cached_load_ops, util)
            a = pts_u * per
            lane_u = a * (1.0 / util - 1.0)
            red_u = pts_u * loop
            blk = u.block
            if blk is not None and m == group.output and not is_root:
                # the tiled update: ``schedule_gen._tile_update`` blocks x only
                blk = x_only(blk) if blk.x_dim == 0 else None
            if blk is not None:
                _, nb, by, b_arith, b_util, b_loop = block_choice(
                    spec, u, L, util, extent(blk.x_dim), extent(blk.y_dim), cached_load_ops, blk)
                on = nb > 0
                ba = pts_u * b_arith
                a = np.where(on, ba, a)
                lane_u = np.where(on, ba * (1.0 / b_util - 1.0), lane_u)
                red_u = np.where(on, pts_u * b_loop, red_u)
            st_u = 0.0
            transposed, gathers, scatters = access[i + 1]
            if transposed:
                # an RDom loop runs inside the vector loop: each sweep is one vector
                sweep = float(L) if u.has_rdom else extent(u.vector_dim)
                st_u = strided_cost(problem, gf, transposed, pts_u, sweep, extent)
                strided += st_u
            if gathers or scatters:
                lane_u = lane_u + pts_u * (GATHER_LANE_OPS * gathers + SCATTER_LANE_OPS * scatters)
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
                    k = root_update_chunks(extent(u.vector_dim), tasks, L, w)
                    tasks = tasks * k if blk is None else np.where(on, tasks, tasks * k)
                root_imb_work += work * (wave_imbalance(tasks, w) - 1.0)
    return TileTerms(arith, lanes, regs, red, root_upd, root_imb_work, strided)


def rdom_loop_ops(inner_extent: int, rdom_points: int) -> float:
    """Per point, the RDom loop of an in-place update in the default order: an
    iteration, the innermost loop's setup over its extent, and the accumulator's
    load and store over the whole traversal."""
    return (LOOP_ITER_OPS + LOOP_SETUP_OPS / max(1, inner_extent)
            + ACC_OPS / max(1, rdom_points))


def plain_update_point(u, cached_load_ops: float, util=1.0) -> tuple:
    """(arithmetic with loads, reduction overhead) per point of an update in
    ``schedule_gen``'s default loop order (RDom loops innermost; lane utilization
    ``util``).  An update that accumulates in place keeps its accumulator in a
    register across the RDom loops: it is loaded and stored once per traversal
    (``ACC_OPS`` over the RDom's points), not at every point, and each RDom step
    waits for the step before (``register_block.chain_extra``, one accumulator);
    otherwise every point loads it (one of its loads) and stores it
    (``ACC_STORE_OPS``)."""
    if not u.has_rdom:
        return u.ops + cached_load_ops * u.loads, ACC_STORE_OPS
    if u.in_place:
        loop = rdom_loop_ops(u.inner_extent, u.rdom_points)
        return u.ops + cached_load_ops * (u.loads - u.self_loads), loop + chain_extra(
            u.chain, 1, loop, util)
    loop = LOOP_ITER_OPS + LOOP_SETUP_OPS / max(1, u.inner_extent)
    return u.ops + cached_load_ops * u.loads, loop + ACC_STORE_OPS


def block_choice(spec, u, lanes: int, util, e_x, e_y, cached_load_ops: float, blk=None):
    """``register_block.choose_block`` for update ``u`` (with a BlockInfo; ``blk``
    when another block shape than ``u.block``) over extents ``e_x`` x ``e_y``,
    against its unblocked cost per point (lane utilization ``util``):
    (cost, nb, by, arith, util, loop) per tiling."""
    per, loop = plain_update_point(u, cached_load_ops, util)
    return choose_block(u, blk or u.block, lanes, vector_registers(spec), e_x, e_y, cached_load_ops,
                        LOOP_ITER_OPS, LOOP_SETUP_OPS + 0.0, per / util + loop,
                        ACC_OPS / max(1, u.rdom_points))


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
        cold = cold + np.where(whole_rows, 0.0, rows * np.minimum(run, STREAM_DETECT_BYTES) / 4.0)
    miss = np.clip(1.0 - PREFETCH_STREAMS / np.maximum(streams, 1.0), 0.0, 1.0)
    return miss * cold
