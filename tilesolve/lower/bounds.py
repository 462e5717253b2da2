"""Symbolic bounds inference over the loop IR (Halide's boxes_required/provided).

``expr_bounds(e, scope)`` gives ``(lo, hi)`` Exprs (``None`` = unbounded) of
the values ``e`` takes when each name in ``scope`` ranges over its interval
(``(lo, hi)`` Exprs); a Var not in ``scope`` is a fixed symbol.

``box_of(stmt, name, scope)`` walks a statement and returns the box of
``name`` the statement touches (reads through Calls, writes through
Provides), symbolic in the names free at the statement (the loop variables
outside it, region Vars, argument extents, Params):

* ``For``: its variable ranges over ``[min, min + extent - 1]``;
* ``LetStmt``: its name ranges over the bounds of its value;
* ``IfThenElse``: a condition on Vars bound inside the walk narrows them
  (``x < e`` makes ``x <= e - 1`` in the then-branch: guard_with_if tails
  therefore never demand the points they skip); a condition on free names
  only (``out.extent.0 >= 256``, the shift-inward test) gives
  ``select(cond, box_then, box_else)``, so each version of a nest is exact; a
  guard with no else on a Var bound outside the walk (``y < e``: a guard_with_if
  tail where a producer is computed inside the tail's loop) trims it
  (``[y, min(y, e - 1)]``), and a box under such a guard alone is empty where the
  guard fails, so the producer computes nothing past the end.

Boxes are lists of ``(lo, hi)`` per dimension, innermost first.
"""
from __future__ import annotations

import math

from ..analysis.intervals import INDEX_LIMIT, Bounder, Interval
from ..analysis.simplify import simplify
from ..model import expr as E
from ..model import types as T
from ..model.visit import children as expr_children
from ..model.visit import mutate, trampoline, walk
from . import ir as L

INT = T.int32


def _emin(a, b):
    if a is None or b is None:
        return None
    return a if a is b else E.min_(a, b)


def _emax(a, b):
    if a is None or b is None:
        return None
    return a if a is b else E.max_(a, b)


def _endpoint(v, t, is_lo: bool):
    """An Interval endpoint as an Expr of type ``t`` (None when unbounded)."""
    if v is None:
        return None
    if isinstance(v, E.Expr):
        return v
    if isinstance(v, float) and not t.is_float():
        v = math.floor(v) if is_lo else math.ceil(v)
    if not t.is_float() and (v <= -INDEX_LIMIT - 1 or v >= INDEX_LIMIT):
        return None          # the type's whole range: nothing is known
    return E.Const(t, v)


class Bounds:
    """Symbolic ``(lo, hi)`` Exprs of Exprs under a scope of ``(lo, hi)``
    intervals (None: unbounded); names outside the scope are symbols.  A thin
    adapter over ``analysis.intervals.Bounder``."""

    def __init__(self, scope: dict):
        self.scope = scope
        self.bounder = Bounder({k: Interval(*v) for k, v in scope.items()}, symbolic=True,
                               loop_ir=True)

    def __call__(self, e: E.Expr):
        iv = self.bounder.bounds(e)
        t = e.type
        return _endpoint(iv.lo, t, True), _endpoint(iv.hi, t, False)


def expr_bounds(e: E.Expr, scope: dict | None = None) -> tuple:
    """Symbolic ``(lo, hi)`` of ``e`` (simplified; ``None`` when unbounded)."""
    lo, hi = Bounds(scope or {})(e)
    return (None if lo is None else simplify(lo)), (None if hi is None else simplify(hi))


# ---------------------------------------------------------------------------
# Boxes touched by a statement
# ---------------------------------------------------------------------------
def union_box(a, b):
    """Per-dimension hull of two boxes (either may be None: nothing touched)."""
    if a is None:
        return b
    if b is None:
        return a
    return [(_emin(x[0], y[0]), _emax(x[1], y[1])) for x, y in zip(a, b)]


