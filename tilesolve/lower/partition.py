"""Loop partitioning of boundary clamps: a prologue, a clamp-free steady state, an epilogue.

A boundary condition reads its input at ``min(max(x + k, 0), W - 1)``.  Inside the
image the clamp does nothing, yet it stays in every iteration, and in a vectorized
loop it turns each shifted tap into a gather.  This pass does what Halide's
PartitionLoops does for ``likely`` clamps: it splits an innermost serial loop

    for v in [m, m + n): body

into three loops over the same body,

    for v in [m, s0): body                      (prologue: the left edge)
    for v.steady in [s0, s1): body'             (steady state: no clamps)
    for v in [s1, m + n): body                  (epilogue: the right edge)

where ``body'`` has every clamp of a load's index that provably does nothing for
``v`` in ``[s0, s1)`` replaced by its unclamped operand; a dense vector load then
replaces the gather.

**Which clamps.**  An integer ``min``/``max`` node inside the index of a ``Load`` (or
the value of an integer let in the loop, such as the shift of a tail) with one
operand that varies with ``v`` (or a vector lane or unrolled index inside the loop)
and one that does not.  ``max(e, lo)`` is a no-op where ``e >= lo`` over the whole
iteration; ``min(e, hi)`` where ``e <= hi``.  Nested clamps are taken bottom-up, so
``min(max(e, 0), W - 1)`` needs ``0 <= e <= W - 1``.

**Solving for the steady range.**  The condition ``X >= 0`` (``X`` is the bound of
the clamped operand over the lanes, minus the clamp's bound) is solved for ``v``
into a *sufficient* range: linear terms give ``v >= ceil(-r/a)`` or ``v <= floor(r/-a)``;
``min(P, Q) >= 0`` needs both; ``max(P, Q) >= 0`` takes the side that depends on ``v``;
additive terms distribute into ``min``/``max``; a term ``+-P / k`` (floor division by a
positive constant, what upsampling reads) is solved exactly through ``P``: ``P / k + R >=
0`` iff ``P + R k >= 0``, ``R - P / k >= 0`` iff ``R k + k - 1 - P >= 0``.  Conditions
that do not mention ``v``
become a guard checked once per loop entry (false: the steady loop is empty).  Bounds
with two numeric ends are compared over the integers, not in the index's type (there
``-2**31 - 1`` would wrap to ``2**31 - 1`` and hold everywhere); symbolic bounds are index
arithmetic, which the bounds engine assumes does not overflow, so a loaded value (data:
a LUT's index, a select between two loads) is judged on numeric bounds only, and a
comparison of loaded values on the bounds of each side (their difference may wrap); a
bound holding a type's limit (the int32 range of a float converted to an index) bounds
nothing (``_no_bound``).  A clamp
whose condition cannot be solved this way stays in the steady body, so the result is
always correct: the steady body runs only where every removed clamp was a no-op.

**When.**  Only where it pays for three copies of the body: some removed clamp of a
load's index, or some removed select, varies across the lanes of a vectorized loop
(a gather or a blend otherwise).  Scalar clamps cost a compare each; the loop is left
whole.

**GPU blocks** (``partition_loops(body, target="cuda")``).  A ``gpu_block`` loop cannot
be cut in three (each part would be a kernel of its own), and a block is where a
condition costs nothing: every thread of it takes the same branch.  So the body of the
innermost block loop of each kernel is built twice behind one block-uniform condition,
as Halide partitions GPU loops::

    gpu_block for v: allocate ...; if (steady) body' else body

``body'`` is the steady state of an interior block: the same clamps and selects
removed as above, and also every guard ``if (c) s`` (a ``guard_with_if`` tail, an RDom
predicate) that holds for the whole block replaced by ``s``.  The conditions are those
above, bounded over the block's threads and inner loops (whose bounds may depend on the
block: a producer's region), and solved for ``v``; those that do not mention ``v`` (the
outer block loops) stay conditions of the block, and one that cannot be solved is kept
as it is (``X >= 0``: still a test per block).  A condition that still names a thread or
an inner loop is not taken (it would not be uniform over the block).  Guards and selects
are read with the steady values of the clamps dropped with them (they hold together): a
producer's extent and its threads' ranges as in an interior block, so a guard that fails
inside every block stays.  The block's shared
allocations (constant sizes) move above the ``if``, so both branches use one buffer.
Two more rewrites of the steady body on a GPU: a load's clamp of a constant coordinate
(a colour channel of a ``repeat_edge`` input, ``min(c.extent - 1, 2)``) goes under a
condition of the launch, and a ``min``/``max`` whose two sides move together a constant
apart (a producer's region, ``min(base - 3, base)``) becomes the side that always wins,
so the producer's thread loops get constant extents (no ``threadIdx < extent`` test).
Worth it when some load's clamp, select or guard goes; a clamp in a let (a tail's
shift) alone does not make a second body.

The pass runs last in lowering, after bounds inference and storage flattening, so
regions and allocations are those of the unpartitioned program.
"""
from __future__ import annotations

