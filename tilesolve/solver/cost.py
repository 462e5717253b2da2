"""The one cost model every solver uses (greedy, ILP, beam).

``CostModel(problem).cost(group, tiling) -> Cost`` prices one column;
``costs(group)`` prices every tiling of the group's menu at once (numpy over
the menu, from ``analysis.footprint.MenuFacts``, whose facts are shared
between groups that differ by a member), and is what the solvers use:
``best(group)``, ``cheapest(group, n)``, ``feasible(group)``.

CPU specs follow Mullapudi 2016 (Listings 1-2) plus the terms of
``cost_terms.py`` (vector lanes, parallel waves, L1 and register pressure,
reduction loops, memory rows beyond the prefetcher) and the memory loads of
a tiled group output's reductions, which run at root (``root_update_rereads``), the
passes of a group output's updates over a buffer the LLC cannot keep
(``root_update_sweeps``), and
the page faults of a root buffer too large for the runtime's heap cache to keep
(``first_touch_words``, in the stores); GPU specs follow Sioutas 2020
(Listing 1, ``cost_gpu.py``).  Each term is a small named function below whose
docstring says where it comes from.  Units: CPU costs are in arithmetic
operations (a load from memory costs ``spec.load_cost`` of them); GPU costs
are in cycles per active thread.
"""
from __future__ import annotations

import math

import numpy as np

from ..analysis.footprint import MenuFacts, box_extents
from ..heap_limit import DEFAULT_LIMIT_MB
from .cost_gpu import (coalescing_factor, gpu_balance, gpu_costs, max_blocks,  # noqa: F401
                       occupancy, registers_estimate)
from .cost_terms import (block_choice, intermediate_words,
                         l1_miss_fraction, l2_bytes, lane_utilization, stream_words, tile_tasks, tile_terms, tiled_stage, wave_imbalance, workers)
from .space import Cost, Group, Tiling
from .tilings import candidate_tilings

def words(points, bytes_per_point: int):
    """Memory traffic in 4-byte words (uint8 traffic costs a quarter of float32)."""
    return points * bytes_per_point / 4.0


def num_tiles(region, sizes) -> int:
    """Number of tiles covering ``region`` (Mullapudi's num_tiles)."""
    n = 1
    for (lo, hi), t in zip(region, sizes):
        ext = hi - lo + 1
        n *= 1 if t is None else math.ceil(ext / t)
    return n


def arith_per_tile(problem, gf):
    """Arithmetic of one tile over all members and their update stages,
    recompute included (Mullapudi's arith_cost(merged, tile_cbounds)), per tiling."""
    cached = problem.spec.cost_params.cached_load_ops
    total = 0.0
    for m, pts in gf.member_points.items():
        (ops, loads), updates = problem.stage_info[m]
        total = total + pts * (ops + cached * loads)
        box = gf.member_regions[m]
        for u in updates:
            pts_u = float(u.rdom_points)
            for d in u.pure_dims:
                pts_u = pts_u * box_extents(box)[d]
            total = total + pts_u * (u.ops + cached * u.loads)
    return total


def hidden_arithmetic(cp, moving, memory):
    """Arithmetic that runs while the memory traffic is in flight: a share
    (``memory_overlap``) of the smaller of the two, counting only the arithmetic of the
    stages that move that traffic (the group's output, which stores, and the members
    that read from outside the group).  Out-of-order cores and prefetchers overlap a
    loop's loads and stores with the loop's own arithmetic; a member that only reads
    and writes in-cache buffers runs while memory idles, so its arithmetic adds."""
    return cp.memory_overlap * np.minimum(moving, memory)


def input_words_per_tile(problem, gf):
    """Words read from outside the group for one tile (Mullapudi's
    group_tile_loads: each input element of the tile's footprint loaded once)."""
    return sum(words(pts, problem.bytes_per_point(n)) for n, pts in gf.input_points.items())


