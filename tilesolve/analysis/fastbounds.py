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
_OPERATORS = frozenset((E.BinOp, E.Not, E.Select, E.Cast))


def post_order(root, memo: dict, operands, rule) -> None:
    """Fill ``memo[id(node)] = (rule(node), node)`` for ``root`` and every operand below
    it not yet there, operands first, with an explicit stack: ``rule`` then finds what
    it asks of its operands memoized, and no Python frame is taken per level of the
    expression (an Expr thousands of nodes deep is bounded as any other)."""
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in memo:
            continue
        if ready:
            memo[id(node)] = (rule(node), node)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in operands(node) if id(k) not in memo)


def _operands(e) -> tuple:
    """What ``FastBounder._bounds`` bounds in the scope of ``e`` itself."""
    if type(e) in _OPERATORS:
        return e.children()
    if isinstance(e, E.Intrinsic):
        return tuple(e.args)
    if isinstance(e, E.Let):
        return (e.value,)                 # the body is bounded in the Let's own scope
    return ()


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
            post_order(e, self.memo, _operands, self._bounds)
            hit = self.memo[id(e)]
        return hit[0]

    def _bounds(self, e):
        """One node's bounds; its operands are memoized already (``post_order``)."""
        t = e.type
        if isinstance(e, E.Const):
            return N.const(t, e.value)
        if isinstance(e, (E.Var, E.RVar, E.Param)):
            r = self.scope.get(e.name)
            return r if r is not None else N.type_range(t)
        if isinstance(e, E.BufferExtent):
            from ..model.evaluate import extent_key
            r = self.scope.get(extent_key(e.image, e.dim))
            return r if r is not None else (1, INF)
        if type(e) in _OPERATORS:
            return N.node_bounds(e, [self.bounds(k) for k in e.children()])
        if isinstance(e, E.Intrinsic):
            return N.op_rule(e.name)(t, *[self.bounds(a) for a in e.args])
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


def linear_form(a):
    """(var name, k, c) when ``a`` is ``k*v + c`` with int constants, else None."""
    if isinstance(a, (E.Var, E.RVar)):
        return (a.name, 1, 0)
    if isinstance(a, E.Const) and a.type.is_integral():
        return (None, 0, int(a.value))
    if isinstance(a, E.BinOp) and a.type.is_integral():
        if a.op in ("add", "sub") and isinstance(a.b, E.Const):
            inner = linear_form(a.a)
            if inner is not None:
                c = int(a.b.value)
                return (inner[0], inner[1], inner[2] + (c if a.op == "add" else -c))
        if a.op == "add" and isinstance(a.a, E.Const):
            inner = linear_form(a.b)
            if inner is not None:
                return (inner[0], inner[1], inner[2] + int(a.a.value))
        if a.op == "mul" and isinstance(a.b, E.Const):
            inner = linear_form(a.a)
            if inner is not None and inner[0] is not None:
                k = int(a.b.value)
                return (inner[0], inner[1] * k, inner[2] * k)
    return None


_SUMMARY: dict = {}


def _summary(exprs):
    """Per callee: a list of per-dim affine summaries (var, k, cmin, cmax) when
    every call to it is affine with one (var, k) per dim; else the calls."""
    key = tuple(id(e) for e in exprs)
    hit = _SUMMARY.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], exprs)):
        return hit[1]
    per: dict = {}
    for c in _calls_of(exprs):
        per.setdefault(c.target.name, []).append(c)
    out = {}
    for name, calls in per.items():
        dims = None
        ok = True
        for c in calls:
            lins = [linear_form(a) for a in c.args]
            if any(lv is None for lv in lins):
                ok = False
                break
            if dims is None:
                dims = [[lv[0], lv[1], lv[2], lv[2]] for lv in lins]
                continue
            for d, lv in zip(dims, lins):
                if lv[0] != d[0] or lv[1] != d[1]:
                    ok = False
                    break
                d[2], d[3] = min(d[2], lv[2]), max(d[3], lv[2])
            if not ok:
                break
        out[name] = ("affine", [tuple(d) for d in dims]) if ok else ("general", calls)
    _SUMMARY[key] = (tuple(exprs), out)
    return out


def calls_boxes(exprs, scope: dict, value_bounds: dict | None = None) -> dict:
    """callee name -> ((lo, hi), ...) over every call in ``exprs``."""
    exprs = tuple(exprs)
    out: dict = {}
    b = None
    for name, (kind, data) in _summary(exprs).items():
        if kind == "affine":
            box = []
            for var, k, cmin, cmax in data:
                if var is None:
                    box.append((cmin, cmax))
                    continue
                lo, hi = scope.get(var, (-INF, INF))
                if k < 0:
                    lo, hi = hi, lo
                box.append((k * lo + cmin if lo not in (INF, -INF) else lo,
                            k * hi + cmax if hi not in (INF, -INF) else hi))
            out[name] = tuple(box)
            continue
        if b is None:
            b = FastBounder(scope, value_bounds)
        for c in data:
            box = tuple(b.bounds(a) for a in c.args)
            old = out.get(name)
            out[name] = box if old is None else tuple(
                (min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(old, box))
    return out
