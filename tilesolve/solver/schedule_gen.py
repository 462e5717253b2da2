"""From chosen columns (group, tiling) to a Schedule, the same for every solver.

Per group (Mullapudi 2016 §4.4, Sioutas 2020 §4.3):

CPU
* the output is computed at root; tiled dimensions are split into outer and
  inner loops, the inner tile loops innermost (input locality), untiled
  dimensions inside the tile; the outer tile loops are fused into one loop
  and run in parallel (enough tiles was a constraint of the column);
* an untiled output runs its outermost non-trivial dimension in parallel;
* the innermost dimension of every member and output is vectorized by the
  spec's vector width (lanes for the Func's type);
* producers in the group are computed at the fused tile loop of the output; a
  producer's short dimension whose Var picks a select's branch or a callee's plane
  (subbands, Bayer channels: ``_unroll_steering``) goes just outside its vector loop,
  unrolled;
* update stages: their innermost pure dimension is vectorized and, for root
  Funcs, their outermost pure dimension parallelized, where legal.
GPU
* the output's tiled dimensions become blocks and threads (``gpu_tile``);
  producers are computed per block, stored in shared memory, with their
  tiled dimensions as threads;
* a producer the cost model spreads over the block's threads (``GpuCost.spread``: a
  half-resolution member of a full-resolution block, a halo wider than the block) has
  its tiled loops fused and split by the block's threads (``_spread_member``);
* the pure loops left outside a kernel's block loops become block dimensions
  too (fused into the third where there are more): a loop left there would run
  on the host and launch the kernel once per iteration (nl_means launched
  658,045 kernels a realize before this rule).

Directives that the Schedule rejects as illegal (for instance vectorizing a
pure dimension an update reads across) are skipped, never forced.
"""
from __future__ import annotations

import math

from ..errors import ScheduleError
from ..model import expr as E
from ..model.schedule import Schedule
from ..model.schedule_io import replay
from ..model.visit import children, post_order
from .space import Group


def _try(fn, *args, **kw):
    try:
        fn(*args, **kw)
        return True
    except ScheduleError:
        return False


def _lanes(problem, name) -> int:
    return problem.spec.vector_lanes(problem.bytes_per_point(name))


def _vectorize_inner(problem, h, name, var, extent) -> bool:
    lanes = _lanes(problem, name)
    return lanes >= 2 and extent >= lanes and _try(h.vectorize, var, lanes)


def _steering_dims(problem, name, region) -> list:
    """The pure dimensions of ``name`` past the innermost, each of an extent from 2 to
    ``unroll_select_extent`` that no run-time value changes (subbands; not the colour
    channels of an image whose channel count is a run-time size), whose Var steers the
    definition: it appears in a select's condition or in a callee's index other than as
    itself (``c % 2``, ``c + 2``, ``c / 2``), or the definition holds at least
    ``unroll_shared_ops`` operations that do not depend on it (bgu's slice: the grid
    coordinates of both output planes), which the unrolled copies compute once.  Empty
    for a Func with updates."""
    limit = problem.spec.cost_params.unroll_select_extent
    f = problem.func(name)
    if limit < 2 or f.updates:
        return []
    names = {v.name: d for d, v in enumerate(f.pure.args)}
    short = {n for n, d in names.items()
             if d and 2 <= region[d][1] - region[d][0] + 1 <= limit}
    if short:       # constant: the same in copies of the problem with run-time values moved
        ext = [{n: r[names[n]][1] - r[names[n]][0] for n in short}
               for r in (problem.moved(k).regions[name] for k in (2, 3))]
        short = {n for n in short if ext[0][n] == ext[1][n]
                 == region[names[n]][1] - region[names[n]][0]}
    if not short:
        return []
    value = problem.definitions[name][0].value
    order = list({id(n): n for v in (value if isinstance(value, tuple) else (value,))
                  for n in post_order(v)}.values())
    uses: dict = {}                  # node id -> the Var names under it, operands first
    for e in order:
        uses[id(e)] = (frozenset((e.name,)) if isinstance(e, E.Var) else
                       frozenset().union(*(uses[id(c)] for c in children(e))))
    steer = set()
    for e in order:
        if isinstance(e, E.Select):
            steer |= uses[id(e.cond)]
        elif isinstance(e, E.Call):
            steer |= {v for a in e.args if not isinstance(a, E.Var) for v in uses[id(a)]}
    ops = [e for e in order if isinstance(e, (E.BinOp, E.Cast, E.Intrinsic, E.Select, E.Not))]
    for n in short - steer:          # work that is the same in every copy, computed once
        if sum(n not in uses[id(e)] for e in ops) >= problem.spec.cost_params.unroll_shared_ops:
            steer.add(n)
    return sorted(names[n] for n in short & steer)


