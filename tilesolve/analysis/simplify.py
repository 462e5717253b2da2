"""The expression simplifier: a table of rewrite rules with bounds in the same visit.

``simplify(e, scope)`` rewrites bottom-up.  Each visited node yields the
simplified node and numeric bounds of its value (from ``intervals.numeric``,
the same arithmetic the interval analysis uses), so rules can decide
comparisons, ``min``/``max`` and ``select`` when the bounds prove it.  The
rules themselves are data: ``simplify_rules.RULES``, patterns and functions
filed by the key of the node they rewrite; this module is the driver (the
visit order, scopes, lets, memoization and leaves).

What the rules assume (see types.py for the semantics):
* Integer ``+ - *`` are rewritten as linear forms (``sum(c_i * atom_i) + c``)
  in every integer type: that is exact arithmetic modulo 2**bits, so wrapping
  results never change (uint8 ``x - 1`` stays equal to ``x + 255``).
* Rules that are only true without overflow (cancelling ``x + 1 < x + 2``,
  ``min(x + 1, x)``, ``(x*4 + y) / 2``, ``(x + 4*k) % 4``) are applied to
  int32/int64 only: index arithmetic, which (as in Halide) is assumed never to
  overflow.
* Floats: constants are folded (through ``model.evaluate``), plus the exact
  identities ``x*1``, ``x/1``, ``x-0``; nothing is reassociated and float
  bounds are never used to decide anything (NaN compares false).

Results are idempotent: ``simplify(simplify(e)) is simplify(e)``.
"""
from __future__ import annotations

import math

from ..model import expr as E
from ..model import types as T
from ..model.dispatch import NodeTable
from ..model.evaluate import extent_key
from ..model.visit import children as _children
from ..model.visit import rebuild, substitute_names, walk
from .intervals import linear as _L
from .intervals import numeric as N
from . import simplify_rules as _R

__all__ = ["simplify", "prove", "numeric_bounds", "const_upper"]

INF = math.inf


# Without a scope, the simplified form and bounds of a node are a pure function of the
# node (Exprs are immutable and hash-consed; a Let body is simplified by a simplifier of
# its own, whose scope binds the name).  So every call without a scope shares one memo of
# every sub-Expr visited: the many overlapping Exprs of lowering (a region substituted
# through its lets, one level at a time) are simplified once, not once per call.  The
# entries keep their nodes alive, so ids stay their own.
_CACHE: dict[int, tuple] = {}     # id(e) -> (e, simplified, bounds)
_LINEAR: dict[int, tuple] = {}    # id(e) -> (e, linear form)
_MEMOS = {id(_R.RULES): _CACHE, id(_R.UPPER): {}}     # a mode's own memo
_CACHE_LIMIT = 200_000


def _shared(rules=_R.RULES) -> "_Simplifier":
    memo = _MEMOS[id(rules)]
    if len(memo) >= _CACHE_LIMIT or len(_LINEAR) >= _CACHE_LIMIT:
        for m in _MEMOS.values():
            m.clear()
        _LINEAR.clear()
    return _Simplifier(None, memo, _LINEAR, rules)


def simplify(e: E.Expr, scope: dict | None = None, rules=_R.RULES) -> E.Expr:
    """Simplify ``e``; ``scope`` maps names to Intervals/(lo, hi)/numbers of their values.
    ``rules``: the rule table (``simplify_rules.UPPER``: the upper-bound mode)."""
    e = E.as_expr(e)
    if scope:
        return _Simplifier(scope, rules=rules).visit(e)[0]
    hit = _MEMOS[id(rules)].get(id(e))
    if hit is not None:
        return hit[1]
    return _shared(rules).visit(e)[0]


def prove(cond, scope: dict | None = None):
    """True/False when ``cond`` is provably always true/false in ``scope``, else None."""
    cond = E.as_expr(cond)
    s = _Simplifier(scope)
    r, b = s.visit(cond)
    if isinstance(r, E.Const):
        return bool(r.value)
    if not r.type.is_float() and b[0] == b[1]:
        return bool(b[0])
    return None


