"""Register blocking of update definitions (reductions such as matmul and conv).

A reduction ``f[x, y] += g(x, r) * h(r, y)`` scheduled naively keeps its
RDom loop innermost: every update point loads and stores its accumulator
and reloads both operands.  Blocked, the update's loops become

    for (outer pure) for x_b, y_b:            # blocks of bx x by points
      for r (split by ``ur``, unrolled):      # the RDom, outside the block
        for y_r (by rows, unrolled):
          for x_r (nb vectors, unrolled):
            for x_v (vector lanes):  f[x, y] += ...

so the ``nb * by`` accumulators stay in vector registers across the RDom
loop, a load that does not depend on ``y`` serves the ``by`` rows, one that
does not depend on ``x`` the ``nb`` vectors, and the loop overhead is paid
once per block.  It is emitted with existing directives:
``s[f].update(i).split(x, x_b, x_r, nb*L).split(y, y_b, y_r, by)
.reorder(x_r, y_r, <RVars>, x_b, y_b, <other pure>).vectorize(x_r, L)
.unroll(x_r, nb).unroll(y_r, by).unroll(r.x, ur)`` (``parallel`` on the
outermost pure loop at root).

An update is *blockable* when it has an RDom, its arguments are the Func's
pure Vars (each point accumulates independently: the RDom loops may move
outside the pure ones), it reads itself only at its own point, and some
operand (a value it combines, not a lookup that only addresses another load)
does not depend on both blocked Vars, so the block shares its load (without
that, the default loop order already keeps the accumulator in a register and
a block gains nothing but unrolling).  The block
(``nb`` vectors by ``by`` rows of the spec's ``cost_params.block_vectors`` and
``block_rows``, ``nb * by + reserved_registers`` at most the vector registers) is chosen per tiling by the cost model, over the extents
the update runs over: the whole region at root, the member's region per tile
inside a group, so a tile that fits in registers blocks the whole tile.

An update with no shared operand is still worth blocking when its
accumulation is a *latency-bound chain*: in the default order each RDom step
of one vector accumulator waits for the step before it (a float ``max`` or
``+`` takes 4-5 cycles), while the step itself issues fewer operations than
that.  ``nb * by`` independent accumulators interleave their chains, so a
step costs ``latency / (nb * by)`` (``accumulation_chain`` measures both
sides; ``cost_terms`` charges the difference).  Such a block is allowed only
where the chain bounds the default order.

Every function that decides a block reads its parameters from ``params``, the spec's
CostParams (``specs/cost_params.py``), so that ``schedule_gen`` emits the block the cost
model priced.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import expr as E
from ..model import ops as OPS
from ..model.visit import children, post_order, walk

@dataclass(frozen=True)
class BlockInfo:
    """What blocking one update definition needs to know (static)."""

    x: str                   # the vectorized pure Var (first pure arg)
    y: str | None            # the blocked row Var (second pure arg), if any
    x_dim: int
    y_dim: int | None
    others: tuple            # the other pure Vars, in argument order
    rvars: tuple             # RVar loop names, innermost first
    load_classes: tuple      # per distinct non-self load: (depends on x, depends on y)
    x_gathers: bool = False  # some operand's lanes along x are not adjacent (a gather)


def _latency(n) -> int:
    """Cycles from ``n``'s operands to its value (``ops.Op.latency_of``)."""
    if isinstance(n, E.BinOp):
        return OPS.OPS[n.op].latency_of(n.a.type)
    if isinstance(n, E.Intrinsic):
        op = OPS.OPS.get(n.name)
        return op.latency_of(n.args[0].type) if op is not None and n.args else 4
    if isinstance(n, E.Cast):
        return 4 if n.type.is_float() != n.value.type.is_float() else 1
    if isinstance(n, (E.Select, E.Not)):
        return 1
    return 0


