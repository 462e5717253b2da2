"""``bounds_of(expr, scope)``: an Interval containing every value ``expr`` can take.

Sound first, then tight.  Every node kind is covered.  Numeric intervals go
through ``numeric.py`` (exact integer arithmetic with wrap-around detection,
outward-rounded floats); intervals with symbolic endpoints build simplified
Exprs for integer index arithmetic (assumed not to overflow, as in Halide) and
fall back to the type's range, which is always sound, where no symbolic rule
applies.  NaN is in no interval: float results assume no NaN arises.

``scope`` maps names to Intervals (or ``(lo, hi)`` pairs, numbers, Exprs):
Var and RVar names, Param names, and ``"<image>.extent.<d>"`` for input
extents.  A name missing from ``scope`` is unbounded, or with
``symbolic=True`` stands for itself (``Interval(x, x)``).
"""
from __future__ import annotations

import copy
import math

from ...model import expr as E
from ...model import types as T
from ...model.dispatch import NodeTable
from ...model.evaluate import extent_key
from ...model.visit import children
from .. import simplify as _S
from . import numeric as N
from .interval import Interval, hi_max, hi_min, is_num, lo_max, lo_min, same

__all__ = ["bounds_of", "type_interval", "as_interval", "Bounder"]

INF = math.inf


INDEX_LIMIT = 2 ** 31 - 1   # an index whose bounds reach this is unbounded


def type_interval(t: T.Type) -> Interval:
    """Every value of type ``t`` (floats: unbounded)."""
    lo, hi = N.type_range(t)
    return Interval(lo, hi)


def as_interval(v) -> Interval:
    """Scope values: an Interval, a (lo, hi) pair, or a number/Expr (a point)."""
    if isinstance(v, Interval):
        return v
    if isinstance(v, tuple):
        return Interval(*v)
    return Interval.point(v)


def bounds_of(expr, scope: dict | None = None, *, func_bounds: dict | None = None,
              symbolic: bool = False) -> Interval:
    """Bounds of ``expr``'s value.

    ``func_bounds`` maps Func (or input) names to Intervals of their values (for
    calls; otherwise the callee's type range).  With ``symbolic=True`` names not
    in ``scope`` (Vars, Params, input extents) stay as symbols.
    """
    return Bounder(scope, func_bounds=func_bounds, symbolic=symbolic).bounds(E.as_expr(expr))


def _pair(iv: Interval) -> tuple:
    return (-INF if iv.lo is None else iv.lo, INF if iv.hi is None else iv.hi)


def _iv(p) -> Interval:
    return Interval(p[0], p[1])


def _relax(iv: Interval, t=None) -> tuple:
    """A numeric pair containing ``iv`` (symbolic endpoints become the type's ends)."""
    lo = iv.lo if is_num(iv.lo) else -INF
    hi = iv.hi if is_num(iv.hi) else INF
    if t is not None and not t.is_float() and not _index(t):
        tlo, thi = N.type_range(t)
        lo, hi = max(lo, tlo), min(hi, thi)
    return lo, hi


def _index(t) -> bool:
    return t.code == "int" and t.bits in (32, 64)


def _e(v, t) -> E.Expr:
    """An endpoint as an Expr of type ``t``."""
    return v if isinstance(v, E.Expr) else E.Const(t, v)


def _op(op, a, b, t):
    """Simplified ``a op b`` for endpoints (either may be a number); None propagates.

    Index arithmetic on endpoints must not wrap: an endpoint whose exact value
    leaves the type's range is unbounded (None) instead.
    """
    if a is None or b is None:
        return None
    if is_num(a) and is_num(b) and op in ("add", "sub", "mul"):
        r = {"add": a + b, "sub": a - b, "mul": a * b}[op]
        return None if (_index(t) and not t.can_represent(r)) else r
    if any(is_num(v) and not t.is_float() and not t.can_represent(v) for v in (a, b)):
        return None
    r = _S.simplify(E.BinOp(op, _e(a, t), _e(b, t)))
    if _index(t) and op in ("add", "sub", "mul") and not _exact(op, a, b, r):
        return None
    return r.value if isinstance(r, E.Const) and not r.type.is_bool() else r


def _lin(v, s):
    if is_num(v):
        return {}, int(v)
    terms, c = s.linear(v)
    return {i: k for i, (_, k) in terms.items() if k}, c


