"""MAX_POOL: 3x3 max pooling, stride 2, over uint8 with channels innermost (after Halide's
``apps/hannk``): ``output(c, x, y) = max over the taps inside the input`` (``_pool``: an
RDom whose ``where`` predicate skips the taps outside), an update with no pure
definition.  1 Func.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from . import _pool as P

PAPER_SIZE, SMALL_SIZE, make_inputs = P.PAPER_SIZE, P.SMALL_SIZE, P.make_inputs


def build(sizes=None):
    c, x, y, _, tap = P.window()
    out = ts.Func("output")
    out[c, x, y] = ts.cast(ts.uint8, 0)
    out[c, x, y] = ts.max(out[c, x, y], tap)
    return ts.Pipeline(out), P.estimates(sizes)


def numpy_reference(inputs, sizes):
    _, w, h = sizes
    return P.np_windows(inputs["input"], w, h).max(axis=0).astype(np.uint8)