def _unroll_steering(problem, h, name, region, vectorized: bool) -> None:
    """Move the steering dimensions of a group member (``_steering_dims``) just outside
    its vector loop and unroll them, as Adams 2019's schedules unroll a subband or colour
    dimension: each copy then folds the selects its Var picks, and the copies share the
    loads they have in common (haar's two columns of one input pair)."""
    dims = _steering_dims(problem, name, region)
    if not dims:
        return
    args = [v.name for v in problem.func(name).pure.args]
    first = args[0]
    order = ([f"{first}_v"] if vectorized else []) + \
        [args[d] for d in dims] + [a for d, a in enumerate(args) if d not in dims]
    if _try(h.reorder, *order):
        for d in dims:
            _try(h.unroll, args[d])


def _schedule_updates(problem, s, name, root: bool, extents=None, skip: int = 0) -> None:
    """Update stages: register-blocked where the cost model blocks them
    (``register_block``; ``extents``: the region the updates run over, per
    dimension: the member's per-tile region, or the whole region at root),
    else the innermost pure dimension vectorized and, at root, the outermost
    parallel (the vectors of the only one, ``_parallel_vectors``)."""
    f = problem.func(name)
    region = problem.regions[name]
    if extents is None:
        extents = [hi - lo + 1 for lo, hi in region]
    infos = problem.stage_info[name][1]
    for i, u in enumerate(f.updates):
        if i + 1 == skip:
            continue        # tiled by the caller (``_tile_update``)
        if infos[i].block is not None and _block_update(problem, s, name, i, infos[i], root,
                                                        extents):
            continue
        pure = [a.name for a in u.args if hasattr(a, "name") and a.name in {v.name for v in f.pure.args}
                and a.__class__.__name__ == "Var"]
        if not pure:
            continue
        h = s[name].update(i)
        idx = [v.name for v in f.pure.args].index(pure[0])
        if root and len(pure) > 1 and _parallel_root_update(problem, s, name, i, pure, extents):
            continue
        _vectorize_inner(problem, h, name, pure[0], region[idx][1] - region[idx][0] + 1)
        if root and len(pure) > 1:
            _try(h.parallel, pure[-1])
        elif root and problem.spec.cost_params.parallel_root_vectors:
            _parallel_vectors(problem, h, name, pure[0], extents[idx])


def _parallel_vectors(problem, h, name, var, extent) -> None:
    """A root update with one pure dimension (a histogram's rows: ``h[bin(r), y]``)
    is parallel over that dimension's vectors when there are at least two per
    worker: each vector writes its own points."""
    from .cost_terms import workers
    lanes = max(1, _lanes(problem, name))
    if extent >= lanes and extent // lanes >= 2 * workers(problem.spec):
        _try(h.parallel, var)


def _parallel_root_update(problem, s, name, i, pure, extents) -> bool:
    """A root update whose last pure dimension has too few points to fill the cores
    evenly (``cost_terms.root_update_chunks``): its vector dimension is cut into that
    many chunks, fused with the last dimension into one parallel loop.  False (nothing
    done) when no chunking helps or a directive is refused."""
    from .cost_terms import root_update_chunks, workers
    names = [v.name for v in problem.func(name).pure.args]
    ex, el = extents[names.index(pure[0])], extents[names.index(pure[-1])]
    lanes = _lanes(problem, name)
    k = root_update_chunks(problem.spec.cost_params, ex, int(el), lanes, workers(problem.spec))
    if k <= 1:
        return False
    chunk = math.ceil(math.ceil(ex / lanes) / k) * lanes
    xo, xi, fused = f"{pure[0]}_o", f"{pure[0]}_i", f"{pure[0]}_{pure[-1]}"

    def apply(h):
        return (_try(h.split, pure[0], xo, xi, chunk)
                and _try(h.reorder, *pure[1:-1], xo, pure[-1])
                and _try(h.fuse, xo, pure[-1], fused) and _try(h.parallel, fused)
                and (lanes < 2 or _try(h.vectorize, xi, lanes)))
    if not apply(s.copy()[name].update(i)):
        return False
    return apply(s[name].update(i))


