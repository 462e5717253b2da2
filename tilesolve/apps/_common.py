"""Small helpers the app pipelines share: Halide idioms missing from the language.

Each helper builds plain Exprs from the language's own nodes, so the rest of
the compiler sees nothing new:

* ``lerp(a, b, w)``: Halide's float lerp, ``a * (1 - w) + b * w``.
* ``mux(c, values)``: ``values[c]``, the last value when ``c`` is past the end
  (Halide's ``mux``), as a chain of ``select``.
* ``absd(a, b)``: ``|a - b|`` without overflow for unsigned integers.
* ``avg_round_up(a, b)``: ``(a + b + 1) / 2`` computed in the wider type.
* ``pow2_int(e, max_exponent)``: ``1 << e`` for ``0 <= e <= max_exponent``
  (the language has no shifts), as a select chain.
* ``paper_or(sizes, paper)``: the sizes to use for estimates.
"""
from __future__ import annotations

from .. import model as M
from ..model import types as T


def lerp(a, b, w):
    """Halide's float ``lerp(a, b, w) = a * (1 - w) + b * w``."""
    w = M.as_expr(w)
    return a * (1.0 - w) + b * w


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