def _select_box(cond, a, b):
    if a is None or b is None:
        return a if b is None else b
    out = []
    for x, y in zip(a, b):
        lo = None if x[0] is None or y[0] is None else (x[0] if x[0] is y[0] else E.select(cond, x[0], y[0]))
        hi = None if x[1] is None or y[1] is None else (x[1] if x[1] is y[1] else E.select(cond, x[1], y[1]))
        out.append((lo, hi))
    return out


class Names:
    """The Func/input names each statement (or Expr) calls or provides, cached
    by identity (statements are shared between passes, so the cache carries over)."""

    def __init__(self):
        self._stmts: dict[int, tuple] = {}
        self._exprs: dict[int, tuple] = {}

    def of_expr(self, e: E.Expr) -> frozenset:
        """Every node below ``e`` is cached too, each from its children's (one visit
        a node: asked of every node of a deep DAG, as box walks do, it stays linear)."""
        memo = self._exprs
        hit = memo.get(id(e))
        if hit is not None:
            return hit[1]
        stack = [(e, False)]
        while stack:
            n, ready = stack.pop()
            if id(n) in memo:
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((c, False) for c in expr_children(n) if id(c) not in memo)
                continue
            names = frozenset().union(*(memo[id(c)][1] for c in expr_children(n)))
            if isinstance(n, E.Call):
                names = names | {n.target.name}
            memo[id(n)] = (n, names)
        return memo[id(e)][1]

    def own(self, s: L.Stmt) -> frozenset:
        """Names used by the Exprs ``s`` holds directly (plus what it provides)."""
        out = frozenset().union(*(self.of_expr(e) for e in L.stmt_exprs(s)))
        return out | {s.func} if isinstance(s, L.Provide) else out

    def of(self, s: L.Stmt) -> frozenset:
        hit = self._stmts.get(id(s))
        if hit is None:
            trampoline(s, self._of_step)
            hit = self._stmts[id(s)]
        return hit[1]

    def _of_step(self, s: L.Stmt):
        hit = self._stmts.get(id(s))
        if hit is not None:
            return hit[1]
        return self._of_children(s)

    def _of_children(self, s: L.Stmt):
        names = self.own(s)
        for c in L.stmt_children(s):
            names = names | (yield c)
        self._stmts[id(s)] = (s, names)
        return names


class _Pending:
    """A scope entry computed on first lookup: a loop (min, extent) or a let."""

    __slots__ = ("expr", "extent", "known")

    def __init__(self, expr, extent=None, known=None):
        self.expr, self.extent, self.known = expr, extent, known


class _Scope(dict):
    """name -> Interval, or a ``_Pending`` resolved (and cached) when looked up:
    only the loops and lets an index actually uses are ever bounded."""

    def __init__(self, walker):
        super().__init__()
        self.walker = walker
        self.cache: dict = {}

    def get(self, key, default=None):
        v = dict.get(self, key)
        if v is None:
            return default
        if isinstance(v, _Pending):
            iv = self.cache.get(key)
            if iv is None:
                iv = self.cache[key] = self.walker.resolve(v)
            return iv
        return v

    def __getitem__(self, key):
        return self.get(key)

    def __iter__(self):            # dict(scope) then goes through __getitem__
        return iter(list(dict.keys(self)))

    def keys(self):
        return list(dict.keys(self))


