"""The boxes of the calls in some expressions, over many scopes at once.

The solvers cost every tiling of a menu: K scopes that differ only in the intervals
of a consumer's pure Vars (the *varying* names).  ``CallSpans`` bounds every call
argument once with ``Bounder``, over symbolic intervals of those names (``x`` in
``[x.lo, x.hi]``; every other name numeric), and keeps the endpoints it finds: Exprs
in the symbols such as ``max(min(x.lo / 2 - 1, 511), 0)``.  They are compiled into a
short straight-line program over numpy arrays, and ``boxes`` runs it over K scopes.

The symbolic rules give exactly the numeric ones' results (``numeric.py``) where
those are monotone in each endpoint: int32 ``+ - min max``, a product by a constant
and a floor division by a constant >= 1 (index arithmetic, assumed not to overflow,
as ``Bounder`` assumes).  Any other node whose bounds vary between scopes (a
remainder, a comparison, a select, a cast, float arithmetic, a Let) is bounded scope
by scope with the numeric rules (``numeric.node_bounds`` of its operands' bounds; a
numeric ``Bounder`` for a Let), once per distinct operand bounds, and enters the
spans above it as two fresh symbols.  So every box is the one a numeric ``Bounder``
finds in that scope.
"""
from __future__ import annotations

import math

import numpy as np

from ...model import expr as E
from ...model import types as T
from ...model.visit import children, post_order, walk
from .. import simplify as _S
from . import numeric as N
from .bounds import Bounder, as_interval
from .interval import Interval, is_num

__all__ = ["CallSpans"]

INF = math.inf
_MONOTONE = frozenset(("add", "sub", "min", "max"))
_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
          "min": np.minimum, "max": np.maximum}
_RULE_NODES = (E.BinOp, E.Not, E.Select, E.Cast, E.Intrinsic)


def _whole(n) -> bool:
    """A Call is bounded by its callee's values (not its arguments); a Let as a whole."""
    return isinstance(n, (E.Call, E.Let))


def _calls_in(exprs) -> list:
    """Distinct Call nodes in ``exprs``, arguments included, in a fixed order."""
    out, seen, stack = [], set(), list(exprs)
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, E.Call):
            out.append(e)
        stack.extend(children(e))
    return out


def _numeric_bounds(func_bounds) -> dict:
    """Callee value bounds with numeric endpoints only (a symbolic one is unbounded)."""
    out = {}
    for name, iv in (func_bounds or {}).items():
        iv = as_interval(iv)
        out[name] = Interval(iv.lo if is_num(iv.lo) else None, iv.hi if is_num(iv.hi) else None)
    return out


def _number(t, v):
    """An endpoint as the numeric rules take it: an int for integer types when finite."""
    v = float(v)
    return int(v) if not t.is_float() and math.isfinite(v) else v