import numbers

from ..analysis.intervals import Interval, bounds_of
from ..analysis.simplify import simplify
from ..model import expr as E
from ..model.visit import substitute, substitute_names, walk
from . import ir as L

_LOOPS = ("serial", "parallel", "gpu_block", "gpu_thread")


def partition_loops(body: L.Stmt, target: str = "cpu") -> L.Stmt:
    """Partition every innermost serial loop whose loads clamp their index (see above);
    for ``target="cuda"``, the body of every innermost ``gpu_block`` loop instead."""
    if target != "cpu":
        return L.map_stmt(body, _gpu_step)
    consts = _constant_lets(body)

    def fn_stmt(s):
        if not isinstance(s, L.For):
            return None
        if s.kind in ("vectorized", "gpu_block", "gpu_thread"):
            return s            # lanes and GPU code are left alone
        if s.kind == "serial" and _innermost(s) and not _single(s):
            return _partition(s, consts) or s
        return None
    return L.map_stmt(body, fn_stmt)


def _single(loop: L.For) -> bool:
    """A loop of one iteration (a vector loop's outer part when the split is the vector
    width): nothing to partition; the loop around it is the one to split."""
    return isinstance(loop.extent, E.Const) and loop.extent.value == 1


def _constant_lets(body: L.Stmt) -> dict:
    """Let name -> its constant value, for the names every binding of which is the same
    constant (an unrolled loop's bounds before simplification: ``c.extent = 2``)."""
    seen: dict = {}
    for s in L.walk_stmts(body):
        if isinstance(s, L.LetStmt):
            v = s.value if isinstance(s.value, E.Const) else None
            seen[s.name] = v if seen.get(s.name, v) is v else None
    return {k: v for k, v in seen.items() if v is not None}


def _innermost(loop: L.For) -> bool:
    return not any(isinstance(n, L.For) and n.kind in _LOOPS and not _single(n)
                   for n in L.walk_stmts(loop.body))


# ---------------------------------------------------------------------------
# Finding the clamps of one loop body
# ---------------------------------------------------------------------------
class _Site:
    """What the loop body binds: inner lets (name -> value) and lane/unrolled ranges."""

    def __init__(self, var: str):
        self.var = var
        self.lets: dict[str, E.Expr] = {}
        self.ranges: dict[str, Interval] = {}
        self.lanes: set = set()         # the vectorized loops' variables
        self.unbounded: set = set()     # inner loops whose range could not be bounded
        self.outer: set = set()         # GPU: the outer block loops and their lets

    def inner_names(self) -> set:
        return {self.var} | set(self.lets) | set(self.ranges) | self.unbounded

    def without(self, removed: dict) -> "_Site":
        """This site with the clamps ``removed`` dropped from its lets and inner loops'
        ranges: what the steady state's values are (GPU)."""
        if not removed:
            return self
        fe = _without_clamps(removed)
        out = _Site(self.var)
        out.lets = {k: fe(v) for k, v in self.lets.items()}
        out.ranges = {k: Interval(*(fe(x) if isinstance(x, E.Expr) else x
                                    for x in (iv.lo, iv.hi)))
                      for k, iv in self.ranges.items()}
        out.lanes, out.unbounded, out.outer = self.lanes, self.unbounded, self.outer
        return out

    def moving(self) -> set:
        """The names that vary from one iteration (GPU: one block) to the next."""
        return self.inner_names() | self.outer

    def expand(self, e: E.Expr) -> E.Expr:
        """``e`` with the body's lets substituted (to a fixed point)."""
        for _ in range(len(self.lets) + 1):
            names = {n.name for n in walk(e) if isinstance(n, E.Var)}
            if not names & set(self.lets):
                return e
            e = substitute_names(e, {k: v for k, v in self.lets.items() if k in names})
        return e


