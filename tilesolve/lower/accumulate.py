"""Accumulators of a register-blocked reduction kept in a local tile (CPU).

A reduction blocked for registers, such as matmul's update

    for k.o in [0, 32):                          # serial: the reduction
      unrolled for k.i in [0, 4):
        unrolled for y in [0, 6):
          vectorized for x in [0, 64):
            prod[x + y * W] = prod[x + y * W] + A[..k..] * B[..k..]

reads and writes the same ``6 x 64`` elements of ``prod`` on every ``k``. LLVM could keep
them in registers only if it proved that the rows, ``W`` elements apart with ``W`` known
only at run time, never overlap; it cannot, so every step loads, adds and stores (and so
does Halide's code for the same schedule). This pass makes the tile explicit:

    allocate prod.acc[float32 * 384] in register
    for y, x (the loops the index depends on):  prod.acc[flat] = prod[index]
    for k.o ...: (the same loops)               prod.acc[flat] = prod.acc[flat] + ...
    for y, x:                                   prod[index] = prod.acc[flat]

The tile is a constant-size ``alloca`` indexed by constants once the loops are unrolled,
so LLVM's SROA puts it in registers. The same operations run in the same order on the
same values: results are bit-identical.

Applied to a serial or unrolled ``For`` (the outermost that qualifies) whose body is a
chain of ``LetStmt``s and ``For``s ending in one ``Store`` to ``P`` at ``index`` (or
splits, by Blocks, into several such chains with the same ``P``, ``index`` and tile
loops: the versions loop partitioning makes of a clamped tap loop, so one tile serves
the whole reduction instead of one per version and step of the loops outside), when:
the value reads ``P`` only at ``index``; nothing else in the chain reads ``P``; the
loop's own variable does not appear in ``index`` (it is a reduction); the loops that
``index`` depends on are unrolled, vectorized or serial with constant bounds; the tile
holds at most ``MAX_ELEMENTS`` values; and distinct points of the tile store to distinct
elements (``_distinct``: proved, or tested at run time, as matmul's rows are: ``W >=
64``, with the original loop as the other branch).
"""
from __future__ import annotations

from ..analysis.simplify import prove, simplify
from ..model import expr as E
from ..model.visit import mutate, substitute_names, walk
from . import ir as L

__all__ = ["promote_accumulators", "MAX_ELEMENTS"]

#: 32 vector registers of 16 float32 on AVX-512 (the tile may spill beyond what the
#: target has, to the stack: no worse than the buffer it replaces)
MAX_ELEMENTS = 512


def _names(e: E.Expr) -> set:
    return {n.name for n in walk(e) if isinstance(n, (E.Var, E.RVar))}


def _reads(e: E.Expr, buffer: str) -> list:
    return [n for n in walk(e) if isinstance(n, L.Load) and n.buffer == buffer]


def _paths(s: L.Stmt, prefix: tuple = ()):
    """The lets and loops from ``s`` down to each Store, as ``[(chain, store)]``: one
    path for a chain, several where a Block splits it (the partitioned versions of a
    loop, each ending in its copy of the one Store); None for anything else."""
    while isinstance(s, (L.For, L.LetStmt)):
        prefix = prefix + (s,)
        s = s.body
    if isinstance(s, L.Store):
        return [(list(prefix), s)]
    if isinstance(s, L.Block):
        out = []
        for c in s.stmts:
            sub = _paths(c, prefix)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def _tile_of(loop: L.For, chain: list, store: L.Store):
    """(buffer, index with the chain's lets substituted, the tile's loops) of one path,
    or None when it does not qualify (see the module docstring)."""
    buf = store.buffer
    reads = _reads(store.value, buf)
    if not reads or any(r.index is not store.index for r in reads):
        return None
    for node in chain:
        held = (node.min, node.extent) if isinstance(node, L.For) else (node.value,)
        if any(_reads(e, buf) for e in held):
            return None
    # the index in terms of the loops (lets substituted, innermost first)
    index = store.index
    for node in reversed(chain):
        if isinstance(node, L.LetStmt) and node.name in _names(index):
            index = substitute_names(index, {node.name: node.value})
    index = simplify(index)
    used = _names(index)
    if loop.name in used:
        return None                                  # not a reduction over this loop
    tile = [n for n in chain if isinstance(n, L.For) and n.name in used]
    if not tile:
        return None
    for n in tile:
        if (n.kind not in ("unrolled", "vectorized", "serial")
                or not isinstance(n.min, E.Const) or not isinstance(n.extent, E.Const)):
            return None
    return buf, index, tile, reads[0].type