def _tile_loops(h, names, tiled, sizes, innermost=()) -> tuple:
    """Split the ``tiled`` dimensions of stage handle ``h`` by ``sizes``, order the loops
    ``innermost`` (RDom loops), the inner tile loops, the untiled dimensions, then the
    outer tile loops, fuse the outer ones into one loop (``tile`` when several) and run
    it in parallel.  Returns (inner loop names, the parallel loop's name)."""
    inner_names, outer_names = [], []
    for i in tiled:
        o, n_ = f"{names[i]}o", f"{names[i]}i"
        h.split(names[i], o, n_, sizes[i])
        inner_names.append(n_)
        outer_names.append(o)
    untiled = [names[i] for i in range(len(names)) if i not in tiled]
    h.reorder(*(list(innermost) + inner_names + untiled + outer_names))
    tile_var = outer_names[0]
    if len(outer_names) > 1:
        tile_var = "tile"
        cur = outer_names[0]
        for k, o in enumerate(outer_names[1:]):
            fused = "tile" if k == len(outer_names) - 2 else f"{cur}_{o}"
            h.fuse(cur, o, fused)
            cur = fused
    h.parallel(tile_var)
    return inner_names, tile_var


def _tile_update(problem, s, out, k, tiled, tiling, names, inner_x, inner_e) -> None:
    """Tile update ``k`` of the group output as its pure stage is tiled (same splits,
    the outer tile loops fused into one parallel loop named as the pure stage's), its
    RDom loops innermost, so that members read only by this update are computed per
    tile of it (``Problem.member_stage``)."""
    h = s[out].update(k - 1)
    d = problem.func(out).updates[k - 1]
    rvars = [rv.name for rv in d.rdom.rvars()] if d.rdom is not None else []
    _tile_loops(h, names, tiled, tiling.sizes, rvars)
    info = problem.stage_info[out][1][k - 1]
    if info.block is not None and info.block.x_dim == 0:
        from .register_block import x_only
        blk = x_only(info.block, inner_x)
        if _block_update(problem, s, out, k - 1, info, False, [inner_e], blk):
            return
    _vectorize_inner(problem, h, out, inner_x, inner_e)


