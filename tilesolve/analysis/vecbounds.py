"""Bounds of index expressions over many scopes at once (numpy), for the solvers.

The solvers cost every tiling of a group's menu; the region a tile reads is
the same interval computation for each tiling, with different numbers.  This
module runs ``fastbounds``' computation once over arrays: every interval is a
pair ``(lo, hi)`` of float64 arrays of shape ``(K,)`` (one entry per scope;
integers are exact below 2**53, ``±inf`` means unbounded), with the rules of
``analysis.intervals.numeric`` applied elementwise.  (Those rules branch on
Python numbers; calling them lane by lane is the per-scope fallback below.  Here
integers are float64, so where ``numeric.fit`` would wrap, ``_fit`` refuses.
``tests/property/test_bounds_engines_agree.py`` checks every lane equals them.)

Only what index expressions need is vectorized: integer ``+ - * min max``,
division and remainder by a positive constant, comparisons, logic, select,
integer casts, ``abs`` and calls (data-dependent indices take the callee's
value bounds).  Anything else (float arithmetic, lets, wrapping overflow...)
raises :class:`Unsupported`, and ``calls_boxes_vec`` then evaluates those
calls one scope at a time with ``fastbounds`` — so the result always equals
``fastbounds.calls_boxes`` applied to each scope.
"""
from __future__ import annotations

import math

import numpy as np

from ..model import expr as E
from .fastbounds import _OPERATORS, FastBounder, _summary, post_order
from .intervals import numeric as N

INF = math.inf


class Unsupported(Exception):
    """An expression this evaluator does not vectorize (the caller falls back)."""


def _arr(v, k: int):
    return v if isinstance(v, np.ndarray) else np.full(k, float(v))


def _fit(t, lo, hi):
    """``numeric.fit`` for bool and integer types, elementwise."""
    if t.code == "bool":
        return np.where(lo <= 0, 0.0, 1.0), np.where(hi >= 1, 1.0, 0.0)
    if t.code == "float":
        raise Unsupported("float arithmetic")
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise Unsupported("nan")
    tmin, tmax = float(t.min_value()), float(t.max_value())
    inf_lo, inf_hi = np.isneginf(lo), np.isposinf(hi)
    unbounded = inf_lo | inf_hi
    if unbounded.any() and not N.is_index(t):
        lo = np.where(unbounded, tmin, lo)
        hi = np.where(unbounded, tmax, hi)
    fin = ~unbounded
    if ((lo[fin] < tmin) | (hi[fin] > tmax)).any():
        raise Unsupported("wrapping")
    lo = np.where(inf_lo, lo, np.clip(lo, tmin, tmax))
    hi = np.where(inf_hi, hi, np.clip(hi, tmin, tmax))
    return lo, hi


def _mul0(x, y):
    with np.errstate(invalid="ignore"):
        p = x * y
    return np.where((x == 0) | (y == 0), 0.0, p)


def _floordiv(x, k: float):
    with np.errstate(invalid="ignore"):
        q = np.floor(x / k)
    return np.where(np.isinf(x), x, q)


_FREE: dict = {}


def _free_names(e) -> frozenset:
    """Names of the Vars, RVars and Params and the buffer extents ``e``'s bounds
    depend on (a Call's bounds are its callee's value bounds: none), memoized
    on the node, which the memo keeps alive (so an id names one node)."""
    hit = _FREE.get(id(e))
    if hit is None:
        post_order(e, _FREE, _name_operands, _names_of)
        hit = _FREE[id(e)]
    return hit[0]


def _name_operands(e) -> tuple:
    from ..model.visit import children
    if isinstance(e, (E.Var, E.RVar, E.Param, E.BufferExtent, E.Call)):
        return ()
    return tuple(children(e))


def _names_of(e) -> frozenset:
    from ..model.evaluate import extent_key
    if isinstance(e, (E.Var, E.RVar, E.Param)):
        return frozenset([e.name])
    if isinstance(e, E.BufferExtent):
        return frozenset([extent_key(e.image, e.dim)])
    if isinstance(e, E.Call):
        return frozenset()
    return frozenset().union(*(_FREE[id(c)][0] for c in _name_operands(e)))