class _LoadIndex:
    """The index of a Load (a clamp there is worth removing; one in a let only rides
    along, see ``_partition``)."""

    __slots__ = ("e",)

    def __init__(self, e):
        self.e = e


def _collect(loop: L.For, consts: dict | None = None, gpu: bool = False) -> tuple:
    """(site, [the index of every Load in the body and the value of every integer let],
    [every Expr of the body], [every guard: an ``if`` without ``else``; ``gpu`` only]), or
    None when the body binds something the solver cannot see through (a name bound
    twice; on the CPU an inner loop of run-time extent, which ``gpu`` bounds instead).
    ``consts``: the constant lets (``_constant_lets``), for an inner loop's bounds."""
    consts = consts or {}
    site, indices, exprs, guards = _Site(loop.name), [], [], []
    for s in L.walk_stmts(loop.body):
        if isinstance(s, L.LetStmt):
            if s.name in site.lets:
                return None
            site.lets[s.name] = s.value
            if s.value.type.is_int():
                indices.append(s.value)     # a tail's shift: min(v * f, extent - f)
        elif isinstance(s, L.For):
            mn, ext = (consts.get(e.name, e) if isinstance(e, E.Var) else e
                       for e in (s.min, s.extent))
            if isinstance(mn, E.Const) and isinstance(ext, E.Const):
                rng = Interval(mn.value, mn.value + ext.value - 1)
            elif not gpu:
                return None
            else:
                rng = _bounded_range(site, s)
            if gpu and s.name in site.inner_names():
                return None
            if rng is None:
                site.unbounded.add(s.name)
            else:
                site.ranges[s.name] = rng
            if s.kind == "vectorized":
                site.lanes.add(s.name)
        elif gpu and isinstance(s, L.IfThenElse) and s.else_case is None:
            guards.append(s)
        for x in L.stmt_exprs(s):
            exprs.append(x)
            indices.extend(_LoadIndex(n.index) for n in walk(x) if isinstance(n, L.Load))
    return site, indices, exprs, guards


def _bounded_range(site: _Site, loop: L.For):
    """The Interval an inner loop of run-time bounds covers, its ends free of the names
    bound inside the partitioned loop (the loops around it bounded, the lets written
    out); None when an end cannot be bounded."""
    scope = dict(site.ranges)
    lo = bounds_of(simplify(site.expand(loop.min)), scope, symbolic=True).lo
    hi = bounds_of(simplify(site.expand(loop.min + loop.extent - 1)), scope, symbolic=True).hi
    for end in (lo, hi):
        if _no_bound(end):
            return None
        if isinstance(end, E.Expr) and _mentions(end, site.inner_names() - {site.var}):
            return None
    return Interval(lo, hi)


# An integer bound this large is a type's limit standing for "no bound" (the bounds of
# ``int32(f)`` for a float ``f`` are the int32 range): arithmetic on it in the solved
# conditions would wrap around in int32 and make a false condition look true.
_HUGE = 1 << 30


def _no_bound(end) -> bool:
    """Whether a bound from ``bounds_of`` bounds nothing: missing, infinite, or holding
    an integer constant as large as a type's limit (see ``_HUGE``)."""
    if end is None:
        return True
    if not isinstance(end, E.Expr):
        return abs(end) == float("inf") or isinstance(end, int) and abs(end) >= _HUGE
    return any(isinstance(n, E.Const) and isinstance(n.value, int) and abs(n.value) >= _HUGE
               for n in walk(end))


def _mentions(e: E.Expr, names: set) -> bool:
    return any(isinstance(n, E.Var) and n.name in names for n in walk(e))


