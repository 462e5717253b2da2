"""float32 vector ``pow`` (float32 pairs, fused multiply-adds) and ``tanh`` (through
float64); see ``vecmath.py``.

``pow(x, y) = 2^t``, ``t = y log2 |x|``.  ``t`` is needed to about 2^-30 absolute (an
error d in ``t`` is ``d ln 2`` relative in the result), more than float32 holds, so
``log2 |x|`` and ``t`` are float32 pairs ``hi + lo`` (``_log2_hi_lo``), their products
made exact by ``llvm.fma``:

* ``|x| = m 2^e`` (``vecmath_explog.reduce_log``), ``f = m - 1`` exact,
  ``m`` in ``[sqrt(1/2), sqrt(2))``;
* ``ln m = 2 atanh(s)``, ``s = f / (f + 2)``, ``|s| < 0.172``: ``s`` as ``sh + sl``
  (``sl`` from the exact residual ``f - sh (f + 2)``), ``2 sh`` then the series' tail
  ``2 s^3/3 + ... + 2 s^11/11`` (1% of the sum) in float32, ``sl`` times the derivative;
* times ``1 / ln 2`` in two parts, plus ``e`` (exact two-sum), times ``y`` (fused);
* ``t = k + r``, ``k = round(t)``, ``|r| <= 1/2``; ``2^r`` by a degree-7 fit, ``2^k``
  from exponent bits in two factors (denormal results and overflow by one rounding).

Measured (``tests/test_vecmath.py``): within 0.95 ulp where ``|t|`` is below ~100
(every sRGB or gamma curve, any base in [0, 255] to a power in [-4, 4]), 2.3 ulps up to
the overflow, 4 ulps of 2^-149 for denormal results.  Lanes with ``x`` not positive and
finite or ``y`` not finite take the C99 special cases in a branch of their own
(``_special_cases``): ``pow(x, ±0) = 1`` and ``pow(1, y) = 1`` even for NaN,
``pow(-1, ±inf) = 1``, a negative finite ``x`` to a non-integer ``y`` is NaN, the sign
of a negative ``x`` (or -0) to an odd integer survives, 0 and inf as bases and
exponents give 0 or inf.  Where the target has no FMA, ``llvm.fma`` is the C library's
``fma``: exact still, and slow.

``tanh(x) = (e - 1) / (e + 1)``, ``e = 2^(2 |x| / ln 2)`` in float64 for ``|x| >= 1/16``
(clamped at 20, where it is 1 to float64), and the Taylor series to ``x^7`` below (its
remainder is below 2e-11 relative), the sign copied from ``x``.
"""
from __future__ import annotations

import math

from .vecmath_explog import reduce_log
from .vecmath_ops import Ops

LOG_TAIL = [2.0 / (2 * k + 1) for k in range(1, 6)]     # (ln m - 2s) / s^3, in s^2
# 2^r on [-1/2, 1/2]: a degree-7 least-squares fit at Chebyshev nodes (relative error
# below 2.8e-9 with these float32 coefficients)
EXP2_FIT = [1.0, 0.6931471824645996, 0.24022650718688965, 0.055504102259874344,
            0.00961802713572979, 0.0013333950191736221, 0.00015469235950149596,
            1.5195577361737378e-05]
T_LIMIT = 200.0            # |y log2 x| beyond this is 0 or inf in float32 either way
INV_LN2 = (1.4426950216293335, 1.925963033500011e-08)    # 1 / ln 2, float32 hi + lo
ROUND_MAGIC_F32 = 1.5 * 2.0 ** 23                         # t + M - M rounds |t| < 2^22
MAGIC_BITS_F32 = 0x4B400000
TANH_SMALL = 1.0 / 16
TANH_SERIES = [1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315]                    # tanh x / x, in x^2


