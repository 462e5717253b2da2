"""Facts about loop-IR statements that code generation needs before emitting anything.

* :func:`free_names` -- the names a statement reads from its surroundings (Vars, Params,
  buffers, extents/strides): what an outlined parallel body must capture.
* :func:`vectorize_blocker` -- why the body of a vectorized loop cannot be emitted with
  W-lane vector values (None if it can).  A vectorized body may contain serial, unrolled
  or (serially run) parallel loops whose bounds are uniform across the lanes, LetStmts,
  Stores, and IfThenElse (a varying condition becomes a lane mask).  It may not contain
  an Allocate (each lane would need its own copy), another vectorized loop, or a loop
  whose bounds vary across the lanes.  Such a loop is emitted as a scalar loop instead
  (left to LLVM's loop vectorizer), and the reason is recorded in the module's notes.

Vectorizing runs the body's statements for all lanes at once, in statement order (lane
order inside each scatter); like Halide, this assumes lowering only vectorizes loops whose
iterations are independent.
"""
from __future__ import annotations

from ...lower import ir as L
from ...model import expr as E
from ...model.visit import substitute_names, walk

# The most lanes one vector value gets: a vectorized loop of a larger constant extent (a
# ``vectorize()`` without a width over a large constant region) runs as vectors of this
# many lanes; LLVM cannot select instructions for vectors of tens of thousands of lanes.
MAX_LANES = 256


def expr_names(e: E.Expr, out: set) -> set:
    """Add the names ``e`` reads (Vars, Params, buffers, extents) to ``out``."""
    for n in walk(e):
        if isinstance(n, (E.Var, E.Param)):
            out.add(n.name)
        elif isinstance(n, L.Load):
            out.add(n.buffer)
        elif isinstance(n, E.BufferExtent):
            out.add(f"{n.image}.extent.{n.dim}")
    return out


def free_names(s: L.Stmt) -> set:
    """Every name read or written anywhere in ``s`` (a superset of its free names; names
    bound inside ``s`` are harmless extras, since callers intersect with what is bound)."""
    out: set = set()
    for st in L.walk_stmts(s):
        for e in L.stmt_exprs(st):
            expr_names(e, out)
        if isinstance(st, L.Store):
            out.add(st.buffer)
    return out


def _mentions(e: E.Expr, names: set) -> bool:
    return bool(expr_names(e, set()) & names)


def vectorize_blocker(body: L.Stmt, var: str) -> str | None:
    """None if ``body`` of the vectorized loop over ``var`` can be emitted with vector
    values; otherwise a short reason."""
    varying = {var}
    stack = [body]
    while stack:
        s = stack.pop()
        if isinstance(s, L.Allocate):
            return f"allocation of {s.name} inside the vectorized loop"
        if isinstance(s, L.For):
            if s.kind == "vectorized":
                return f"nested vectorized loop {s.name}"
            if _mentions(s.min, varying) or _mentions(s.extent, varying):
                return f"the bounds of the inner loop {s.name} vary across lanes"
        elif isinstance(s, L.LetStmt):
            if _mentions(s.value, varying):
                varying.add(s.name)
        stack.extend(reversed(L.stmt_children(s)))
    return None


def chunk_wide_vector_loop(s: L.For, lanes: int = MAX_LANES) -> L.Stmt:
    """The vectorized loop ``s`` (constant extent above ``lanes``) as a serial loop over
    vectors of ``lanes`` lanes, then one vector of the lanes left over."""
    n = int(s.extent.value)
    full, rest = divmod(n, lanes)
    t = s.min.type

    def at(base, lane):
        v = E.binop("add", base, E.Var(lane))
        return L.map_stmt(s.body, fn_expr=lambda e: substitute_names(e, {s.name: v}))
    chunk, lane, tail = f"{s.name}.vchunk", f"{s.name}.vlane", f"{s.name}.vtail"
    start = E.binop("add", s.min, E.binop("mul", E.Var(chunk), E.Const(t, lanes)))
    parts = [L.For(chunk, E.Const(t, 0), E.Const(t, full), "serial",
                   L.For(lane, E.Const(t, 0), E.Const(t, lanes), "vectorized", at(start, lane)))]
    if rest:
        parts.append(L.For(tail, E.Const(t, 0), E.Const(t, rest), "vectorized",
                           at(E.binop("add", s.min, E.Const(t, full * lanes)), tail)))
    return L.Block(tuple(parts))


def split_at_barriers(body: L.Stmt) -> list[L.Stmt] | None:
    """For the serial emulation of a GPU thread loop: the body cut at its top-level
    barriers (each piece re-wrapped in the LetStmts around it), or None if it has none.

    ``for t: {A; barrier; B}`` must run as ``for t: A; for t: B`` so that every thread
    finishes A before any starts B."""
    lets = []
    s = body
    while isinstance(s, L.LetStmt):
        lets.append(s)
        s = s.body
    if not isinstance(s, L.Block) or not any(isinstance(x, L.Barrier) for x in s.stmts):
        return None
    pieces, cur = [], []
    for x in s.stmts:
        if isinstance(x, L.Barrier):
            if cur:
                pieces.append(L.Block.make(cur))
            cur = []
        else:
            cur.append(x)
    if cur:
        pieces.append(L.Block.make(cur))
    out = []
    for p in pieces:
        for let in reversed(lets):
            p = L.LetStmt(let.name, let.value, p)
        out.append(p)
    return out
