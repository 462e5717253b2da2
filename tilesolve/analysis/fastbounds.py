"""Numeric bounds of index expressions, fast: the solvers' inner loop.

The solvers evaluate thousands of (group, tile) columns, each needing the
boxes a tile reads.  This evaluator works on plain ``(lo, hi)`` number pairs
with the interval arithmetic of ``analysis.intervals.numeric`` (so it obeys
the same semantics and soundness rules as ``bounds_of``), without building
Interval or Box objects.  Calls inside an index (data-dependent indices) use
the callee's value bounds.  ``calls_boxes`` gives, for every call in an
expression, the box of its arguments, like ``boxes_required``.
"""
from __future__ import annotations

import math

from ..model import expr as E
from .intervals import numeric as N

INF = math.inf


def _pair(iv):
    lo = -INF if iv.lo is None else iv.lo
    hi = INF if iv.hi is None else iv.hi
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return (-INF, INF)
    return (lo, hi)


class FastBounder:
    """``bounds(e)`` under ``scope`` (name -> (lo, hi)) with memo per instance."""

    def __init__(self, scope: dict, value_bounds: dict | None = None):
        self.scope = scope
        self.value_bounds = value_bounds or {}
        self.memo: dict = {}

    def bounds(self, e):
        hit = self.memo.get(id(e))
        if hit is None:
            hit = self._bounds(e)
            self.memo[id(e)] = (hit, e)
            return hit
        return hit[0]

    def _bounds(self, e):
        t = e.type
        if isinstance(e, E.Const):
            v = e.value
            return (int(v), int(v)) if not t.is_float() else (v, v)
        if isinstance(e, (E.Var, E.RVar, E.Param)):
            r = self.scope.get(e.name)
            return r if r is not None else N.type_range(t)
        if isinstance(e, E.BufferExtent):
            from ..model.evaluate import extent_key
            r = self.scope.get(extent_key(e.image, e.dim))
            return r if r is not None else (1, INF)
        if isinstance(e, E.BinOp):
            a = self.bounds(e.a)
            b = self.bounds(e.b)
            op = e.op
            at = e.a.type
            if op == "add":
                return N.add(at, a, b)
            if op == "sub":
                return N.sub(at, a, b)
            if op == "mul":
                return N.mul(at, a, b)
            if op == "div":
                return N.div(at, a, b)
            if op == "mod":
                return N.mod(at, a, b)
            if op == "min":
                return N.min_(at, a, b)
            if op == "max":
                return N.max_(at, a, b)
            if op in ("and", "or"):
                return N.logic(op, a, b)
            return N.compare(op, a, b)
        if isinstance(e, E.Not):
            return N.not_(self.bounds(e.a))
        if isinstance(e, E.Select):
            c = self.bounds(e.cond)
            if c == (1, 1):
                return self.bounds(e.true_value)
            if c == (0, 0):
                return self.bounds(e.false_value)
            a, b = self.bounds(e.true_value), self.bounds(e.false_value)
            return (min(a[0], b[0]), max(a[1], b[1]))
        if isinstance(e, E.Cast):
            return N.cast(e.value.type, t, self.bounds(e.value))
        if isinstance(e, E.Intrinsic):
            return N.intrinsic(e.name, t, [self.bounds(a) for a in e.args])
        if isinstance(e, E.Call):
            vb = self.value_bounds.get(e.target.name)
            return _pair(vb) if vb is not None else N.type_range(t)
        if isinstance(e, E.Let):
            inner = FastBounder(dict(self.scope), self.value_bounds)
            inner.scope[e.name] = self.bounds(e.value)
            return inner.bounds(e.body)
        return N.type_range(t)


_CALLS: dict = {}


def _calls_of(exprs) -> list:
    """Distinct Call nodes in ``exprs`` (memoized on the tuple's node ids)."""
    key = tuple(id(e) for e in exprs)
    hit = _CALLS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], exprs)):
        return hit[1]
    from ..model.visit import children
    calls, seen, stack = [], set(), list(exprs)
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, E.Call):
            calls.append(e)
        stack.extend(children(e))
    _CALLS[key] = (tuple(exprs), calls)
    return calls


def calls_boxes(exprs, scope: dict, value_bounds: dict | None = None) -> dict:
    """callee name -> ((lo, hi), ...) over every call in ``exprs``."""
    b = FastBounder(scope, value_bounds)
    out: dict = {}
    for e in _calls_of(tuple(exprs)):
        box = tuple(b.bounds(a) for a in e.args)
        old = out.get(e.target.name)
        out[e.target.name] = box if old is None else tuple(
            (min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(old, box))
    return out