def _shape(tile: list) -> tuple:
    return tuple((n.name, int(n.min.value), int(n.extent.value), n.kind) for n in tile)


def _promote(loop: L.For, taken: list):
    paths = _paths(loop)
    if not paths:
        return None
    tiles = [_tile_of(loop, chain, store) for chain, store in paths]
    if any(t is None for t in tiles) or any(
            t[0] != tiles[0][0] or t[1] is not tiles[0][1] or _shape(t[2]) != _shape(tiles[0][2])
            for t in tiles):
        return None      # every path: the same buffer, index (hash-consed) and tile loops
    buf, index, tile, etype = tiles[0]
    count = 1
    for n in tile:
        count *= max(0, int(n.extent.value))
    if count == 0 or count > MAX_ELEMENTS:
        return None
    distinct = _distinct(index, tile)
    if distinct is None:
        return None
    name = f"{buf}.acc{len(taken)}"
    taken.append(name)
    flat, stride = E.as_expr(0), 1
    for n in reversed(tile):                         # innermost loop: stride 1
        flat = flat + (E.Var(n.name) - n.min) * stride
        stride *= int(n.extent.value)
    flat = simplify(flat)
    acc = L.load(name, flat, etype)

    def nest(body):
        for n in reversed(tile):
            body = L.For(n.name, n.min, n.extent, n.kind, body)
        return body

    def to_tile(st):
        if isinstance(st, L.Store) and st.buffer == buf:
            return L.Store(name, flat, mutate(
                st.value, lambda e: acc if isinstance(e, L.Load) and e.buffer == buf else None))
        return None
    body = L.Block.make([nest(L.Store(name, flat, L.load(buf, index, etype))),
                         L.map_stmt(loop, to_tile),
                         nest(L.Store(buf, index, acc))])
    promoted = L.Allocate(name, etype, (E.as_expr(count),), "register", body)
    if distinct is True:
        return promoted
    return L.IfThenElse(distinct, promoted, loop)


def _distinct(index: E.Expr, tile: list):
    """Whether distinct points of the tile loops store to distinct elements: True, an
    Expr to test at run time, or None when it cannot hold. The index must be affine in
    the tile's variables, each step at least the span of the loops inside it (in the
    tile's order, innermost first): ``c_1 >= 1``, ``c_k >= sum_{j<k} c_j (e_j - 1) + 1``."""
    names = {n.name for n in tile}
    conds, span = [], E.as_expr(0)
    for n in reversed(tile):
        step = _coefficient(index, n.name)
        if step is None or _names(step) & names:
            return None                              # not affine in the tile
        step = simplify(step)
        conds.append(simplify(step >= span + 1))
        span = simplify(span + step * (int(n.extent.value) - 1))
    pending = []
    for c in conds:
        known = prove(c)
        if known is False:
            return None
        if known is None:
            pending.append(c)
    if not pending:
        return True
    cond = pending[0]
    for c in pending[1:]:
        cond = E.logical("and", cond, c)
    return cond


def _coefficient(e: E.Expr, v: str):
    """``c`` with ``e == c * v + r``, ``c`` and ``r`` free of ``v``; None if not so."""
    if v not in _names(e):
        return E.as_expr(0)
    if isinstance(e, E.Var):
        return E.as_expr(1)
    if isinstance(e, E.BinOp) and e.op in ("add", "sub"):
        a, b = _coefficient(e.a, v), _coefficient(e.b, v)
        if a is None or b is None:
            return None
        return a + b if e.op == "add" else a - b
    if isinstance(e, E.BinOp) and e.op == "mul":
        if v not in _names(e.a):
            c = _coefficient(e.b, v)
            return None if c is None else c * e.a
        if v not in _names(e.b):
            c = _coefficient(e.a, v)
            return None if c is None else c * e.b
    return None


def promote_accumulators(body: L.Stmt) -> L.Stmt:
    """Keep the accumulators of register-blocked reductions in a local tile (see above)."""
    taken: list = []                      # tile names, numbered in program order

    def step(s):
        if isinstance(s, L.For) and s.kind in ("serial", "unrolled"):
            return _promote(s, taken)
        return None
    return L.map_stmt(body, step)
