"""AVG_POOL: 3x3 average pooling, stride 2, over uint8 with channels innermost (after
Halide's ``apps/hannk``): the sum of the taps inside the input (``_pool``: a ``where``
predicate skips the others) in uint16, divided by their count with rounding:

    total(c, x, y) += uint16(input(c, 2x - 1 + r.x, 2y - 1 + r.y))     (where inside)
    count(x, y)     = taps inside in x * taps inside in y
    output          = uint8((total + count / 2) / count)

2 Funcs.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from . import _pool as P

PAPER_SIZE, SMALL_SIZE, make_inputs = P.PAPER_SIZE, P.SMALL_SIZE, P.make_inputs


def build(sizes=None):
    c, x, y, inp, tap = P.window()
    total, out = ts.Func("total"), ts.Func("output")
    total[c, x, y] += ts.cast(ts.uint16, tap)
    count = ts.cast(ts.uint16, P.taps_inside(inp.extent(1), x) * P.taps_inside(inp.extent(2), y))
    out[c, x, y] = ts.cast(ts.uint8, (total[c, x, y] + count / 2) / count)
    return ts.Pipeline(out), P.estimates(sizes)


def numpy_reference(inputs, sizes):
    _, w, h = sizes
    taps = P.np_windows(inputs["input"], w, h)
    inside = taps >= 0
    total = np.where(inside, taps, 0).sum(axis=0)
    count = inside.sum(axis=0)
    return ((total + count // 2) // count).astype(np.uint8)