def numeric_bounds(e: E.Expr, scope: dict | None = None, rules=_R.RULES) -> tuple:
    """Numeric (lo, hi) of ``e``'s value (+-inf when unknown; floats always unbounded)."""
    e = E.as_expr(e)
    return (_Simplifier(scope, rules=rules) if scope else _shared(rules)).visit(e)[1]


TILE_LIMIT = 1 << 20
_NAMES = (E.Var, E.RVar, E.Param, E.BufferExtent)


def difference_upper(f: E.Expr, h: E.Expr, lows: dict | None = None, budget: int = 400):
    """A number no smaller than ``f - h`` for every value of the free names (``inf``
    where none is found), for ``f`` and ``h`` built of ``min``/``max`` over index
    expressions.  A ``min``/``max`` under a ``+``/``-`` is taken out first
    (``_minmax_out``); then ``max(f1, f2) - h`` is bounded by the larger of ``f1 - h``'s
    and ``f2 - h``'s bounds, ``f - min(h1, h2)`` likewise (both exact), and ``min(f1,
    f2) - h`` by the smaller (and ``f - max(h1, h2)``); the leaves' differences are
    simplified and bounded.  A ``min``/``max`` found on both sides (a tile's shifted
    base) is a leaf, so it cancels.  The box of clamped reads over a tile, ``max(clamp(b
    + 31, 0, W - 1), ...) - min(clamp(b - 1, 0, W - 1), ...)``, is thus bounded by its
    offsets (32) whatever ``b`` and ``W``: what a shared buffer staging a
    ``repeat_edge`` read needs.  ``lows``: names known to be at least a number (a block
    loop's variable, its loop's start; ``_leaf_upper``); ``budget``: the most pairs of
    leaves tried."""
    f, h = E.as_expr(f), E.as_expr(h)
    # a min/max found in both (a tile's shifted base ``min(xo * 32, W - 32)``) is one
    # value on both sides: a leaf, so its differences cancel
    # (Exprs are hash-consed: an equal node is the same object)
    shared = {id(n) for n in walk(f) if type(n) is E.BinOp and n.op in ("min", "max")} \
        & {id(n) for n in walk(h) if type(n) is E.BinOp and n.op in ("min", "max")}
    left = [budget]
    memo: dict = {}

    def split(e):
        return type(e) is E.BinOp and e.op in ("min", "max") and id(e) not in shared

    def d(a, b):
        key = (id(a), id(b))
        if key in memo:
            return memo[key]
        if left[0] <= 0:
            return math.inf
        a, b = _minmax_out(a, split), _minmax_out(b, split)
        if split(a) and a.op == "max":          # exact: the larger of the two sups
            r = max(d(a.a, b), d(a.b, b))
        elif split(b) and b.op == "min":
            r = max(d(a, b.a), d(a, b.b))
        elif split(a):                          # f a min: each side bounds it
            r = min(d(a.a, b), d(a.b, b))
        elif split(b):                          # h a max
            r = min(d(a, b.a), d(a, b.b))
        else:
            left[0] -= 1
            r = _leaf_upper(simplify(a - b, rules=_R.UPPER), lows or {})
        memo[key] = r
        return r
    return d(f, h)


def _leaf_upper(e: E.Expr, lows: dict):
    """The numeric upper bound of ``e`` (in the upper-bound mode, where a rounded-down
    ``(b + 1) / 2 * 2 - b`` cancels), where each name of ``lows`` that ``e`` holds
    only as a term of its sum, with a coefficient of at most 0, counts at its lower
    bound (``0 - yo * 8 <= 0`` for ``yo >= 0``); a name of ``lows`` with a positive
    coefficient or inside another term leaves the bound to its type's range."""
    if lows:
        terms, k = _shared(_R.RULES).linear(e)
        inside = {n.name for a, _ in terms.values() if type(a) is not E.Var
                  for n in walk(a) if type(n) is E.Var}
        sub = {}
        for a, c in terms.values():
            if type(a) is E.Var and a.name in lows and c <= 0 and a.name not in inside:
                sub[a.name] = E.Const(a.type, lows[a.name])
        if sub:
            e = simplify(substitute_names(e, sub), rules=_R.UPPER)
    return numeric_bounds(e, rules=_R.UPPER)[1]