def _clamps(site: _Site, indices: list, solve, gpu: bool = False) -> dict:
    """{clamp node: (kept operand, [condition X: a no-op where X >= 0], worth)} for every
    clamp that ``solve(X)`` (a pair: its _Range of v and X simplified) places in a range
    moving with v.  Bottom-up: a clamp's operand is taken with the inner clamps already
    removed, which is sound because only the removed ones (those solved) are substituted."""
    inner = site.moving()
    order, seen = [], set()
    for ix in indices:
        for n in walk(ix.e if isinstance(ix, _LoadIndex) else ix):
            if id(n) not in seen and isinstance(n, E.BinOp) and n.op in ("min", "max") \
                    and n.type.is_int():
                seen.add(id(n))
                order.append(n)
    found: dict = {}
    in_loads = {id(n) for ix in indices if isinstance(ix, _LoadIndex) for n in walk(ix.e)}
    # walk() yields parents first: reversed, children come before their parents
    for n in reversed(order):
        a_var = _mentions(site.expand(n.a), inner)
        b_var = _mentions(site.expand(n.b), inner)
        fixed = False
        if gpu and a_var and b_var:
            # both sides move, a constant apart (a region's ``min(base - 3, base)``):
            # the same side always wins, which the steady state writes out (index
            # arithmetic only: a loaded value plus a constant may wrap)
            d = simplify(site.expand(n.a) - site.expand(n.b))
            if isinstance(d, E.Const) and isinstance(d.value, int) \
                    and not _reads(site.expand(n)):
                found[n] = (n.a if (d.value <= 0) == (n.op == "min") else n.b,
                            [E.as_expr(0, n.type)], False)
            continue
        if a_var == b_var:
            # on a GPU, a load's clamp of a constant coordinate to the image (a colour
            # channel, min(c.extent - 1, 2)) goes too, under a condition of the launch
            if not (gpu and not a_var and id(n) in in_loads):
                continue
            a_const = isinstance(simplify(n.a), E.Const)
            if a_const == isinstance(simplify(n.b), E.Const):
                continue
            a_var, fixed = a_const, True
        e, bound = (n.a, n.b) if a_var else (n.b, n.a)
        if _reads(bound):
            continue
        if found:
            e = substitute(e, {k: val[0] for k, val in found.items()})
        iv = bounds_of(site.expand(e), dict(site.ranges), symbolic=True)
        end = iv.lo if n.op == "max" else iv.hi
        if _no_bound(end):
            continue
        if _reads(site.expand(e)) and _number(end) is None:
            continue    # a loaded value's symbolic bound assumes it does not wrap
        lo_end, hi_end = (end, bound) if n.op == "max" else (bound, end)
        conds = _at_least(lo_end, hi_end, n.type)
        if conds is None:
            continue
        sol, cond = solve(conds[0])
        if sol is not None and (gpu or sol.los or sol.his):
            # worth a partition: a load's clamp over vector lanes (a gather otherwise);
            # on a GPU any load's clamp (the block's branch is free)
            worth = id(n) in in_loads and not fixed and (
                gpu or _mentions(site.expand(e), site.lanes))
            found[n] = (e, [cond], worth)
    return found


_NEGATE = {"lt": "ge", "le": "gt", "ge": "lt", "gt": "le"}


def _always(site: _Site, c: E.Expr, want: bool):
    """Conditions X (each X >= 0) under which the integer comparison tree ``c`` is
    ``want`` at every lane, or None: ``a < b`` is false where min(a - b) >= 0, and true
    where max(a - b) <= -1; an ``or`` is false where both sides are, an ``and`` true."""
    if isinstance(c, E.Not):
        return _always(site, c.a, not want)
    if not isinstance(c, E.BinOp):
        return None
    if c.op in ("and", "or"):
        if (c.op == "or") == want:
            return None         # would need one side only: a union, not a range
        a, b = _always(site, c.a, want), _always(site, c.b, want)
        return None if a is None or b is None else a + b
    op = c.op if want else _NEGATE.get(c.op)
    if op not in ("lt", "le", "ge", "gt") or not c.a.type.is_int():
        return None
    a, b = site.expand(c.a), site.expand(c.b)
    if _reads(a) or _reads(b):
        # loaded values: ``a - b`` may wrap in their type (two full-range int32 values),
        # so the difference is taken of their numeric bounds, over the integers
        ia, ib = (bounds_of(x, dict(site.ranges), symbolic=True) for x in (a, b))
        if any(_number(x) is None for x in (ia.lo, ia.hi, ib.lo, ib.hi)):
            return None
        iv = Interval(_number(ia.lo) - _number(ib.hi), _number(ia.hi) - _number(ib.lo))
    else:
        iv = bounds_of(a - b, dict(site.ranges), symbolic=True)
    # op holds at every lane: d < 0, d <= 0, d >= 0 or d > 0 for d = a - b
    if _no_bound(iv.hi if op in ("lt", "le") else iv.lo):
        return None
    if op in ("lt", "le"):
        return _at_least(-1 if op == "lt" else 0, iv.hi, c.a.type)
    return _at_least(iv.lo, 1 if op == "gt" else 0, c.a.type)


