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
(``nb`` vectors by ``by`` rows, ``nb * by + RESERVED_REGISTERS`` at most the
vector registers) is chosen per tiling by the cost model, over the extents
the update runs over: the whole region at root, the member's region per tile
inside a group, so a tile that fits in registers blocks the whole tile.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import expr as E
from ..model.visit import walk

BLOCK_VECTORS = (1, 2, 4)
BLOCK_ROWS = (1, 2, 4, 8)
RESERVED_REGISTERS = 2       # operands loaded per step
RDOM_UNROLL = 4
# K-blocking of long reductions (``k_block``): 128 steps measured fastest for the
# 2048^2 matmul on the 2-core development machine (256: 1.2x slower, 512: 1.4x)
K_BLOCK = 128
K_BLOCK_MIN_STEPS = 4


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


def block_info(func, d, pure: list) -> BlockInfo | None:
    """The BlockInfo of update ``d`` of ``func`` (inlined definitions), or None."""
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
    classes = []
    for n in _operand_calls(d.value):
        if n.target.name == func.name:
            continue
        used = {v.name for a in n.args for v in walk(a) if isinstance(v, (E.Var, E.RVar))}
        classes.append((names[0] in used, len(names) > 1 and names[1] in used))
    y = names[1] if len(names) > 1 else None
    if not any(not (dx and (dy or y is None)) for dx, dy in classes):
        return None              # no operand is shared across a block: nothing to gain
    return BlockInfo(names[0], names[1] if len(names) > 1 else None, pure.index(names[0]),
                     pure.index(names[1]) if len(names) > 1 else None, tuple(names[2:]),
                     tuple(rv.name for rv in d.rdom.rvars()), tuple(classes))


def _operand_calls(e) -> list:
    """Distinct Calls whose values are operands of ``e`` (not those only used to
    compute another call's index: a lookup that addresses a load is not a
    value a block can share)."""
    from ..model.visit import children
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


def rdom_unroll(inner_extent: int) -> int:
    """Unroll factor of the innermost RDom loop: all of a short one (<= 8), else
    ``RDOM_UNROLL`` when it divides the extent, else none."""
    if inner_extent <= 8:
        return max(1, inner_extent)
    return RDOM_UNROLL if inner_extent % RDOM_UNROLL == 0 else 1


def candidates(registers: int) -> list:
    return [(nb, by) for nb in BLOCK_VECTORS for by in BLOCK_ROWS
            if nb * by + RESERVED_REGISTERS <= registers and nb * by > 1]


def blocked_point_cost(u, blk: BlockInfo, nb: int, by: int, lanes: int, e_x, e_y,
                       cached_load_ops: float, loop_iter_ops: float, loop_setup_ops: float,
                       acc_ops: float):
    """(arithmetic with loads, lane utilization, loop overhead) per update point
    of a ``nb`` x ``by`` block over extents ``e_x`` x ``e_y`` (arrays).  The
    accumulators stay in registers over the RDom (``acc_ops`` per point); the
    loop overhead is one iteration per block and unrolled RDom step, and the
    innermost RDom loop's setup once per block (none when fully unrolled)."""
    loads = 0.0
    for dx, dy in blk.load_classes:
        loads += 1.0 if (dx and dy) else (1.0 / by if dx else (1.0 / nb if dy else 1.0 / (nb * by)))
    arith = u.ops + cached_load_ops * loads
    bx = nb * lanes
    ex = np.maximum(np.asarray(e_x, dtype=float), 1.0)
    ey = np.maximum(np.asarray(e_y, dtype=float), 1.0)
    util = ex / (np.ceil(ex / bx) * bx) * (ey / (np.ceil(ey / by) * by))
    ur = rdom_unroll(u.inner_extent)
    loop = loop_iter_ops / (nb * by * ur) + acc_ops
    if ur < u.inner_extent:
        loop += loop_setup_ops / (max(1, u.inner_extent) * nb * by)
    return arith, util, loop


