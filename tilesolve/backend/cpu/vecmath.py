"""Vector ``exp`` and ``log`` for float32, in LLVM IR (no C library on the hot path).

Without a vector math library, LLVM lowers ``llvm.exp.v16f32`` to sixteen calls
of the C library's ``expf``, one lane at a time; a vectorized stencil that calls
``exp`` or ``log`` then runs about five times slower than the same schedule in
Halide, whose runtime has its own vectorizable versions.  These are ours: range
reduction and a polynomial, a few dozen vector instructions, accurate to a few
units in the last place over the whole float32 range, with IEEE special values
(``exp``: inf, 0, denormal results, NaN; ``log``: 0, negatives, denormal inputs,
inf, NaN).  ``tests/test_vecmath.py`` compares them with numpy in float64.

``exp(x)``: ``n = round(x / ln 2)``, ``r = x - n ln 2`` (in two parts, so that
``r`` is exact to float32), ``|r| <= ln 2 / 2``; ``e^r`` by its Taylor series to
degree 7 (the remainder is below 6e-9 relative); then ``2^n`` applied as two
factors ``2^(n >> 1)`` and ``2^(n - (n >> 1))`` built from exponent bits, so
that results down to the denormals and up to overflow come out right.

``log(x)``: ``x = m 2^e`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (denormal inputs
scaled by ``2^23`` first); ``log m = 2 atanh(s)``, ``s = (m - 1) / (m + 1)``,
``|s| < 0.172``, by its odd series to ``s^9`` (remainder below 3e-9 relative);
plus ``e ln 2`` in two parts.

Only float32 vectors take this path; scalars and float64 keep the LLVM
intrinsics (one C library call each, which is what they would cost anyway).
"""
from __future__ import annotations

import math

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)

LN2_HI = 0.693359375                        # few mantissa bits: n * LN2_HI is exact
LN2_LO = math.log(2.0) - LN2_HI
EXP_LO, EXP_HI = -104.0, 89.0               # beyond these exp is 0 or inf in float32
MIN_NORMAL = 2.0 ** -126


def applies(name: str, ty: ir.Type) -> bool:
    """Whether ``name`` on values of ``ty`` is emitted here."""
    return (name in ("exp", "log") and isinstance(ty, ir.VectorType)
            and isinstance(ty.element, ir.FloatType))


class _Ops:
    """Splat constants and the few intrinsics used, for one vector type."""

    def __init__(self, em, ty: ir.VectorType):
        self.em, self.b, self.ty = em, em.b, ty
        self.ity = ir.VectorType(I32, ty.count)

    def f(self, v):
        return ir.Constant(self.ty, [ir.Constant(F32, v)] * self.ty.count)

    def i(self, v):
        return ir.Constant(self.ity, [ir.Constant(I32, v)] * self.ty.count)

    def floor(self, x):
        return self.b.call(self.em.intrinsic("llvm.floor", self.ty), [x])

    def horner(self, x, coeffs):
        """``coeffs[0] + x (coeffs[1] + x (...))``."""
        b = self.b
        acc = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = b.fadd(b.fmul(acc, x), self.f(c))
        return acc

    def pow2(self, n):
        """``2^n`` for integer lanes ``n`` in [-126, 127]."""
        return self.b.bitcast(self.b.shl(self.b.add(n, self.i(127)), self.i(23)), self.ty)


def emit_exp(em, x: ir.Value) -> ir.Value:
    o, b = _Ops(em, x.type), em.b
    nan = b.fcmp_unordered("uno", x, x)
    xs = b.select(nan, o.f(0.0), x)
    xs = b.select(b.fcmp_ordered("<", xs, o.f(EXP_LO)), o.f(EXP_LO), xs)
    xs = b.select(b.fcmp_ordered(">", xs, o.f(EXP_HI)), o.f(EXP_HI), xs)
    nf = o.floor(b.fadd(b.fmul(xs, o.f(1.0 / math.log(2.0))), o.f(0.5)))
    r = b.fsub(xs, b.fmul(nf, o.f(LN2_HI)))
    r = b.fsub(r, b.fmul(nf, o.f(LN2_LO)))
    p = o.horner(r, [1.0 / math.factorial(k) for k in range(8)])
    n = b.fptosi(nf, o.ity)                         # in [-150, 128]
    n1 = b.ashr(n, o.i(1))
    res = b.fmul(b.fmul(p, o.pow2(n1)), o.pow2(b.sub(n, n1)))
    return b.select(nan, x, res)


def emit_log(em, x: ir.Value) -> ir.Value:
    o, b = _Ops(em, x.type), em.b
    small = b.fcmp_ordered("<", x, o.f(MIN_NORMAL))
    xs = b.select(small, b.fmul(x, o.f(2.0 ** 23)), x)
    bits = b.bitcast(xs, o.ity)
    e = b.sub(b.and_(b.lshr(bits, o.i(23)), o.i(0xFF)), b.select(small, o.i(127 + 23), o.i(127)))
    m = b.bitcast(b.or_(b.and_(bits, o.i(0x007FFFFF)), o.i(0x3F800000)), x.type)   # [1, 2)
    big = b.fcmp_ordered(">", m, o.f(math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, o.f(0.5)), m)
    e = b.add(e, b.zext(big, o.ity))
    f = b.fsub(m, o.f(1.0))
    s = b.fdiv(f, b.fadd(f, o.f(2.0)))
    z = b.fmul(s, s)
    series = b.fmul(b.fmul(s, o.f(2.0)), o.horner(z, [1.0, 1 / 3, 1 / 5, 1 / 7, 1 / 9]))
    ef = b.sitofp(e, x.type)
    res = b.fadd(b.fmul(ef, o.f(LN2_HI)), b.fadd(series, b.fmul(ef, o.f(LN2_LO))))
    res = b.select(b.fcmp_ordered("==", x, o.f(math.inf)), o.f(math.inf), res)
    res = b.select(b.fcmp_ordered("==", x, o.f(0.0)), o.f(-math.inf), res)
    bad = b.or_(b.fcmp_ordered("<", x, o.f(0.0)), b.fcmp_unordered("uno", x, x))
    return b.select(bad, o.f(math.nan), res)