def _reads(e: E.Expr) -> bool:
    """Whether ``e`` holds a loaded value (data, not index arithmetic)."""
    return any(isinstance(n, L.Load) for n in walk(e))


def _number(x):
    """``x`` as a Python int when it is a finite integer end (an int or an int Const),
    else None."""
    if isinstance(x, E.Const):
        x = x.value
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        return None
    return int(x)


def _at_least(a, b, t):
    """The condition ``a >= b`` (ends of bounds, numbers or Exprs of type ``t``) as a list
    of one X, ``a - b`` (X >= 0), or None where it never holds or an end is unbounded.
    Two numbers are compared here, over the integers: written in type ``t`` their
    difference could wrap (``-2**31 - 1`` is ``2**31 - 1`` in int32, which would hold
    everywhere).  An Expr end is index arithmetic, which the bounds engine assumes does
    not overflow."""
    if any(x is None or not isinstance(x, E.Expr) and abs(x) == float("inf") for x in (a, b)):
        return None
    na, nb = (_number(simplify(x) if isinstance(x, E.Expr) else x) for x in (a, b))
    if na is not None and nb is not None:
        return [E.as_expr(0, t)] if na >= nb else None
    return [E.as_expr(a, t) - E.as_expr(b, t)]


def _selects(site: _Site, exprs: list, solve, gpu: bool = False, removed=None) -> dict:
    """{select node: (the branch it always takes, [conditions])} for every select whose
    integer condition moves with v and can be placed in a range of v.  ``removed``
    (GPU): the clamps the steady state drops, which its conditions are read without
    (they hold together, so a region's extent is the steady one)."""
    inner, found, seen = site.moving(), {}, set()
    steady = site.without(removed)
    for x in exprs:
        for n in walk(x):
            if not isinstance(n, E.Select) or id(n) in seen:
                continue
            seen.add(id(n))
            if not _mentions(site.expand(n.cond), inner):
                continue
            for want, branch in ((False, n.false_value), (True, n.true_value)):
                conds = _always(steady, n.cond, want)
                if not conds:
                    continue
                sols = [solve(c) for c in conds]
                if all(sol is not None for sol, _ in sols) and (gpu or any(
                        sol.los or sol.his for sol, _ in sols)):
                    worth = gpu or _mentions(site.expand(n.cond), site.lanes)
                    found[n] = (branch, [c for _, c in sols], worth)
                    break
    return found


def _guards(site: _Site, guards: list, solve, removed: dict) -> dict:
    """{id of a guard ``if (c) s``: (the guard, [conditions])} for every guard whose
    integer condition moves with the names bound in the loop and holds wherever the
    conditions do (the statement-level select: the steady state keeps ``s``); read, as
    ``_selects`` reads its conditions, without the clamps ``removed``."""
    inner, found = site.moving(), {}
    steady = site.without(removed)
    for g in guards:
        if not _mentions(site.expand(g.cond), inner):
            continue
        conds = _always(steady, g.cond, True)
        if not conds:
            continue
        sols = [solve(c) for c in conds]
        if all(sol is not None for sol, _ in sols):
            found[id(g)] = (g, [c for _, c in sols])
    return found


# ---------------------------------------------------------------------------
# Solving X >= 0 for the loop variable
# ---------------------------------------------------------------------------
class _Range:
    """A sufficient range of ``v``: every lower bound, every upper bound, every guard."""

    def __init__(self, los=(), his=(), guards=()):
        self.los, self.his, self.guards = list(los), list(his), list(guards)

    def __and__(self, o: "_Range") -> "_Range":
        return _Range(self.los + o.los, self.his + o.his, self.guards + o.guards)


def _linear(e: E.Expr, v: str):
    """(a, r) with e == a*v + r and r free of v, a an int; None if e is not so."""
    if isinstance(e, E.Var) and e.name == v:
        return 1, E.as_expr(0, e.type)
    if not _mentions(e, {v}):
        return 0, e
    if isinstance(e, E.BinOp) and e.op in ("add", "sub"):
        la, lb = _linear(e.a, v), _linear(e.b, v)
        if la is None or lb is None:
            return None
        if e.op == "add":
            return la[0] + lb[0], la[1] + lb[1]
        return la[0] - lb[0], la[1] - lb[1]
    if isinstance(e, E.BinOp) and e.op == "mul":
        for x, k in ((e.a, e.b), (e.b, e.a)):
            if isinstance(k, E.Const) and isinstance(k.value, int):
                lx = _linear(x, v)
                return None if lx is None else (lx[0] * k.value, lx[1] * k.value)
    return None


