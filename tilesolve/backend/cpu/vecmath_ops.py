"""Building blocks of the vector math functions (``vecmath.py``): splat constants of the
four lane types, polynomials, fused multiply-adds, the branch for rare lanes, and the
float64 ``2^t`` of ``tanh``.

A float32 vector of W lanes is widened to a float64 vector of W lanes where a function
needs more than 24 bits in the middle (the reduction of ``sin``/``cos``, ``tanh``): on
x86 that is two registers of the same width per value, and no C library.
"""
from __future__ import annotations

import math
import struct

from llvmlite import ir

F32 = ir.FloatType()
F64 = ir.DoubleType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)

MIN_NORMAL = 2.0 ** -126
ROUND_MAGIC = 1.5 * 2.0 ** 52      # t + M - M rounds a double |t| < 2^51 to an integer
MAGIC_BITS = struct.unpack("<q", struct.pack("<d", ROUND_MAGIC))[0]
# 2^r = sum (r ln2)^k / k!, |r| <= 1/2: through k = 10 the remainder is below 3e-13
EXP2_COEFFS = [math.log(2.0) ** k / math.factorial(k) for k in range(11)]


class Ops:
    """Constants and intrinsics for W-lane vectors of float32, float64, int32, int64."""

    def __init__(self, em, ty: ir.VectorType):
        self.em, self.b, self.n = em, em.b, ty.count
        self.ty = ir.VectorType(F32, self.n)
        self.dty = ir.VectorType(F64, self.n)
        self.ity = ir.VectorType(I32, self.n)
        self.qty = ir.VectorType(I64, self.n)

    # -- splats ------------------------------------------------------------------------
    def _splat(self, vty, v):
        return ir.Constant(vty, [ir.Constant(vty.element, v)] * self.n)

    def f(self, v):
        return self._splat(self.ty, v)

    def d(self, v):
        return self._splat(self.dty, v)

    def i(self, v):
        return self._splat(self.ity, v)

    def q(self, v):
        return self._splat(self.qty, v)

    def like(self, x, v):
        """A splat of ``v`` of ``x``'s type."""
        return self._splat(x.type, v)

    # -- intrinsics --------------------------------------------------------------------
    def call(self, name: str, *args):
        return self.b.call(self.em.intrinsic(name, args[0].type, len(args)), list(args))

    def floor(self, x):
        return self.call("llvm.floor", x)

    def fabs(self, x):
        return self.call("llvm.fabs", x)

    def copysign(self, mag, sign):
        return self.call("llvm.copysign", mag, sign)

    def fma(self, a, b, c):
        """``a b + c`` with one rounding (``llvm.fma``: one instruction where the target
        has FMA; the C library's ``fma`` where not, still exact but slow)."""
        return self.call("llvm.fma", a, b, c)

    def horner(self, x, coeffs):
        """``coeffs[0] + x (coeffs[1] + x (...))`` (``llvm.fmuladd``: fused where the
        target has FMA, a multiply and an add where not)."""
        acc = self.like(x, coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.call("llvm.fmuladd", acc, x, self.like(x, c))
        return acc

    # -- comparisons and selects ---------------------------------------------------------
    def lt(self, a, v):
        return self.b.fcmp_ordered("<", a, self.like(a, v))

    def gt(self, a, v):
        return self.b.fcmp_ordered(">", a, self.like(a, v))

    def eq(self, a, v):
        return self.b.fcmp_ordered("==", a, self.like(a, v))

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def sign_bit(self, x):
        """Lanes of float32 ``x`` whose sign bit is set (-0.0 and -NaN included)."""
        return self.b.icmp_signed("<", self.b.bitcast(x, self.ity), self.i(0))

    def is_int(self, y):
        """float32 lanes holding an integer (infinities included, NaN not)."""
        return self.b.fcmp_ordered("==", self.floor(y), y)

    def is_odd(self, y):
        """float32 lanes holding an odd integer (|y| >= 2^24 is even)."""
        half = self.b.fmul(y, self.f(0.5))
        return self.b.and_(self.is_int(y), self.b.fcmp_unordered("!=", self.floor(half), half))

    def pow2(self, n):
        """float32 ``2^n`` for int32 lanes ``n`` in [-126, 127]."""
        return self.b.bitcast(self.b.shl(self.b.add(n, self.i(127)), self.i(23)), self.ty)

    def ldexp(self, p, n):
        """float32 ``p 2^n`` for int32 lanes ``n`` in [-252, 254], as two factors
        ``2^(n >> 1)`` and ``2^(n - (n >> 1))``: one rounding, so that denormal results
        and overflow come out right for ``p`` near 1."""
        b = self.b
        n1 = b.ashr(n, self.i(1))
        return b.fmul(b.fmul(p, self.pow2(n1)), self.pow2(b.sub(n, n1)))

    def any_lane(self, mask):
        """An i1: whether some lane of the i1 vector ``mask`` is set."""
        n = ir.IntType(self.n)
        return self.b.icmp_unsigned("!=", self.b.bitcast(mask, n), ir.Constant(n, 0))

    def unless_rare(self, rare, fast, slow):
        """``fast``, or ``slow()`` (emitted in a branch) where some lane of ``rare`` is
        set: the work of ``slow`` is paid only by vectors that need it."""
        b = self.b
        pre = b.block
        with b.if_then(self.any_lane(rare), likely=False):
            patched = slow()
            slow_bb = b.block
        res = b.phi(fast.type)
        res.add_incoming(fast, pre)
        res.add_incoming(patched, slow_bb)
        return res

    # -- float64 --------------------------------------------------------------------------
    def exp2_d(self, t):
        """float64 ``2^t`` for float64 lanes ``t`` in [-1000, 1000] (NaN in, NaN out):
        ``t = k + r``, ``|r| <= 1/2``, ``2^r`` by its series, ``2^k`` from exponent bits.
        Relative error below 4e-13."""
        b = self.b
        kk = b.fadd(t, self.d(ROUND_MAGIC))            # k in the low mantissa bits
        r = b.fsub(t, b.fsub(kk, self.d(ROUND_MAGIC)))  # exact
        p = self.horner(r, EXP2_COEFFS)
        k = b.sub(b.bitcast(kk, self.qty), self.q(MAGIC_BITS))
        scale = b.bitcast(b.shl(b.add(k, self.q(1023)), self.q(52)), self.dty)
        return b.fmul(p, scale)