class CallSpans:
    """Per callee in ``exprs``, the box of its calls' arguments (the union over its
    calls), symbolic in the ``varying`` names; ``scope`` (name -> Interval or pair)
    bounds every other name, ``func_bounds`` the values of callees read inside an index.
    ``boxes(values, k)`` evaluates them over ``k`` scopes."""

    def __init__(self, exprs, scope: dict, varying, func_bounds: dict | None = None):
        self.scope = {n: as_interval(v) for n, v in scope.items()}
        self.varying = tuple(varying)
        self.func_bounds = _numeric_bounds(func_bounds)
        self.program: list = []           # (op, out register, operands...)
        self.nregs = 0
        self._regs: dict = {}             # id(endpoint node) or ("num", v) -> register
        self._syms: dict = {}             # symbol name -> register
        self._dep: dict = {}              # id(node) -> its bounds vary between scopes
        sym_scope = dict(self.scope)
        for v in self.varying:
            sym_scope[v] = Interval(self._input(v, 0), self._input(v, 1))
        self.bounder = Bounder(sym_scope, func_bounds=self.func_bounds)
        per: dict = {}
        for c in _calls_in(exprs):
            per.setdefault(c.target.name, []).append([self._span(a) for a in c.args])
        self.boxes_regs = {name: self._union(calls) for name, calls in per.items()}
        self.bounder = self._regs = self._syms = self._dep = None   # for compiling only

    # -- compiling ------------------------------------------------------------------------
    def _new_regs(self, n: int) -> int:
        self.nregs += n
        return self.nregs - n

    def _input(self, name: str, side: int) -> E.Var:
        sym = E.Var(f"@{name}.{'lo' if side == 0 else 'hi'}")
        r = self._new_regs(1)
        self.program.append(("in", r, name, side))
        self._syms[sym.name] = r
        return sym

    def _varies(self, n) -> bool:
        hit = self._dep.get(id(n))
        if hit is None:
            if isinstance(n, (E.Var, E.RVar)):
                hit = n.name in self.varying
            elif isinstance(n, E.Call):
                hit = False
            elif isinstance(n, E.Let):
                hit = any(isinstance(m, (E.Var, E.RVar)) and m.name in self.varying
                          for m in walk(n))
            else:
                hit = any(self._varies(c) for c in children(n))
            self._dep[id(n)] = hit
        return hit

    def _exact(self, n) -> bool:
        """Does the symbolic rule of ``n`` give the numeric rule's result in every scope?"""
        if not isinstance(n, E.BinOp) or n.a.type != T.int32:
            return False
        if n.op in _MONOTONE:
            return True
        if n.op == "mul":
            return any(not self._varies(k) and self._point(k) is not None for k in (n.a, n.b))
        if n.op == "div" and not self._varies(n.b):
            k = self._point(n.b)
            return k is not None and k >= 1
        return False

    def _point(self, e):
        iv = self.bounder.bounds(e)
        if iv.is_single_point() and is_num(iv.lo) and math.isfinite(iv.lo):
            return iv.lo
        return None

    def _span(self, arg) -> Interval:
        """The bounds of ``arg``: numbers, or Exprs the program computes."""
        b = self.bounder
        for n in post_order(arg, leave_whole=_whole):
            if not self._varies(n) or isinstance(n, (E.Var, E.RVar)):
                b.bounds(n)                       # its operands are bounded already
            elif not self._exact(n) or _lost(b.bounds(n), [b.bounds(c) for c in children(n)]):
                self._per_scope(n)
        if self._endpoints(b.bounds(arg)) is None:   # beyond the program's vocabulary
            self._per_scope(arg, whole=True)
        return b.bounds(arg)

    def _per_scope(self, n, whole: bool = False) -> None:
        """``n`` is bounded in each scope by the numeric rules; two symbols stand for it."""
        ops = None
        if not whole and isinstance(n, _RULE_NODES):
            ops = [self._endpoints(self.bounder.bounds(c)) for c in children(n)]
        if ops is None or any(s is None for s in ops):
            step, regs = "whole", ()
        else:
            step, regs = "rule", tuple(r for s in ops for r in s)
        types = tuple(c.type for c in children(n)) if step == "rule" else \
            tuple(T.int32 for _ in self.varying)
        out = self._new_regs(2)
        self.program.append((step, out, n, regs, types))
        lo, hi = E.Var(f"@{out}.lo"), E.Var(f"@{out}.hi")
        self._syms[lo.name], self._syms[hi.name] = out, out + 1
        self.bounder.assume(n, Interval(lo, hi))

    def _endpoints(self, iv: Interval):
        """(lo register, hi register), or None when an endpoint is not in the program's
        vocabulary (symbols, constants, + - * min max, floor division by a constant)."""
        lo, hi = self._compile(_end(iv.lo, -INF)), self._compile(_end(iv.hi, INF))
        return None if lo is None or hi is None else (lo, hi)

    def _compile(self, end):
        if is_num(end):
            return self._const(end)
        hit = self._regs.get(id(end))
        if hit is not None:
            return hit[1]
        for n in post_order(end):
            if id(n) in self._regs:
                continue
            if isinstance(n, E.Var) and n.name in self._syms:
                r = self._syms[n.name]
            elif isinstance(n, E.Const) and not n.type.is_bool():
                r = self._const(n.value)
            elif isinstance(n, E.BinOp) and n.op in _NUMPY:
                r = self._new_regs(1)
                self.program.append((n.op, r, self._regs[id(n.a)][1], self._regs[id(n.b)][1]))
            elif isinstance(n, E.BinOp) and n.op == "div" and isinstance(n.b, E.Const) \
                    and n.b.type.is_int() and n.b.value >= 1:
                r = self._new_regs(1)
                self.program.append(("div", r, self._regs[id(n.a)][1], float(n.b.value)))
            else:
                return None
            self._regs[id(n)] = (n, r)
        return self._regs[id(end)][1]

    def _const(self, v) -> int:
        key = ("num", float(v))
        hit = self._regs.get(key)
        if hit is None:
            r = self._new_regs(1)
            self.program.append(("const", r, float(v)))
            hit = self._regs[key] = (None, r)
        return hit[1]

    def _union(self, calls) -> tuple:
        """Per dimension, the registers whose min (max) is the lower (upper) bound over
        ``calls`` (lists of argument Intervals)."""
        box = []
        for d in range(len(calls[0])):
            los = _extremes([_end(c[d].lo, -INF) for c in calls], lower=True)
            his = _extremes([_end(c[d].hi, INF) for c in calls], lower=False)
            box.append((tuple(self._compile(e) for e in los), tuple(self._compile(e) for e in his)))
        return tuple(box)

    # -- evaluating -----------------------------------------------------------------------
    def boxes(self, values: dict, k: int) -> dict:
        """callee -> per dimension ``(lo, hi)``, float64 arrays over ``k`` scopes, where
        ``values`` maps each varying name to its ``(lo, hi)`` arrays (±inf: unbounded)."""
        regs = [None] * self.nregs
        with np.errstate(invalid="ignore"):
            for ins in self.program:
                op, r = ins[0], ins[1]
                if op in _NUMPY:
                    regs[r] = _NUMPY[op](regs[ins[2]], regs[ins[3]])
                elif op == "div":
                    regs[r] = np.floor(regs[ins[2]] / ins[3])
                elif op == "in":
                    regs[r] = np.asarray(values[ins[2]][ins[3]], dtype=np.float64)
                elif op == "const":
                    regs[r] = ins[2]
                else:
                    regs[r], regs[r + 1] = self._scope_by_scope(ins, regs, values, k)
        out = {}
        for name, box in self.boxes_regs.items():
            dims = []
            for los, his in box:
                lo = _reduce(np.minimum, [regs[r] for r in los], k, -INF)
                hi = _reduce(np.maximum, [regs[r] for r in his], k, INF)
                dims.append((lo, hi))
            out[name] = tuple(dims)
        return out

    def _scope_by_scope(self, ins, regs, values, k):
        """Bounds of the node of step ``ins`` in each of ``k`` scopes (once per distinct
        bounds of its operands, or of the varying names for a "whole" step)."""
        step, _, n, operand_regs, types = ins
        if step == "rule":
            cols = [regs[r] for r in operand_regs]
        else:
            cols = [values[v][s] for v in self.varying for s in (0, 1)]
        types = [t for t in types for _ in (0, 1)]
        table = np.stack([np.broadcast_to(np.asarray(c, dtype=np.float64), (k,)) for c in cols]) \
            if cols else np.zeros((0, k))
        if k > 1:
            lanes, where = np.unique(table, axis=1, return_inverse=True)
            where = where.reshape(-1)
        else:
            lanes, where = table, np.zeros(1, dtype=np.intp)
        los, his = [], []
        for col in lanes.T:
            vals = [_number(t, v) for t, v in zip(types, col)]
            pairs = list(zip(vals[0::2], vals[1::2]))
            if step == "rule":
                lo, hi = N.node_bounds(n, pairs)
            else:
                scope = dict(self.scope)
                scope.update({v: Interval(*p) for v, p in zip(self.varying, pairs)})
                iv = Bounder(scope, func_bounds=self.func_bounds).bounds(n)
                lo, hi = _end(iv.lo, -INF), _end(iv.hi, INF)
            los.append(float(lo))
            his.append(float(hi))
        return np.array(los)[where], np.array(his)[where]


