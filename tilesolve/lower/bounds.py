"""Symbolic bounds inference over the loop IR (Halide's boxes_required/provided).

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
  ``select(cond, box_then, box_else)``, so each version of a nest is exact.

Boxes are lists of ``(lo, hi)`` per dimension, innermost first, each end an
Expr or None (unbounded).  Expression bounds come from ``bounder.LowerBounder``
(``analysis.intervals.Bounder`` in symbolic mode, plus what lowering needs).
"""
from __future__ import annotations

from ..analysis.intervals import Bounder, Interval
from ..analysis.simplify import simplify
from ..model import expr as E
from ..model import types as T
from ..model.visit import children as expr_children
from ..model.visit import mutate, walk
from . import ir as L
from .bounder import LowerBounder, endpoint

INT = T.int32


def _emin(a, b):
    if a is None or b is None:
        return None
    return a if a is b else E.min_(a, b)


def _emax(a, b):
    if a is None or b is None:
        return None
    return a if a is b else E.max_(a, b)


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
        hit = self._exprs.get(id(e))
        if hit is None:
            names = frozenset(n.target.name for n in walk(e) if isinstance(n, E.Call))
            hit = self._exprs[id(e)] = (e, names)
        return hit[1]

    def own(self, s: L.Stmt) -> frozenset:
        """Names used by the Exprs ``s`` holds directly (plus what it provides)."""
        out = frozenset().union(*(self.of_expr(e) for e in L.stmt_exprs(s)))
        return out | {s.func} if isinstance(s, L.Provide) else out

    def of(self, s: L.Stmt) -> frozenset:
        hit = self._stmts.get(id(s))
        if hit is None:
            names = self.own(s).union(*(self.of(c) for c in L.stmt_children(s)))
            hit = self._stmts[id(s)] = (s, names)
        return hit[1]


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


def _small(e: E.Expr, limit: int = 8) -> bool:
    n = 0
    for _ in walk(e):
        n += 1
        if n > limit:
            return False
    return True


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
        b = LowerBounder(None, func_bounds=self.func_bounds, symbolic=True)
        b.scope = self.scope
        return b

    def pair(self, b: Bounder, e: E.Expr) -> tuple:
        iv = b.bounds(e)
        return endpoint(iv.lo, e.type, True), endpoint(iv.hi, e.type, False)

    def resolve(self, p: _Pending) -> Interval:
        b = self.bounder()
        if p.extent is not None:                         # a loop
            # Inline the lets first: a loop over a region runs from ``m`` for
            # ``e = h - m + 1`` iterations, and ``m + e - 1`` must become ``h``
            # before intervals forget that both ``m`` are the same.
            mn = self.inline_lets(p.expr)
            last = self.inline_lets(E.binop("sub", E.binop("add", p.expr, p.extent), 1))
            return Interval(self.pair(b, mn)[0], self.pair(b, last)[1])
        if p.known is not None and self._enclosed(p.expr):
            # every loop it is built from runs inside the walk: it covers exactly its
            # known range (a split variable: the original loop's range)
            lo, hi = (self.inline_lets(k) for k in p.known)
            return Interval(self.pair(b, lo)[0], self.pair(b, hi)[1])
        return Interval(*self.pair(b, p.expr))

    def _enclosed(self, e: E.Expr) -> bool:
        """Whether every loop variable ``e`` depends on (through lets) runs
        inside the walk."""
        seen, stack = set(), [e]
        while stack:
            for n in walk(stack.pop()):
                if not isinstance(n, E.Var) or n.name in seen or n.name not in self.loop_names:
                    continue
                seen.add(n.name)
                v = dict.get(self.scope, n.name)
                if v is None:
                    return False
                if isinstance(v, _Pending) and v.extent is None:
                    stack.append(v.expr)
        return True

    def inline_lets(self, e: E.Expr) -> E.Expr:
        """``e`` with the small lets bound inside the walk (``f.x.extent =
        f.x.max - f.x.min + 1``) replaced by their values, recursively, and
        simplified: ``m + e - 1`` becomes ``f.x.max`` before intervals forget
        that both ``m`` are one.  Big values stay behind their names."""
        memo = {}

        def fn(n):
            if isinstance(n, E.Var):
                v = dict.get(self.scope, n.name)
                if isinstance(v, _Pending) and v.extent is None and v.known is None \
                        and _small(v.expr):
                    return mutate(v.expr, fn, memo)
            return None
        return simplify(mutate(e, fn, memo))

    def _inline_all(self, e: E.Expr) -> E.Expr:
        """``e`` with every let bound inside the walk inlined (recursively)."""
        memo = {}

        def fn(n):
            if isinstance(n, E.Var):
                v = dict.get(self.scope, n.name)
                if isinstance(v, _Pending) and v.extent is None and v.known is None:
                    return mutate(v.expr, fn, memo)
            return None
        return simplify(mutate(e, fn, memo))

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
        box = None
        if isinstance(e, E.Let):
            box = self._expr_box(e.value, b)
            old = self.push(e.name, b.bounds(e.value))
            try:
                return union_box(box, self._expr_box(e.body, self.bounder()))
            finally:
                self.pop(e.name, old)
        if isinstance(e, E.Call) and e.target.name == self.name:
            box = [self.pair(b, a) for a in e.args]
        for c in expr_children(e):
            if self.name in self.names.of_expr(c):
                box = union_box(box, self._expr_box(c, b))
        return box

    # -- statements ------------------------------------------------------------------
    def stmt_box(self, s: L.Stmt):
        if self.name not in self.names.of(s):
            return None
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
                return union_box(box, self.stmt_box(s.body))
            finally:
                self.pop(s.name, old)
        if isinstance(s, L.IfThenElse):
            return union_box(box, self._if_box(s))
        for c in L.stmt_children(s):
            box = union_box(box, self.stmt_box(c))
        return box

    def _if_box(self, s: L.IfThenElse):
        cond = self._inline_all(s.cond)
        free = {n.name for n in walk(cond) if isinstance(n, (E.Var, E.Param))}
        if not any(dict.__contains__(self.scope, n) for n in free):
            # a test of names free at the walk's root (the shift-inward test on a
            # region's extent): each branch counts only when it runs
            a = self.stmt_box(s.then_case)
            b = None if s.else_case is None else self.stmt_box(s.else_case)
            return _select_box(cond, a, b) if a is not None and b is not None else union_box(a, b)
        box = self._narrowed(s.then_case, s.cond, True)
        if s.else_case is not None:
            box = union_box(box, self._narrowed(s.else_case, s.cond, False))
        return box

    def _narrowed(self, s, cond, truth):
        narrow = narrowings(self, cond, truth)
        if not narrow:
            return self.stmt_box(s)
        # Intervals cached before stay valid (only wider than they could be);
        # those computed under the narrowing must not outlive it.
        before = set(self.scope.cache)
        saved = [(name, self.push(name, iv)) for name, iv in narrow]
        try:
            return self.stmt_box(s)
        finally:
            for name, old in reversed(saved):
                self.pop(name, old)
            for k in set(self.scope.cache) - before:
                del self.scope.cache[k]