def accumulation_chain(func, d) -> tuple:
    """(latency, issue) of one RDom step of update ``d`` of ``func`` in the default
    order: ``latency``, the cycles along the longest path from the accumulator's
    own read to the value written (the step after cannot start sooner); ``issue``,
    the operations of one step on the value's path (operand loads and the ops that
    combine them; index arithmetic is not counted: it is shared across the vector
    lanes or hoisted).  (0, 0) for an update that is not an in-place reduction."""
    if d.rdom is None:
        return 0.0, 0.0
    selfs = [c for c in walk(d.value) if isinstance(c, E.Call) and c.target.name == func.name]
    if not selfs or any(tuple(c.args) != tuple(d.args) for c in selfs):
        return 0.0, 0.0
    # longest latency from a self read up to each node, children before parents
    order = post_order(d.value, leave_whole=lambda n: isinstance(n, E.Call) and
                       n.target.name == func.name)
    depth: dict = {}
    for n in order:
        if isinstance(n, E.Call) and n.target.name == func.name:
            depth[id(n)] = 0
            continue
        below = [depth[id(k)] for k in children(n) if depth.get(id(k)) is not None]
        depth[id(n)] = max(below) + _latency(n) if below else None
    latency = depth.get(id(d.value)) or 0
    issue, stack, seen = 0, [d.value], set()
    while stack:                  # the value's path: Calls end it (their args index)
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, E.Call):
            issue += 0 if n.target.name == func.name else 1
            continue
        if isinstance(n, (E.BinOp, E.Intrinsic, E.Cast, E.Select, E.Not)):
            issue += 1
        stack.extend(children(n))
    return float(latency), float(issue)


def chain_bound(params, chain: tuple, loop_ops: float) -> bool:
    """Whether the default order of an update with ``accumulation_chain`` ``chain``
    waits on its accumulator: a step's latency exceeds what the step issues (with
    ``loop_ops``, the RDom loop's cost a step) by ``params.chain_margin`` (a block
    that only saves loop overhead is not worth its code)."""
    latency, issue = chain
    return latency > params.chain_margin * (issue + loop_ops)


def chain_extra(chain: tuple, accumulators, issue_per_point, util):
    """Cost per point of waiting on ``accumulators`` interleaved chains, beyond the
    ``issue_per_point`` already charged (lane utilization ``util``): each step of
    one vector accumulator takes ``latency`` cycles, so ``accumulators`` of them
    take ``latency / accumulators`` cycles a step."""
    latency, issue = chain
    if latency <= 0:
        return 0.0
    return np.maximum(0.0, (latency / np.asarray(accumulators, dtype=float) - issue)
                      / np.asarray(util, dtype=float) - issue_per_point)


def shares_load(blk: BlockInfo) -> bool:
    """Whether some operand load serves more than one point of a block."""
    return any(not (dx and (dy or blk.y is None)) for dx, dy in blk.load_classes)


def x_only(blk: BlockInfo, x: str | None = None) -> BlockInfo:
    """``blk`` blocking only its vector dimension (``x``: the loop to split, when
    the update's own Var was split already, as in a tiled update)."""
    from dataclasses import replace
    return replace(blk, x=x or blk.x, y=None, y_dim=None, others=(),
                   load_classes=tuple((dx, True) for dx, _ in blk.load_classes))


def block_info(params, func, d, pure: list, chain: tuple = (0.0, 0.0),
               loop_ops: float = 1.0, extents: dict | None = None) -> BlockInfo | None:
    """The BlockInfo of update ``d`` of ``func`` (inlined definitions), or None;
    ``chain`` is its ``accumulation_chain``, ``loop_ops`` its RDom loop's cost a
    step in the default order; ``extents``: pure Var -> its points, where known (a
    Var of fewer points than ``row_score_block``'s rows is no row candidate).  The
    row Var is the one of fewest L1 accesses (``_row_score``), or with
    ``row_var_by_score`` off the first candidate."""
    if d.rdom is None or not d.args:
        return None
    if not all(isinstance(a, E.Var) and a.name in pure for a in d.args):
        return None
    names = [a.name for a in d.args]
    if len(set(names)) != len(names):
        return None
    for n in walk(d.value):
        if isinstance(n, E.Call) and n.target.name == func.name and tuple(n.args) != tuple(d.args):
            return None                  # reads another point of itself: a scan
    calls = [n for n in _operand_calls(d.value) if n.target.name != func.name]
    nb, by = params.row_score_block
    rows = [r for r in names[1:] if extents is None or extents.get(r, by) >= by] or names[1:2]
    y = None
    if rows:
        y = (min(rows, key=lambda r: _row_score(calls, names[0], r, nb, by))
             if params.row_var_by_score else rows[0])
    classes = [(dx, dy) for dx, dy, _ in _load_classes(calls, names[0], y)]
    info = BlockInfo(names[0], y, pure.index(names[0]),
                     pure.index(y) if y is not None else None,
                     tuple(n for n in names[1:] if n != y),
                     tuple(rv.name for rv in d.rdom.rvars()), tuple(classes),
                     any(_gathers(n, names[0]) for n in calls))
    if not shares_load(info) and not chain_bound(params, chain, loop_ops):
        return None              # no operand is shared across a block, no chain to hide
    return info


