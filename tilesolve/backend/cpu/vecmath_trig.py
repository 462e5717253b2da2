"""float32 vector ``sin``, ``cos``, ``tan``, ``atan`` and ``atan2`` (see ``vecmath.py``).

``sin``, ``cos``, ``tan``: Cody-Waite reduction in float64, ``x = k pi/2 + r``, with
``pi/2 = P1 + P2 + P3`` (P1 and P2 of 28 significant bits, so that ``k P1`` and ``k P2``
are exact for ``|k| < 2^25``): ``r`` is then accurate to about 2^-53 relative for every
float32 ``|x| < 2^25`` (TRIG_BOUND), whose nearest multiples of pi/2 are never closer
than about 2^-30.  ``r`` is rounded to float32 and ``sin r`` (Taylor to ``r^9``), ``cos
r`` (to ``r^10``) evaluated in float32, ``|r| <= pi/4``; ``k mod 4`` picks the one and
the sign (``tan``: their quotient).  Lanes with ``|x| >= 2^25`` (and inf) take the C
library, one call a lane, in a branch that runs only when some lane needs it.  Below
``2^-12`` the result is ``x`` itself (``sin``, ``tan``), which keeps -0.0.

``atan``: ``|x|`` reduced to ``-1/3 <= t <= 1/2`` with one division: ``t = |x|`` up to
1/2, ``(|x| - 1) / (|x| + 1)`` (plus ``pi/4``; ``|x| - 1`` is exact) up to
``tan(3pi/8)``, else ``1 / |x|`` (``pi/2`` minus it); ``atan t = t + t u Q(u)``,
``u = t^2``, ``Q`` a degree-5 least-squares fit of ``(atan(t) / t - 1) / u`` on
``[0, 1/4]`` at Chebyshev nodes (relative error below 3.6e-9 with its float32
coefficients).  ``atan2(y, x)``: the same on
``min(|x|, |y|) / max(|x|, |y|)``, then ``pi/2 - a`` where ``|y| > |x|``, ``pi - a``
where ``x``'s sign bit is set, the sign of ``y``; zeros and infinities give the C99
results (``atan2(±0, -0) = ±pi``, ``atan2(±inf, -inf) = ±3pi/4``, ...).
"""
from __future__ import annotations

import math

from llvmlite import ir

from .vecmath_ops import F32, I32, ROUND_MAGIC, Ops

TRIG_BOUND = 2.0 ** 25
TINY = 2.0 ** -12
P1, P2, P3 = 1.570796325802803, 9.920935739593517e-10, 5.721188726109832e-18
SIN_SERIES = [(-1) ** k / math.factorial(2 * k + 1) for k in range(1, 5)]   # in r^2
COS_SERIES = [(-1) ** k / math.factorial(2 * k) for k in range(6)]
ATAN_Q = [-0.33333325386047363, 0.19999468326568604, -0.14271698892116547,
          0.10938054323196411, -0.07973679900169373, 0.03858529031276703]
TAN_3PI_8 = 2.4142136573791504
PI = (3.1415927410125732, -8.742277657347586e-08)          # float32 hi + lo
PI_2 = (1.5707963705062866, -4.371138828673793e-08)
PI_4 = (0.7853981852531433, -2.1855694143368964e-08)


def _sin_cos_parts(o, x):
    """(float32 sin r, float32 cos r, int32 k mod 4) for ``x = k pi/2 + r``."""
    b = o.b
    xd = b.fpext(x, o.dty)
    kk = b.fadd(b.fmul(xd, o.d(2.0 / math.pi)), o.d(ROUND_MAGIC))
    kd = b.fsub(kk, o.d(ROUND_MAGIC))
    r = xd
    for p in (P1, P2, P3):
        r = b.fsub(r, b.fmul(kd, o.d(p)))
    q = b.and_(b.trunc(b.bitcast(kk, o.qty), o.ity), o.i(3))
    rf = b.fptrunc(r, o.ty)
    z = b.fmul(rf, rf)
    sin_r = b.fadd(rf, b.fmul(b.fmul(rf, z), o.horner(z, SIN_SERIES)))
    return sin_r, o.horner(z, COS_SERIES), q