class _Walker:
    def __init__(self, name: str, reads: bool, writes: bool, known: dict | None,
                 func_bounds: dict | None, names: Names, loop_names=frozenset()):
        self.name, self.reads, self.writes = name, reads, writes
        self.known = known or {}
        self.loop_names = loop_names
        self.func_bounds = func_bounds or {}
        self.names = names
        self.scope = _Scope(self)

    # -- the scope ---------------------------------------------------------------------
    def bounder(self) -> Bounder:
        b = Bounder(None, func_bounds=self.func_bounds, symbolic=True, loop_ir=True)
        b.scope = self.scope
        return b

    def pair(self, b: Bounder, e: E.Expr) -> tuple:
        iv = b.bounds(e)
        return _endpoint(iv.lo, e.type, True), _endpoint(iv.hi, e.type, False)

    def resolve(self, p: _Pending) -> Interval:
        b = self.bounder()
        if p.extent is not None:                         # a loop
            # Inline the lets first: a loop over a region runs from ``m`` for
            # ``e = h - m + 1`` iterations, and ``m + e - 1`` must become ``h``
            # before intervals forget that both ``m`` are the same.
            mn = self.inline_lets(p.expr)
            last = simplify(self.inline_lets(E.binop("sub", E.binop("add", p.expr, p.extent), 1)))
            return Interval(self.pair(b, mn)[0], self.pair(b, last)[1])
        if p.known is not None and all(dict.__contains__(self.scope, n.name)
                                       for n in walk(p.expr) if isinstance(n, E.Var)
                                       and n.name in self.loop_names):
            # every loop it is built from runs inside the walk: it covers exactly its
            # known range (a split variable: the original loop's range)
            lo, hi = (simplify(self.inline_lets(k)) for k in p.known)
            return Interval(self.pair(b, lo)[0], self.pair(b, hi)[1])
        return Interval(*self.pair(b, p.expr))

    def inline_lets(self, e: E.Expr) -> E.Expr:
        """``e`` with the lets bound inside the walk replaced by their values."""
        memo = {}

        def fn(n):
            if isinstance(n, E.Var):
                v = dict.get(self.scope, n.name)
                if isinstance(v, _Pending) and v.extent is None and v.known is None:
                    return mutate(v.expr, fn, memo)
            return None
        return mutate(e, fn, memo)

    def push(self, name, value):
        old = dict.get(self.scope, name)
        dict.__setitem__(self.scope, name, value)
        self.scope.cache.pop(name, None)
        return old

    def pop(self, name, old):
        if old is None:
            dict.pop(self.scope, name, None)
        else:
            dict.__setitem__(self.scope, name, old)
        self.scope.cache.pop(name, None)

    # -- expressions -----------------------------------------------------------------
    def expr_box(self, e: E.Expr):
        if not self.reads or self.name not in self.names.of_expr(e):
            return None
        return self._expr_box(e, self.bounder())

    def _expr_box(self, e, b: Bounder):
        """The box of the calls to ``self.name`` in ``e``: a walk of the DAG (each
        shared node once, iterative); a Let binds its name for its body."""
        box, seen, stack = None, set(), [e]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if isinstance(n, E.Let):
                box = union_box(box, self._let_box(n, b))
                continue
            if isinstance(n, E.Call) and n.target.name == self.name:
                box = union_box(box, [self.pair(b, a) for a in n.args])
            stack.extend(c for c in expr_children(n)
                         if id(c) not in seen and self.name in self.names.of_expr(c))
        return box

    def _let_box(self, e: E.Let, b: Bounder):
        box = self._expr_box(e.value, b)
        old = self.push(e.name, b.bounds(e.value))
        try:
            return union_box(box, self._expr_box(e.body, self.bounder()))
        finally:
            self.pop(e.name, old)

    # -- statements ------------------------------------------------------------------
    def stmt_box(self, s: L.Stmt):
        return trampoline(s, self._stmt_box_step)

    def _stmt_box_step(self, s: L.Stmt):
        if self.name not in self.names.of(s):
            return None
        return self._stmt_box(s)

    def _stmt_box(self, s: L.Stmt):
        box = None
        for e in L.stmt_exprs(s):
            box = union_box(box, self.expr_box(e))
        if isinstance(s, L.Provide):
            if self.writes and s.func == self.name:
                b = self.bounder()
                box = union_box(box, [self.pair(b, a) for a in s.args])
            return box
        if isinstance(s, (L.For, L.LetStmt)):
            if isinstance(s, L.For):
                entry = _Pending(s.min, s.extent)
            else:
                entry = _Pending(s.value, known=self.known.get(s.name))
            old = self.push(s.name, entry)
            try:
                return union_box(box, (yield s.body))
            finally:
                self.pop(s.name, old)
        if isinstance(s, L.IfThenElse):
            return union_box(box, (yield from self._if_box(s)))
        for c in L.stmt_children(s):
            box = union_box(box, (yield c))
        return box

    def _if_box(self, s: L.IfThenElse):
        if s.steady and s.else_case is not None:
            return (yield s.else_case)       # the steady state touches a subset of it
        cond = simplify(self.inline_lets(s.cond))
        free = {n.name for n in walk(cond) if isinstance(n, (E.Var, E.Param))}
        if not any(dict.__contains__(self.scope, n) for n in free):
            # a test of names free at the walk's root (the shift-inward test on a
            # region's extent): each branch counts only when it runs
            if s.else_case is None:
                # a guard with nothing else (a guard_with_if tail tested on a loop
                # variable bound outside the walk, where a producer is computed
                # inside that loop): past it nothing is touched
                a = yield from self._narrowed(s.then_case, cond, True, trim=True)
                return _only_when(cond, a)
            a = yield s.then_case
            b = yield s.else_case
            return _select_box(cond, a, b) if a is not None and b is not None else union_box(a, b)
        box = yield from self._narrowed(s.then_case, s.cond, True, trim=s.else_case is None)
        if s.else_case is not None:
            box = union_box(box, (yield from self._narrowed(s.else_case, s.cond, False)))
        return box

    def _narrowed(self, s, cond, truth, trim: bool = False):
        """Walk ``s`` where ``cond == truth``: the names bound in the walk that it
        bounds narrowed; with ``trim`` (a guard with no else) the free ones too
        (``free_narrowings``), so a box touched only below a bound stops there."""
        narrow = narrowings(self, cond, truth)
        if trim:
            narrow += free_narrowings(self, cond, truth)
        if not narrow:
            return (yield s)
        # Intervals cached before stay valid (only wider than they could be);
        # those computed under the narrowing must not outlive it.
        before = set(self.scope.cache)
        saved = [(name, self.push(name, iv)) for name, iv in narrow]
        try:
            return (yield s)
        finally:
            for name, old in reversed(saved):
                self.pop(name, old)
            for k in set(self.scope.cache) - before:
                del self.scope.cache[k]