def choose_block(u, blk: BlockInfo, lanes: int, registers: int, e_x, e_y,
                 cached_load_ops: float, loop_iter_ops: float, loop_setup_ops: float,
                 plain_cost, acc_ops: float = 0.0):
    """Per tiling: (best cost per point, nb, by, arith, util, loop), with nb = 0
    where no block is cheaper than ``plain_cost`` (per point, unblocked)."""
    k = np.broadcast(np.asarray(e_x), np.asarray(e_y), np.asarray(plain_cost)).shape
    best = np.broadcast_to(np.asarray(plain_cost, dtype=float), k).copy()
    nb_o, by_o = np.zeros(k, dtype=int), np.zeros(k, dtype=int)
    ar_o, ut_o, lp_o = np.zeros(k), np.ones(k), np.zeros(k)
    for nb, by in candidates(registers):
        if blk.y is None and by > 1:
            continue
        ey = e_y if blk.y is not None else 1.0
        arith, util, loop = blocked_point_cost(u, blk, nb, by, lanes, e_x, ey, cached_load_ops,
                                               loop_iter_ops, loop_setup_ops, acc_ops)
        cost = arith / util + loop
        fits = (np.asarray(e_x, dtype=float) >= nb * lanes) & (np.asarray(ey, dtype=float) >= by)
        better = fits & (cost < best - 1e-12)
        best = np.where(better, cost, best)
        nb_o, by_o = np.where(better, nb, nb_o), np.where(better, by, by_o)
        ar_o = np.where(better, arith, ar_o)
        ut_o = np.where(better, util, ut_o)
        lp_o = np.where(better, loop, lp_o)
    return best, nb_o, by_o, ar_o, ut_o, lp_o


def emit(handle, blk: BlockInfo, nb: int, by: int, lanes: int, inner_extent: int,
         parallel: bool, try_) -> bool:
    """The blocking directives on update handle ``handle``; False (and nothing
    more tried) as soon as one is refused."""
    xb, xr = f"{blk.x}_b", f"{blk.x}_r"
    steps = [(handle.split, (blk.x, xb, xr, nb * lanes))]
    order = [xr]
    outer = [xb]
    if blk.y is not None:
        yb, yr = f"{blk.y}_b", f"{blk.y}_r"
        steps.append((handle.split, (blk.y, yb, yr, by)))
        order.append(yr)
        outer.append(yb)
    kb = k_block(blk, inner_extent)
    r = blk.rvars[0]
    if kb:
        # K-blocking: the RDom loop split, its outer part outside every block loop,
        # so one panel of the operands (kb steps of the block's rows and columns) is
        # reused from cache by every block, as a BLAS kernel's packed panels are
        stem = r.replace(".", "_")
        ro, r = f"{stem}_ko", f"{stem}_ki"
        steps.append((handle.split, (blk.rvars[0], ro, r, kb)))
        order += [r] + list(reversed(outer)) + list(blk.others) + [ro]
    else:
        order += list(blk.rvars) + outer + list(blk.others)
    steps.append((handle.reorder, tuple(order)))
    steps.append((handle.vectorize, (xr, lanes)))
    if nb > 1:
        steps.append((handle.unroll, (xr,)))
    if blk.y is not None and by > 1:
        steps.append((handle.unroll, (f"{blk.y}_r",)))
    ur = rdom_unroll(kb or inner_extent)
    if ur > 1:
        steps.append((handle.unroll, (r, ur)))
    for fn, args in steps:
        if not try_(fn, *args):
            return False
    if parallel and (blk.y is not None or blk.others):
        try_(handle.parallel, order[-2] if kb else order[-1])
    return True


def k_block(blk: BlockInfo, inner_extent: int) -> int:
    """Steps of the RDom loop per K-block (0: not split): ``K_BLOCK`` when the update
    has one RVar running at least ``K_BLOCK_MIN_STEPS`` times ``K_BLOCK`` steps (a
    long dot product, as in matmul; RVars of one RDom keep their nesting, so one with
    several is left whole)."""
    if len(blk.rvars) != 1 or inner_extent < K_BLOCK_MIN_STEPS * K_BLOCK:
        return 0
    return K_BLOCK
