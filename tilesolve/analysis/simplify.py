"""The expression simplifier: a table of rewrite rules with bounds in the same visit.

``simplify(e, scope)`` rewrites bottom-up.  Each visited node yields the
simplified node and numeric bounds of its value (from ``intervals.numeric``,
the same arithmetic the interval analysis uses), so rules can decide
comparisons, ``min``/``max`` and ``select`` when the bounds prove it.

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
from ..model.evaluate import eval_scalar
from ..model.visit import children as _children
from ..model.visit import rebuild, substitute_names
from .intervals import linear as _L
from .intervals import numeric as N

__all__ = ["simplify", "prove", "is_const", "const_int", "numeric_bounds"]

INF = math.inf
_COMMUTATIVE = ("add", "mul", "min", "max", "eq", "ne", "and", "or")
_FLIP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
_NEGATE = {"eq": "ne", "ne": "eq"}
_PY_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
           "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


# -- small public helpers ------------------------------------------------------------
def is_const(e, value=None) -> bool:
    """True for a Const node (equal to ``value`` when given)."""
    return E.is_const(e, value)


def const_int(e):
    """The Python int of an integer or bool Const, else None."""
    if isinstance(e, E.Const) and not e.type.is_float():
        return int(e.value)
    return None


_CACHE: dict[int, tuple] = {}     # id(e) -> (e, simplify(e)) for calls without a scope
_CACHE_LIMIT = 50_000


def simplify(e: E.Expr, scope: dict | None = None) -> E.Expr:
    """Simplify ``e``; ``scope`` maps names to Intervals/(lo, hi)/numbers of their values."""
    e = E.as_expr(e)
    if scope:
        return _Simplifier(scope).visit(e)[0]
    # Exprs are immutable and hash-consed, so without a scope the result is a pure
    # function of the node: cache it (the entry keeps ``e`` alive, so ids stay unique).
    hit = _CACHE.get(id(e))
    if hit is not None:
        return hit[1]
    r = _Simplifier(None).visit(e)[0]
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[id(e)] = (e, r)
    _CACHE.setdefault(id(r), (r, r))
    return r


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


def numeric_bounds(e: E.Expr, scope: dict | None = None) -> tuple:
    """Numeric (lo, hi) of ``e``'s value (+-inf when unknown; floats always unbounded)."""
    return _Simplifier(scope).visit(E.as_expr(e))[1]


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


def _index(t) -> bool:
    return t.code == "int" and t.bits in (32, 64)


def _ct(t, v) -> E.Const:
    return E.Const(t, v)