def untiled_reduction_loads(problem, group) -> float:
    """Mullapudi Listing 1: an untiled non-pure Func's input accesses all miss
    (total_load_ops): every load of every update point goes to memory."""
    total = 0.0
    for m in group.members:
        costs = problem.point_costs[m]
        if len(costs) > 1:
            total += problem.region_points(m) * costs[0][1]
    return total


def root_update_rereads(problem, output: str, skip: int = 0) -> float:
    """Words that the reductions of a tiled group's output read from memory more than once.

    The output's update stages run at root, over its whole region, after the tiles
    of its pure definition (``schedule_gen``); a register-blocked one
    (``register_block``) sweeps the block's two dimensions inside the others.  An input that one sweep reads (a ``slab``: those two
    dimensions whole, the others one point) stays in cache for the next sweep only
    if the slab's reads fit in one core's L2; otherwise every sweep reads it again
    from memory (a convolution at root streams its whole input once per output
    channel).  The per-tile facts cannot see this: they price the update as if it
    ran inside each tile.  Zero when the slab fits, when no update is register-blocked
    at root (the other loop orders are left to the per-tile facts), or with fewer
    than three dimensions."""
    (_, _), updates = problem.stage_info[output]
    region = problem.regions[output]
    dims = len(region)
    if dims < 3:
        return 0.0
    inner = []
    ext = [float(hi - lo + 1) for lo, hi in region]
    for i, u in enumerate(updates):
        blk = u.block
        if blk is None or not u.has_rdom or i + 1 == skip:
            continue
        lanes = problem.spec.vector_lanes(problem.bytes_per_point(output))
        util = lane_utilization(ext[blk.x_dim], lanes)
        e_y = ext[blk.y_dim] if blk.y_dim is not None else 1.0
        nb = block_choice(problem.spec, u, lanes, util, ext[blk.x_dim], e_y)[1]
        if float(np.asarray(nb).reshape(-1)[0]) > 0:
            inner = [d for d in (blk.x_dim, blk.y_dim) if d is not None]
            break
    if not inner:
        return 0.0
    slab = tuple(None if d in inner else 1 for d in range(dims))
    members = frozenset({output})
    per_slab = float(np.asarray(input_words_per_tile(
        problem, MenuFacts(problem, output, [slab]).group(members))).reshape(-1)[0])
    l2 = l2_bytes(problem.spec)
    if per_slab * 4.0 <= l2:
        return 0.0
    whole = float(np.asarray(input_words_per_tile(
        problem, MenuFacts(problem, output, [Tiling.untiled(dims).sizes]).group(members)
    )).reshape(-1)[0])
    return max(0.0, num_tiles(region, slab) * per_slab - whole)


def _written_points(problem, name: str, d) -> int:
    """Distinct points of ``name`` that update definition ``d`` writes: the extent of
    each pure Var argument times that of each RVar the arguments use (a scan's row
    ``ry``, or ``H - 1 - ry``); an RVar used in no argument (a sum into the point) adds
    none."""
    from ..analysis.footprint import rdom_scope
    from ..model import expr as E
    from ..model.visit import walk
    pure = [v.name for v in problem.func(name).pure.args]
    region = problem.regions[name]
    scope = rdom_scope(problem, d)
    n, rvars = 1, set()
    for a in d.args:
        if isinstance(a, E.Var) and a.name in pure:
            lo, hi = region[pure.index(a.name)]
            n *= hi - lo + 1
        else:
            rvars |= {x.name for x in walk(a) if isinstance(x, E.RVar)}
    for r in rvars:
        iv = scope.get(r)
        if iv is not None:
            n *= iv.hi - iv.lo + 1
    return n


