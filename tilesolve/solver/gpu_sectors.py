"""How a GPU warp's accesses to global memory fall into 32-byte sectors, for the cost model.

On the GPU a warp is 32 consecutive threads of a block, ``threadIdx.x`` fastest; the
threads of a block compute the points of each group member in the block's tiled
dimensions (thread ``(tx, ty)`` the member's point ``(x0 + tx, y0 + ty)``, the threads
past the member's extent idle).  One access site executed by a warp is one memory
instruction; the memory system moves every 32-byte sector that one of its lanes
touches.  ``site_sectors`` counts them the way the CPU shim's sector counter does
(``backend/cuda/sectors.py``), from the access's index expressions evaluated at the
warp's lanes: coalesced float reads move 4 sectors a warp, a stride-2 read (a
pyramid's downsampling) 8, a read shifted off the 32-byte grid 5, a transposed read 32,
and a clamped index as many as its distinct addresses.  An index computed from loaded
data (a lookup table) cannot be evaluated: it counts one sector a lane (at most the
callee's size).  Rows of the callee whose length is not a multiple of 32 bytes start
at different offsets: the count is the mean over consecutive rows (the spec's
``cost_params.rows_averaged``; ``base_align`` places the probed warp).

``box_sectors`` is the sectors a box of a buffer spans, row by row (what a block's
distinct reads of an input cost from L2, halo and misalignment included).

A thread that computes several points in an unrolled loop (a serial tile) loads an
address its sites share between those points once: nvcc keeps it in a register
(a 3-row stencil over 4 rows: 6 loads, not 12).  ``unrolled_loads`` counts the
distinct addresses; ``site_sectors``' ``y_step`` places a warp's rows that many
points apart (thread ``ty`` computes rows ``ty * y_step ...``), its ``x_step`` a row's
lanes (a thread's points along x in a loop of its own).

A thread whose points along x are a vectorized loop of 2 or 4 (``backend/cuda/vector.py``)
reads the taps of a buffer a constant apart as one window, each aligned run of the
vector's width one access and the other elements one each, and writes its points as one
access where aligned: ``vector_accesses`` counts those instructions and their sectors
per warp, the windows' alignment taken from the probed addresses.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..analysis.footprint import estimate_env, rdom_scope
from ..model import expr as E
from ..model.evaluate import evaluate
from ..model.visit import walk

SECTOR_BYTES = 32

__all__ = ["SECTOR_BYTES", "Site", "member_sites", "site_sectors", "site_context",
           "box_sectors", "active_warps", "store_site", "unrolled_loads", "vector_accesses",
           "shared_windows", "bank_ways", "VECTOR_BYTES"]

VECTOR_BYTES = 16           # the widest vector access (float4, int4, double2)


@dataclass(frozen=True)
class Site:
    """One access of a member's definition to a buffer: ``stage`` 0 the pure definition,
    k the k-th update; ``args`` its index expressions."""

    callee: str
    args: tuple
    stage: int
    is_store: bool = False
    # whether an index is computed from loaded data (a Call in it), found once
    data_dependent: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "data_dependent", any(
            isinstance(n, E.Call) for a in self.args for n in walk(a)))


def member_sites(problem, name: str) -> tuple:
    """Every distinct access (callee, index) of ``name``'s definitions, loads only."""
    cache = problem.memo("gpu_sites")
    hit = cache.get(name)
    if hit is None:
        out, seen = [], set()
        for k, d in enumerate(problem.definitions[name]):
            exprs = (d.value,) + tuple(d.args)
            for e in exprs:
                for c in walk(e):
                    if not isinstance(c, E.Call):
                        continue
                    key = (k, c.target.name, tuple(map(str, c.args)))
                    if key in seen or (k == 0 and c.target.name == name):
                        continue
                    seen.add(key)
                    out.append(Site(c.target.name, tuple(c.args), k))
        hit = cache[name] = tuple(out)
    return hit