def _exact(op, a, b, r) -> bool:
    """Does the simplified ``r`` equal ``a op b`` over the integers (no constant wrapped)?"""
    s = _S._Simplifier(None)
    (ta, ca), (tb, cb) = _lin(a, s), _lin(b, s)
    if op == "mul":
        if ta and tb:
            return True           # a product of two symbols is an atom: nothing folded
        (terms, k), c = ((ta, cb), ca) if not tb else ((tb, ca), cb)
        want = ({i: x * k for i, x in terms.items() if x * k}, c * k)
    else:
        sign = 1 if op == "add" else -1
        want_t = dict(ta)
        for i, x in tb.items():
            want_t[i] = want_t.get(i, 0) + sign * x
        want = ({i: x for i, x in want_t.items() if x}, ca + sign * cb)
    return _lin(r, s) == want


class Bounder:
    """Computes bounds of many Exprs under one scope, sharing a memo."""

    def __init__(self, scope=None, *, func_bounds=None, symbolic=False, loop_ir=False):
        """``loop_ir``: the rules lowering adds to symbolic bounds.  Symbolic float bounds
        (where a float Param scales a data-dependent index, ``int(v / r_sigma)``: IEEE
        ``+ - * /`` and float-to-int truncation are monotonic in each operand, so the
        corners bound the result, ignoring NaN as the analysis does); a floor division by
        one symbolic divisor (monotonic in the dividend) and a Euclidean remainder in
        ``[0, |d| - 1]``; and an int32 endpoint at the type's limit read as "nothing
        known" (unbounded), so it never enters symbolic arithmetic, where it would wrap
        (``max(-2**31, e) - 2``)."""
        self.scope = {k: as_interval(v) for k, v in (scope or {}).items()}
        self.func_bounds = func_bounds or {}
        self.symbolic = symbolic
        self.loop_ir = loop_ir
        self.memo: dict[int, tuple] = {}

    def bounds(self, e: E.Expr) -> Interval:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._bounds(e)
        if self.loop_ir:
            r = _unknown_at_the_limits(e, r)
        self.memo[id(e)] = (e, r)
        return r

    def assume(self, e: E.Expr, iv: Interval) -> None:
        """From now on ``e`` (this node) is bounded by ``iv``: a subexpression whose
        bounds are found elsewhere (``spans.CallSpans``' per-scope nodes)."""
        self.memo[id(e)] = (e, iv)

    def child(self, name, iv) -> "Bounder":
        """The same Bounder (subclass included) with ``name`` bound to ``iv`` (a Let)."""
        b = copy.copy(self)
        b.scope = dict(self.scope)
        b.scope[name] = iv
        b.memo = {}
        return b

    def _bounds(self, e):
        return _BOUNDS.rules.get(type(e), _typed)(e, self)    # the table, without the
                                                             # call's argument packing

    def _point(self, e, kids):
        """The exact value of ``e`` when every operand is one symbolic value."""
        from ...model.visit import rebuild
        vals = iter([_e(k.lo, c.type) for k, c in zip(kids, children(e))])
        fields = []
        for f in e._fields:
            v = getattr(e, f)
            if isinstance(v, E.Expr):
                v = next(vals)
            elif isinstance(v, tuple) and v and isinstance(v[0], E.Expr):
                v = tuple(next(vals) for _ in v)
            fields.append(v)
        r = _S.simplify(rebuild(e, tuple(fields)))
        if isinstance(r, E.Const):
            return int(r.value) if isinstance(r.value, bool) else r.value
        return r

    def _leaf(self, e, key, default=None):
        iv = self.scope.get(key)
        if iv is not None:
            return iv
        if self.symbolic:
            return Interval.point(e)
        if default is not None:
            return default
        if isinstance(e, E.Param):
            return type_interval(e.type)
        return Interval.everything()

    def _call(self, e):
        name = e.target.name
        iv = self.func_bounds.get(name)
        if iv is not None:
            return as_interval(iv)
        return type_interval(e.type)

    # -- casts ---------------------------------------------------------------------------
    def _cast(self, e, a):
        src, dst = e.value.type, e.type
        if self.loop_ir and src.is_float() and not a.is_numeric() and a.is_bounded() \
                and (dst.is_integral() or dst.is_float()):
            return Interval(E.cast(dst, _e(a.lo, src)), E.cast(dst, _e(a.hi, src)))
        if a.is_numeric():
            return _iv(N.cast(src, dst, _pair(a)))
        monotone = (src.is_integral() and dst.is_integral() and
                    dst.min_value() <= src.min_value() and src.max_value() <= dst.max_value()) \
            or (src.is_integral() and dst.is_float()) \
            or (src.is_float() and dst.is_float() and dst.bits >= src.bits)
        if monotone:
            lo = None if a.lo is None else _cast_end(dst, a.lo)
            hi = None if a.hi is None else _cast_end(dst, a.hi)
            return Interval(lo, hi)
        return _iv(N.cast(src, dst, _relax(a, src)))

    # -- binary operators ------------------------------------------------------------------
    def _binop(self, e, a, b):
        if not self.loop_ir:
            return self._binop_rules(e, a, b)
        t = e.a.type
        if (t.is_float() and e.op in ("add", "sub", "mul", "div")
                and not (a.is_numeric() and b.is_numeric())
                and a.is_bounded() and b.is_bounded()
                and not (e.op == "div" and not b.is_single_point())):
            return _float_corners(e.op, a, b, t)
        r = self._binop_rules(e, a, b)
        if (not t.is_float() and e.op in ("div", "mod") and not r.is_bounded()
                and b.is_single_point() and isinstance(b.lo, E.Expr)):
            d = b.lo
            if e.op == "div" and a.is_bounded():
                # for one divisor (of either sign, or 0), a / d is monotonic in a
                p, q = (E.binop("div", _e(v, t), d) for v in (a.lo, a.hi))
                return Interval(_S.simplify(_emin(p, q)), _S.simplify(_emax(p, q)))
            if e.op == "mod" and t.is_int():
                # Euclidean: in [0, |d| - 1] (x % 0 == 0)
                zero = E.Const(t, 0)
                return Interval(0, _S.simplify(E.max_(E.Intrinsic("abs", (d,), t) - 1, zero)))
        return r

    def _binop_rules(self, e, a, b):
        op, t = e.op, e.a.type
        if a.is_numeric() and b.is_numeric():
            return _iv(N.op_rule(op)(t, _pair(a), _pair(b)))
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            return self._sym_compare(op, a, b, t)
        if op in ("and", "or"):
            return _iv(N.logic(op, _relax(a, T.bool_), _relax(b, T.bool_)))
        if op in ("min", "max") and (_index(t) or t.is_float()):
            if op == "min":
                return Interval(lo_min(a.lo, b.lo), hi_min(a.hi, b.hi))
            return Interval(lo_max(a.lo, b.lo), hi_max(a.hi, b.hi))
        if op in ("add", "sub") and _index(t):
            if op == "add":
                return Interval(_op("add", a.lo, b.lo, t), _op("add", a.hi, b.hi, t))
            return Interval(_op("sub", a.lo, b.hi, t), _op("sub", a.hi, b.lo, t))
        if op in ("shl", "shr") and _index(t) and b.is_single_point() and is_num(b.lo) \
                and 0 <= b.lo < t.bits - 1:
            # by a constant amount: a multiplication or a floor division by 2**amount
            op, b = ("mul" if op == "shl" else "div"), Interval.point(1 << int(b.lo))
        sym = {"mul": _sym_mul, "div": _sym_div, "mod": _sym_mod}.get(op)
        if _index(t) and sym is not None:
            r = sym(a, b, t)
            if r is not None:
                return r
        return _iv(N.op_rule(op)(t, _relax(a, t), _relax(b, t)))

    def _sym_compare(self, op, a, b, t):
        if op in ("gt", "ge"):
            op, a, b = {"gt": "lt", "ge": "le"}[op], b, a
        if op in ("lt", "le"):
            strict = op == "lt"
            if a.hi is not None and b.lo is not None and \
                    _S.prove(E.BinOp(op, _e(a.hi, t), _e(b.lo, t))):
                return Interval(1, 1)
            if a.lo is not None and b.hi is not None and \
                    _S.prove(E.BinOp("le" if strict else "lt", _e(b.hi, t), _e(a.lo, t))):
                return Interval(0, 0)
            return Interval(0, 1)
        if a.is_single_point() and b.is_single_point() and same(a.lo, b.lo):
            return Interval(1, 1) if op == "eq" else Interval(0, 0)
        return Interval(0, 1)

    # -- select and intrinsics ---------------------------------------------------------------
    def _select(self, e, c, tv, fv):
        if c.is_numeric():
            lo, hi = _relax(c, T.bool_)
            if lo >= 1:
                return tv
            if hi <= 0:
                return fv
        else:
            p = _S.prove(_e(c.lo, T.bool_)) if c.is_single_point() else None
            if p is not None:
                return tv if p else fv
        return tv.union(fv)

    def _intrinsic(self, e, kids):
        t = e.type
        if all(k.is_numeric() for k in kids):
            return _iv(N.op_rule(e.name)(t, *[_pair(k) for k in kids]))
        if e.name in ("floor", "ceil", "round") and t.is_float():
            a = kids[0]
            return Interval(*(None if v is None else _S.simplify(E.Intrinsic(e.name, (_e(v, t),), t))
                              for v in (a.lo, a.hi)))
        return _iv(N.op_rule(e.name)(t, *[_relax(k, c.type) for k, c in zip(kids, e.args)]))


