"""HAAR: one level of the Haar wavelet, a soft threshold of its detail bands, and the
inverse (after Halide's ``apps/wavelet``), i.e. a one-level wavelet denoiser.

    haar_x(x, y, c)  = (in(2x, y) +- in(2x+1, y)) / 2          c = 0: sum, 1: difference
    bands(x, y, c)   = (haar_x(x, 2y, c%2) +- haar_x(x, 2y+1, c%2)) / 2      c in [0, 4)
    shrunk(x, y, c)  = bands, detail bands (c > 0) moved towards 0 by ``threshold``
    inv_y(x, y, c)   = shrunk(x, y/2, c) +- shrunk(x, y/2, c+2)   (+ on even rows)
    output(x, y)     = inv_y(x/2, y, 0) +- inv_y(x/2, y, 1)        (+ on even columns)

float32, 5 Funcs, the output the input's size (even).  Stresses 2x decimation and
interleaving by parity, and the subbands in a channel dimension.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import rng

PAPER_SIZE = [2048, 1536]
SMALL_SIZE = [64, 48]
THRESHOLD = 0.02


def build(sizes=None):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 2, "input")
    t = ts.Param(ts.float32, "threshold", THRESHOLD)
    haar_x, bands, shrunk = ts.Func("haar_x"), ts.Func("bands"), ts.Func("shrunk")
    inv_y, out = ts.Func("inv_y"), ts.Func("output")
    a, b = inp[2 * x, y], inp[2 * x + 1, y]
    haar_x[x, y, c] = ts.select(c == 0, (a + b) * 0.5, (a - b) * 0.5)
    a, b = haar_x[x, 2 * y, c % 2], haar_x[x, 2 * y + 1, c % 2]
    bands[x, y, c] = ts.select(c / 2 == 0, (a + b) * 0.5, (a - b) * 0.5)
    v = bands[x, y, c]
    shrunk[x, y, c] = ts.select(c == 0, v, v - ts.clamp(v, -t, t))
    lo, hi = shrunk[x, y / 2, c], shrunk[x, y / 2, c + 2]
    inv_y[x, y, c] = ts.select(y % 2 == 0, lo + hi, lo - hi)
    lo, hi = inv_y[x / 2, y, 0], inv_y[x / 2, y, 1]
    out[x, y] = ts.select(x % 2 == 0, lo + hi, lo - hi)
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    yy, xx = np.mgrid[0:h, 0:w]
    img = 0.5 + 0.3 * np.sin(xx / 7.0) * np.cos(yy / 11.0)
    img = img + 0.05 * rng(seed).standard_normal((h, w))
    return {"input": img.astype(np.float32), "threshold": THRESHOLD}


def numpy_reference(inputs, sizes):
    f = np.float32
    a = inputs["input"]
    t = f(inputs["threshold"])
    half = f(0.5)
    even, odd = a[:, 0::2], a[:, 1::2]
    hx = [(even + odd) * half, (even - odd) * half]          # [c][y, x/2]
    bands = []
    for cy in range(2):
        for cx in range(2):
            e, o = hx[cx][0::2], hx[cx][1::2]
            bands.append((e + o) * half if cy == 0 else (e - o) * half)
    shrunk = [bands[0]] + [v - np.clip(v, -t, t) for v in bands[1:]]
    inv_y = []
    for cx in range(2):
        lo, hi = shrunk[cx], shrunk[cx + 2]
        rows = np.empty((2 * lo.shape[0], lo.shape[1]), f)
        rows[0::2], rows[1::2] = lo + hi, lo - hi
        inv_y.append(rows)
    out = np.empty_like(a)
    out[:, 0::2], out[:, 1::2] = inv_y[0] + inv_y[1], inv_y[0] - inv_y[1]
    return out