def _log2_hi_lo(o, ax):
    """``log2 ax`` as a float32 pair ``hi + lo`` for finite ``ax > 0``, the error of the
    sum about 2^-32 relative (``lo`` is not below an ulp of ``hi``: it carries the
    series' tail, up to 1% of the sum)."""
    b = o.b
    f, e = reduce_log(o, ax)                              # m - 1, exact
    sh = b.fdiv(f, b.fadd(f, o.f(2.0)))                   # s = f / (f + 2), rounded
    # f - sh (f + 2) = (f - 2 sh) - sh f: the first difference is exact (Sterbenz), the
    # product fused; and 1 / (f + 2) = (1 - s) / 2
    rho = o.fma(b.fneg(sh), f, b.fsub(f, b.fmul(sh, o.f(2.0))))
    sl = b.fmul(b.fmul(rho, b.fsub(o.f(1.0), sh)), o.f(0.5))
    z = b.fmul(sh, sh)
    tail = b.fmul(b.fmul(sh, z), o.horner(z, LOG_TAIL))  # of sh: s^3 terms on
    # ln m = 2 sh + tail(sh) + sl d(2s + tail)/ds, the derivative 2 / (1 - s^2) to 2 (1 + z)
    sl = o.fma(sl, z, sl)
    a = b.fmul(sh, o.f(2.0))
    p_hi = b.fmul(a, o.f(INV_LN2[0]))
    p_lo = b.fadd(o.fma(a, o.f(INV_LN2[0]), b.fneg(p_hi)),
                  b.fadd(b.fmul(a, o.f(INV_LN2[1])),
                         b.fmul(b.fadd(b.fmul(sl, o.f(2.0)), tail), o.f(INV_LN2[0]))))
    ef = b.sitofp(e, o.ty)                                # |ef| >= 1 > |p_hi|, or 0
    hi = b.fadd(ef, p_hi)
    lo = b.fadd(b.fsub(p_hi, b.fsub(hi, ef)), p_lo)
    return hi, lo


def emit_pow(em, x, y):
    o, b = Ops(em, x.type), em.b
    ax = o.fabs(x)
    hi, lo = _log2_hi_lo(o, ax)
    t = b.fmul(y, hi)
    t_lo = b.fadd(o.fma(y, hi, b.fneg(t)), b.fmul(y, lo))
    out = o.gt(o.fabs(t), T_LIMIT)                        # 0 or inf in float32 either way
    t = b.select(out, o.copysign(o.f(T_LIMIT), t), t)
    t_lo = b.select(out, o.f(0.0), t_lo)
    # k = round(t + t_lo) in the low bits of kk (t_lo holds log2's tail: up to 1% of t)
    kk = b.fadd(b.fadd(t, t_lo), o.f(ROUND_MAGIC_F32))
    r = b.fadd(b.fsub(t, b.fsub(kk, o.f(ROUND_MAGIC_F32))), t_lo)     # t - k is exact
    k = b.sub(b.bitcast(kk, o.ity), o.i(MAGIC_BITS_F32))
    res = o.ldexp(o.horner(r, EXP2_FIT), k)
    # x > 0 finite and y finite: res is the result (x = 1 and y = 0 give exactly 1)
    plain = b.and_(b.and_(o.gt(x, 0.0), o.lt(x, math.inf)), o.lt(o.fabs(y), math.inf))
    return o.unless_rare(b.not_(plain), res, lambda: _special_cases(o, x, y, ax, res))


def _special_cases(o, x, y, ax, res):
    """``res`` with the C99 results where ``x`` is not positive and finite or ``y`` is
    not finite."""
    b = o.b
    # |x| = 0 or inf: 0 or inf by the sign of y (log2 ax = -inf or inf)
    edge = b.or_(o.eq(ax, 0.0), o.eq(ax, math.inf))
    big = b.xor(o.eq(ax, math.inf), o.lt(y, 0.0))
    res = b.select(edge, b.select(big, o.f(math.inf), o.f(0.0)), res)
    # |y| = inf: 0 or inf by |x| <> 1 and the sign of y
    res = b.select(o.eq(o.fabs(y), math.inf),
                   b.select(b.xor(o.gt(ax, 1.0), o.lt(y, 0.0)), o.f(math.inf), o.f(0.0)), res)
    res = b.select(b.and_(o.sign_bit(x), o.is_odd(y)), b.fneg(res), res)
    neg_finite = b.and_(o.lt(x, 0.0), o.gt(x, -math.inf))
    res = b.select(b.and_(neg_finite, b.not_(o.is_int(y))), o.f(math.nan), res)
    res = b.select(b.or_(o.isnan(x), o.isnan(y)), o.f(math.nan), res)
    one = b.or_(b.and_(o.eq(ax, 1.0), o.eq(o.fabs(y), math.inf)),
                b.or_(o.eq(x, 1.0), o.eq(y, 0.0)))
    return b.select(one, o.f(1.0), res)


def emit_tanh(em, x):
    o, b = Ops(em, x.type), em.b
    ad = b.fpext(o.fabs(x), o.dty)
    ad = b.select(o.gt(ad, 20.0), o.d(20.0), ad)
    ex = o.exp2_d(b.fmul(ad, o.d(2.0 / math.log(2.0))))
    big = b.fdiv(b.fsub(ex, o.d(1.0)), b.fadd(ex, o.d(1.0)))
    small = b.fmul(ad, o.horner(b.fmul(ad, ad), TANH_SERIES))
    res = b.fptrunc(b.select(o.lt(ad, TANH_SMALL), small, big), o.ty)
    return o.copysign(res, x)          # NaN stays NaN: every step above carries it
