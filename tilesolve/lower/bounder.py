"""``LowerBounder``: ``analysis.intervals.Bounder`` in symbolic mode, plus
what lowering needs from it.

* symbolic float bounds: a float Param scaling a data-dependent index
  (``int(v / r_sigma)``) must bound the index symbolically;
* a division or modulo by one symbolic value (``tile / ((W + 511) / 512)``
  for a fused loop) is bounded whatever that value's sign;
* a select on one symbolic test (the shift-inward ``256 <= out.extent.0``)
  selects the branches' bounds instead of joining them;
* an int32 end at the type's limit means "unbounded" and becomes ``None``,
  so it never enters symbolic arithmetic (where it would wrap).

``endpoint(v, t, is_lo)`` turns an Interval end into an Expr of type ``t``
(or None when unbounded).
"""
from __future__ import annotations

import math

from ..analysis import simplify as _S
from ..analysis.intervals import INDEX_LIMIT, Bounder, Interval
from ..analysis.simplify import simplify
from ..model import expr as E


def endpoint(v, t, is_lo: bool):
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


def _fmin(a, b):
    return a if a is b else E.min_(a, b)


def _fmax(a, b):
    return a if a is b else E.max_(a, b)


class LowerBounder(Bounder):
    """``Bounder`` plus symbolic float bounds, which lowering needs where a
    float Param scales a data-dependent index (``int(v / r_sigma)``): IEEE
    ``+ - * /`` and float-to-int truncation are monotonic in each operand, so
    the corners bound the result (ignoring NaN, as the analysis does).

    An int32 endpoint at the type's limit means "nothing known" and becomes
    unbounded, so it never enters symbolic arithmetic (where it would wrap:
    ``max(-2**31, e) - 2``)."""

    def bounds(self, e):
        iv = super().bounds(e)
        t = getattr(e, "type", None)
        if t is not None and t.code == "int" and t.bits >= 32:
            lo, hi = iv.lo, iv.hi
            drop_lo = isinstance(lo, (int, float)) and lo <= -INDEX_LIMIT - 1
            drop_hi = isinstance(hi, (int, float)) and hi >= INDEX_LIMIT
            if drop_lo or drop_hi:
                return Interval(None if drop_lo else lo, None if drop_hi else hi)
        return iv

    def _binop(self, e, a, b):
        t = e.a.type
        if (t.is_float() and e.op in ("add", "sub", "mul", "div")
                and not (a.is_numeric() and b.is_numeric())
                and a.is_bounded() and b.is_bounded()):
            lo = [_fe(v, t) for v in (a.lo, a.hi)]
            hi = [_fe(v, t) for v in (b.lo, b.hi)]
            if e.op == "add":
                return Interval(E.binop("add", lo[0], hi[0]), E.binop("add", lo[1], hi[1]))
            if e.op == "sub":
                return Interval(E.binop("sub", lo[0], hi[1]), E.binop("sub", lo[1], hi[0]))
            if e.op == "div" and not b.is_single_point():
                return super()._binop(e, a, b)
            cs = [E.binop(e.op, p, q) for p in lo for q in hi]
            mn, mx = cs[0], cs[0]
            for c in cs[1:]:
                mn, mx = _fmin(mn, c), _fmax(mx, c)
            return Interval(simplify(mn), simplify(mx))
        r = super()._binop(e, a, b)
        if (not t.is_float() and e.op in ("div", "mod") and not r.is_bounded()
                and b.is_single_point() and isinstance(b.lo, E.Expr)):
            d = b.lo
            if e.op == "div" and a.is_bounded():
                # for one divisor (of either sign, or 0), a / d is monotonic in a
                p, q = (E.binop("div", _fe(v, t), d) for v in (a.lo, a.hi))
                return Interval(simplify(_fmin(p, q)), simplify(_fmax(p, q)))
            if e.op == "mod" and t.is_int():
                # Euclidean: in [0, |d| - 1] (x % 0 == 0)
                zero = E.Const(t, 0)
                return Interval(0, simplify(E.max_(E.Intrinsic("abs", (d,), t) - 1, zero)))
        return r

    def _select(self, e, c, tv, fv):
        """A condition that is one symbolic value (a test of free names, such as
        the shift-inward ``256 <= out.extent.0``) picks one branch for all
        points: ``select`` the branches' bounds instead of joining them."""
        if (not c.is_numeric() and c.is_single_point() and tv.is_bounded()
                and fv.is_bounded() and _S.prove(c.lo) is None):
            t = e.type
            return Interval(*(simplify(E.select(c.lo, _fe(a, t), _fe(b, t)))
                              for a, b in ((tv.lo, fv.lo), (tv.hi, fv.hi))))
        return super()._select(e, c, tv, fv)

    def _cast(self, e, a):
        src, dst = e.value.type, e.type
        if src.is_float() and not a.is_numeric() and a.is_bounded() \
                and (dst.is_integral() or dst.is_float()):
            return Interval(E.cast(dst, _fe(a.lo, src)), E.cast(dst, _fe(a.hi, src)))
        return super()._cast(e, a)


def _fe(v, t):
    return v if isinstance(v, E.Expr) else E.Const(t, v)