def _with_libm(o, x, fast, scalar_fn):
    """``fast``, with the lanes where ``|x| >= TRIG_BOUND`` (or inf) from ``scalar_fn``,
    one call a lane, in a branch taken only when there is such a lane."""
    b = o.b
    huge = b.fcmp_ordered(">=", o.fabs(x), o.f(TRIG_BOUND))

    def slow():
        out = fast
        for k in range(o.n):
            idx = ir.Constant(I32, k)
            out = b.insert_element(out, b.call(scalar_fn, [b.extract_element(x, idx)]), idx)
        return b.select(huge, out, fast)
    return o.unless_rare(huge, fast, slow)


def _sin_or_cos(em, x, cos: bool):
    o, b = Ops(em, x.type), em.b
    sin_r, cos_r, q = _sin_cos_parts(o, x)
    if cos:
        q = b.add(q, o.i(1))
    use_cos = b.icmp_unsigned("!=", b.and_(q, o.i(1)), o.i(0))
    res = b.select(use_cos, cos_r, sin_r)
    res = b.select(b.icmp_unsigned("!=", b.and_(q, o.i(2)), o.i(0)), b.fneg(res), res)
    if not cos:
        res = b.select(o.lt(o.fabs(x), TINY), x, res)
    name = "llvm.cos" if cos else "llvm.sin"
    return _with_libm(o, x, res, em.intrinsic(name, F32))


def emit_sin(em, x):
    return _sin_or_cos(em, x, cos=False)


def emit_cos(em, x):
    return _sin_or_cos(em, x, cos=True)


def emit_tan(em, x):
    o, b = Ops(em, x.type), em.b
    sin_r, cos_r, q = _sin_cos_parts(o, x)
    odd = b.icmp_unsigned("!=", b.and_(q, o.i(1)), o.i(0))
    res = b.fdiv(b.select(odd, b.fneg(cos_r), sin_r), b.select(odd, sin_r, cos_r))
    res = b.select(o.lt(o.fabs(x), TINY), x, res)
    return _with_libm(o, x, res, em.declare("tanf", F32, [F32]))


def _atan_reduced(o, num, den):
    """float32 ``atan(num / den)`` for ``0 <= num / den <= tan(3 pi/8)``."""
    b = o.b
    mid = b.fcmp_ordered(">", num, b.fmul(den, o.f(0.5)))     # then num - den is exact
    t = b.fdiv(b.select(mid, b.fsub(num, den), num), b.select(mid, b.fadd(num, den), den))
    u = b.fmul(t, t)
    p = b.fadd(t, b.fmul(b.fmul(t, u), o.horner(u, ATAN_Q)))
    return b.select(mid, _plus(o, PI_4, p), p)


def _plus(o, c, v):
    """``c + v`` for a float32 constant in two parts."""
    return o.b.fadd(o.f(c[0]), o.b.fadd(v, o.f(c[1])))


def _minus(o, c, v):
    """``c - v`` for a float32 constant in two parts."""
    return o.b.fadd(o.f(c[0]), o.b.fsub(o.f(c[1]), v))


def emit_atan(em, x):
    o, b = Ops(em, x.type), em.b
    a = o.fabs(x)
    far = o.gt(a, TAN_3PI_8)
    res = _atan_reduced(o, b.select(far, o.f(1.0), a), b.select(far, a, o.f(1.0)))
    res = b.select(far, _minus(o, PI_2, res), res)
    return o.copysign(res, x)                    # NaN stays NaN


def emit_atan2(em, y, x):
    o, b = Ops(em, x.type), em.b
    ay, ax = o.fabs(y), o.fabs(x)
    swap = b.fcmp_ordered(">", ay, ax)
    num, den = b.select(swap, ax, ay), b.select(swap, ay, ax)
    both_inf = b.and_(o.eq(ay, math.inf), o.eq(ax, math.inf))
    num = b.select(both_inf, o.f(1.0), num)
    den = b.select(b.or_(both_inf, o.eq(den, 0.0)), o.f(1.0), den)
    big = o.gt(den, 2.0 ** 125)                   # keeps num + den finite
    num = b.select(big, b.fmul(num, o.f(0.25)), num)
    den = b.select(big, b.fmul(den, o.f(0.25)), den)
    res = _atan_reduced(o, num, den)
    res = b.select(swap, _minus(o, PI_2, res), res)
    res = b.select(o.sign_bit(x), _minus(o, PI, res), res)
    res = o.copysign(res, y)
    return b.select(b.or_(o.isnan(x), o.isnan(y)), o.f(math.nan), res)