def _load_classes(calls, x: str, row: str | None) -> list:
    """Per operand Call: (depends on ``x``, depends on ``row``, split), where split
    means its vector load along ``x`` starts at an offset (``in[x + r.x]``), so
    most such loads straddle two cache lines."""
    out = []
    for n in calls:
        used = {v.name for a in n.args for v in walk(a) if isinstance(v, (E.Var, E.RVar))}
        dx = x in used
        split = dx and not any(isinstance(a, E.Var) and a.name == x for a in n.args)
        out.append((dx, row is not None and row in used, split))
    return out


def _gathers(call, x: str) -> bool:
    """Whether ``call``'s lanes along ``x`` are not adjacent: ``x`` appears in an
    argument other than the innermost (``mat[r, x]``: one cache line a lane)."""
    return any(isinstance(v, E.Var) and v.name == x
               for a in call.args[1:] for v in walk(a))


def _row_score(calls, x: str, row: str, nb: int, by: int) -> float:
    """L1 accesses one RDom step of an ``nb`` x ``by`` block issues with ``row`` as
    its row Var: vector loads along ``x`` that start at an offset count twice (they
    straddle two lines), broadcasts once.  The row Var with the fewest wins, the
    first pure Var after ``x`` on a tie (conv_layer's update blocks over output
    channels, one input vector shared by the rows, the filter's values broadcast)."""
    return float(sum(_step_loads(dx, dy, nb, by) * (2 if split else 1)
                     for dx, dy, split in _load_classes(calls, x, row)))


def _operand_calls(e) -> list:
    """Distinct Calls whose values are operands of ``e`` (not those only used to
    compute another call's index: a lookup that addresses a load is not a
    value a block can share)."""
    out, seen, stack = [], set(), [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, E.Call):
            out.append(n)
            continue
        stack.extend(children(n))
    return out


def rdom_unroll(params, inner_extent: int, live: int = 0, per_step: int = 0,
                registers: int | None = None) -> int:
    """Unroll factor of the innermost RDom loop: all of a short one (at most
    ``params.rdom_unroll_whole``), else ``rdom_unroll`` when it divides the extent,
    else none.  With ``registers`` (and ``unroll_within_registers``), the factor also
    keeps ``live`` (the block's accumulators) plus ``per_step`` (the operand vectors
    one step loads) times the factor within the vector registers, halving it until
    it does: LLVM hoists the loads of the unrolled steps ahead of their uses, and
    past the register file the accumulators spill."""
    if inner_extent <= params.rdom_unroll_whole:
        ur = max(1, inner_extent)
    else:
        ur = params.rdom_unroll if inner_extent % params.rdom_unroll == 0 else 1
    if not params.unroll_within_registers:
        registers = None
    while registers is not None and ur > 1 and live + ur * per_step > registers:
        ur = ur // 2 if ur % 2 == 0 else 1
    return ur


def step_operands(blk: BlockInfo, nb: int, by: int) -> int:
    """Operand vectors one RDom step of an ``nb`` x ``by`` block loads: a load that
    depends on both blocked Vars once per accumulator, on one of them once per
    vector or row, on neither once."""
    return sum(_step_loads(dx, dy, nb, by) for dx, dy in blk.load_classes)