def _only_when(cond, box):
    """``box`` where it is touched only when ``cond`` holds: empty otherwise (its upper
    end one below its lower), so a producer computes nothing there.  As an interval
    this is no wider than ``box``."""
    if box is None:
        return None
    out = []
    for lo, hi in box:
        if lo is None or hi is None:
            out.append((lo, hi))
            continue
        empty = simplify(lo - 1)
        out.append((lo, E.select(cond, hi, empty)))
    return out


_NEG = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def narrowings(w: _Walker, cond: E.Expr, truth: bool) -> list:
    """``(name, Interval)`` tightenings of scope names implied by ``cond == truth``
    (conjunctions of ``var < e``, ``var <= e``, ``var > e``, ``var >= e``)."""
    out = {}
    for op, a, b in _var_comparisons(cond, truth):
        if not dict.__contains__(w.scope, a.name):
            continue
        entry = dict.get(w.scope, a.name)
        if isinstance(entry, _Pending) and entry.extent is None and entry.known is None:
            continue    # a plain let: inlining it (see inline_lets) keeps more than narrowing
        cur = out.get(a.name)
        cur = w.scope.get(a.name) if cur is None else cur
        lo = None if cur.lo is None else _endpoint(cur.lo, INT, True)
        hi = None if cur.hi is None else _endpoint(cur.hi, INT, False)
        side, lim = _limit(w, op, b)
        if side == "hi":
            out[a.name] = Interval(lo, _simp(lim if hi is None else E.min_(hi, lim)))
        elif side == "lo":
            out[a.name] = Interval(_simp(lim if lo is None else E.max_(lo, lim)), hi)
    return list(out.items())


def _var_comparisons(cond: E.Expr, truth: bool):
    """``(op, var, e)`` for the comparisons of an int32 Var with an Expr not reading it
    that ``cond == truth`` implies, the Var on the left."""
    for op, a, b in _comparisons(cond, truth):
        if not isinstance(a, E.Var) and isinstance(b, E.Var):
            op, a, b = _FLIP[op], b, a
        if isinstance(a, E.Var) and a.type == INT and \
                not any(isinstance(n, E.Var) and n.name == a.name for n in walk(b)):
            yield op, a, b