def _is_minmax(e) -> bool:
    return isinstance(e, E.BinOp) and e.op in ("min", "max")


def _distribute(e: E.Expr):
    """Push one additive or scaling step into a min/max operand: ``min(P, Q) + r`` is
    ``min(P + r, Q + r)``, ``r - min(P, Q)`` is ``max(r - P, r - Q)``; None if ``e`` has
    no such shape."""
    if not isinstance(e, E.BinOp):
        return None
    a, b = e.a, e.b
    flip = {"min": E.max_, "max": E.min_}
    same = {"min": E.min_, "max": E.max_}
    if e.op == "add":
        if _is_minmax(a):
            return same[a.op](a.a + b, a.b + b)
        if _is_minmax(b):
            return same[b.op](a + b.a, a + b.b)
    if e.op == "sub":
        if _is_minmax(a):
            return same[a.op](a.a - b, a.b - b)
        if _is_minmax(b):
            return flip[b.op](a - b.a, a - b.b)
    if e.op == "mul":
        for x, k in ((a, b), (b, a)):
            if _is_minmax(x) and isinstance(k, E.Const) and isinstance(k.value, int) and k.value:
                op = same if k.value > 0 else flip
                return op[x.op](x.a * k, x.b * k)
    if e.op in ("add", "sub", "mul"):
        # the min/max is deeper in the sum: bring it up one level there first
        da = _distribute(a)
        if da is not None:
            return E.binop(e.op, da, b)
        db = _distribute(b)
        if db is not None:
            return E.binop(e.op, a, db)
    return None


def _solve(x: E.Expr, v: str, depth: int = 0):
    """A _Range of ``v`` in which ``x >= 0`` holds, or None."""
    if depth > 32:
        return None
    if not _mentions(x, {v}):
        return _Range(guards=[x >= 0])
    lin = _linear(x, v)
    if lin is not None:
        a, r = lin
        if a > 0:            # a*v + r >= 0  <=>  v >= ceil(-r / a)
            return _Range(los=[(0 - r + (a - 1)) / a] if a > 1 else [0 - r])
        if a < 0:            # v <= floor(r / -a)
            return _Range(his=[r / (-a)] if a < -1 else [r])
        return _Range(guards=[r >= 0])
    if _is_minmax(x):
        pa, pb = _solve(x.a, v, depth + 1), _solve(x.b, v, depth + 1)
        if x.op == "min":
            return None if pa is None or pb is None else pa & pb
        # max(P, Q) >= 0 holds where either does: take the side that moves with v
        first, second = (pa, pb) if _mentions(x.a, {v}) else (pb, pa)
        return first if first is not None else second
    q = _undivide(x, v)
    if q is not None:
        return _solve(q, v, depth + 1)
    d = _distribute(x)
    return None if d is None else _solve(d, v, depth + 1)


def _div_by_const(e):
    """(P, k) if ``e`` is ``P / k`` with ``k`` a positive int constant, else None."""
    if isinstance(e, E.BinOp) and e.op == "div" and isinstance(e.b, E.Const) \
            and isinstance(e.b.value, int) and e.b.value > 0:
        return e.a, e.b.value
    return None


def _undivide(x: E.Expr, v: str):
    """An Expr ``y`` with ``y >= 0`` exactly where ``x >= 0``, free of the division by a
    constant that holds ``v``, or None.  ``x`` is a sum of terms, one of them ``+-P / k``
    (``k`` a positive int constant, floor division) and the others, ``R``, free of
    ``v``: ``P / k + R >= 0`` iff ``P + R * k >= 0``, and ``R - P / k >= 0`` iff
    ``R * k + k - 1 - P >= 0``."""
    terms, stack = [], [(x, 1)]
    while stack:
        e, sign = stack.pop()
        if isinstance(e, E.BinOp) and e.op in ("add", "sub"):
            stack.append((e.a, sign))
            stack.append((e.b, sign if e.op == "add" else -sign))
        else:
            terms.append((e, sign))
    moving = [(e, sign) for e, sign in terms if _mentions(e, {v})]
    if len(moving) != 1 or _div_by_const(moving[0][0]) is None:
        return None
    (div, sign), = moving
    p, k = _div_by_const(div)
    rest = E.as_expr(0, x.type)
    for e, sg in terms:
        if e is not div:
            rest = rest + e if sg > 0 else rest - e
    if sign > 0:
        return p + rest * k
    return rest * k + (k - 1) - p