# -- the rules by node kind ----------------------------------------------------------------
def _typed(e, b):
    """A node kind added by a later phase (a Load): its type's range."""
    t = getattr(e, "type", None)
    return type_interval(t) if isinstance(t, T.Type) else Interval.everything()


_BOUNDS = NodeTable("interval bounds", E.NODE_KINDS, fallback=_typed)
_BOUNDS.on(E.Const)(lambda e, b: _iv(N.const(e.type, e.value)))
_BOUNDS.on(E.Var, E.RVar, E.Param)(lambda e, b: b._leaf(e, e.name))
_BOUNDS.on(E.BufferExtent)(
    lambda e, b: b._leaf(e, extent_key(e.image, e.dim), default=Interval(1, None)))
_BOUNDS.on(E.Call)(lambda e, b: b._call(e))
_BOUNDS.on(E.Let)(lambda e, b: b.child(e.name, b.bounds(e.value)).bounds(e.body))


def _operator(rule):
    """The rule of an operator node, from its operands' bounds; when every operand is
    one (symbolic) value, so is the result, exactly."""
    def bounds(e, b):
        kids = [b.bounds(c) for c in children(e)]
        if kids and all(k.is_single_point() for k in kids) and \
                any(not k.is_numeric() for k in kids):
            return Interval.point(b._point(e, kids))
        return rule(e, b, kids)
    return bounds


