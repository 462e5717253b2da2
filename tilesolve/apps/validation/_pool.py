"""3x3 pooling with stride 2 over uint8 (after Halide's ``apps/hannk``), channels
innermost, shared by ``avg_pool`` and ``max_pool``.

Output pixel (x, y) covers input columns ``2x - 1 + r.x`` and rows ``2y - 1 + r.y``,
``r`` in ``[0, 3)^2``.  The input is not padded: an RDom ``where`` predicate skips the
taps outside it (``inside``), and the average divides by the taps that remain.  The
input is ``2 w - 1`` by ``2 h - 1`` for a ``w`` by ``h`` output, so both edges of each
axis have skipped taps.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._npref import rng


PAPER_SIZE = [64, 112, 112]
SMALL_SIZE = [8, 17, 13]


def window():
    """The Vars ``c, x, y``, the uint8 ``input`` and the input read at a tap of an RDom
    over the taps inside it."""
    c, x, y = ts.Var("c"), ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.uint8, 3, "input")
    r = ts.RDom((0, 3), (0, 3), name="r")
    ix, iy = 2 * x - 1 + r.x, 2 * y - 1 + r.y
    w, h = inp.extent(1), inp.extent(2)
    r.where((ix >= 0) & (ix < w) & (iy >= 0) & (iy < h))
    return c, x, y, inp, inp[c, ts.clamp(ix, 0, w - 1), ts.clamp(iy, 0, h - 1)]


def taps_inside(n_in, v):
    """How many of the 3 taps ``2v - 1 .. 2v + 1`` fall in ``[0, n_in)`` (an Expr)."""
    return ts.min(2 * v + 2, n_in) - ts.max(2 * v - 1, 0)


def estimates(sizes) -> dict:
    """The estimates of the output ``output`` at ``sizes`` (the paper's when None)."""
    c, w, h = PAPER_SIZE if sizes is None else sizes
    return {"output": [c, w, h], "input": [c, 2 * w - 1, 2 * h - 1]}


def make_inputs(sizes, seed: int = 0):
    c, w, h = sizes
    return {"input": rng(seed).integers(0, 256, (2 * h - 1, 2 * w - 1, c)).astype(np.uint8)}


def np_windows(a, w, h):
    """The 9 taps of every output pixel, -1 where outside: int64 [9, h, w, c]."""
    hi, wi, c = a.shape
    p = np.full((hi + 2, wi + 2, c), -1, np.int64)
    p[1:hi + 1, 1:wi + 1] = a
    return np.stack([p[ry:ry + 2 * h:2, rx:rx + 2 * w:2]
                     for ry in range(3) for rx in range(3)])
