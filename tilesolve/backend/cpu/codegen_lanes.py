"""Lane values of vectorized loops: ramps, guarded ramps and their arithmetic.

Inside a vectorized loop of W lanes an integer value may be kept *symbolic*:

* :class:`Ramp` ``base + stride * k`` (k = 0..W-1; scalar base, constant stride): the
  loop variable and affine functions of it.  A Load/Store at a stride-1 ramp is one
  dense vector access.
* :class:`Guarded` ``(fast, cond, slow)``: the vector ``slow`` (already computed), which
  equals the ramp ``fast`` whenever the scalar ``cond`` holds.  ``clamp(ramp, lo, hi)``
  (what boundary conditions put in every index) is one: ``cond`` says that no lane is
  clamped.  Accesses branch on ``cond`` at run time: a dense access in the common case
  (the interior of the image), a gather only near the edges.  This is loop partitioning
  done per access, so it works whatever shape of loop nest lowering produces.
* :class:`Halves` ``q + (k + odd) // 2``: a stride-1 ramp divided by 2, what upsampling
  by two reads (``f[x / 2]``, ``f[(x + 1) / 2]``).  A Load there reads the W/2 (even
  ramp) or W/2 + 1 (odd) elements the lanes touch, densely, and duplicates them with a
  shuffle: no gather.

* :class:`Strided` ``base + stride * k`` with a run-time scalar ``stride``: a ramp times
  a uniform value, e.g. a vectorized variable indexing rows of a matrix
  (``m[r, x]`` vectorized over x).  A Load there is one scalar load per lane at an
  address computed in scalars (no vector of addresses to extract from, no gather).

Everything else is a scalar ``ir.Value`` (uniform across lanes) or a W-lane vector.
Arithmetic here is exact in wrapped integers: ``cond`` includes a check that the ramp
does not wrap around inside the vector.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

I32 = ir.IntType(32)


@dataclass(frozen=True)
class Ramp:
    """The lanes ``base + stride * k`` for k in [0, lanes): an integer vector, lazily."""

    base: ir.Value
    stride: int
    lanes: int


@dataclass(frozen=True)
class Guarded:
    """``slow`` (a vector), known to equal the ramp ``fast`` when ``cond`` (scalar i1)."""

    fast: Ramp
    cond: ir.Value
    slow: ir.Value


@dataclass(frozen=True)
class Halves:
    """The lanes ``q + (k + odd) // 2`` for k in [0, lanes): ``(ramp of stride 1) / 2``
    with ``q`` the first lane and ``odd`` (scalar i1) the parity of the ramp's base."""

    q: ir.Value
    odd: ir.Value
    lanes: int

    def picks(self, odd: bool) -> list:
        return [(k + odd) // 2 for k in range(self.lanes)]


@dataclass(frozen=True)
class Strided:
    """The lanes ``base + stride * k`` for k in [0, lanes), ``stride`` a scalar ir.Value."""

    base: ir.Value
    stride: ir.Value
    lanes: int


SYMBOLIC = (Ramp, Guarded, Halves, Strided)   # lane values kept symbolic (see vec())


def is_varying(v) -> bool:
    return isinstance(v, SYMBOLIC) or isinstance(v.type, ir.VectorType)


def is_vector_value(v) -> bool:
    return not isinstance(v, SYMBOLIC) and isinstance(v.type, ir.VectorType)


def wrap(v: int, bits: int) -> int:
    m = 1 << bits
    v &= m - 1
    return v - m if v >= (m >> 1) else v


class LaneEmitter:
    """Mixin: materialize lane values and do arithmetic that keeps them symbolic."""

    def vec(self, v) -> ir.Value:
        """``v`` as a W-lane vector (broadcast a scalar, expand a ramp)."""
        b = self.b
        if isinstance(v, Guarded):
            return v.slow
        if isinstance(v, Halves):
            vt = ir.VectorType(v.q.type, v.lanes)
            offs = b.select(v.odd, ir.Constant(vt, v.picks(True)), ir.Constant(vt, v.picks(False)))
            return b.add(self.vec(v.q), offs)
        if isinstance(v, Strided):
            vt = ir.VectorType(v.base.type, v.lanes)
            ks = ir.Constant(vt, list(range(v.lanes)))
            return b.add(self.vec(v.base), b.mul(self.vec(v.stride), ks))
        if isinstance(v, Ramp):
            vt = ir.VectorType(v.base.type, v.lanes)
            w = v.base.type.width
            offs = [ir.Constant(v.base.type, wrap(v.stride * k, w)) for k in range(v.lanes)]
            return b.add(self.vec(v.base), ir.Constant(vt, offs))
        if isinstance(v.type, ir.VectorType):
            return v
        vt = ir.VectorType(v.type, self.lanes)
        if isinstance(v, ir.Constant):
            return ir.Constant(vt, [v] * self.lanes)
        one = b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, self.lanes), [0] * self.lanes))

    def ramp_range(self, r: Ramp):
        """(smallest lane, largest lane, no-wrap condition) of a ramp, as scalars."""
        b = self.b
        last = b.add(r.base, ir.Constant(r.base.type, wrap(r.stride * (r.lanes - 1),
                                                             r.base.type.width)))
        if r.stride > 0:
            return r.base, last, b.icmp_signed(">=", last, r.base)
        return last, r.base, b.icmp_signed("<=", last, r.base)

    def lane_arith(self, op, t, a, b, nsw):
        """``a op b`` kept as a Ramp, Guarded or Halves when possible, else None."""
        if not t.is_integral() or not (isinstance(a, SYMBOLIC) or isinstance(b, SYMBOLIC)):
            return None
        if is_vector_value(a) or is_vector_value(b):
            return None
        if isinstance(a, Halves) or isinstance(b, Halves):
            return self._halves_arith(op, t, a, b, nsw)
        if op in ("min", "max"):
            return self._guarded_minmax(op, t, a, b)
        if isinstance(a, Guarded) or isinstance(b, Guarded):
            if isinstance(a, Strided) or isinstance(b, Strided):
                return None
            return self._guarded_arith(op, t, a, b, nsw)
        if not (isinstance(a, Strided) or isinstance(b, Strided)):
            r = self._ramp_arith(op, t, a, b, nsw)
            if r is not None or op != "mul":
                return r
        return self._strided_arith(op, a, b, nsw)

    def _strided_arith(self, op, a, b, nsw):
        """Sums of ramps, Strided and uniform values, and products of a ramp or Strided
        with a uniform value, as Strided (wrapped int arithmetic, lane by lane the same
        as the vector's); None for anything else."""
        flags = ("nsw",) if nsw else ()
        bld = self.b

        def parts(v):
            if isinstance(v, Strided):
                return v.base, v.stride
            if isinstance(v, Ramp):
                return v.base, ir.Constant(v.base.type, v.stride)
            return v, None
        (ab, sa), (bb, sb) = parts(a), parts(b)
        lanes = next(v.lanes for v in (a, b) if isinstance(v, (Ramp, Strided)))
        if op in ("add", "sub"):
            base = getattr(bld, op)(ab, bb, flags=flags)
            if sb is None:
                stride = sa
            elif sa is None:
                stride = sb if op == "add" else bld.neg(sb)
            else:
                stride = getattr(bld, op)(sa, sb)
        elif op == "mul" and (sa is None) != (sb is None):
            base = bld.mul(ab, bb, flags=flags)
            stride = bld.mul(sa, bb) if sb is None else bld.mul(ab, sb)
        else:
            return None
        return Strided(base, stride, lanes)

    def _ramp_arith(self, op, t, a, b, nsw):
        flags = ("nsw",) if nsw else ()
        lanes = a.lanes if isinstance(a, Ramp) else b.lanes
        ab, sa = (a.base, a.stride) if isinstance(a, Ramp) else (a, 0)
        bb, sb = (b.base, b.stride) if isinstance(b, Ramp) else (b, 0)
        if op == "add":
            base, stride = self.b.add(ab, bb, flags=flags), sa + sb
        elif op == "sub":
            base, stride = self.b.sub(ab, bb, flags=flags), sa - sb
        elif op == "mul" and (isinstance(bb, ir.Constant) and sb == 0
                              or isinstance(ab, ir.Constant) and sa == 0):
            c = bb.constant if sb == 0 else ab.constant
            base = self.b.mul(ab, bb, flags=flags)
            stride = (sa if sb == 0 else sb) * c
        else:
            return None
        stride = wrap(stride, t.bits)
        return base if stride == 0 else Ramp(base, stride, lanes)

    def _guarded_arith(self, op, t, a, b, nsw):
        fa = a.fast if isinstance(a, Guarded) else a
        fb = b.fast if isinstance(b, Guarded) else b
        fast = self._ramp_arith(op, t, fa, fb, nsw)
        if not isinstance(fast, Ramp):
            return None
        conds = [v.cond for v in (a, b) if isinstance(v, Guarded)]
        cond = conds[0] if len(conds) == 1 else self.b.and_(*conds)
        slow = self.binop_values(op, t, self.vec(a), self.vec(b), False)
        return Guarded(fast, cond, slow)

    def _guarded_minmax(self, op, t, a, b):
        """min/max of a (guarded) ramp and a uniform bound: the ramp itself whenever no
        lane reaches the bound."""
        if isinstance(a, (Ramp, Guarded)) and not is_varying(b):
            r, bound = a, b
        elif isinstance(b, (Ramp, Guarded)) and not is_varying(a):
            r, bound = b, a
        else:
            return None
        if not t.is_int():
            return None
        fast = r.fast if isinstance(r, Guarded) else r
        lo, hi, nowrap = self.ramp_range(fast)
        bld = self.b
        # min(r, bound) == r  iff every lane <= bound; max(r, bound) == r iff every lane >= bound
        ok = bld.icmp_signed("<=", hi, bound) if op == "min" else bld.icmp_signed(">=", lo, bound)
        cond = bld.and_(ok, nowrap)
        if isinstance(r, Guarded):
            cond = bld.and_(r.cond, cond)
        slow = self.binop_values(op, t, self.vec(a), self.vec(b), False)
        return Guarded(fast, cond, slow)

    def halve(self, t, r) -> "Halves | None":
        """``r / 2`` for a stride-1 Ramp ``r`` of int32 (Euclidean: floor), else None."""
        if not (isinstance(r, Ramp) and r.stride == 1 and t.is_int() and t.bits == 32):
            return None
        one = ir.Constant(r.base.type, 1)
        q = self.b.ashr(r.base, one)
        odd = self.b.trunc(self.b.and_(r.base, one), ir.IntType(1))
        return Halves(q, odd, r.lanes)

    def _halves_arith(self, op, t, a, b, nsw):
        """Halves plus or minus a uniform value stays Halves (the shift moves ``q``)."""
        flags = ("nsw",) if nsw else ()
        if op == "add" and isinstance(a, Halves) and not is_varying(b):
            return Halves(self.b.add(a.q, b, flags=flags), a.odd, a.lanes)
        if op == "add" and isinstance(b, Halves) and not is_varying(a):
            return Halves(self.b.add(b.q, a, flags=flags), b.odd, b.lanes)
        if op == "sub" and isinstance(a, Halves) and not is_varying(b):
            return Halves(self.b.sub(a.q, b, flags=flags), a.odd, a.lanes)
        return None