_NEG = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def narrowings(w: _Walker, cond: E.Expr, truth: bool) -> list:
    """``(name, Interval)`` tightenings of scope names implied by ``cond == truth``
    (conjunctions of ``var < e``, ``var <= e``, ``var > e``, ``var >= e``)."""
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
    out = {}
    for op, a, b in conds:
        if not isinstance(a, E.Var) and isinstance(b, E.Var):
            op, a, b = _FLIP[op], b, a
        if not isinstance(a, E.Var) or not dict.__contains__(w.scope, a.name) or a.type != INT:
            continue
        entry = dict.get(w.scope, a.name)
        if isinstance(entry, _Pending) and entry.extent is None and entry.known is None:
            continue    # a plain let: inlining it (see inline_lets) keeps more than narrowing
        if any(isinstance(n, E.Var) and n.name == a.name for n in walk(b)):
            continue
        bd = w.bounder()
        bl, bh = w.pair(bd, b)
        cur = out.get(a.name)
        cur = w.scope.get(a.name) if cur is None else cur
        lo, hi = cur.lo, cur.hi
        lo = None if lo is None else endpoint(lo, INT, True)
        hi = None if hi is None else endpoint(hi, INT, False)
        if op in ("lt", "le") and bh is not None:
            lim = bh - 1 if op == "lt" else bh
            out[a.name] = Interval(lo, _simp(lim if hi is None else E.min_(hi, lim)))
        elif op in ("gt", "ge") and bl is not None:
            lim = bl + 1 if op == "gt" else bl
            out[a.name] = Interval(_simp(lim if lo is None else E.max_(lo, lim)), hi)
    return list(out.items())


def _simp(e):
    return None if e is None else simplify(e)


def box_of(s: L.Stmt, name: str, *, reads=True, writes=True, known: dict | None = None,
           func_bounds: dict | None = None, names: Names | None = None,
           loop_names=frozenset()):
    """The box of ``name`` that ``s`` reads and/or writes, or None if untouched.

    ``known`` maps let-defined loop variables (split and fused originals) to
    the ``(lo, hi)`` they cover when all their loops run inside ``s``, which
    is tighter than interval arithmetic on ``min(xo * 8, e - 8) + xi``
    (``loop_names``: the loop variables and lets of the stage nests, which must
    all be bound inside ``s`` for that);
    ``func_bounds`` the value ranges of Funcs (for data-dependent indices).
    Endpoints are simplified Exprs, or None where unbounded."""
    w = _Walker(name, reads, writes, known, func_bounds, names or Names(), loop_names)
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