def store_site(problem, name: str) -> Site:
    """The store of ``name``'s pure definition (at its own point; memoized per problem)."""
    cache = problem.memo("gpu_store_site")
    hit = cache.get(name)
    if hit is None:
        hit = cache[name] = Site(name, tuple(problem.func(name).pure.args), 0, True)
    return hit


def active_warps(bx, by, mx, my):
    """Warps of a ``bx`` x ``by`` block (x fastest) with a thread inside ``mx`` x ``my``
    (arrays allowed)."""
    if isinstance(bx, int) and isinstance(by, int) and isinstance(mx, int) \
            and isinstance(my, int):
        mx, my = min(mx, bx), min(my, by)
        if bx % 32 == 0:
            return my * -(-mx // 32)
        if 32 % max(bx, 1) == 0:
            return -(-my // max(1, 32 // max(bx, 1)))
        return -(-(max(my - 1, 0) * bx + mx) // 32)
    bx, by = np.asarray(bx, dtype=np.int64), np.asarray(by, dtype=np.int64)
    mx = np.minimum(np.asarray(mx, dtype=np.int64), bx)
    my = np.minimum(np.asarray(my, dtype=np.int64), by)
    rows_per_warp = np.maximum(1, 32 // np.maximum(bx, 1))
    whole_rows = (bx % 32 == 0)
    per_row = -(-mx // 32)
    # bx a multiple of 32: each row its own warps; bx dividing 32: warps of whole rows;
    # otherwise the threads of the member's rows, rounded up to warps
    general = -(-(np.maximum(my - 1, 0) * bx + mx) // 32)
    return np.where(whole_rows, my * per_row,
                    np.where(32 % np.maximum(bx, 1) == 0, -(-my // rows_per_warp), general))


def probe_env(problem, name: str, scope: dict) -> dict:
    """Values for evaluating ``name``'s indices: its pure Vars at the middle of its region
    rounded down to a multiple of ``cost_params.base_align`` (at its minimum if
    shorter), RVars at their minimum (``scope``), the Params and input extents the
    problem assumes."""
    cache = problem.memo("gpu_estimate_env")
    base = cache.get(None)
    if base is None:
        base = cache[None] = estimate_env(problem)
    env = dict(base)
    pure = [v.name for v in problem.func(name).pure.args]
    align = problem.spec.cost_params.base_align
    for v, (lo, hi) in zip(pure, problem.regions.get(name, ())):
        mid = (lo + (hi - lo) // 2) // align * align
        env[v] = mid if mid >= lo else lo
    for r, iv in scope.items():
        env[r] = iv.lo
    return env


def _strides(problem, callee: str):
    """(first index, stride in points) per dimension of ``callee``'s buffer: an input
    image from 0 over its estimated extents, a Func over its region."""
    sizes = problem.estimates.get(callee) if callee in problem.pipeline.images else None
    region = ([(0, int(n) - 1) for n in sizes] if sizes else problem.regions.get(callee))
    if region is None:
        return None, None
    los = [lo for lo, _ in region]
    strides, n = [], 1
    for lo, hi in region:
        strides.append(n)
        n *= hi - lo + 1
    return los, strides


def site_sectors(problem, name: str, site: Site, dims: tuple, bx: int, mx: int, my: int,
                 offset: tuple, y_step: int = 1, x_step: int = 1) -> float:
    """Sectors one warp instruction of ``site`` (in ``name``'s definitions) moves, for a
    block ``bx`` threads wide whose threads cover ``mx`` x ``my`` points of ``name`` in its
    pure dimensions ``dims`` (inner, outer or None); ``offset``: the member's first point
    relative to a multiple of ``cost_params.base_align`` in each of those dimensions (its halo);
    ``y_step``: points of the outer dimension between consecutive rows of threads,
    ``x_step`` of the inner dimension between consecutive threads of a row."""
    # a warp's lanes see at most min(bx, 32) points of a row and 32 // bx + 1 rows
    bx = int(bx)
    mx, my = min(int(mx), bx, 32), min(int(my), 31 // max(bx, 1) + 1)
    if my <= 1:
        y_step = 1
    key = (name, site, dims, bx, mx, my, offset, int(y_step), int(x_step))
    return _kept(problem, "gpu_site_sectors", key, (site_context(problem, name, site),),
                 lambda: _site_sectors(problem, name, site, dims, int(bx), int(mx), int(my),
                                       offset, int(y_step), int(x_step)))


def _kept(problem, memo: str, key: tuple, contexts: tuple, compute):
    """``compute()``, memoized in ``problem.memo(memo)`` under ``key`` and shared by
    problems (``_SHARED``) under it with the sites' ``site_context``s and the probe's
    cost parameters."""
    cache = problem.memo(memo)
    hit = cache.get(key)
    if hit is not None:
        return hit
    cp = problem.spec.cost_params
    shared = (memo, contexts, cp.base_align, cp.rows_averaged) + key
    hit = _SHARED.get(shared)
    if hit is None:
        hit = compute()
        if len(_SHARED) >= _SHARED_LIMIT:
            _SHARED.clear()
        _SHARED[shared] = hit
    cache[key] = hit
    return hit


# site_sectors' and vector_accesses' answers (``_kept``), shared by problems: those of
# one pipeline that differ only in other Funcs (another inlining choice) ask the same
# questions (see site_context)
_SHARED: dict = {}
_SHARED_LIMIT = 1 << 18


def site_context(problem, name: str, site: Site) -> tuple:
    """All that ``_site_sectors`` reads of ``problem`` for ``site`` of ``name``, besides the
    spec's ``cost_params`` (memoized per problem): ``name``'s pure Vars and region, the
    scope of the site's definition's RVars, the callee's region, estimated extents and
    point size, and the values of the Params and input extents."""
    cache = problem.memo("gpu_sector_context")
    key = (name, site.callee, site.stage)
    hit = cache.get(key)
    if hit is None:
        c = site.callee
        scope = rdom_scope(problem, problem.definitions[name][site.stage]) if site.stage else {}
        sizes = problem.estimates.get(c) if c in problem.pipeline.images else None
        hit = cache[key] = (
            name, tuple(v.name for v in problem.func(name).pure.args),
            problem.regions.get(name), tuple((r, iv.lo, iv.hi) for r, iv in scope.items()),
            c, None if sizes is None else tuple(int(n) for n in sizes),
            problem.regions.get(c), problem.bytes_per_point(c),
            tuple(sorted(estimate_env(problem).items())))
    return hit


def unrolled_loads(problem, name: str, which: tuple, steps: dict) -> float:
    """Loads one thread issues per point for the sites ``which`` (indices into
    ``member_sites(problem, name)``, of its pure definition) when it computes the points
    of an unrolled loop nest, ``steps`` {pure dimension: consecutive points}: the
    distinct addresses over those points (an index the probe cannot evaluate, or one
    computed from loaded data, counts at every point) over the points."""
    points = 1
    for n in steps.values():
        points *= max(1, int(n))
    if not which or points <= 1:
        return float(len(which))
    key = (name, tuple(which), tuple(sorted(steps.items())))
    cache = problem.memo("gpu_unrolled_loads")
    hit = cache.get(key)
    if hit is not None:
        return hit
    every = member_sites(problem, name)
    sites = [every[k] for k in which]
    pure = [v.name for v in problem.func(name).pure.args]
    env = probe_env(problem, name, {})
    grid = np.indices([max(1, int(n)) for n in steps.values()]).reshape(len(steps), -1)
    for d, offs in zip(steps, grid):
        env[pure[d]] = int(env[pure[d]]) + offs
    seen, opaque = set(), 0
    for s in sites:
        if s.data_dependent:
            opaque += points
            continue
        try:
            cols = [np.broadcast_to(np.asarray(evaluate(a, env), dtype=np.int64),
                                    (points,)).tolist() for a in s.args]
        except Exception:          # noqa: BLE001 -- an index the probe cannot evaluate
            opaque += points
            continue
        seen.update((s.callee,) + r for r in zip(*cols, [0] * points))
    hit = cache[key] = (len(seen) + opaque) / points
    return hit


def _lanes(bx: int, mx: int, my: int):
    lane = np.arange(32)
    tx, ty = lane % max(bx, 1), lane // max(bx, 1)
    keep = (tx < mx) & (ty < my)
    return tx[keep], ty[keep]


def _site_sectors(problem, name, site, dims, bx, mx, my, offset, y_step=1,
                  x_step=1) -> float:
    tx, ty = _lanes(bx, mx, my)
    if tx.size == 0:
        return 0.0
    total_sectors = _total_sectors(problem, site.callee)
    if total_sectors is None:
        return float(tx.size)
    if site.data_dependent:
        return float(min(tx.size, total_sectors))
    addr = _addresses(problem, name, site, dims, tx * x_step, ty, offset, y_step)
    if addr is None:
        return float(min(tx.size, total_sectors))
    return _distinct_sectors(addr * problem.bytes_per_point(site.callee))


def _total_sectors(problem, callee: str):
    """The sectors of ``callee``'s whole buffer (None: it has no region)."""
    los, strides = _strides(problem, callee)
    if los is None:
        return None
    size = 1
    for lo, hi in problem.regions[callee]:
        size *= hi - lo + 1
    return -(-size * problem.bytes_per_point(callee) // SECTOR_BYTES)


def _distinct_sectors(byte_addr) -> float:
    """The distinct sectors of each row of byte addresses (rows x lanes), averaged."""
    sectors = np.sort(byte_addr // SECTOR_BYTES, axis=1)
    return float(np.mean(1 + np.count_nonzero(np.diff(sectors, axis=1), axis=1)))


def _addresses(problem, name, site, dims, px, ty, offset, y_step=1):
    """The element offsets (in the callee's buffer) ``site`` reads from lanes whose points
    are ``px`` along the inner dimension and rows ``ty`` (times ``y_step``) along the
    outer, from the probe's base (``probe_env``), over ``rows_averaged`` rows (rows x
    lanes); None where the probe cannot evaluate an index."""
    los, strides = _strides(problem, site.callee)
    d = problem.definitions[name][site.stage]
    env = probe_env(problem, name, rdom_scope(problem, d) if site.stage else {})
    pure = [v.name for v in problem.func(name).pure.args]
    inner, outer = dims
    n_rows = problem.spec.cost_params.rows_averaged
    rows = np.arange(n_rows)[:, None]
    if inner is not None:
        env[pure[inner]] = int(env[pure[inner]]) + offset[0] + px[None, :]
    if outer is not None:
        env[pure[outer]] = int(env[pure[outer]]) + offset[1] + ty[None, :] * y_step + rows
    elif inner is not None:
        # one row tiled: the rows averaged are the next pure dimension's, if any
        nxt = next((pure[i] for i in range(len(pure)) if i != inner and i > inner), None)
        if nxt is not None:
            env[nxt] = int(env[nxt]) + rows
    try:
        addr = np.zeros((n_rows, px.size), dtype=np.int64)
        for a, lo, st in zip(site.args, los, strides):
            v = np.asarray(evaluate(a, env), dtype=np.int64)
            addr = addr + (np.broadcast_to(v, addr.shape) - lo) * st
    except Exception:          # noqa: BLE001 -- an index the probe cannot evaluate
        return None
    return addr


def vector_accesses(problem, name: str, sites: tuple, dims: tuple, bx: int, mx: int,
                    my: int, offset: tuple, lanes: int, y_step: int = 1) -> tuple:
    """(instructions, sectors) of one warp running ``name``'s vectorized loop of ``lanes``
    points a thread along the inner dimension (thread ``tx`` its points ``tx * lanes``
    ...) for the accesses ``sites`` (loads of its pure definition, or its store alone),
    the other arguments as ``site_sectors``'.  A site whose index advances one element
    a point, of a type ``lanes`` of which fit a vector, joins the other such sites of
    its buffer a constant apart in windows (``backend/cuda/vector.py``): each aligned
    run of ``lanes`` elements of a window one instruction, the others one each, the
    alignment that of the probed addresses.  Any other site is ``lanes`` scalar
    accesses (memoized per problem)."""
    # a warp's lanes are those of a block min(bx, 32) wide (a wider block's warp is one
    # row of it)
    bx = min(int(bx), 32)
    mx, my = min(int(mx), bx), min(int(my), 31 // max(bx, 1) + 1)
    if my <= 1:
        y_step = 1
    key = (name, tuple(sites), dims, bx, mx, my, offset, int(lanes), int(y_step))
    return _kept(problem, "gpu_vector_accesses", key,
                 tuple(site_context(problem, name, s) for s in sites),
                 lambda: _vector_accesses(problem, name, sites, dims, bx, mx, my, offset,
                                          int(lanes), int(y_step)))


def _vector_accesses(problem, name, sites, dims, bx, mx, my, offset, lanes, y_step):
    tx, ty = _lanes(bx, mx, my)
    if tx.size == 0:
        return 0.0, 0.0
    instructions = sectors = 0.0
    taps = []
    for site in sites:
        a0 = _dense(problem, name, site, dims, tx * lanes, ty, offset, y_step, lanes)
        if a0 is None:
            instructions += lanes
            sectors += sum(site_sectors(problem, name, site, dims, bx, mx, my,
                                        (offset[0] + j,) + tuple(offset[1:]), y_step, lanes)
                           for j in range(lanes))
        else:
            taps.append((problem.bytes_per_point(site.callee), site.callee, a0))
    for bpp, start, length in _windows(taps, lanes):
        i, s = _window(start, length, lanes, bpp)
        instructions += i
        sectors += s
    return instructions, sectors


def _dense(problem, name, site, dims, px, ty, offset, y_step, lanes):
    """The addresses (``_addresses``) of ``site`` where its index advances one element a
    point along the inner dimension and ``lanes`` of its elements fit a vector (a tap a
    vector loop reads in a window); else None."""
    bpp = problem.bytes_per_point(site.callee)
    if site.data_dependent or bpp * lanes > VECTOR_BYTES \
            or _total_sectors(problem, site.callee) is None:
        return None
    a0 = _addresses(problem, name, site, dims, px, ty, offset, y_step)
    a1 = _addresses(problem, name, site, dims, px + 1, ty, offset, y_step)
    if a0 is None or a1 is None or not np.all(a1 - a0 == 1):
        return None
    return a0


def _windows(taps, lanes: int):
    """The windows ``vector.py`` reads for the ``taps`` ((key, buffer, addresses) each):
    taps of one key and buffer a constant apart share a family, split into runs with no
    gap (a window reads only elements some tap reads); yields (key, the window's start
    addresses, its length)."""
    families: dict = {}                 # (key, buffer) -> [(addresses, {offsets})]
    for key, buf, a0 in taps:
        fam = families.setdefault((key, buf), [])
        for ref in fam:
            d = a0 - ref[0]
            if np.all(d == d.flat[0]):
                ref[1].add(int(d.flat[0]))
                break
        else:
            fam.append((a0, {0}))
    for (key, _), refs in families.items():
        for a0, offsets in refs:
            runs: list = []
            for c in sorted(offsets):
                if runs and c <= runs[-1][-1] + lanes:
                    runs[-1].append(c)
                else:
                    runs.append([c])
            for run in runs:
                yield key, a0 + run[0], run[-1] + lanes - run[0]


def bank_ways(lanes: int, bpp: int) -> int:
    """Shared-memory wavefronts of a warp's access whose lanes are ``lanes`` elements of
    ``bpp`` bytes apart (32 banks of 4 bytes): ``lanes`` words apart for 4-byte elements
    fall ``lanes`` to a bank; narrower elements share words."""
    return max(1, int(lanes) * int(bpp) // 4) // max(1, int(bpp) // 4) if lanes > 1 else 1


def shared_windows(problem, name: str, sites: tuple, dims: tuple, lanes: int) -> tuple:
    """(instructions, wavefronts) of one warp step of ``name``'s vectorized loop of
    ``lanes`` points a thread (``vector_accesses``) for its loads ``sites`` of buffers in
    shared memory.  Windows as ``vector_accesses``'; each piece of one (a vector, or one
    element) costs ``bank_ways`` wavefronts: 32 lanes' vectors move ``lanes`` times 128
    bytes, and single elements ``lanes`` apart fall that many to a bank.  A window's
    alignment in the block's buffer is not known here: its pieces are averaged over the
    alignments.  Any other site is ``lanes`` single elements; ``dims`` as
    ``site_sectors``' (memoized per problem)."""
    key = (name, tuple(sites), dims, int(lanes))
    cache = problem.memo("gpu_shared_windows")
    hit = cache.get(key)
    if hit is not None:
        return hit
    zero = np.zeros(1, dtype=np.int64)
    instructions = wavefronts = 0.0
    taps = []
    for site in sites:
        ways = bank_ways(lanes, problem.bytes_per_point(site.callee))
        a0 = _dense(problem, name, site, dims, zero, zero, (0, 0), 1, lanes)
        if a0 is None:
            instructions += lanes
            wavefronts += lanes * ways
        else:
            taps.append((ways, site.callee, a0))
    for ways, _, length in _windows(taps, lanes):
        pieces = sum(_pieces(m, length, lanes) for m in range(lanes)) / lanes
        instructions += pieces
        wavefronts += pieces * ways
    hit = cache[key] = (instructions, wavefronts)
    return hit


def _piece_runs(misaligned: int, length: int, lanes: int):
    """The accesses ``ts_vload`` makes of a window of ``length`` elements whose start is
    ``misaligned`` elements past an aligned address, as (first element, elements): from
    each element, a vector where the address is a multiple of ``lanes`` elements and a
    whole vector remains, else one element."""
    o = 0
    while o < length:
        n = lanes if (misaligned + o) % lanes == 0 and o + lanes <= length else 1
        yield o, n
        o += n


def _pieces(misaligned: int, length: int, lanes: int) -> int:
    """How many accesses ``_piece_runs`` makes."""
    return sum(1 for _ in _piece_runs(misaligned, length, lanes))


def _window(start, length: int, lanes: int, bpp: int) -> tuple:
    """(instructions, sectors) of a warp reading ``length`` elements from each lane's
    ``start`` (element offsets, rows x lanes) as ``ts_vload`` does (``_piece_runs``),
    averaged over the rows."""
    instr = sec = 0.0
    misaligned = start[:, 0] % lanes
    for m in np.unique(misaligned):
        rows = start[misaligned == m]
        for o, n in _piece_runs(int(m), length, lanes):
            addr = (rows[:, :, None] + o + np.arange(n)).reshape(len(rows), -1)
            sec += _distinct_sectors(addr * bpp) * len(rows)
            instr += len(rows)
    return instr / len(start), sec / len(start)


def box_sectors(problem, callee: str, box_extents) -> np.ndarray:
    """Sectors a box of ``callee`` with extents ``box_extents`` (per dimension, arrays over
    tilings) spans: each row (innermost dimension) from an offset that is a multiple of
    the point size, so a row of ``w`` points takes ``(w * bytes + 31) / 32`` sectors plus
    one more for the rows that straddle (on average ``(w * bytes - 1) mod 32 / 32``)."""
    bpp = problem.bytes_per_point(callee)
    ext = [np.asarray(e, dtype=np.float64) for e in box_extents]
    if not ext:
        return np.asarray(1.0)
    row_bytes = ext[0] * bpp
    per_row = (row_bytes + SECTOR_BYTES - bpp) / SECTOR_BYTES
    rows = np.ones_like(per_row)
    for e in ext[1:]:
        rows = rows * e
    return np.maximum(per_row, 1.0) * rows