def _limit(w: _Walker, op: str, b: E.Expr) -> tuple:
    """What ``var op b`` bounds: ``("hi", last value)``, ``("lo", first value)``, or
    ``(None, None)`` where ``b`` has no bound over the walk's scope on that side."""
    bl, bh = w.pair(w.bounder(), b)
    if op in ("lt", "le") and bh is not None:
        return "hi", (bh - 1 if op == "lt" else bh)
    if op in ("gt", "ge") and bl is not None:
        return "lo", (bl + 1 if op == "gt" else bl)
    return None, None


def _comparisons(cond: E.Expr, truth: bool) -> list:
    """``(op, a, b)`` for the comparisons ``a op b`` that ``cond == truth`` implies
    (through conjunctions, negations and De Morgan)."""
    conds = []

    def split(c, t):
        if isinstance(c, E.BinOp) and ((c.op == "and" and t) or (c.op == "or" and not t)):
            split(c.a, t)
            split(c.b, t)
        elif isinstance(c, E.Not):
            split(c.a, not t)
        elif isinstance(c, E.BinOp) and c.op in _NEG:
            conds.append((c.op if t else _NEG[c.op], c.a, c.b))
    split(cond, truth)
    return conds


def free_narrowings(w: _Walker, cond: E.Expr, truth: bool) -> list:
    """``(name, Interval)`` for the int32 Vars free at the walk's root (bound outside
    it: a guard_with_if tail's loop variable where a producer is computed inside that
    loop) that ``cond == truth`` bounds: ``v < e`` gives ``v`` the interval
    ``[v, min(v, hi(e) - 1)]``, empty where the test fails, and ``v > e`` gives
    ``[max(v, lo(e) + 1), v]`` (``hi``/``lo``: bounds over the walk's scope)."""
    out = {}
    for op, a, b in _var_comparisons(cond, truth):
        if dict.__contains__(w.scope, a.name):
            continue
        lo, hi = out.get(a.name, (a, a))
        side, lim = _limit(w, op, b)
        if side == "hi":
            hi = E.min_(hi, lim)
        elif side == "lo":
            lo = E.max_(lo, lim)
        else:
            continue
        out[a.name] = (lo, hi)
    return [(n, Interval(simplify(lo), simplify(hi))) for n, (lo, hi) in out.items()]


def _simp(e):
    return None if e is None else simplify(e)


def box_of(s: L.Stmt, name: str, *, reads=True, writes=True, known: dict | None = None,
           func_bounds: dict | None = None, names: Names | None = None,
           loop_names=frozenset(), constants: dict | None = None):
    """The box of ``name`` that ``s`` reads and/or writes, or None if untouched.

    ``known`` maps let-defined loop variables (split and fused originals) to
    the ``(lo, hi)`` they cover when all their loops run inside ``s``, which
    is tighter than interval arithmetic on ``min(xo * 8, e - 8) + xi``
    (``loop_names``: the loop variables and lets of the stage nests, which must
    all be bound inside ``s`` for that);
    ``func_bounds`` the value ranges of Funcs (for data-dependent indices);
    ``constants`` names bound outside ``s`` to a constant (name -> Const).
    Endpoints are simplified Exprs, or None where unbounded."""
    w = _Walker(name, reads, writes, known, func_bounds, names or Names(), loop_names)
    for n, c in (constants or {}).items():
        dict.__setitem__(w.scope, n, Interval(c.value, c.value))
    box = w.stmt_box(s)
    if box is None:
        return None
    return [(_simp(lo), _simp(hi)) for lo, hi in box]


def uses(s: L.Stmt, name: str, names: Names | None = None) -> bool:
    """Whether any Expr of ``s`` calls ``name`` or any Provide writes it."""
    return name in (names or Names()).of(s)


def own_uses(s: L.Stmt, name: str, names: Names | None = None) -> bool:
    """Whether the Exprs held directly by ``s`` (not its children) call ``name``."""
    return name in (names or Names()).own(s) - ({s.func} if isinstance(s, L.Provide) else set())

