"""float32 vector ``exp`` and ``log`` (see ``vecmath.py``).

``exp(x)``: ``n = round(x / ln 2)``, ``r = x - n ln 2`` (in two parts, so that ``r`` is
exact to float32), ``|r| <= ln 2 / 2``; ``e^r`` by its Taylor series to degree 7 (the
remainder is below 6e-9 relative); then ``2^n`` applied as two factors ``2^(n >> 1)`` and
``2^(n - (n >> 1))`` built from exponent bits, so that results down to the denormals and
up to overflow come out right.

``log(x)``: ``x = m 2^e`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (denormal inputs scaled
by ``2^23`` first); ``log m = 2 atanh(s)``, ``s = (m - 1) / (m + 1)``, ``|s| < 0.172``, by
its odd series to ``s^9`` (remainder below 3e-9 relative); plus ``e ln 2`` in two parts.
"""
from __future__ import annotations

import math

from .vecmath_ops import MIN_NORMAL, Ops

LN2_HI = 0.693359375                        # few mantissa bits: n * LN2_HI is exact
LN2_LO = math.log(2.0) - LN2_HI
EXP_LO, EXP_HI = -104.0, 89.0               # beyond these exp is 0 or inf in float32


def emit_exp(em, x):
    o, b = Ops(em, x.type), em.b
    nan = o.isnan(x)
    xs = b.select(nan, o.f(0.0), x)
    xs = b.select(o.lt(xs, EXP_LO), o.f(EXP_LO), xs)
    xs = b.select(o.gt(xs, EXP_HI), o.f(EXP_HI), xs)
    nf = o.floor(b.fadd(b.fmul(xs, o.f(1.0 / math.log(2.0))), o.f(0.5)))
    r = b.fsub(xs, b.fmul(nf, o.f(LN2_HI)))
    r = b.fsub(r, b.fmul(nf, o.f(LN2_LO)))
    p = o.horner(r, [1.0 / math.factorial(k) for k in range(8)])
    res = o.ldexp(p, b.fptosi(nf, o.ity))          # n in [-150, 128]
    return b.select(nan, x, res)


def reduce_log(o, ax):
    """``ax = m 2^e`` for float32 lanes ``ax >= 0``: (``m - 1`` in float32, exact, with
    ``m`` in ``[sqrt(1/2), sqrt(2))``; ``e`` as int32).  Denormals are scaled by 2^23
    first; 0, inf and NaN give meaningless lanes for the caller to replace."""
    b = o.b
    small = o.lt(ax, MIN_NORMAL)
    xs = b.select(small, b.fmul(ax, o.f(2.0 ** 23)), ax)
    bits = b.bitcast(xs, o.ity)
    e = b.sub(b.and_(b.lshr(bits, o.i(23)), o.i(0xFF)),
              b.select(small, o.i(127 + 23), o.i(127)))
    m = b.bitcast(b.or_(b.and_(bits, o.i(0x007FFFFF)), o.i(0x3F800000)), o.ty)   # [1, 2)
    big = o.gt(m, math.sqrt(2.0))
    m = b.select(big, b.fmul(m, o.f(0.5)), m)
    return b.fsub(m, o.f(1.0)), b.add(e, b.zext(big, o.ity))


def emit_log(em, x):
    o, b = Ops(em, x.type), em.b
    f, e = reduce_log(o, x)
    s = b.fdiv(f, b.fadd(f, o.f(2.0)))
    z = b.fmul(s, s)
    series = b.fmul(b.fmul(s, o.f(2.0)), o.horner(z, [1.0, 1 / 3, 1 / 5, 1 / 7, 1 / 9]))
    ef = b.sitofp(e, o.ty)
    res = b.fadd(b.fmul(ef, o.f(LN2_HI)), b.fadd(series, b.fmul(ef, o.f(LN2_LO))))
    res = b.select(o.eq(x, math.inf), o.f(math.inf), res)
    res = b.select(o.eq(x, 0.0), o.f(-math.inf), res)
    bad = b.or_(o.lt(x, 0.0), o.isnan(x))
    return b.select(bad, o.f(math.nan), res)