# ---------------------------------------------------------------------------
# Rewriting the loop
# ---------------------------------------------------------------------------
def _fold(xs, op):
    out = xs[0]
    for x in xs[1:]:
        out = op(out, x)
    return out


def _steady_range(conds: list, v: str, gpu: bool = False):
    """The _Range of ``v`` where every condition (each ``X >= 0``) holds, or None.  The
    taps of a stencil give conditions X + c >= 0 that differ only in c: the smallest c
    implies the others, so that one alone is solved.  ``gpu``: a condition that cannot
    be solved is kept as it is, a test of the block."""
    tightest: dict = {}
    for cond in conds:
        rest, c = _split_const(cond)
        if rest not in tightest or c < tightest[rest]:
            tightest[rest] = c
    rng = _Range()
    for rest, c in tightest.items():
        x = simplify(rest + c)
        sol = _solve(x, v)
        if sol is None:
            if not gpu:
                return None
            sol = _Range(guards=[x >= 0])
        rng = rng & sol
    return rng


def _without_clamps(keep: dict):
    """``fn_expr`` of the steady state: every clamp of ``keep`` replaced by its operand
    (a kept branch of a select may hold clamps removed too: substituted again)."""
    swap = {id(k): val for k, val in keep.items()}

    def fe(e):
        for _ in range(4):
            if not _any_of(e, swap):
                break
            e = substitute(e, keep)
        return e
    return fe


def _partition(loop: L.For, consts: dict):
    got = _collect(loop, consts)
    if got is None:
        return None
    site, indices, exprs, _ = got
    v = loop.name

    def solve(x):
        x = simplify(site.expand(x))
        return _solve(x, v), x

    clamps = {**_clamps(site, indices, solve), **_selects(site, exprs, solve)}
    if not any(worth for _, _, worth in clamps.values()):
        return None     # scalar clamps, or only a tail's shift: not worth three copies
    rng = _steady_range([c for _, conds, _ in clamps.values() for c in conds], v)
    if rng is None:
        return None
    keep = {node: operand for node, (operand, _, _) in clamps.items()}
    lo, end = loop.min, loop.min + loop.extent
    s0 = E.min_(E.max_(lo, _fold(rng.los, E.max_)) if rng.los else lo, end)
    s1 = E.max_(E.min_(end, _fold(rng.his, E.min_) + 1) if rng.his else end, s0)
    if rng.guards:
        s1 = E.select(_fold(rng.guards, lambda a, b: a & b), s1, s0)
    s0n, s1n = f"{v}.steady.min", f"{v}.steady.end"
    s0v, s1v = E.Var(s0n), E.Var(s1n)
    steady_var = f"{v}.steady"
    unclamped = _without_clamps(keep)

    def fe(e):
        return substitute_names(unclamped(e), {v: E.Var(steady_var)})

    steady = L.map_stmt(loop.body, fn_expr=fe)
    parts = L.Block.make([
        L.For(v, lo, simplify(s0v - lo), "serial", loop.body),
        L.For(steady_var, s0v, simplify(s1v - s0v), "serial", steady),
        L.For(v, s1v, simplify(end - s1v), "serial", loop.body),
    ])
    return L.LetStmt(s0n, simplify(s0), L.LetStmt(s1n, simplify(s1), parts))


def _split_const(x: E.Expr) -> tuple:
    """(rest, c) with x == rest + c, c an int (0 if x has no constant term on top)."""
    if isinstance(x, E.BinOp) and x.op in ("add", "sub") and isinstance(x.b, E.Const) \
            and isinstance(x.b.value, int):
        return x.a, (x.b.value if x.op == "add" else -x.b.value)
    return x, 0


def _any_of(e: E.Expr, ids: dict) -> bool:
    return any(id(n) in ids for n in walk(e))