def _lost(iv: Interval, operands: list) -> bool:
    """Did the symbolic rule give up an end (an endpoint Expr it could not keep exact)
    that bounded operands bound numerically?"""
    return (iv.lo is None or iv.hi is None) and \
        all(k.lo is not None and k.hi is not None for k in operands)


def _end(v, unbounded):
    return unbounded if v is None else v


def _extremes(ends: list, lower: bool) -> list:
    """The endpoints among ``ends`` that may be the least (``lower``) or the greatest:
    one number, and per linear part (``s.linear``: sum of atoms times coefficients) the
    Expr with the least (greatest) constant."""
    s = _S._Simplifier(None)
    nums, best = [], {}
    for e in ends:
        if is_num(e):
            nums.append(e)
            continue
        terms, c = s.linear(e)
        key = tuple(sorted((i, k) for i, (_, k) in terms.items() if k))
        old = best.get(key)
        if old is None or (c < old[0] if lower else c > old[0]):
            best[key] = (c, e)
    kept = [e for _, e in best.values()]
    if nums:
        kept.append(min(nums) if lower else max(nums))
    return kept


def _reduce(fn, arrays, k: int, unbounded):
    r = arrays[0]
    for a in arrays[1:]:
        r = fn(r, a)
    r = np.broadcast_to(np.asarray(r, dtype=np.float64), (k,))
    return np.where(np.isnan(r), unbounded, r)