def root_update_sweeps(problem, output: str, skip: int = 0) -> float:
    """Words a group output's update stages move to and from memory beyond its one store.

    The updates of a group's output run at root, each over its whole domain in turn
    (``schedule_gen``; all but the tiled one, ``skip``): when the buffer is larger than
    ``llc_keep_fraction`` of the last-level cache (half: the rest holds the inputs and
    what the other cores touch), each update's pass writes the points it covers back to
    memory again, and an update that reads its own value at the point it writes (the
    anti-causal half of a scan: ``b(fy) = ... b(fy)``) reads them from memory first.
    iir_blur with its second column filter at root ran 1.9x the schedule that filters
    each strip of 16 columns in its tile (L2), priced 1.4x without these passes.  A
    register-blocked update makes one pass too (its inputs' rereads are
    ``root_update_rereads``).  Zero for a buffer the LLC keeps.  (A quarter of the LLC
    as the bound prices conv_layer's 16 MiB ``conv`` at root (32 MiB LLC): its rho over
    two runs went 0.57 -> 0.67, over a third run's candidates 0.67 -> 0.56: noise, so
    half stays.)"""
    from ..model import expr as E
    from ..model.visit import walk
    defs = problem.func(output).updates
    bpp = problem.bytes_per_point(output)
    if not defs or (problem.region_points(output) * bpp
                    <= problem.spec.cost_params.llc_keep_fraction
                    * problem.spec.last_level_cache_bytes):
        return 0.0
    total = 0.0
    for i, d in enumerate(defs):
        if i + 1 == skip:
            continue
        own = any(isinstance(c, E.Call) and c.target.name == output
                  and tuple(c.args) == tuple(d.args) for c in walk(d.value))
        total += words(_written_points(problem, output, d), bpp) * (2.0 if own else 1.0)
    return total


def first_touch_words(problem, group, limit: int) -> float:
    """Words of the group output's root buffer faulted in on every realize: all of
    them when the buffer is over the heap cache's byte ``limit`` and glibc's mmap
    threshold (``mmap_threshold_bytes``; a pipeline output is the caller's buffer:
    none)."""
    if problem.is_output(group.output):
        return 0.0
    nbytes = problem.region_points(group.output) * problem.bytes_per_point(group.output)
    threshold = problem.spec.cost_params.mmap_threshold_bytes
    return 0.0 if nbytes <= max(limit, threshold) else nbytes / 4.0


def footprint_bytes(problem, group, gf):
    """Bytes live per tile: member intermediates plus the inputs read
    (Mullapudi's group_tile_footprint), per tiling."""
    b = 0.0
    for m, pts in gf.member_points.items():
        if m != group.output:
            b = b + pts * problem.bytes_per_point(m)
    for n, pts in gf.input_points.items():
        b = b + pts * problem.bytes_per_point(n)
    return b


class _Menu:
    """A group output's tiling menu and the facts shared by its groups."""

    def __init__(self, problem, output: str, tilings):
        self.tilings = list(tilings)
        self.index = {t: i for i, t in enumerate(self.tilings)}
        self.names = [str(t) for t in self.tilings]
        self.facts = MenuFacts(problem, output, [t.sizes for t in self.tilings])
        region = problem.regions[output]
        self.n_tiles = np.array([float(num_tiles(region, t.sizes)) for t in self.tilings])
        self.untiled = np.array([t.is_untiled() for t in self.tilings], dtype=bool)
        self.max_tiles = np.array([float(num_tiles(region, tuple(1 if s is not None else None
                                                                 for s in t.sizes)))
                                   for t in self.tilings])
        self.memo: dict = {}        # what the costs of the menu's groups share (gpu_costs)


class GroupCosts:
    """The costs of one group over a menu of tilings (arrays), and the Cost of each."""

    def __init__(self, menu, totals, make):
        self.tilings = menu.tilings
        self._names = menu.names
        self.totals = totals                  # float array, inf where infeasible
        self.feasible = np.isfinite(totals)
        self._make = make                     # index -> Cost
        self._costs: dict = {}

    def cost(self, i: int) -> Cost:
        c = self._costs.get(i)
        if c is None:
            c = self._costs[i] = self._make(i)
        return c

    def best(self):
        """The cheapest feasible (Tiling, Cost), first in menu order among ties
        within 1e-9 (greedy's rule), or None."""
        best = None
        for i in np.flatnonzero(self.feasible):
            if best is None or self.totals[i] < self.totals[best] - 1e-9:
                best = i
        return None if best is None else (self.tilings[best], self.cost(int(best)))

    def cheapest(self, n: int) -> list:
        """Up to ``n`` feasible (Tiling, Cost), cheapest first (ties by text)."""
        idx = sorted(np.flatnonzero(self.feasible),
                     key=lambda i: (float(self.totals[i]), self._names[i]))
        return [(self.tilings[i], self.cost(int(i))) for i in idx[:n]]