def _step_loads(dx: bool, dy: bool, nb: int, by: int) -> int:
    """Loads of one operand in one RDom step of an ``nb`` x ``by`` block, by what it
    depends on: both blocked Vars, x (once per vector), the row (once per row), neither."""
    return nb * by if (dx and dy) else (nb if dx else (by if dy else 1))


def candidates(params, registers: int) -> list:
    """The block shapes (vectors, rows) that fit ``registers`` vector registers."""
    return [(nb, by) for nb in params.block_vectors for by in params.block_rows
            if nb * by + params.reserved_registers <= registers and nb * by > 1]


def blocked_point_cost(params, u, blk: BlockInfo, nb: int, by: int, lanes: int, e_x, e_y,
                       acc_ops: float, registers: int | None = None):
    """(arithmetic with loads, lane utilization, loop overhead) per update point
    of a ``nb`` x ``by`` block over extents ``e_x`` x ``e_y`` (arrays).  The
    accumulators stay in registers over the RDom (``acc_ops`` per point); the
    loop overhead is one iteration per block and unrolled RDom step, and the
    innermost RDom loop's setup once per block (none when fully unrolled)."""
    loads = 0.0
    for dx, dy in blk.load_classes:
        loads += 1.0 if (dx and dy) else (1.0 / by if dx else (1.0 / nb if dy else 1.0 / (nb * by)))
    arith = u.ops + params.cached_load_ops * loads
    bx = nb * lanes
    ex = np.maximum(np.asarray(e_x, dtype=float), 1.0)
    ey = np.maximum(np.asarray(e_y, dtype=float), 1.0)
    util = ex / (np.ceil(ex / bx) * bx) * (ey / (np.ceil(ey / by) * by))
    ur = rdom_unroll(params, k_block(params, blk, u.inner_extent) or u.inner_extent, nb * by,
                     step_operands(blk, nb, by), registers)
    loop = params.loop_iter_ops / (nb * by * ur) + acc_ops
    if ur < u.inner_extent:
        loop += params.loop_setup_ops / (max(1, u.inner_extent) * nb * by)
    return arith, util, loop


def choose_block(params, u, blk: BlockInfo, lanes: int, registers: int, e_x, e_y,
                 plain_cost, acc_ops: float = 0.0):
    """Per tiling: (best cost per point, nb, by, arith, util, loop), with nb = 0
    where no block is cheaper than ``plain_cost`` (per point, unblocked).  The
    loop term includes the wait on the block's ``nb * by`` accumulation chains
    (``chain_extra`` of ``u.chain``)."""
    k = np.broadcast(np.asarray(e_x), np.asarray(e_y), np.asarray(plain_cost)).shape
    best = np.broadcast_to(np.asarray(plain_cost, dtype=float), k).copy()
    nb_o, by_o = np.zeros(k, dtype=int), np.zeros(k, dtype=int)
    ar_o, ut_o, lp_o = np.zeros(k), np.ones(k), np.zeros(k)
    shares = shares_load(blk)
    for nb, by in candidates(params, registers):
        if (blk.y is None or not shares) and by > 1:
            continue            # rows without a shared load: only more chains, as nb gives
        if blk.x_gathers and nb > 1:
            # a gathered operand touches a cache line per lane each RDom step; more
            # vectors keep more lines live at once than the L1's ways hold when the
            # rows are a power of two apart, and share none of them
            continue
        ey = e_y if blk.y is not None else 1.0
        arith, util, loop = blocked_point_cost(params, u, blk, nb, by, lanes, e_x, ey, acc_ops,
                                               registers)
        loop = loop + chain_extra(u.chain, nb * by, loop, util)
        cost = arith / util + loop
        fits = (np.asarray(e_x, dtype=float) >= nb * lanes) & (np.asarray(ey, dtype=float) >= by)
        if not shares:
            # a block kept for its chains only: a partial last block runs masked and
            # costs more than the chains save, so the block must divide the extent
            fits = fits & (np.mod(np.asarray(e_x, dtype=float), nb * lanes) == 0)
        better = fits & (cost < best - 1e-12)
        best = np.where(better, cost, best)
        nb_o, by_o = np.where(better, nb, nb_o), np.where(better, by, by_o)
        ar_o = np.where(better, arith, ar_o)
        ut_o = np.where(better, util, ut_o)
        lp_o = np.where(better, loop, lp_o)
    return best, nb_o, by_o, ar_o, ut_o, lp_o