class VecBounder:
    """``bounds(e) -> (lo, hi)`` arrays under ``scope`` (name -> pair of arrays or numbers).

    A subexpression that reads no name whose interval varies between scopes
    (a data-dependent index computed from a callee's value bounds, say) is
    bounded once by ``fastbounds`` and broadcast."""

    def __init__(self, scope: dict, k: int, value_bounds: dict | None = None):
        self.scope = scope
        self.k = k
        self.value_bounds = value_bounds or {}
        self.memo: dict = {}
        self.varying = frozenset(n for n, (lo, hi) in scope.items()
                                 if isinstance(lo, np.ndarray) or isinstance(hi, np.ndarray))
        self._scalar = None

    def bounds(self, e):
        hit = self.memo.get(id(e))
        if hit is None:
            post_order(e, self.memo, self._operands, self._node)
            hit = self.memo[id(e)]
        return hit[0]

    def _operands(self, e) -> tuple:
        """What ``_bounds`` asks of ``e``'s operands; nothing for a subexpression the
        scalar path bounds whole."""
        if not (_free_names(e) & self.varying):
            return ()
        if type(e) in _OPERATORS:
            return e.children()
        if isinstance(e, E.Intrinsic):
            return tuple(e.args)
        return ()

    def _node(self, e):
        if not (_free_names(e) & self.varying):
            if self._scalar is None:
                self._scalar = FastBounder({n: v for n, v in self.scope.items()
                                            if n not in self.varying}, self.value_bounds)
            r = self._scalar.bounds(e)
        else:
            r = self._bounds(e)
        return (_arr(r[0], self.k), _arr(r[1], self.k))

    def _const_int(self, e) -> float | None:
        """The value of ``e`` when it is the same integer in every scope."""
        if e.type.is_float():
            return None
        lo, hi = self.bounds(e)
        if lo[0] == hi[0] and (lo == lo[0]).all() and (hi == lo[0]).all() and np.isfinite(lo[0]):
            return float(lo[0])
        return None

    def _bounds(self, e):
        t = e.type
        if isinstance(e, E.Const):
            if t.is_float():
                raise Unsupported("float constant")
            return (float(int(e.value)),) * 2
        if isinstance(e, (E.Var, E.RVar, E.Param)):
            r = self.scope.get(e.name)
            return r if r is not None else N.type_range(t)
        if isinstance(e, E.BufferExtent):
            from ..model.evaluate import extent_key
            r = self.scope.get(extent_key(e.image, e.dim))
            return r if r is not None else (1, INF)
        if isinstance(e, E.BinOp):
            return self._binop(e)
        if isinstance(e, E.Not):
            return N.not_(self.bounds(e.a))
        if isinstance(e, E.Select):
            c = self.bounds(e.cond)
            a, b = self.bounds(e.true_value), self.bounds(e.false_value)
            yes, no = (c[0] == 1) & (c[1] == 1), (c[0] == 0) & (c[1] == 0)
            lo = np.where(yes, a[0], np.where(no, b[0], np.minimum(a[0], b[0])))
            hi = np.where(yes, a[1], np.where(no, b[1], np.maximum(a[1], b[1])))
            return lo, hi
        if isinstance(e, E.Cast):
            src = e.value.type
            if src.is_float() or t.is_float():
                raise Unsupported("float cast")
            lo, hi = self.bounds(e.value)
            if t.is_bool():
                one = (lo > 0) | (hi < 0)
                zero = (lo == 0) & (hi == 0)
                return (np.where(one, 1.0, 0.0), np.where(zero, 0.0, 1.0))
            return _fit(t, lo, hi)
        if isinstance(e, E.Intrinsic) and e.name == "abs" and not t.is_float():
            lo, hi = self.bounds(e.args[0])
            rlo = np.where(lo >= 0, lo, np.where(hi <= 0, -hi, 0.0))
            rhi = np.where(lo >= 0, hi, np.where(hi <= 0, -lo, np.maximum(-lo, hi)))
            return _fit(t, rlo, rhi)
        if isinstance(e, E.Call):
            from .fastbounds import _pair
            vb = self.value_bounds.get(e.target.name)
            return _pair(vb) if vb is not None else N.type_range(t)
        raise Unsupported(type(e).__name__)

    def _binop(self, e):
        op, at = e.op, e.a.type
        if at.is_float():
            raise Unsupported("float arithmetic")
        a, b = self.bounds(e.a), self.bounds(e.b)
        if op in ("add", "sub"):
            if op == "sub":
                b = (-b[1], -b[0])
            with np.errstate(invalid="ignore"):
                lo, hi = a[0] + b[0], a[1] + b[1]
            return _fit(at, np.where(np.isnan(lo), -INF, lo), np.where(np.isnan(hi), INF, hi))
        if op == "mul":
            ps = (_mul0(a[0], b[0]), _mul0(a[0], b[1]), _mul0(a[1], b[0]), _mul0(a[1], b[1]))
            return _fit(at, np.minimum.reduce(ps), np.maximum.reduce(ps))
        if op == "min":
            return _fit(at, np.minimum(a[0], b[0]), np.minimum(a[1], b[1]))
        if op == "max":
            return _fit(at, np.maximum(a[0], b[0]), np.maximum(a[1], b[1]))
        if op in ("div", "mod"):
            k = self._const_int(e.b)
            if k is None or k < 1:
                raise Unsupported("division by a non-constant")
            if op == "div":
                return _fit(at, _floordiv(a[0], k), _floordiv(a[1], k))
            return self._mod(at, a, k)
        if op in E.BIT_OPS:
            raise Unsupported(f"bit operation {op}")
        if op == "and":
            return np.minimum(a[0], b[0]), np.minimum(a[1], b[1])
        if op == "or":
            return np.maximum(a[0], b[0]), np.maximum(a[1], b[1])
        return _compare(op, a, b)

    @staticmethod
    def _mod(at, a, k: float):
        """``numeric.mod`` by the positive constant ``k``, elementwise."""
        lo, hi = np.zeros_like(a[0]), np.full_like(a[0], k - 1)
        fin = np.isfinite(a[0]) & np.isfinite(a[1])
        with np.errstate(invalid="ignore"):
            same = fin & (np.floor(a[0] / k) == np.floor(a[1] / k))
            m0, m1 = np.mod(a[0], k), np.mod(a[1], k)
        small = (a[0] >= 0) & (a[1] < k)
        nonneg = a[0] >= 0
        hi = np.where(nonneg, np.minimum(hi, a[1]), hi)
        rlo = np.where(same, m0, np.where(small, a[0], lo))
        rhi = np.where(same, m1, np.where(small, a[1], hi))
        return _fit(at, rlo, rhi)