def _block_update(problem, s, name, i, info, root, extents, blk=None) -> bool:
    """Register-block update ``i`` as the cost model would (``blk``: the block's
    shape when not ``info.block``'s); False if it would not."""
    from .cost_terms import block_choice, l2_bytes, lane_utilization, vector_registers
    from .register_block import emit, k_block, x_inside
    cp = problem.spec.cost_params
    lanes = _lanes(problem, name)
    blk = blk or info.block
    util = float(lane_utilization(extents[info.vector_dim], lanes))
    e_y = extents[blk.y_dim] if blk.y_dim is not None else 1
    _, nb, by, *_ = block_choice(problem.spec, info, lanes, util, extents[blk.x_dim], e_y, blk)
    nb, by = int(nb), int(by)
    if nb <= 0:
        return False
    trial = s.copy()
    regs = vector_registers(problem.spec)
    kb = k_block(cp, blk, info.inner_extent)
    x_in = bool(kb) and blk.y is not None and x_inside(
        cp, kb, extents[blk.x_dim], e_y, problem.bytes_per_point(name), l2_bytes(problem.spec))
    # no row loop to run in parallel: the x blocks are the tasks, when there are enough
    par_x = root and blk.y is None and not blk.others and (
        extents[blk.x_dim] // (nb * lanes) >= (problem.spec.parallelism_threshold or 2))
    args = (blk, nb, by, lanes, info.inner_extent, root, _try, regs, x_in, par_x)
    if not emit(cp, trial[name].update(i), *args):
        return False
    emit(cp, s[name].update(i), *args)
    return True


def _enough_tasks(problem, h, names, region, nontrivial) -> str:
    """The loop to run in parallel for an untiled stage: its outermost non-trivial
    dimension, fused with the next one (not the vectorized innermost) while it has
    fewer iterations than the spec's ``parallelism_threshold`` (two channels give two
    tasks; two channels by their rows, enough)."""
    outer = nontrivial[-1]
    var, tasks = names[outer], region[outer][1] - region[outer][0] + 1
    for inner in reversed(nontrivial[1:-1] if nontrivial[0] == 0 else nontrivial[:-1]):
        if tasks >= (problem.spec.parallelism_threshold or 1):
            break
        fused = f"{names[inner]}_{var}"
        if not _try(h.fuse, names[inner], var, fused):
            break
        var, tasks = fused, tasks * (region[inner][1] - region[inner][0] + 1)
    return var


def _cpu_group(problem, s, group, tiling) -> None:
    out = group.output
    f = problem.func(out)
    names = [v.name for v in f.pure.args]
    region = problem.regions[out]
    h = s[out]
    h.compute_root()
    tiled = [i for i, t in enumerate(tiling.sizes) if t is not None]
    if not tiled:
        nontrivial = [i for i, (lo, hi) in enumerate(region) if hi > lo]
        _vectorize_inner(problem, h, out, names[0], region[0][1] - region[0][0] + 1)
        if nontrivial and nontrivial[-1] != 0:
            _try(h.parallel, _enough_tasks(problem, h, names, region, nontrivial))
        _schedule_updates(problem, s, out, True)
        return
    inner_names, tile_var = _tile_loops(h, names, tiled, tiling.sizes)
    inner_x = inner_names[0] if tiled[0] == 0 else names[0]
    inner_e = tiling.sizes[0] if tiled[0] == 0 else region[0][1] - region[0][0] + 1
    _vectorize_inner(problem, h, out, inner_x, inner_e)
    stage_of = {m: problem.member_stage(m, out) for m in group.producers()}
    k = max(stage_of.values(), default=0)
    _schedule_updates(problem, s, out, True, skip=k)
    if k:
        _tile_update(problem, s, out, k, tiled, tiling, names, inner_x, inner_e)
    facts = None
    for m in sorted(group.producers()):
        hm = s[m]
        if stage_of[m]:
            hm.compute_at(out, tile_var, update=stage_of[m] - 1)
        else:
            hm.compute_at(out, tile_var)
        mf = problem.func(m)
        mreg = problem.regions[m]
        vec = _vectorize_inner(problem, hm, m, mf.pure.args[0].name, mreg[0][1] - mreg[0][0] + 1)
        _unroll_steering(problem, hm, m, mreg, vec)
        extents = None
        if mf.updates:
            if facts is None:
                from ..analysis.footprint import MenuFacts, box_extents
                facts = MenuFacts(problem, out, [tiling.sizes]).group(group.members)
            extents = [float(e[0]) for e in box_extents(facts.member_regions[m])]
        _schedule_updates(problem, s, m, False, extents)


def _gpu_group(problem, s, group, tiling, forced=frozenset(), model=None,
               unstaged=frozenset()) -> None:
    out = group.output
    f = problem.func(out)
    names = [v.name for v in f.pure.args]
    tiled = [i for i, t in enumerate(tiling.sizes) if t is not None][:2]
    h = s[out]
    h.compute_root()
    if not tiled:   # an infeasible fallback column: one warp per block along x
        tiling = type(tiling)((problem.spec.warp_size,) + tuple(tiling.sizes[1:]))
        tiled = [0]
    whole = [i for i in range(max(tiled) + 1, len(names)) if tiling.sizes[i] is not None]
    serial = {i: tiling.serial_of(i) for i in tiled if tiling.serial_of(i) > 1}
    if serial or whole:
        block_var = _gpu_thread_tile(h, names, tiled, tiling, serial, whole)
    elif len(tiled) == 2:
        a, b = tiled
        h.gpu_tile(names[a], names[b], f"{names[a]}o", f"{names[b]}o", f"{names[a]}i",
                   f"{names[b]}i", tiling.sizes[a], tiling.sizes[b])
        block_var = f"{names[a]}o"
    else:
        a = tiled[0]
        h.gpu_tile(names[a], f"{names[a]}o", f"{names[a]}i", tiling.sizes[a])
        block_var = f"{names[a]}o"
    _host_loops_on_blocks(problem, s, out, 0)
    _gpu_updates(problem, s, out, [names[i] for i in tiled])
    # what one block covers: its tile in the tiled dimensions and the dimensions run
    # whole in each thread, one point in the dimensions whose loops stay outside the
    # block loops, everything in the others
    block = [tiling.sizes[i] if i in tiled[:2] or i in whole
             else (1 if i > max(tiled) else None) for i in range(len(names))]
    at_root = _runtime_sized(problem, group, block) | (set(forced) & group.producers())
    spread, threads_xy, staged, in_registers = _gpu_mapping(problem, model, group, tiling,
                                                            at_root)
    a = tiled[0]
    thread_var = f"{names[a]}t" if a in serial else f"{names[a]}i"
    for m in sorted(group.producers()):
        hm = s[m]
        mn = [v.name for v in problem.func(m).pure.args]
        if m in in_registers and m not in at_root and (serial or whole):
            # each thread computes the points its own serial tile reads, in registers
            # (inside the thread loops, around the unrolled serial loop)
            hm.compute_at(out, thread_var)
            continue
        if m in at_root:
            # no constant-size shared buffer can hold its tile: a kernel of its own, in
            # blocks of cost_params.root_block_rows warps (a warp of x by that many rows
            # of y: one-warp blocks leave most of an SM's block slots to launch overhead)
            hm.compute_root()
            d, rows = problem.spec.warp_size, problem.spec.cost_params.root_block_rows
            two = len(mn) >= 2 and _try(hm.gpu_tile, mn[0], mn[1], f"{mn[0]}o", f"{mn[1]}o",
                                        f"{mn[0]}i", f"{mn[1]}i", d, rows)
            if two or _try(hm.gpu_tile, mn[0], f"{mn[0]}o", f"{mn[0]}i", d * rows):
                _host_loops_on_blocks(problem, s, m, 0)
            _gpu_updates(problem, s, m, mn[:2] if two else mn[:1], tile=None if two else d)
            continue
        hm.compute_at(out, block_var)
        hm.store_in("shared")
        if m in spread and _spread_member(s, m, mn, tiled, threads_xy, spread[m]):
            continue
        threads = [mn[i] for i in tiled if i < len(mn)]
        if serial or whole:
            threads = _serial_member(hm, mn, tiled, serial)
        _try(hm.gpu_threads, *threads)
        _gpu_updates(problem, s, m, [mn[i] for i in tiled if i < len(mn)], threads_only=True,
                     serial={mn[i]: t for i, t in serial.items() if i < len(mn)})
    for c in staged:
        _stage_input(problem, s, group, c, out, block_var, tiled, threads_xy, unstaged)


def _gpu_thread_tile(h, names, tiled, tiling, serial, whole) -> str:
    """The output's block / thread / serial loops (``gpu_tile`` with a serial tile inside
    each thread): each tiled dimension ``x`` split into ``xo`` (a block dimension) and
    ``xi``; a dimension with a serial factor ``t`` (``serial``) its ``xi`` split again
    into ``xt`` (threads) and ``xs`` (``t`` points, unrolled; vectorized along the inner
    dimension, ``tilings``); each dimension in
    ``whole`` split by its tile extent into ``co`` (left on the grid, one block where the
    extent is as estimated) and ``ci`` (unrolled inside the thread, guarded).  Loops
    innermost first: the serial ones (no guard of a whole dimension between their
    points, so nvcc keeps the loads they share in registers), the whole dimensions, the
    threads, the blocks.  Returns the innermost block loop's name."""
    threads, blocks, unrolled = [], [], []
    vector = None
    for i in tiled:
        x = names[i]
        h.split(x, f"{x}o", f"{x}i", tiling.sizes[i])
        blocks.append(f"{x}o")
        if i in serial:
            h.split(f"{x}i", f"{x}t", f"{x}s", serial[i])
            threads.append(f"{x}t")
            unrolled.append(f"{x}s")
            if i == tiled[0]:
                vector = f"{x}s"
        else:
            threads.append(f"{x}i")
    inner = []
    for i in whole:
        c = names[i]
        h.split(c, f"{c}o", f"{c}i", tiling.sizes[i], tail="guard_with_if")
        inner.append(f"{c}i")
    h.reorder(*(unrolled + inner + threads + blocks))
    h.gpu_blocks(*blocks)
    h.gpu_threads(*threads)
    for v in inner + unrolled:
        if v == vector:
            h.vectorize(v)
        else:
            h.unroll(v)
    return blocks[0]


def _serial_member(hm, mn, tiled, serial) -> list:
    """A producer computed per block of a serial tile: its dimension ``x`` with serial
    factor ``t`` split into ``x`` (threads) and ``xs`` (``t`` points a thread, guarded at
    the region's end); its loops innermost first: the serial ones, its other pure
    dimensions (a short run each, the output's points a block covers), the thread
    loops.  Returns the thread loops' names."""
    threads, inner = [], []
    for i in tiled:
        if i >= len(mn):
            continue
        threads.append(mn[i])
        if i in serial:
            hm.split(mn[i], mn[i], f"{mn[i]}s", serial[i], tail="guard_with_if")
            inner.append(f"{mn[i]}s")
    rest = [v for k, v in enumerate(mn) if k not in tiled]
    _try(hm.reorder, *(inner + rest + threads))
    return threads


def _gpu_mapping(problem, model, group, tiling, at_root) -> tuple:
    """How the cost model maps the producers of ``group`` (less those ``at_root``) onto
    the threads of a block of ``tiling``: ({producer spread over the block's threads: its
    serial run}, the block's threads (x, y), the buffers staged in shared memory, the
    producers each thread computes in registers) (``cost_gpu._main_kernel``)."""
    from .cost import CostModel
    if model is None or model.problem is not problem:
        model = CostModel(problem)
    rest = Group(group.output, frozenset(group.members - set(at_root)))
    gpu = model.cost(rest, tiling).gpu
    if gpu is None or len(gpu.block) < 2:
        return {}, None, (), ()
    return dict(gpu.spread), tuple(gpu.block[:2]), tuple(gpu.staged), tuple(gpu.in_registers)


def _stage_input(problem, s, group, c, out, block_var, tiled, threads_xy,
                 unstaged=frozenset()) -> bool:
    """Buffer ``c`` staged in shared memory for a kernel of ``group`` (the cost model's
    ``staged``): a wrapper (``Schedule.wrap``) for the Funcs whose calls the kernel
    redirects (``cost_gpu.staging_consumers``), computed at the block loop ``block_var``
    of ``out`` in shared memory and spread over the block's ``threads_xy`` threads
    (``_spread_member``).  False (nothing done) where the Schedule refuses a step or
    the wrapper is one of ``unstaged`` (lowering found no constant size for it)."""
    from ..model.wrap import wrapper_name
    from .cost_gpu import staging_consumers
    consumers = staging_consumers(problem, group, c)
    if consumers is None or threads_xy is None or wrapper_name(c, consumers) in unstaged:
        return False

    def apply(t):
        try:
            w = t.wrap(c, list(consumers))
        except ScheduleError:
            return False
        name = wrapper_name(c, consumers)
        args = [v.name for v in t.view.func(name).pure.args]
        return (_try(w.compute_at, out, block_var) and _try(w.store_in, "shared")
                and _spread_member(t, name, args, tiled, threads_xy, 1))
    if not apply(s.copy()):
        return False
    return apply(s)


def _spread_member(s, m, mn, tiled, threads_xy, run) -> bool:
    """A producer computed per block spread over all the block's ``threads_xy`` threads
    (the cost model's mapping for a member whose region is smaller or larger than the
    block): its tiled dimensions ``x``, ``y`` (``y`` first split into runs of ``run``
    points a thread, guarded) fused into one loop, split by the block's threads in x then
    in y, the rest of it a serial loop of steps in each thread; loops innermost first: the
    run, its other pure dimensions, the steps, the threads.  False (nothing done) where
    the Schedule refuses a directive.  A buffer with only the first of the tiled
    dimensions (a staged lookup table) spreads that one alone."""
    x = mn[tiled[0]]
    y = mn[tiled[1]] if tiled[1] < len(mn) else None
    f = f"{x}_{y}" if y is not None else x
    rest = [v for k, v in enumerate(mn) if k not in tiled]

    def apply(h):
        inner = []
        if run > 1 and y is not None:
            if not _try(h.split, y, y, f"{y}s", run, tail="guard_with_if"):
                return False
            inner = [f"{y}s"]
        return (_try(h.reorder, *(inner + [v for v in (x, y) if v is not None] + rest))
                and (y is None or _try(h.fuse, x, y, f))
                and _try(h.split, f, f"{f}_o", f"{f}_i", threads_xy[0], tail="guard_with_if")
                and _try(h.split, f"{f}_o", f"{f}_n", f"{f}_t", threads_xy[1],
                         tail="guard_with_if")
                and _try(h.reorder, *(inner + rest + [f"{f}_n", f"{f}_i", f"{f}_t"]))
                and _try(h.gpu_threads, f"{f}_i", f"{f}_t"))
    if not apply(s.copy()[m]):
        return False
    return apply(s[m])


def _gpu_updates(problem, s, name, dims, tile=None, threads_only=False, serial=None) -> None:
    """Each update stage runs its pure dimensions among ``dims`` on GPU threads (and,
    for a root Func, blocks) rather than on one thread: where the update's site is
    those pure Vars, distinct threads write distinct points (no race).  ``serial``:
    {dimension: points a thread computes} of a producer in a serial tile (its update
    split as its pure stage is, ``_serial_member``)."""
    f = problem.func(name)
    for i, d in enumerate(f.updates):
        pure = [a.name for a in d.args if isinstance(a, E.Var)]
        mine = [v for v in dims if v in pure]
        if not mine:
            continue
        h = s[name].update(i)
        if threads_only:
            for v in mine[:2]:
                t = (serial or {}).get(v, 1)
                if t > 1 and _try(h.split, v, v, f"{v}s", t, tail="guard_with_if"):
                    _try(h.reorder, f"{v}s", *mine[:2])
            _try(h.gpu_threads, *mine[:2])
            continue
        if len(mine) >= 2 and tile is None:
            a, b = mine[:2]
            done = _try(h.gpu_tile, a, b, f"{a}o", f"{b}o", f"{a}i", f"{b}i",
                        *problem.spec.cost_params.update_block)
        else:
            done = _try(h.gpu_tile, mine[0], f"{mine[0]}o", f"{mine[0]}i",
                        tile or problem.spec.warp_size)
        if done:
            _host_loops_on_blocks(problem, s, name, i + 1)


MAX_GRID_YZ = 65535        # CUDA's limit on a grid's y and z dimensions (x: 2**31 - 1)


def _host_loops_on_blocks(problem, s, name, stage) -> None:
    """Map the serial pure loops outside ``name``'s (stage ``stage``) GPU block loops to
    block dimensions, fusing the outermost into the last one past 3 in all; each
    directive Schedule refuses (an update that reads across that loop) is skipped.
    Where a block dimension's estimated extent passes ``MAX_GRID_YZ``, the loops
    stay where they are (the grid could not be launched)."""
    h = s[name] if stage == 0 else s[name].update(stage - 1)
    dims = s.func_schedule(name).stages[stage].dims          # innermost first
    blocks = [k for k, d in enumerate(dims) if d.kind == "gpu_block"]
    if not blocks:
        return
    outer = dims[max(blocks) + 1:]
    if not outer or any(d.kind != "serial" or d.is_rvar for d in outer):
        return
    outer = [d.var for d in outer]
    free = 3 - len(blocks)
    if free <= 0:
        return
    pure = [v.name for v in problem.func(name).pure.args]
    region = problem.regions.get(name)

    def extent(v):
        if region is None or v not in pure:
            return None
        lo, hi = region[pure.index(v)]
        return hi - lo + 1
    sizes = [extent(v) for v in outer]
    while len(outer) > free:                 # fuse the two outermost
        a, b = outer[-2], outer[-1]
        if not _try(h.fuse, a, b, f"{a}_{b}"):
            return
        outer[-2:] = [f"{a}_{b}"]
        sizes[-2:] = [None if None in sizes[-2:] else sizes[-2] * sizes[-1]]
    if any(n is None or n > MAX_GRID_YZ for n in sizes):
        return
    _try(h.gpu_blocks, *outer)


def _moved_tile_facts(problem, group, block):
    """The tile facts of a block of ``group`` in two copies of the problem with the
    run-time values (image sizes, Params) moved (None where a region has no bound): an
    extent that differs between them depends on run-time values."""
    from ..analysis.footprint import interior_tile, tile_facts
    cache = problem.memo("gpu_moved_tile_facts")
    key = (group, tuple(block))
    if key not in cache:
        try:
            facts = []
            for k in (2, 3):
                moved = problem.moved(k)
                tile = interior_tile(moved.regions[group.output], block)
                facts.append(tile_facts(moved, group, tile))
            cache[key] = facts
        except Exception:          # noqa: BLE001 -- a region with no bound: all are suspect
            cache[key] = None
    return cache[key]


def _changing(regions: list, names) -> set:
    """Of ``names``, those whose box differs in extent between the ``regions`` dicts."""
    ext = [{m: tuple(hi - lo for lo, hi in r[m]) if m in r else None for m in names}
           for r in regions]
    return {m for m in names if ext[0][m] != ext[1][m]}


def _runtime_sized(problem, group, block) -> set:
    """Producers of ``group`` whose per-block region depends on run-time values (image
    sizes, Params), with the producers they read (``_moved_tile_facts``).  A
    constant-size shared buffer cannot hold them (lowering would refuse
    ``store_in("shared")``)."""
    producers = group.producers()
    if not producers:
        return set()
    facts = _moved_tile_facts(problem, group, block)
    if facts is None:
        return set(producers)
    return _with_callees(problem, producers,
                         _changing([f.member_regions for f in facts], producers))


def runtime_sized_inputs(problem, group, block) -> set:
    """The buffers outside ``group`` whose box a block reads depends on run-time values
    (all of them where a region has no bound): no constant-size shared buffer stages
    them."""
    facts = _moved_tile_facts(problem, group, block)
    if facts is None:
        return None
    names = set(facts[0].input_regions) | set(facts[1].input_regions)
    return _changing([f.input_regions for f in facts], names)


def _with_callees(problem, members, names) -> set:
    """``names`` with the ``members`` they read, transitively: a root Func cannot read
    what is computed per block of its consumer."""
    out, grow = set(names), list(names)
    while grow:
        m = grow.pop()
        for c in problem.callees.get(m, ()):
            if c in members and c not in out:
                out.add(c)
                grow.append(c)
    return out


def in_group_callees(problem, columns, name) -> set:
    """``name`` with the producers of its group that it reads (to compute at root)."""
    for group, _tiling, _cost in columns:
        if name in group.producers():
            return _with_callees(problem, group.producers(), {name})
    return {name}


def apart_terms(model, group) -> dict | None:
    """The cost terms of ``group``'s members, each a group of its own at its cheapest
    tiling, summed (None where one has no feasible tiling): what fusing them saves."""
    out: dict = {}
    for m in group.members:
        best = model.best(Group.singleton(m))
        if best is None:
            return None
        for k, v in best[1].terms().items():
            out[k] = out.get(k, 0.0) + v
    return out


def schedule_from_columns(problem, columns, provenance, at_root=frozenset(),
                          model=None, unstaged=frozenset()) -> Schedule:
    """A Schedule computing each group as chosen; inlined Funcs stay inline.
    Its ``provenance`` is ``provenance`` (a ``Provenance``) with the groups and
    the inlined Funcs recorded (with ``model``, each fused group's members' cost apart:
    ``GroupRecord.why_fused``).  GPU: the producers in ``at_root`` are computed at
    root (kernels of their own) rather than per block of their group's output, and the
    wrappers named in ``unstaged`` are not made (their buffer read from global memory)."""
    from .provenance import GroupRecord
    target = "cuda" if problem.spec.is_gpu else "cpu"
    s = Schedule(problem.pipeline, target=target)
    for group, tiling, _cost in columns:
        if problem.spec.is_gpu:
            _gpu_group(problem, s, group, tiling, at_root, model, unstaged)
        else:
            _cpu_group(problem, s, group, tiling)
    if problem.fixed is not None:
        s = with_fixed(problem, s)
    groups = tuple(GroupRecord(g.output, tuple(sorted(g.members)), tuple(t.sizes), c,
                               apart_terms(model, g) if model is not None
                               and len(g.members) > 1 else None)
                   for g, t, c in columns)
    s.provenance = provenance.replace(groups=groups, inlined=tuple(sorted(problem.inlined)))
    return s


_COMPUTE_LEVEL = ("compute_root", "compute_at", "compute_inline")


def with_fixed(problem, solved: Schedule) -> Schedule:
    """``solved`` with the Funcs of ``problem.fixed`` scheduled by its directives, not
    the solver's: the solver's directives for the other Funcs, then the fixed ones (a
    fixed Func that names no compute level is computed at root, where the solver priced
    it).  ``ScheduleError`` names a fixed directive the solved schedule cannot take."""
    fixed = problem.fixed
    pinned = problem.keep | problem.keep_inlined
    s = Schedule(problem.pipeline, target=solved.target)
    s.set_codegen(**{**solved.codegen, **fixed.codegen})
    replay(s, [d for d in solved.directives if d.func not in pinned])
    mine = [d for d in fixed.directives if d.func in pinned]
    for name in sorted(problem.keep):
        ds = [d for d in mine if d.func == name]
        if not any(d.method in _COMPUTE_LEVEL for d in ds) and not problem.is_output(name):
            s[name].compute_root()
    replay(s, mine, "the fixed schedule: ")
    return s