# -- the simplifier ------------------------------------------------------------------
class _Simplifier:
    def __init__(self, scope):
        self.scope = scope if isinstance(scope, _Scope) else _Scope(_numeric_scope(scope))
        self.memo: dict[int, tuple] = {}
        self.lin: dict[int, tuple] = {}
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
        long inlined chain).  Let bodies are left to ``_v_Let``, which binds the name."""
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

    def bounds(self, e):
        return self.visit(e)[1]

    def _visit(self, e):
        m = getattr(self, "_v_" + type(e).__name__, None)
        if m is None:
            return self._generic(e)
        return m(e)

    # -- leaves ----------------------------------------------------------------------
    def _v_Const(self, e):
        v = e.value
        if e.type.is_float():
            return e, N.EVERYTHING
        v = int(v)
        return e, (v, v)

    def _leaf(self, e, key):
        t = e.type
        tr = N.type_range(t)
        b = self.scope.get(key)
        if b is None:
            return e, tr
        lo, hi = max(b[0], tr[0]), min(b[1], tr[1])
        if lo == hi and t.is_integral() and isinstance(lo, int):
            return _ct(t, lo), (lo, hi)
        return e, (lo, hi)

    def _v_Var(self, e):
        return self._leaf(e, e.name)

    _v_RVar = _v_Var
    _v_Param = _v_Var

    def _v_BufferExtent(self, e):
        r, b = self._leaf(e, f"{e.image}.extent.{e.dim}")
        return r, (max(b[0], 1), b[1])

    def _generic(self, e):
        fields = []
        for f in e._fields:
            v = getattr(e, f)
            if isinstance(v, E.Expr):
                v = self.visit(v)[0]
            elif isinstance(v, tuple) and v and isinstance(v[0], E.Expr):
                v = tuple(self.visit(x)[0] for x in v)
            fields.append(v)
        r = rebuild(e, tuple(fields))
        t = getattr(r, "type", None)
        return r, (N.type_range(t) if isinstance(t, T.Type) else N.EVERYTHING)

    _v_Call = _generic

    # -- casts ------------------------------------------------------------------------
    def _v_Cast(self, e):
        t = e.type
        v, vb = self.visit(e.value)
        if v.type == t:
            return v, vb
        if isinstance(v, E.Const):
            return self._fold(E.Cast(t, v))
        if isinstance(v, E.Cast) and _cast_pair_collapses(v.value.type, v.type, t):
            return self.visit(E.cast(t, v.value))
        if v.type.is_float() and not t.is_float():
            return E.Cast(t, v), N.type_range(t) if not t.is_bool() else (0, 1)
        return rebuild(e, (t, v)), N.cast(v.type, t, vb)

    def _fold(self, node):
        val = eval_scalar(node)
        c = _ct(node.type, val)
        return self._v_Const(c)

    # -- binary operators ---------------------------------------------------------------
    def _v_BinOp(self, e):
        op = e.op
        a, ab = self.visit(e.a)
        b, bb = self.visit(e.b)
        t = a.type
        if isinstance(a, E.Const) and isinstance(b, E.Const):
            return self._fold_binop(op, a, b)
        if op in _COMMUTATIVE and isinstance(a, E.Const):
            a, b, ab, bb = b, a, bb, ab
        if op in ("and", "or"):
            return self._logic(op, a, b, ab, bb)
        if op in _FLIP:
            return self._compare(op, a, b, ab, bb)
        if t.is_float():
            return self._float_arith(e, op, a, b)
        if op in ("add", "sub") or (op == "mul" and (isinstance(b, E.Const))):
            r = self._linear_result(t, self._lin_combine(op, a, b))
            if r is not None:
                return r
            fn = N.op_rule(op)
            return self._keep(e, op, a, b), fn(t, ab, bb)
        if op == "mul":
            return self._keep(e, op, a, b), N.op_rule("mul")(t, ab, bb)
        if op == "div":
            return self._div(e, a, b, ab, bb)
        if op == "mod":
            return self._mod(e, a, b, ab, bb)
        return self._minmax(e, op, a, b, ab, bb)

    def _keep(self, e, op, a, b):
        if a is e.a and b is e.b:
            return e
        return E.BinOp(op, a, b)

    def _fold_binop(self, op, a, b):
        t = a.type
        if not t.is_float() and op in ("add", "sub", "mul", "min", "max"):
            x, y = int(a.value), int(b.value)
            v = {"add": x + y, "sub": x - y, "mul": x * y, "min": min(x, y), "max": max(x, y)}[op]
            return self._v_Const(_ct(t, v))
        if not t.is_float() and op in _PY_CMP:
            return self._v_Const(_ct(T.bool_, _PY_CMP[op](int(a.value), int(b.value))))
        if op in ("and", "or"):
            v = (a.value and b.value) if op == "and" else (a.value or b.value)
            return self._v_Const(_ct(T.bool_, v))
        return self._fold(E.BinOp(op, a, b))

    def _float_arith(self, e, op, a, b):
        if isinstance(b, E.Const):
            if (op in ("mul", "div") and b.value == 1.0) or (op == "sub" and b.value == 0.0):
                return a, N.EVERYTHING
        if op == "mul" and isinstance(a, E.Const) and a.value == 1.0:
            return b, N.EVERYTHING
        if op in ("min", "max") and (a is b or (isinstance(b, E.Const) and
                                             b.value == (INF if op == "min" else -INF))):
            return a, N.EVERYTHING          # min(x, inf) is x, NaN included
        return self._keep(e, op, a, b), N.EVERYTHING

    # -- linear forms (integer + - * by constants) ---------------------------------------
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

    def _lin_combine(self, op, a, b):
        la, lb = self.linear(a), self.linear(b)
        if op == "mul":
            return _L.lin_scale(la, int(b.value))
        return _L.lin_add(la, lb, -1 if op == "sub" else 1)

    def _linear_result(self, t, form):
        """The normalized node and its bounds; None when index arithmetic would wrap.

        Index types keep exact constants: folding ``(x + 1) + MAX`` into ``x + MIN``
        keeps the value (modulo 2**32) but breaks the no-overflow reasoning of the
        comparison rules, so such a sum is left as written.
        """
        terms, c = form
        if _index(t) and not (t.can_represent(c) and
                              all(t.can_represent(k) for _, k in terms.values())):
            return None
        r = _L.build_linear(t, terms, c)
        lo = hi = _L.signed(t, c)
        for atom, k in terms.values():
            k = _L.signed(t, k)
            if k == 0:
                continue
            alo, ahi = self.bounds(atom)
            p = (N._mul(alo, k), N._mul(ahi, k))
            lo, hi = N._plus(lo, min(p), -INF), N._plus(hi, max(p), INF)
        return r, N.fit(t, lo, hi)

    def _diff_const(self, a, b):
        """``a - b`` as an int when the linear forms differ by a constant (index types)."""
        la, lb = self.linear(a), self.linear(b)
        terms, c = _L.lin_add(la, lb, -1)
        if all(k == 0 for _, k in terms.values()):
            return c
        return None

    # -- div, mod, min, max ----------------------------------------------------------------
    def _div(self, e, a, b, ab, bb):
        t = a.type
        k = const_int(b)
        if k == 0 or const_int(a) == 0:
            return self._v_Const(_ct(t, 0))
        if k == 1:
            return a, ab
        qb = N.op_rule("div")(t, ab, bb)
        if qb[0] == qb[1]:
            return self._v_Const(_ct(t, qb[0]))
        if k is not None and k > 1:
            if isinstance(a, E.BinOp) and a.op == "div" and const_int(a.b) is not None \
                    and const_int(a.b) > 0 and k * const_int(a.b) <= t.max_value():
                return self.visit(E.BinOp("div", a.a, _ct(t, k * const_int(a.b))))
            if _index(t):
                terms, c = self.linear(a)
                q_terms = {i: [x, kk // k] for i, (x, kk) in terms.items()
                           if kk % k == 0 and kk != 0}
                if q_terms or c >= k or c < 0:
                    r_terms = {i: [x, kk] for i, (x, kk) in terms.items() if kk % k != 0}
                    quot = _L.build_linear(t, q_terms, c // k)
                    if r_terms or c % k:
                        rest = _L.build_linear(t, r_terms, c % k)
                        quot = E.BinOp("add", quot, E.BinOp("div", rest, b))
                    return self.visit(quot)
        return self._keep(e, "div", a, b), qb

    def _mod(self, e, a, b, ab, bb):
        t = a.type
        k = const_int(b)
        if k == 0 or k in (1, -1) or const_int(a) == 0:
            return self._v_Const(_ct(t, 0))
        mb = N.op_rule("mod")(t, ab, bb)
        if mb[0] == mb[1]:
            return self._v_Const(_ct(t, mb[0]))
        if k is not None:
            kk = abs(k)
            if ab[0] > -INF and ab[1] < INF and ab[0] // kk == ab[1] // kk:
                q = ab[0] // kk
                return a if q == 0 else self.visit(E.BinOp("sub", a, _ct(t, q * kk)))[0], mb
            if isinstance(a, E.BinOp) and a.op == "mod" and const_int(a.b) is not None \
                    and k > 0 and const_int(a.b) > 0 and const_int(a.b) % k == 0:
                return self.visit(E.BinOp("mod", a.a, b))
            if _index(t) and k > 0:
                terms, c = self.linear(a)
                keep = {i: [x, kk2] for i, (x, kk2) in terms.items() if kk2 % k != 0}
                if len(keep) != len(terms) or not 0 <= c < k:
                    return self.visit(E.BinOp("mod", _L.build_linear(t, keep, c % k), b))
        return self._keep(e, "mod", a, b), mb

    def _minmax(self, e, op, a, b, ab, bb):
        t = a.type
        fn = N.op_rule(op)
        if a is b:
            return a, ab
        first_smaller = ab[1] <= bb[0]
        second_smaller = bb[1] <= ab[0]
        if not (first_smaller or second_smaller) and _index(t):
            d = self._diff_const(a, b)
            if d is not None:
                first_smaller, second_smaller = d <= 0, d >= 0
        if first_smaller or second_smaller:
            pick_a = first_smaller if op == "min" else second_smaller
            return (a, ab) if pick_a else (b, bb)
        kb = const_int(b)
        if kb is not None and isinstance(a, E.BinOp) and a.op == op and isinstance(a.b, E.Const):
            c = min(kb, int(a.b.value)) if op == "min" else max(kb, int(a.b.value))
            return self.visit(E.BinOp(op, a.a, _ct(t, c)))
        return self._keep(e, op, a, b), fn(t, ab, bb)

    # -- comparisons and logic ---------------------------------------------------------------
    def _compare(self, op, a, b, ab, bb):
        t = a.type
        if op in ("gt", "ge"):
            return self.visit(E.BinOp(_FLIP[op], b, a))
        if not t.is_float():
            if a is b:
                return self._v_Const(_ct(T.bool_, op in ("eq", "le")))
            cb = N.op_rule(op)(t, ab, bb)
            if cb[0] == cb[1]:
                return self._v_Const(_ct(T.bool_, cb[0]))
            if _index(t):
                d = self._diff_const(a, b)
                if d is not None:
                    return self._v_Const(_ct(T.bool_, _PY_CMP[op](d, 0)))
                kb = const_int(b)
                terms, c = self.linear(a)
                if kb is not None and c != 0 and t.can_represent(kb - c):
                    # x + c < k  ->  x < k - c   (no overflow in index arithmetic)
                    return self.visit(E.BinOp(op, _L.build_linear(t, terms, 0), _ct(t, kb - c)))
        r = E.BinOp(op, a, b)
        return r, ((0, 1) if t.is_float() else N.op_rule(op)(t, ab, bb))

    def _logic(self, op, a, b, ab, bb):
        absorbing = op == "or"          # x | true == true; x & false == false
        for x, y, yb in ((a, b, bb), (b, a, ab)):
            if isinstance(x, E.Const):
                if bool(x.value) == absorbing:
                    return self._v_Const(x)
                return y, yb
        if a is b:
            return a, ab
        return E.BinOp(op, a, b), N.op_rule(op)(T.bool_, ab, bb)

    def _v_Not(self, e):
        a, ab = self.visit(e.a)
        if isinstance(a, E.Const):
            return self._v_Const(_ct(T.bool_, not a.value))
        if isinstance(a, E.Not):
            return self.visit(a.a)
        if isinstance(a, E.BinOp):
            if a.op in _NEGATE:
                return self.visit(E.BinOp(_NEGATE[a.op], a.a, a.b))
            if a.op in ("lt", "le") and not a.a.type.is_float():
                return self.visit(E.BinOp("le" if a.op == "lt" else "lt", a.b, a.a))
        return (e if a is e.a else E.Not(a)), N.not_(ab)

    # -- select, intrinsics, let -----------------------------------------------------------
    def _v_Select(self, e):
        c, cb = self.visit(e.cond)
        tv, tb = self.visit(e.true_value)
        fv, fb = self.visit(e.false_value)
        if cb[0] == cb[1]:
            return (tv, tb) if cb[0] else (fv, fb)
        if tv is fv:
            return tv, tb
        if tv.type.is_bool() and isinstance(tv, E.Const) and isinstance(fv, E.Const):
            return (c, cb) if tv.value else self.visit(E.Not(c))
        r = rebuild(e, (c, tv, fv))
        return r, (min(tb[0], fb[0]), max(tb[1], fb[1]))

    def _v_Intrinsic(self, e):
        args = tuple(self.visit(a) for a in e.args)
        xs = tuple(a for a, _ in args)
        r = rebuild(e, (e.name, xs, e.type))
        if all(isinstance(x, E.Const) for x in xs):
            return self._fold(r)
        if e.name == "abs" and (e.type.is_uint() or args[0][1][0] >= 0):
            return args[0]
        return r, N.op_rule(e.name)(e.type, *[b for _, b in args])

    def _v_Let(self, e):
        v, vb = self.visit(e.value)
        if isinstance(v, (E.Const, E.Var, E.RVar, E.Param)):
            return self.visit(substitute_names(e.body, {e.name: v}))
        inner = _Simplifier(self.scope.child(e.name, vb))
        body, bb = inner.visit(e.body)
        if not any(getattr(n, "name", None) == e.name and isinstance(n, E.Var)
                   for n in _walk(body)):
            return body, bb
        return rebuild(e, (e.name, v, body)), bb


# -- helpers ------------------------------------------------------------------------
class _Scope(dict):
    def child(self, name, b):
        s = _Scope(self)
        s[name] = b
        return s


def _walk(e):
    from ..model.visit import walk
    return walk(e)


def _cast_pair_collapses(t0, t1, t2) -> bool:
    """``cast(t2, cast(t1, x: t0)) == cast(t2, x)`` for every x."""
    if t0.is_integral() and t1.is_integral() and t2.is_integral() and t2.bits <= t1.bits:
        return True                      # truncations compose
    if not _exact(t0, t1):
        return False
    if t1.is_float() and t2.is_integral():
        return _exact(t0, t2)            # an in-range integer value truncates exactly
    return True


def _exact(src, dst) -> bool:
    """Every value of ``src`` is represented exactly in ``dst``."""
    if src.is_bool():
        return True
    if src.is_float():
        return dst.is_float() and dst.bits >= src.bits
    if dst.is_float():
        return (src.bits if src.is_uint() else src.bits - 1) <= (24 if dst.bits == 32 else 53)
    if dst.is_bool():
        return False
    return dst.min_value() <= src.min_value() and src.max_value() <= dst.max_value()
