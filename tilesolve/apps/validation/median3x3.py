"""MEDIAN3X3: a 3x3 median filter by min/max networks on uint8 RGB (repeat-edge):

    column min / mid / max of (y-1, y, y+1)            three Funcs, each 3 min/max ops
    output = median(max of the 3 column mins, median of the 3 column mids,
                    min of the 3 column maxes)
    median(a, b, c) = max(min(a, b), min(max(a, b), c))

5 Funcs; 8-bit min and max only.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [1920, 1080, 3]
SMALL_SIZE = [64, 48, 3]


def _median(a, b, c):
    return ts.max(ts.min(a, b), ts.min(ts.max(a, b), c))


def build(sizes=None):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.uint8, 3, "input")
    cl = ts.boundary.repeat_edge(inp)
    lo, mid, hi, out = ts.Func("col_min"), ts.Func("col_mid"), ts.Func("col_max"), ts.Func("output")
    a, b, d = cl[x, y - 1, c], cl[x, y, c], cl[x, y + 1, c]
    lo[x, y, c] = ts.min(a, b, d)
    mid[x, y, c] = _median(a, b, d)
    hi[x, y, c] = ts.max(a, b, d)
    out[x, y, c] = _median(ts.max(lo[x - 1, y, c], lo[x, y, c], lo[x + 1, y, c]),
                           _median(mid[x - 1, y, c], mid[x, y, c], mid[x + 1, y, c]),
                           ts.min(hi[x - 1, y, c], hi[x, y, c], hi[x + 1, y, c]))
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h, ch = sizes
    g = rng(seed)
    img = g.integers(0, 256, (ch, h, w))
    salt = g.random((ch, h, w)) < 0.05
    img[salt] = 255
    return {"input": img.astype(np.uint8)}


def numpy_reference(inputs, sizes):
    w, h, _ = sizes
    p = edge_plane(inputs["input"], -1, -1, w + 1, h + 1).arr
    win = np.stack([p[:, 1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
                    for dy in (-1, 0, 1) for dx in (-1, 0, 1)])
    return np.median(win, axis=0).astype(np.uint8)
