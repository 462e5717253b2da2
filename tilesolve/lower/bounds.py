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
  ``select(cond, box_then, box_else)``, so each version of a nest is exact.

Boxes are lists of ``(lo, hi)`` per dimension, innermost first.
"""
from __future__ import annotations

from ..analysis.simplify import simplify
from ..model import expr as E
from ..model import types as T
from ..model.func import Func
from ..model.visit import children as expr_children
from ..model.visit import walk
from . import ir as L

INT = T.int32


def _c(v) -> E.Const:
    return E.Const(INT, v)


def _type_bounds(t):
    if t.is_bool():
        return E.Const(t, False), E.Const(t, True)
    if t.is_integral() and t.bits <= 16:
        return E.Const(t, t.min_value()), E.Const(t, t.max_value())
    return None, None


def _lift(op, a, b):
    """op on possibly-None (unbounded) endpoints."""
    if a is None or b is None:
        return None
    return E.binop(op, a, b)


def _emin(a, b):
    if a is None or b is None:
        return None
    return a if a is b else E.min_(a, b)


def _emax(a, b):
    if a is None or b is None:
        return None
    return a if a is b else E.max_(a, b)


def _const(e):
    return e.value if isinstance(e, E.Const) else None


class Bounds:
    """Expr bounds with a scope of intervals; memoized per node for one scope."""

    def __init__(self, scope: dict):
        self.scope = scope
        self.memo: dict[int, tuple] = {}

    def __call__(self, e: E.Expr):
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._b(e)
        self.memo[id(e)] = (e, r)
        return r

    def _b(self, e):
        if isinstance(e, E.Const):
            return e, e
        if isinstance(e, (E.Var, E.Param)):
            iv = self.scope.get(e.name)
            return (e, e) if iv is None else iv
        if isinstance(e, (E.BufferExtent, E.RVar)):
            return e, e
        if isinstance(e, E.Cast):
            return self._cast(e)
        if isinstance(e, E.BinOp):
            return self._binop(e)
        if isinstance(e, E.Select):
            a, b = self(e.true_value), self(e.false_value)
            return _emin(a[0], b[0]), _emax(a[1], b[1])
        if isinstance(e, E.Intrinsic):
            return self._intrinsic(e)
        if isinstance(e, E.Let):
            inner = Bounds(dict(self.scope))
            inner.scope[e.name] = self(e.value)
            return inner(e.body)
        if isinstance(e, E.Not):
            return _type_bounds(e.type)
        # Call, Load: the value is data; only its type bounds it
        return _type_bounds(e.type)

    def _cast(self, e):
        t, src = e.type, e.value.type
        lo, hi = self(e.value)
        if t.is_float():
            return (None if lo is None else E.cast(t, lo)), (None if hi is None else E.cast(t, hi))
        if src.is_float():
            # float -> int truncates: monotonic, but out of range is undefined
            return (None if lo is None else E.cast(t, lo)), (None if hi is None else E.cast(t, hi))
        fits = (t.is_bool() or src.is_bool()
                or (src.min_value() >= t.min_value() and src.max_value() <= t.max_value()))
        if not fits:
            cl, ch = _const(lo), _const(hi)
            fits = (cl is not None and ch is not None and t.min_value() <= cl <= ch <= t.max_value())
        if fits:
            return (None if lo is None else E.cast(t, lo)), (None if hi is None else E.cast(t, hi))
        return _type_bounds(t) if t.bits <= 16 else (None, None)

    def _binop(self, e):
        op = e.op
        if op in E.CMP_OPS or op in E.BOOL_OPS:
            return _type_bounds(e.type)
        a, b = self(e.a), self(e.b)
        if op == "add":
            return _lift("add", a[0], b[0]), _lift("add", a[1], b[1])
        if op == "sub":
            return _lift("sub", a[0], b[1]), _lift("sub", a[1], b[0])
        if op == "min":
            lo = None if a[0] is None or b[0] is None else E.min_(a[0], b[0])
            hi = a[1] if b[1] is None else (b[1] if a[1] is None else E.min_(a[1], b[1]))
            return lo, hi
        if op == "max":
            lo = a[0] if b[0] is None else (b[0] if a[0] is None else E.max_(a[0], b[0]))
            hi = None if a[1] is None or b[1] is None else E.max_(a[1], b[1])
            return lo, hi
        if op == "mul":
            return self._mul(a, b, e)
        if op == "div":
            return self._div(a, b, e)
        if op == "mod":
            return self._mod(a, b, e)
        raise AssertionError(op)

    @staticmethod
    def _mul(a, b, e):
        for x, y in ((a, b), (b, a)):
            if x[0] is x[1] and _const(x[0]) is not None:
                c = _const(x[0])
                if c >= 0:
                    return _lift("mul", y[0], x[0]), _lift("mul", y[1], x[0])
                return _lift("mul", y[1], x[0]), _lift("mul", y[0], x[0])
        if None in a or None in b:
            return None, None
        ps = [E.binop("mul", p, q) for p in a for q in b]
        return E.min_(E.min_(ps[0], ps[1]), E.min_(ps[2], ps[3])), \
            E.max_(E.max_(ps[0], ps[1]), E.max_(ps[2], ps[3]))

    @staticmethod
    def _div(a, b, e):
        t = e.type
        if b[0] is b[1] and b[0] is not None:
            d = b[0]
            c = _const(d)
            if c is not None and not t.is_float():
                if c > 0:
                    return _lift("div", a[0], d), _lift("div", a[1], d)
                if c < 0:
                    return _lift("div", a[1], d), _lift("div", a[0], d)
                return E.Const(t, 0), E.Const(t, 0)
            if None in a:
                return None, None
            # for a fixed divisor, a / d is monotonic (either direction)
            p, q = E.binop("div", a[0], d), E.binop("div", a[1], d)
            return E.min_(p, q), E.max_(p, q)
        return (None, None) if not (t.is_integral() and t.bits <= 16) else _type_bounds(t)

    @staticmethod
    def _mod(a, b, e):
        t = e.type
        if t.is_float():
            return None, None
        if b[0] is b[1] and b[0] is not None:
            c = _const(b[0])
            if c is not None:
                if c == 0:
                    return E.Const(t, 0), E.Const(t, 0)
                m = abs(c) - 1
                lo, hi = _const(a[0]), _const(a[1])
                if lo is not None and hi is not None and 0 <= lo and hi <= m:
                    return a
                return E.Const(t, 0), E.Const(t, m)
            if t.is_int():
                return E.Const(t, 0), E.max_(E.Intrinsic("abs", (b[0],), t) - 1, E.Const(t, 0))
            return E.Const(t, 0), E.max_(b[0], E.Const(t, 1)) - 1
        if b[1] is not None and b[0] is not None and t.is_int():
            return E.Const(t, 0), E.max_(E.max_(E.Const(t, 0) - b[0], b[1]) - 1, E.Const(t, 0))
        return _type_bounds(t) if t.bits <= 16 else (None, None)

    def _intrinsic(self, e):
        t = e.type
        if e.name in ("floor", "ceil", "round") and len(e.args) == 1:
            lo, hi = self(e.args[0])
            f = lambda v: None if v is None else E.Intrinsic(e.name, (v,), t)  # noqa: E731
            return f(lo), f(hi)
        if e.name == "abs" and len(e.args) == 1:
            lo, hi = self(e.args[0])
            if lo is None or hi is None:
                return E.Const(t, 0) if not t.is_float() else None, None
            ab = lambda v: E.Intrinsic("abs", (v,), t)  # noqa: E731
            zero = E.Const(t, 0)
            lo2 = E.max_(E.max_(lo, zero - hi), zero)
            return lo2, E.max_(ab(lo), ab(hi))
        return _type_bounds(t) if not t.is_float() else (None, None)


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


def _calls_named(e: E.Expr, name: str) -> bool:
    return any(isinstance(n, E.Call) and n.target.name == name for n in walk(e))


class _Walker:
    def __init__(self, name: str, reads: bool, writes: bool, known: dict | None = None):
        self.name, self.reads, self.writes = name, reads, writes
        self.known = known or {}
        self._has: dict[int, tuple] = {}

    def has_call(self, e) -> bool:
        hit = self._has.get(id(e))
        if hit is None:
            hit = self._has[id(e)] = (e, _calls_named(e, self.name))
        return hit[1]

    # -- expressions -----------------------------------------------------------------
    def expr_box(self, e: E.Expr, scope: dict):
        if not self.reads or not self.has_call(e):
            return None
        return self._expr_box(e, Bounds(scope), scope)

    def _expr_box(self, e, bounds: Bounds, scope):
        box = None
        if isinstance(e, E.Let):
            box = self._expr_box(e.value, bounds, scope)
            inner = dict(scope)
            inner[e.name] = bounds(e.value)
            return union_box(box, self._expr_box(e.body, Bounds(inner), inner))
        if isinstance(e, E.Call) and e.target.name == self.name:
            box = [bounds(a) for a in e.args]
        for c in expr_children(e):
            if self.has_call(c):
                box = union_box(box, self._expr_box(c, bounds, scope))
        return box

    # -- statements ------------------------------------------------------------------
    def stmt_box(self, s: L.Stmt, scope: dict):
        box = None
        for e in L.stmt_exprs(s):
            box = union_box(box, self.expr_box(e, scope))
        if isinstance(s, L.Provide):
            if self.writes and s.func == self.name:
                b = Bounds(scope)
                box = union_box(box, [b(a) for a in s.args])
            return box
        if isinstance(s, L.For):
            b = Bounds(scope)
            lo = b(s.min)[0]
            hi = b(E.binop("sub", E.binop("add", s.min, s.extent), 1))[1]
            inner = dict(scope)
            inner[s.name] = (_simp(lo), _simp(hi))
            return union_box(box, self.stmt_box(s.body, inner))
        if isinstance(s, L.LetStmt):
            inner = dict(scope)
            b = Bounds(scope)
            k = self.known.get(s.name)
            if k is not None and all(n.name in scope for n in walk(s.value)
                                     if isinstance(n, E.Var)):
                # every loop it is built from runs inside the walk: it covers exactly
                # its known range (a split variable: the original loop's range)
                lo, hi = b(k[0])[0], b(k[1])[1]
            else:
                lo, hi = b(s.value)
            inner[s.name] = (_simp(lo), _simp(hi))
            return union_box(box, self.stmt_box(s.body, inner))
        if isinstance(s, L.IfThenElse):
            return union_box(box, self._if_box(s, scope))
        for c in L.stmt_children(s):
            box = union_box(box, self.stmt_box(c, scope))
        return box

    def _if_box(self, s: L.IfThenElse, scope: dict):
        free = {n.name for n in walk(s.cond) if isinstance(n, (E.Var, E.Param))}
        if not free & set(scope):
            a = self.stmt_box(s.then_case, scope)
            b = None if s.else_case is None else self.stmt_box(s.else_case, scope)
            return _select_box(s.cond, a, b) if a is not None and b is not None else union_box(a, b)
        box = self.stmt_box(s.then_case, narrow(scope, s.cond, True))
        if s.else_case is not None:
            box = union_box(box, self.stmt_box(s.else_case, narrow(scope, s.cond, False)))
        return box


def _simp(e):
    return None if e is None else simplify(e)


_NEG = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def narrow(scope: dict, cond: E.Expr, truth: bool) -> dict:
    """``scope`` with the intervals of its names tightened by ``cond == truth``
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
    if not conds:
        return scope
    out = dict(scope)
    for op, a, b in conds:
        if not isinstance(a, E.Var) and isinstance(b, E.Var):
            op, a, b = _FLIP[op], b, a
        if not isinstance(a, E.Var) or a.name not in out or a.type != INT:
            continue
        if any(isinstance(n, E.Var) and n.name == a.name for n in walk(b)):
            continue
        bl, bh = Bounds(scope)(b)
        lo, hi = out[a.name]
        if op in ("lt", "le") and bh is not None:
            lim = bh - 1 if op == "lt" else bh
            out[a.name] = (lo, _simp(lim if hi is None else E.min_(hi, lim)))
        elif op in ("gt", "ge") and bl is not None:
            lim = bl + 1 if op == "gt" else bl
            out[a.name] = (_simp(lim if lo is None else E.max_(lo, lim)), hi)
    return out