_BOUNDS.on(E.Cast)(_operator(lambda e, b, k: b._cast(e, k[0])))
_BOUNDS.on(E.BinOp)(_operator(lambda e, b, k: b._binop(e, k[0], k[1])))
_BOUNDS.on(E.Not)(_operator(lambda e, b, k: _iv(N.not_(_relax(k[0], T.bool_)))))
_BOUNDS.on(E.Select)(_operator(lambda e, b, k: b._select(e, *k)))
_BOUNDS.on(E.Intrinsic)(_operator(lambda e, b, k: b._intrinsic(e, k)))


# -- symbolic integer helpers (index arithmetic: no overflow) ------------------------------
def _emin(a, b):
    return a if a is b else E.min_(a, b)


def _emax(a, b):
    return a if a is b else E.max_(a, b)


def _float_corners(op, a, b, t):
    """Symbolic bounds of a float ``a op b`` (``loop_ir``): the corners of the operands'
    bounds (a division only by a single value, whose sign is not known)."""
    lo = [_e(v, t) for v in (a.lo, a.hi)]
    hi = [_e(v, t) for v in (b.lo, b.hi)]
    if op == "add":
        return Interval(E.binop("add", lo[0], hi[0]), E.binop("add", lo[1], hi[1]))
    if op == "sub":
        return Interval(E.binop("sub", lo[0], hi[1]), E.binop("sub", lo[1], hi[0]))
    cs = [E.binop(op, p, q) for p in lo for q in hi]
    mn, mx = cs[0], cs[0]
    for c in cs[1:]:
        mn, mx = _emin(mn, c), _emax(mx, c)
    return Interval(_S.simplify(mn), _S.simplify(mx))


def _unknown_at_the_limits(e, iv: Interval) -> Interval:
    """``loop_ir``: an int32 (or wider) endpoint at the index limit means "nothing known"."""
    t = getattr(e, "type", None)
    if t is not None and t.code == "int" and t.bits >= 32:
        lo, hi = iv.lo, iv.hi
        drop_lo = isinstance(lo, (int, float)) and lo <= -INDEX_LIMIT - 1
        drop_hi = isinstance(hi, (int, float)) and hi >= INDEX_LIMIT
        if drop_lo or drop_hi:
            return Interval(None if drop_lo else lo, None if drop_hi else hi)
    return iv


def _cast_end(t, v):
    if is_num(v):
        return float(v) if t.is_float() else v
    return _S.simplify(E.cast(t, v))


def _const_point(iv):
    if iv.is_single_point() and is_num(iv.lo):
        return iv.lo
    return None


def _sign(iv):
    """+1 if iv >= 0, -1 if iv <= 0 (numerically or provably), else 0."""
    lo, hi = iv.lo, iv.hi
    if lo is not None and (is_num(lo) and lo >= 0 or
                           isinstance(lo, E.Expr) and _S.prove(E.BinOp("le", E.Const(lo.type, 0), lo))):
        return 1
    if hi is not None and (is_num(hi) and hi <= 0 or
                           isinstance(hi, E.Expr) and _S.prove(E.BinOp("le", hi, E.Const(hi.type, 0)))):
        return -1
    return 0


