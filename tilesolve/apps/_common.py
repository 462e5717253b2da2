"""Small helpers the app pipelines share: Halide idioms missing from the language.

Each helper builds plain Exprs from the language's own nodes, so the rest of
the compiler sees nothing new:

* ``mux(c, values)``: ``values[c]``, the last value when ``c`` is past the end or
  negative, as a chain of ``==`` selects (the language's ``mux`` clamps the index).
* ``absd(a, b)``: ``|a - b|`` in the operands' own type (the language's ``absd`` gives
  signed operands' difference in the unsigned type, as Halide does).
* ``abs_same_type(e)``: ``|e|`` in the type of ``e``.
* ``avg_round_up(a, b)``: ``(a + b + 1) / 2`` computed in the wider type.
* ``pow2_int(e, max_exponent)``: ``1 << e`` for ``0 <= e <= max_exponent``
  (the language has no shifts), as a select chain.
* ``paper_or(sizes, paper)``: the sizes to use for estimates.
* ``random_float(args, tag)``: Halide's hash-based random numbers, built from
  uint32 multiply, add, ``/`` and ``%``.
"""
from __future__ import annotations

from .. import model as M
from ..model import expr as E
from ..model import types as T


def abs_same_type(e):
    """``|e|`` in the type of ``e`` (wrapping at a signed minimum), the form the apps
    were tuned with; the language's ``abs`` gives Halide's unsigned result."""
    e = M.as_expr(e)
    return E.Intrinsic("abs", (e,), e.type)


def mux(c, values):
    """``values[c]`` for an integer Expr ``c``; the last value for larger ``c``."""
    values = list(values)
    out = values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = M.select(c == i, values[i], out)
    return out


def absd(a, b):
    """Absolute difference ``|a - b|`` in the operands' type (exact for unsigned)."""
    return M.select(a > b, a - b, b - a)


_WIDER = {T.uint8: T.uint16, T.uint16: T.uint32, T.int8: T.int16, T.int16: T.int32}


def avg_round_up(a, b):
    """``(a + b + 1) / 2`` computed in the type twice as wide, cast back."""
    a, b = M.as_expr(a), M.as_expr(b)
    wide = _WIDER[a.type]
    return M.cast(a.type, (M.cast(wide, a) + M.cast(wide, b) + 1) / 2)


def pow2_int(e, max_exponent: int):
    """``1 << e`` (int32) for ``e`` in ``[0, max_exponent]``; 0 for ``e < 0``."""
    out = M.as_expr(0)
    for k in range(max_exponent, -1, -1):
        out = M.select(e == k, 1 << k, out)
    return out


def paper_or(sizes, paper):
    """``sizes`` as a list, or the paper's sizes when ``sizes`` is None."""
    return list(paper if sizes is None else sizes)


# Halide's random number generator (src/Random.cpp): a quadratic permutation
# polynomial of uint32, applied once per argument.
_C0, _C1, _C2 = 576942909, 1121052041, 1040796640


def _rng32(u):
    return (_C2 * u + _C1) * u + _C0


def random_float(args, tag: int):
    """Halide's ``random_float()`` in a Func over ``args`` (its pure Vars, innermost last).

    Halide hashes the Func's free Vars (in reverse order) and a per-call tag;
    this builds the same hash.  Halide's final ``r ^ (r >> 16)`` and the
    float reinterpretation use bit operations the language lacks; they are
    computed exactly with ``/``, ``%`` and selects: the result is
    ``((r ^ (r >> 16)) >> 9) / 2^23``, i.e. ``hi * 2^7 + (bits 9..15 of lo ^ hi)``.
    """
    r = _rng32(M.cast(T.uint32, args[0]))
    for a in list(args[1:]) + [tag]:
        r = _rng32(r + M.cast(T.uint32, M.as_expr(a, T.uint32)))
    hi, lo = r / 65536, r % 65536
    low_bits = M.as_expr(0, T.uint32)
    for i in range(7):
        b_lo = (lo / (1 << (9 + i))) % 2
        b_hi = (hi / (1 << (9 + i))) % 2
        low_bits = low_bits + M.select(b_lo != b_hi, M.cast(T.uint32, 1 << i), 0)
    m = hi * 128 + low_bits
    return M.clamp(M.cast(T.float32, m) / float(1 << 23), 0.0, 1.0)