def _compare(op, a, b):
    if op in ("gt", "ge"):
        op, a, b = ("lt" if op == "gt" else "le"), b, a
    if op == "lt":
        yes, no = a[1] < b[0], a[0] >= b[1]
    elif op == "le":
        yes, no = a[1] <= b[0], a[0] > b[1]
    elif op in ("eq", "ne"):
        eq = (a[0] == a[1]) & (a[1] == b[0]) & (b[0] == b[1])
        ne = (a[1] < b[0]) | (b[1] < a[0])
        yes, no = (eq, ne & ~eq) if op == "eq" else (ne & ~eq, eq)
    else:
        raise Unsupported(op)
    return np.where(yes, 1.0, 0.0), np.where(no, 0.0, 1.0)


def _scalar_scope(scope: dict, i: int) -> dict:
    out = {}
    for n, (lo, hi) in scope.items():
        out[n] = (float(lo[i]) if isinstance(lo, np.ndarray) else lo,
                  float(hi[i]) if isinstance(hi, np.ndarray) else hi)
    return out


def calls_boxes_vec(exprs, scope: dict, k: int, value_bounds: dict | None = None) -> dict:
    """callee name -> tuple of per-dim ``(lo, hi)`` arrays over the ``k`` scopes:
    ``fastbounds.calls_boxes`` of each scope, stacked."""
    exprs = tuple(exprs)
    out: dict = {}
    vb = None
    for name, (kind, data) in _summary(exprs).items():
        if kind == "affine":
            box = []
            for var, m, cmin, cmax in data:
                if var is None:
                    box.append((np.full(k, float(cmin)), np.full(k, float(cmax))))
                    continue
                lo, hi = scope.get(var, (-INF, INF))
                lo, hi = _arr(lo, k), _arr(hi, k)
                if m < 0:
                    lo, hi = hi, lo
                with np.errstate(invalid="ignore"):
                    nlo = np.where(np.isinf(lo), lo, m * lo + cmin)
                    nhi = np.where(np.isinf(hi), hi, m * hi + cmax)
                box.append((nlo, nhi))
            out[name] = tuple(box)
            continue
        try:
            if vb is None:
                vb = VecBounder(scope, k, value_bounds)
            box = None
            for c in data:
                cb = tuple(vb.bounds(a) for a in c.args)
                box = cb if box is None else tuple(
                    (np.minimum(x[0], y[0]), np.maximum(x[1], y[1])) for x, y in zip(box, cb))
            out[name] = box
        except Unsupported:
            out[name] = _per_scope(data, scope, k, value_bounds)
    return out


def _per_scope(calls, scope, k, value_bounds):
    """The boxes of ``calls`` one scope at a time (fastbounds), stacked."""
    rows = []
    for i in range(k):
        b = FastBounder(_scalar_scope(scope, i), value_bounds)
        box = None
        for c in calls:
            cb = tuple(b.bounds(a) for a in c.args)
            box = cb if box is None else tuple(
                (min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(box, cb))
        rows.append(box)
    nd = len(rows[0])
    return tuple((np.array([float(r[d][0]) for r in rows]), np.array([float(r[d][1]) for r in rows]))
                 for d in range(nd))