def _minmax_out(e: E.Expr, split) -> E.Expr:
    """``e`` with a ``min``/``max`` operand of its top ``+``/``-`` that ``split`` accepts
    taken outside: ``min(a, b) + c -> min(a + c, b + c)``, ``c - min(a, b) -> max(c - a,
    c - b)`` (exact)."""
    if type(e) is not E.BinOp or e.op not in ("add", "sub"):
        return e
    x, y = e.a, e.b
    if split(x):
        return E.BinOp(x.op, E.BinOp(e.op, x.a, y), E.BinOp(e.op, x.b, y))
    if split(y):
        op = y.op if e.op == "add" else ("max" if y.op == "min" else "min")
        return E.BinOp(op, E.BinOp(e.op, x, y.a), E.BinOp(e.op, x, y.b))
    return e


CLAMPED_NODES = 160     # a tile's box of clamped reads has 40-100 nodes; bigger: not tried


def clamped_extent_upper(e: E.Expr, lows: dict | None = None):
    """A constant no smaller than ``e`` written as ``P - Q + k`` (one term of each sign,
    ``k`` a constant: an extent ``hi - lo + 1``), by ``difference_upper(P, Q, lows) +
    k``; None where ``e`` is not of that form or no bound within ``TILE_LIMIT`` is found.
    The extent of a box of clamped reads, which ``const_upper`` does not bound
    (``lower/extent_bound.py`` tries both)."""
    e = simplify(E.as_expr(e))
    if e.type.is_float() or _R.node_count(e, CLAMPED_NODES) > CLAMPED_NODES:
        return None
    terms, k = _shared(_R.RULES).linear(e)
    pos = [a for a, c in terms.values() if c == 1]
    neg = [a for a, c in terms.values() if c == -1]
    if len(pos) != 1 or len(neg) != 1 or len(terms) != 2:
        return None
    hi = difference_upper(pos[0], neg[0], lows) + k
    return int(hi) if hi <= TILE_LIMIT else None


def const_upper(e: E.Expr, max_nodes: int = 80):
    """A constant no smaller than the integer Expr ``e`` for every value of its free
    names (``min(base + 63, W - 1) - base + 1 <= 64``), or None: the upper bound of
    ``e`` simplified in the upper-bound mode (``simplify_rules.UPPER``), where the names
    of a tile extent cancel.

    The bound must not depend on the values of the names: it is kept only when the
    same with the names within +-2**20 (``min(256, W - x)`` gives 256 both ways;
    ``W / 8`` does not) and at most 2**20 (what is bigger would be a heap buffer
    anyway; that also rejects bounds that only come from a type's range).  ``e``
    simplified has at most ``max_nodes`` nodes (tile extents are small), else None."""
    e = simplify(E.as_expr(e))
    if type(e) is E.Const:
        return int(e.value)
    if _R.node_count(e, max_nodes) > max_nodes:
        return None
    p = simplify(e, rules=_R.UPPER)
    hi = numeric_bounds(p, rules=_R.UPPER)[1]
    if hi > TILE_LIMIT:
        return None
    near = {extent_key(n.image, n.dim) if type(n) is E.BufferExtent else n.name:
            (-TILE_LIMIT, TILE_LIMIT) for n in walk(p) if type(n) in _NAMES}
    return int(hi) if numeric_bounds(p, near, _R.UPPER)[1] == hi else None


# -- scope handling ------------------------------------------------------------------
def _num(v, default):
    if v is None or isinstance(v, E.Expr) and not isinstance(v, E.Const):
        return default
    if isinstance(v, E.Const):
        v = v.value
    if hasattr(v, "item"):
        v = v.item()
    return int(v) if isinstance(v, bool) else v


def _numeric_scope(scope) -> dict:
    out = {}
    for name, v in (scope or {}).items():
        if hasattr(v, "lo") and hasattr(v, "hi"):
            lo, hi = v.lo, v.hi
        elif isinstance(v, tuple):
            lo, hi = v
        else:
            lo = hi = v
        out[name] = (_num(lo, -INF), _num(hi, INF))
    return out