def x_inside(params, kb: int, e_x: float, e_y: float, word_bytes: int,
             l2_bytes: float) -> bool:
    """Order of a K-blocked update's block loops within a K panel: the loop over x
    blocks inside the one over rows when the operand panel it walks (``kb`` steps by
    the ``e_x`` points of x) fits in ``params.k_panel_l2_share`` of the L2, so the
    next row block finds it there while its own row operands stay in L1; else the
    other order (the x block's panel of ``kb`` by ``e_y`` reused from L2 by every row
    block)."""
    return kb * e_x * word_bytes <= l2_bytes * params.k_panel_l2_share


def emit(params, handle, blk: BlockInfo, nb: int, by: int, lanes: int, inner_extent: int,
         parallel: bool, try_, registers: int | None = None, x_in: bool = False,
         parallel_x: bool = False) -> bool:
    """The blocking directives on update handle ``handle`` (``registers``: the
    ISA's vector registers, which bound the RDom unroll; ``x_in``: a K-blocked
    update's x block loop inside its row block loop, see :func:`x_inside`;
    ``parallel_x``: an update with no row or other loop (a matrix-vector product) runs
    its x blocks in parallel, outermost, each block sweeping every K panel); False (and
    nothing more tried) as soon as one is refused."""
    xb, xr = f"{blk.x}_b", f"{blk.x}_r"
    steps = [(handle.split, (blk.x, xb, xr, nb * lanes))]
    order = [xr]
    outer = [xb]
    if blk.y is not None and by > 1:
        yb, yr = f"{blk.y}_b", f"{blk.y}_r"
        steps.append((handle.split, (blk.y, yb, yr, by)))
        order.append(yr)
        outer.append(yb)
    elif blk.y is not None:
        outer.append(blk.y)          # a block of one row: y stays whole, outside
    kb = k_block(params, blk, inner_extent)
    r = blk.rvars[0]
    if kb:
        # K-blocking: the RDom loop split, its outer part outside every block loop,
        # so one panel of the operands (kb steps of the block's rows and columns) is
        # reused from cache by every block, as a BLAS kernel's packed panels are
        stem = r.replace(".", "_")
        ro, r = f"{stem}_ko", f"{stem}_ki"
        steps.append((handle.split, (blk.rvars[0], ro, r, kb)))
        blocks = list(outer) if x_in else list(reversed(outer))
        if parallel_x and blk.y is None and not blk.others:
            order += [r, ro] + blocks         # the x blocks outermost: the tasks
        else:
            order += [r] + blocks + list(blk.others) + [ro]
    else:
        order += list(blk.rvars) + outer + list(blk.others)
    steps.append((handle.reorder, tuple(order)))
    steps.append((handle.vectorize, (xr, lanes)))
    if nb > 1:
        steps.append((handle.unroll, (xr,)))
    if blk.y is not None and by > 1:
        steps.append((handle.unroll, (f"{blk.y}_r",)))
    ur = rdom_unroll(params, kb or inner_extent, nb * by, step_operands(blk, nb, by), registers)
    if ur > 1:
        steps.append((handle.unroll, (r, ur)))
    for fn, args in steps:
        if not try_(fn, *args):
            return False
    if parallel and (blk.y is not None or blk.others):
        try_(handle.parallel, order[-2] if kb else order[-1])
    elif parallel_x and blk.y is None and not blk.others:
        try_(handle.parallel, xb)
    return True


def k_block(params, blk: BlockInfo, inner_extent: int) -> int:
    """Steps of the RDom loop per K-block (0: not split): ``params.k_block`` when the
    update has one RVar running at least ``k_block_min_steps`` times that many steps
    (a long dot product, as in matmul; RVars of one RDom keep their nesting, so one
    with several is left whole)."""
    if len(blk.rvars) != 1 or inner_extent < params.k_block_min_steps * params.k_block:
        return 0
    return params.k_block