def _sym_mul(a, b, t):
    for x, y in ((a, b), (b, a)):
        k = _const_point(y)
        if k is not None:
            if k == 0:
                return Interval(0, 0)
            lo, hi = (x.lo, x.hi) if k > 0 else (x.hi, x.lo)
            return Interval(_op("mul", lo, k, t), _op("mul", hi, k, t))
    if not (a.is_bounded() and b.is_bounded()):
        return None
    sa, sb = _sign(a), _sign(b)
    if sa and sb:
        # both signs known: the extremes are at known corners
        lo, hi = {(1, 1): ((a.lo, b.lo), (a.hi, b.hi)), (1, -1): ((a.hi, b.lo), (a.lo, b.hi)),
                  (-1, 1): ((a.lo, b.hi), (a.hi, b.lo)), (-1, -1): ((a.hi, b.hi), (a.lo, b.lo))}[sa, sb]
        return Interval(_op("mul", *lo, t), _op("mul", *hi, t))
    ps = [_op("mul", x, y, t) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    lo, hi = ps[0], ps[0]
    for p in ps[1:]:
        lo, hi = lo_min(lo, p), hi_max(hi, p)
    return Interval(lo, hi)


def _at_least_one(v) -> bool:
    """``v >= 1``, numerically or provably (a symbolic divisor such as a tile
    count ``(extent + 255) / 256`` of a positive extent)."""
    if v is None:
        return False
    if is_num(v):
        return v >= 1
    return bool(_S.prove(E.BinOp("le", E.Const(v.type, 1), v)))


def _sym_div(a, b, t):
    if not b.is_numeric():
        # a symbolic divisor known to be >= 1: Euclidean division by a
        # positive number is floor division, monotone in the dividend
        if b.is_single_point() and _at_least_one(b.lo):
            lo = None if a.lo is None else _op("div", a.lo, b.lo, t)
            hi = None if a.hi is None else _op("div", a.hi, b.lo, t)
            return Interval(lo, hi)
        anything = _div_by_anything(a, t)
        if b.is_single_point() and anything is not None and not is_num(b.lo):
            # the sign is known when the bound is evaluated (a fused loop's extent
            # is a run-time value): floor division by it where it is >= 1
            pos = E.BinOp("le", E.Const(b.lo.type, 1), _e(b.lo, t))
            return Interval(_select(pos, _op("div", a.lo, b.lo, t), anything.lo, t),
                            _select(pos, _op("div", a.hi, b.lo, t), anything.hi, t))
        return anything
    c, d = _pair(b)
    if c == d == 0:
        return Interval(0, 0)
    if c >= 1 and d < INF:
        lo = None if a.lo is None else lo_min(_op("div", a.lo, c, t), _op("div", a.lo, d, t))
        hi = None if a.hi is None else hi_max(_op("div", a.hi, c, t), _op("div", a.hi, d, t))
        return Interval(lo, hi)
    if d <= -1 and c > -INF:
        lo = None if a.hi is None else lo_min(_op("div", a.hi, c, t), _op("div", a.hi, d, t))
        hi = None if a.lo is None else hi_max(_op("div", a.lo, c, t), _op("div", a.lo, d, t))
        return Interval(lo, hi)
    return _div_by_anything(a, t)


def _select(cond, x, y, t):
    """The endpoint ``cond ? x : y`` (None where either side is unbounded)."""
    if x is None or y is None:
        return None
    r = _S.simplify(E.Select(cond, _e(x, t), _e(y, t)))
    return r.value if isinstance(r, E.Const) else r


def _div_by_anything(a, t):
    """``a / b`` for a divisor of unknown sign: Euclidean division (``x / 0 == 0``) never
    grows the magnitude, ``|a / b| <= |a|``, so the quotient lies in
    ``[min(a.lo, -a.hi), max(a.hi, -a.lo)]`` (a fused loop's ``t / extent``, where the
    extent is not provably positive, stays bounded)."""
    if a.lo is None or a.hi is None:
        return None
    lo = lo_min(a.lo, _op("sub", 0, a.hi, t))
    hi = hi_max(a.hi, _op("sub", 0, a.lo, t))
    return Interval(lo, hi)


def _sym_mod(a, b, t):
    if b.is_numeric():
        return _iv(N.mod(t, (-INF, INF), _pair(b)))
    if b.hi is not None and _at_least_one(b.lo):
        return Interval(0, _op("sub", b.hi, 1, t))
    return Interval(0, None)
