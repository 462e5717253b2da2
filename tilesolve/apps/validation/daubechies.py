"""DAUBECHIES: one level of the Daubechies D4 wavelet transform in x, then in y (after
Halide's ``apps/wavelet``), the input behind repeat-edge.

    d4_x(x, y, c)   = sum_k f_c[k] in(2x + k - 1, y)           f_0 = h (low), f_1 = g (high)
    output(x, y, c) = sum_k f_{c/2}[k] d4_x(x, 2y + k - 1, c%2)   c in [0, 4): LL HL LH HH

h = (1+s3, 3+s3, 3-s3, 1-s3) / (4 sqrt 2) with s3 = sqrt 3, g[k] = (-1)^k h[3-k].
float32, 3 Funcs; the output is half the input's size in x and y, with 4 bands.
"""
from __future__ import annotations

import math

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [1024, 768, 4]
SMALL_SIZE = [32, 24, 4]

_S3, _N = math.sqrt(3.0), 4 * math.sqrt(2.0)
H = ((1 + _S3) / _N, (3 + _S3) / _N, (3 - _S3) / _N, (1 - _S3) / _N)
G = (H[3], -H[2], H[1], -H[0])


def _filter(band, at):
    """sum_k f[k] at(k - 1), with f = H where ``band`` is 0, else G."""
    lo = sum(H[k] * at(k - 1) for k in range(4))
    hi = sum(G[k] * at(k - 1) for k in range(4))
    return ts.select(band == 0, lo, hi)


def build(sizes=None):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    d4_x, out = ts.Func("d4_x"), ts.Func("output")
    d4_x[x, y, c] = _filter(c, lambda k: clamped[2 * x + k, y])
    out[x, y, c] = _filter(c / 2, lambda k: d4_x[x, 2 * y + k, c % 2])
    w, h, bands = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": [w, h, bands], "input": [2 * w, 2 * h]}


def make_inputs(sizes, seed: int = 0):
    w, h = 2 * sizes[0], 2 * sizes[1]
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.cos(xx / 5.0 + yy / 9.0) + 0.1 * rng(seed).standard_normal((h, w))
    return {"input": img.astype(np.float32)}


def numpy_reference(inputs, sizes):
    f = np.float32
    a = inputs["input"]
    w, h, _ = sizes
    p = edge_plane(a, -1, -1, 2 * w + 2, 2 * h + 2)       # x, y in [-1, 2w + 2)

    def taps(arr, axis, n, coef):
        out = None
        for k in range(4):               # samples 2i + k - 1, i.e. plane index 2i + k
            t = f(coef[k]) * np.take(arr, np.arange(n) * 2 + k, axis=axis)
            out = t if out is None else out + t
        return out
    cols = [taps(p.arr, 1, w, H), taps(p.arr, 1, w, G)]           # [c][y + 1, x]
    bands = [taps(cols[c % 2], 0, h, H if c // 2 == 0 else G) for c in range(4)]
    return np.stack(bands).astype(np.float32)