# ---------------------------------------------------------------------------
# GPU blocks: one kernel, a steady body behind a block-uniform condition
# ---------------------------------------------------------------------------
def _gpu_step(s):
    """``map_stmt`` step of the GPU pass: the outermost block loop of each kernel, whose
    innermost block loop is partitioned."""
    if not isinstance(s, L.For):
        return None
    if s.kind == "gpu_thread":
        return s        # a kernel of one block (no block loop): nothing to choose between
    if s.kind != "gpu_block":
        return None
    parent, innermost, outer = {}, None, set()
    for n in L.walk_stmts(s):
        for c in L.stmt_children(n):
            parent[id(c)] = n
        if isinstance(n, L.For) and n.kind == "gpu_block":
            innermost = n           # parents first: the last one is the innermost
    # the block loops and the lets between them (a tile's base): the outer blocks' names
    n = innermost
    while n is not s:
        n = parent[id(n)]
        if isinstance(n, (L.For, L.LetStmt)):
            outer.add(n.name)
    done = _partition_block(innermost, outer - {innermost.name})
    if done is None:
        return s
    return L.map_stmt(s, lambda n: done if n is innermost else None)


def _block_allocations(body: L.Stmt):
    """(the body without its block-level allocations, [those allocations, outermost
    first]), or (None, None) when one cannot move to the top of the block: a size that
    depends on something the block computes, or a name allocated twice."""
    allocs, names, bound, site = [], set(), set(), _Site("")
    stack = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, L.For):
            bound.add(n.name)
        if isinstance(n, L.LetStmt):
            bound.add(n.name)
            site.lets.setdefault(n.name, n.value)
        if isinstance(n, L.For) and n.kind == "gpu_thread":
            continue        # a thread's own arrays stay where they are
        if isinstance(n, L.Allocate):
            if n.name in names:
                return None, None
            names.add(n.name)
            allocs.append(n)
        stack.extend(reversed(L.stmt_children(n)))
    # a size is a let of the block (``f.buf.extent.0``) holding a constant: written out
    moved = []
    for a in allocs:
        extents = tuple(simplify(site.expand(x)) for x in a.extents)
        if any(_mentions(x, bound) for x in extents):
            return None, None
        moved.append(L.Allocate(a.name, a.type, extents, a.memory, a.body))
    ids = {id(a) for a in allocs}

    def fs(s):
        if id(s) in ids:
            return L.map_stmt(s.body, fs)
        return s if isinstance(s, L.For) and s.kind == "gpu_thread" else None
    return (L.map_stmt(body, fs) if allocs else body), moved


def _partition_block(loop: L.For, outer: set):
    """``gpu_block for v: allocs; if (steady) body' else body``, or None (see the module
    docstring, "GPU blocks"); ``outer``: the names the outer block loops bind."""
    body, allocs = _block_allocations(loop.body)
    if body is None:
        return None
    v = loop.name
    got = _collect(L.For(v, loop.min, loop.extent, loop.kind, body), gpu=True)
    if got is None:
        return None
    site, indices, exprs, guards = got
    site.outer = outer
    inner = site.inner_names() - {v}

    def solve(x):
        x = simplify(site.expand(x))
        if _mentions(x, inner) or isinstance(x, E.Const) and x.value < 0:
            return None, x          # not uniform over the block, or never a no-op
        sol = _solve(x, v)
        return (_Range(guards=[x >= 0]) if sol is None else sol), x

    clamps = _clamps(site, indices, solve, gpu=True)
    removed = {node: operand for node, (operand, _, _) in clamps.items()}
    clamps.update(_selects(site, exprs, solve, gpu=True, removed=removed))
    taken = _guards(site, guards, solve, removed)
    if not taken and not any(worth for _, _, worth in clamps.values()):
        return None     # at most a tail's shift: not worth a second body
    conds = [c for _, cs, _ in clamps.values() for c in cs]
    conds += [c for _, cs in taken.values() for c in cs]
    rng = _steady_range(conds, v, gpu=True)
    var = E.Var(v)
    tests = [var >= lo for lo in rng.los] + [var <= hi for hi in rng.his] + rng.guards
    cond = simplify(_fold(tests, lambda a, b: a & b)) if tests else E.as_expr(True)
    if isinstance(cond, E.Const) and not cond.value:
        return None
    unclamped = _without_clamps({node: operand for node, (operand, _, _) in clamps.items()})

    def fs(s):
        if id(s) in taken:
            return L.map_stmt(s.then_case, fs, unclamped)
        return None
    steady = L.map_stmt(body, fs, unclamped)
    out = steady if isinstance(cond, E.Const) else L.IfThenElse(cond, steady, body, steady=True)
    for a in reversed(allocs):
        out = L.Allocate(a.name, a.type, a.extents, a.memory, out)
    return L.For(v, loop.min, loop.extent, loop.kind, out)