# -- the driver -------------------------------------------------------------------------
class _Simplifier:
    def __init__(self, scope, memo: dict | None = None, lin: dict | None = None,
                 rules=_R.RULES):
        """``memo`` and ``lin``: shared tables (only for a simplifier without a scope)."""
        self.scope = scope if isinstance(scope, _Scope) else _Scope(_numeric_scope(scope))
        self.rules = rules
        self.memo: dict[int, tuple] = {} if memo is None else memo
        self.lin: dict[int, tuple] = {} if lin is None else lin
        self._warming = False

    def visit(self, e):
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1], hit[2]
        if not self._warming:
            return self._visit_bottom_up(e)
        return self._visit_one(e)

    def _visit_bottom_up(self, e):
        """Visit the sub-Exprs of ``e`` children first, in a loop, so each visit finds
        its children memoized: the recursion stays shallow however deep ``e`` is (a
        long inlined chain).  Let bodies are left to ``_let``, which binds the name."""
        self._warming = True
        try:
            order, stack, seen = [], [(e, False)], set()
            while stack:
                n, done = stack.pop()
                if done:
                    order.append(n)
                    continue
                if id(n) in self.memo or id(n) in seen:
                    continue
                seen.add(id(n))
                stack.append((n, True))
                kids = (n.value,) if isinstance(n, E.Let) else _children(n)
                stack.extend((c, False) for c in kids if id(c) not in self.memo and id(c) not in seen)
            for n in order:
                if id(n) not in self.memo:
                    self._visit_one(n)
            hit = self.memo[id(e)]
            return hit[1], hit[2]
        finally:
            self._warming = False

    def _visit_one(self, e):
        r, b = self._visit(e)
        t = getattr(r, "type", None)
        if t is None or t.is_float():
            b = N.EVERYTHING
        self.memo[id(e)] = (e, r, b)
        if r is not e:
            self.memo.setdefault(id(r), (r, r, b))
        return r, b

    def b(self, e):
        """The bounds of an (already simplified) operand."""
        hit = self.memo.get(id(e))
        return hit[2] if hit is not None else self.visit(e)[1]

    def _visit(self, e):
        return _VISIT.rules.get(type(e), _opaque)(e, self)     # the table, without the
                                                              # call's argument packing

    def _operator(self, e):
        """The rules' rewrite of an operator node over its simplified operands."""
        node, kb = self._rebuild(e)
        r = self.rules.rewrite(self, node)
        if r is None or r is node:
            return node, N.node_bounds(node, kb)
        if type(r) is _R.Done:
            return r.expr, r.bounds
        return self.visit(r)

    def _opaque(self, e):
        """A Call, or a Load of a later phase: operands simplified, no rules."""
        node, _ = self._rebuild(e)
        t = getattr(node, "type", None)
        return node, (N.type_range(t) if isinstance(t, T.Type) else N.EVERYTHING)

    def _extent(self, e):
        r, b = self._leaf(e, extent_key(e.image, e.dim))
        return r, (max(b[0], 1), b[1])

    def _rebuild(self, e):
        """``e`` over its simplified operands, and the operands' bounds."""
        if type(e) is E.BinOp:
            a, ab = self.visit(e.a)
            b, bb = self.visit(e.b)
            return (e if a is e.a and b is e.b else E.BinOp(e.op, a, b)), (ab, bb)
        fields, kb, changed = [], [], False
        for f in e._fields:
            v = getattr(e, f)
            if isinstance(v, E.Expr):
                n, b = self.visit(v)
                changed |= n is not v
                v = n
                kb.append(b)
            elif isinstance(v, tuple) and v and isinstance(v[0], E.Expr):
                xs = [self.visit(x) for x in v]
                changed |= any(n is not x for (n, _), x in zip(xs, v))
                v = tuple(n for n, _ in xs)
                kb.extend(b for _, b in xs)
            fields.append(v)
        return (type(e)(*fields) if changed else e), kb

    def _leaf(self, e, key):
        t = e.type
        tr = N.type_range(t)
        b = self.scope.get(key)
        if b is None:
            return e, tr
        lo, hi = max(b[0], tr[0]), min(b[1], tr[1])
        if lo == hi and t.is_integral() and isinstance(lo, int):
            return E.Const(t, lo), (lo, hi)
        return e, (lo, hi)

    def _let(self, e):
        v, vb = self.visit(e.value)
        if isinstance(v, (E.Const, E.Var, E.RVar, E.Param)):
            return self.visit(substitute_names(e.body, {e.name: v}))
        inner = _Simplifier(self.scope.child(e.name, vb), rules=self.rules)
        body, bb = inner.visit(e.body)
        if not any(getattr(n, "name", None) == e.name and isinstance(n, E.Var)
                   for n in walk(body)):
            return body, bb
        return rebuild(e, (e.name, v, body)), bb

    # -- what rules ask of the simplifier ------------------------------------------------
    def linear(self, e):
        """``(terms, const)``: terms maps id(atom) -> [atom, coeff], in order of appearance."""
        hit = self.lin.get(id(e))
        if hit is not None:
            return hit[1]
        if isinstance(e, E.Const):
            r = ({}, int(e.value))
        elif isinstance(e, E.BinOp) and e.op in ("add", "sub"):
            r = _L.lin_add(self.linear(e.a), self.linear(e.b), -1 if e.op == "sub" else 1)
        elif isinstance(e, E.BinOp) and e.op == "mul" and isinstance(e.b, E.Const):
            r = _L.lin_scale(self.linear(e.a), int(e.b.value))
        elif isinstance(e, E.BinOp) and e.op == "mul" and isinstance(e.a, E.Const):
            r = _L.lin_scale(self.linear(e.b), int(e.a.value))
        else:
            r = ({id(e): [e, 1]}, 0)
        self.lin[id(e)] = (e, r)
        return r

    def linear_result(self, t, form):
        """``Done`` with the normalized node and its bounds; None when index arithmetic
        would wrap.

        Index types keep exact constants: folding ``(x + 1) + MAX`` into ``x + MIN``
        keeps the value (modulo 2**32) but breaks the no-overflow reasoning of the
        comparison rules, so such a sum is left as written.
        """
        terms, c = form
        if _R.index_type(t) and not (t.can_represent(c) and
                                  all(t.can_represent(k) for _, k in terms.values())):
            return None
        return _R.Done(_L.build_linear(t, terms, c), N.fit(t, *self.linear_bounds(t, form)))

    def linear_bounds(self, t, form):
        """Numeric (lo, hi) of a linear form from its atoms' bounds (no wrapping)."""
        terms, c = form
        lo = hi = _L.signed(t, c)
        for atom, k in terms.values():
            k = _L.signed(t, k)
            if k == 0:
                continue
            alo, ahi = self.b(atom)
            p = (N._mul(alo, k), N._mul(ahi, k))
            lo, hi = N._plus(lo, min(p), -INF), N._plus(hi, max(p), INF)
        return lo, hi

    def diff_const(self, a, b):
        """``a - b`` as an int when the linear forms differ by a constant."""
        terms, c = _L.lin_add(self.linear(a), self.linear(b), -1)
        if all(k == 0 for _, k in terms.values()):
            return c
        return None


def _opaque(e, s):
    return s._opaque(e)


_VISIT = NodeTable("simplify", E.NODE_KINDS, fallback=_opaque)
_VISIT.on(E.Const)(lambda e, s: (e, N.const(e.type, e.value) if not e.type.is_float()
                                 else N.EVERYTHING))
_VISIT.on(E.Var, E.RVar, E.Param)(lambda e, s: s._leaf(e, e.name))
_VISIT.on(E.BufferExtent)(lambda e, s: s._extent(e))
_VISIT.on(E.Let)(lambda e, s: s._let(e))
_VISIT.on(E.Call)(_opaque)
_VISIT.on(E.BinOp, E.Not, E.Select, E.Cast, E.Intrinsic)(lambda e, s: s._operator(e))


class _Scope(dict):
    def child(self, name, b):
        s = _Scope(self)
        s[name] = b
        return s
