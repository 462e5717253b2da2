"""GAUSSIAN_RDOM: a direct (not separated) 2-D Gaussian blur over an RDom, normalised by
a zero-dimensional Func:

    kernel(i, j) = exp(-((i - R)^2 + (j - R)^2) / (2 sigma^2))      i, j in [0, 2R]
    total()     += kernel(r.x, r.y)                                  (over the RDom)
    blur(x, y)  += kernel(r.x, r.y) * input(x + r.x - R, y + r.y - R)  (repeat-edge)
    output(x, y) = blur(x, y) / total()

R = 4 (81 taps), sigma = 2, float32, 5 Funcs.  A reduction of 81 terms per point whose
weights come from a small table: the solver chooses where the table and the
normaliser live.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [1920, 1080]
SMALL_SIZE = [64, 48]
RADIUS, SIGMA = 4, 2.0


def build(sizes=None):
    x, y, i, j = ts.Var("x"), ts.Var("y"), ts.Var("i"), ts.Var("j")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    kernel, total, blur, out = (ts.Func(n) for n in ("kernel", "total", "blur", "output"))
    di, dj = ts.cast(ts.float32, i - RADIUS), ts.cast(ts.float32, j - RADIUS)
    kernel[i, j] = ts.exp(-(di * di + dj * dj) * (1.0 / (2 * SIGMA * SIGMA)))
    n = 2 * RADIUS + 1
    r = ts.RDom((0, n), (0, n), name="r")
    total[()] += kernel[r.x, r.y]
    blur[x, y] += kernel[r.x, r.y] * clamped[x + r.x - RADIUS, y + r.y - RADIUS]
    out[x, y] = blur[x, y] / total[()]
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    return {"input": rng(seed).random((h, w), dtype=np.float32)}


def numpy_reference(inputs, sizes):
    f = np.float32
    w, h = sizes
    n = 2 * RADIUS + 1
    d = np.arange(n).astype(f) - f(RADIUS)
    k = np.exp(-(d[None, :] * d[None, :] + d[:, None] * d[:, None]) * f(1.0 / (2 * SIGMA * SIGMA)))
    total = f(0)
    blur = np.zeros((h, w), f)
    p = edge_plane(inputs["input"], -RADIUS, -RADIUS, w + RADIUS, h + RADIUS).arr
    for ry in range(n):                          # the RDom's order: r.x innermost
        for rx in range(n):
            total = total + k[ry, rx]
            blur = blur + k[ry, rx] * p[ry:ry + h, rx:rx + w]
    return (blur / total).astype(f)