class CostModel:
    """Memoized costs of (group, tiling) columns for one Problem.

    ``menu_filter(problem, output, tiling) -> bool``, when given, restricts
    every group's tiling menu to the tilings it keeps (the untiled column is
    always kept, so every group still has a fallback): a solver run on such a
    model answers "the best schedule with tiles of this kind" (``tilesolve.tune``
    runs the ILP under several menus).  Costs of the columns kept are the same
    as in the unrestricted model."""

    def __init__(self, problem, menu_filter=None):
        self.problem = problem
        self.menu_filter = menu_filter
        self.spec = problem.spec
        self._menus: dict = {}
        self._groups: dict = {}
        self._off_menu: dict = {}
        self._sweeps: dict = {}
        self.evaluations = 0        # columns costed
        # the runtime heap cache's limit (first_touch_words): the spec's, else the default
        self.heap_limit = (self.spec.heap_cache_bytes if self.spec.heap_cache_bytes is not None
                           else DEFAULT_LIMIT_MB << 20)
        self.greedy = None          # greedy_groups' answer on this model (memoized)

    # -- the solvers' interface ------------------------------------------------------
    def menu(self, output: str) -> _Menu:
        m = self._menus.get(output)
        if m is None:
            tilings = candidate_tilings(self.problem, Group.singleton(output))
            if self.menu_filter is not None:
                # a Func with no tiling of the filter's kind (a GPU stage has no
                # untiled one to keep) keeps its whole menu
                tilings = [t for t in tilings if t.is_untiled()
                           or self.menu_filter(self.problem, output, t)] or tilings
            m = self._menus[output] = _Menu(self.problem, output, tilings)
        return m

    def costs(self, group: Group) -> GroupCosts:
        """Every tiling of the group's menu (``solver.tilings``), costed."""
        hit = self._groups.get(group)
        if hit is None:
            menu = self.menu(group.output)
            if len(group.members) > 1 and self.problem.keep.intersection(group.members):
                # a Func whose schedule the user fixed is never fused with another
                hit = GroupCosts(menu, np.full(len(menu.tilings), np.inf),
                                 lambda i: self._price(group, menu).cost(i))
            else:
                hit = self._price(group, menu)
            self._groups[group] = hit
        return hit

    def cost(self, group: Group, tiling: Tiling) -> Cost:
        menu = self.menu(group.output)
        i = menu.index.get(tiling)
        if i is not None:
            return self.costs(group).cost(i)
        key = (group, tiling)
        hit = self._off_menu.get(key)
        if hit is None:
            one = _Menu(self.problem, group.output, [tiling])
            hit = self._off_menu[key] = self._price(group, one).cost(0)
        return hit

    def best(self, group: Group):
        return self.costs(group).best()

    def cheapest(self, group: Group, n: int) -> list:
        return self.costs(group).cheapest(n)

    def feasible(self, group: Group) -> bool:
        return bool(self.costs(group).feasible.any())

    # -- pricing ---------------------------------------------------------------------
    def _root_updates(self, group: Group) -> tuple:
        """Words a tiled group's output's reductions read again from memory, and the
        words all its root updates' passes move (the same for every tiling: they run at
        root; ``root_update_rereads``, ``root_update_sweeps``)."""
        hit = self._sweeps.get(group)
        if hit is None:
            skip = tiled_stage(self.problem, group)
            hit = self._sweeps[group] = (
                root_update_rereads(self.problem, group.output, skip),
                root_update_sweeps(self.problem, group.output, skip))
        return hit

    def _price(self, group: Group, menu: _Menu) -> GroupCosts:
        p = self.problem
        gf = menu.facts.group(group.members)
        k = len(menu.tilings)
        self.evaluations += k
        in_words_pt = np.broadcast_to(input_words_per_tile(p, gf), (k,))
        if self.spec.is_gpu:
            arith_pt = np.broadcast_to(arith_per_tile(p, gf), (k,))
            costs = gpu_costs(self, group, gf, menu.tilings, menu.n_tiles, arith_pt, in_words_pt,
                              menu.memo)
            return GroupCosts(menu, np.array([c.total for c in costs]), costs.__getitem__)
        return self._cpu(group, menu, gf, in_words_pt)

    def _cpu(self, group, menu, gf, in_words_pt) -> GroupCosts:
        p, spec = self.problem, self.spec
        cp = spec.cost_params
        k = len(menu.tilings)
        n = menu.n_tiles
        untiled = menu.untiled
        load_cost = spec.load_cost
        tt = tile_terms(p, group, gf, k)
        arith, lanes, regs, red = n * tt.arith, n * tt.lanes, n * tt.registers, n * tt.reduction
        out_words = words(p.region_points(group.output), p.bytes_per_point(group.output))
        fp = np.broadcast_to(footprint_bytes(p, group, gf), (k,))
        l1 = n * (cp.l2_word_ops * intermediate_words(p, group, gf) * l1_miss_fraction(spec, fp)
                  + tt.strided)
        red_loads = untiled_reduction_loads(p, group)
        sweep, passes = self._root_updates(group)
        loads = load_cost * (np.where(untiled, in_words_pt + red_loads, n * in_words_pt + sweep)
                             + cp.update_pass_words * passes)
        stores = np.full(k, load_cost * (out_words + cp.first_touch_word_loads * first_touch_words(
            p, group, self.heap_limit)))
        misses = np.where(untiled, 0.0,
                          n * load_cost * cp.stream_miss_loads * stream_words(p, group, gf))
        memory = np.maximum(loads + stores, 1.0)
        bound = np.clip(1.0 - (arith + lanes) / memory, 0.0, 1.0)     # memory-bound share
        streams = misses * bound
        overlap = hidden_arithmetic(cp, tt.moving, loads + stores)
        in_tasks = arith + lanes + regs + red + l1 - n * tt.root_updates
        imbalance = wave_imbalance(tile_tasks(p, group, menu), workers(spec))
        parallel = in_tasks * (imbalance - 1.0) + n * tt.root_update_imbalance
        over_cache = ~untiled & (fp > spec.tile_cache_bytes)
        need = np.minimum(float(spec.parallelism_threshold), menu.max_tiles)
        few_tiles = ~untiled & (n < need)
        holds = untiled & (len(group.members) != 1)
        ok = ~(over_cache | few_tiles | holds)
        overhead = cp.tile_overhead_ops * n * len(group.members)
        totals = np.where(ok, arith + lanes + regs + red + l1 + loads + stores + parallel
                          + overhead + streams - overlap, math.inf)
        done = sum(gf.member_points.values()) * n
        need_pts = sum(p.region_points(m) for m in gf.member_points)

        def make(i: int) -> Cost:
            reasons = []
            if holds[i]:
                reasons.append("an untiled group cannot hold producers")
            if over_cache[i]:
                reasons.append(f"footprint {int(fp[i])} B > cache for tiles {spec.tile_cache_bytes} B")
            if few_tiles[i]:
                reasons.append(f"{int(n[i])} tiles < parallelism threshold {int(need[i])}")
            return Cost(float(totals[i]), float(arith[i]), float(loads[i]), float(stores[i]),
                        float(overhead[i]), bool(ok[i]), "; ".join(reasons), int(n[i]), int(fp[i]),
                        float(done[i]) / need_pts if need_pts else 1.0, None,
                        float(lanes[i]), float(parallel[i]), float(l1[i]), float(regs[i]),
                        float(red[i]), float(streams[i]), float(misses[i]), float(overlap[i]),
                        float(tt.moving))
        return GroupCosts(menu, totals, make)