def box_of(s: L.Stmt, name: str, scope: dict | None = None, *, reads=True, writes=True,
           known: dict | None = None):
    """The box of ``name`` that ``s`` reads and/or writes, or None if untouched.

    ``known`` maps let-defined loop variables (split and fused originals) to
    the ``(lo, hi)`` they cover when all their loops run inside ``s``, which
    is tighter than interval arithmetic on ``min(xo * 8, e - 8) + xi``.
    Endpoints are simplified Exprs, or None where unbounded."""
    box = _Walker(name, reads, writes, known).stmt_box(s, dict(scope or {}))
    if box is None:
        return None
    return [(_simp(lo), _simp(hi)) for lo, hi in box]


def uses(s: L.Stmt, name: str) -> bool:
    """Whether any Expr of ``s`` calls ``name`` or any Provide writes it."""
    for n in L.walk_stmts(s):
        if isinstance(n, L.Provide) and n.func == name:
            return True
        for e in L.stmt_exprs(n):
            if _calls_named(e, name):
                return True
    return False


def own_uses(s: L.Stmt, name: str) -> bool:
    """Whether the Exprs held directly by ``s`` (not its children) call ``name``."""
    return any(_calls_named(e, name) for e in L.stmt_exprs(s))


def is_func_call(e, name: str) -> bool:
    return isinstance(e, E.Call) and isinstance(e.target, Func) and e.target.name == name
