"""SRGB_BLUR: blur in linear light: uint8 sRGB in, decoded with ``pow``, a 5-tap binomial
blur in x and y over a repeat-edge of the linear image (a boundary condition on a
Func, with its bounds), encoded back to uint8 sRGB with ``pow``:

    linear = v / 12.92 where v <= 0.04045, else ((v + 0.055) / 1.055) ^ 2.4     v = in / 255
    blur_x, blur_y = [1 4 6 4 1] / 16
    output = u8_sat(round(255 * (12.92 l where l <= 0.0031308, else 1.055 l^(1/2.4) - 0.055)))

5 Funcs.  Every pixel pays two ``pow`` calls: the pipeline is compute-bound.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [1920, 1080, 3]
SMALL_SIZE = [64, 48, 3]
TAPS = (1.0 / 16, 4.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16)


def build(sizes=None):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.uint8, 3, "input")
    linear = ts.Func("linear")
    v = ts.cast(ts.float32, inp[x, y, c]) * (1.0 / 255)
    linear[x, y, c] = ts.select(v <= 0.04045, v * (1.0 / 12.92),
                                ts.pow((v + 0.055) * (1.0 / 1.055), 2.4))
    clamped = ts.boundary.repeat_edge(linear, [(0, inp.width()), (0, inp.height()), None])
    blur_x, blur_y, out = ts.Func("blur_x"), ts.Func("blur_y"), ts.Func("output")
    blur_x[x, y, c] = sum(TAPS[i] * clamped[x + i - 2, y, c] for i in range(5))
    blur_y[x, y, c] = sum(TAPS[i] * blur_x[x, y + i - 2, c] for i in range(5))
    lv = blur_y[x, y, c]
    enc = ts.select(lv <= 0.0031308, lv * 12.92, 1.055 * ts.pow(lv, 1.0 / 2.4) - 0.055)
    out[x, y, c] = ts.u8_sat(ts.round(enc * 255.0))
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h, ch = sizes
    yy, xx = np.mgrid[0:h, 0:w]
    base = 128 + 110 * np.sin(xx / 6.0) * np.cos(yy / 10.0)
    img = base[None] + 20 * rng(seed).standard_normal((ch, h, w))
    return {"input": np.clip(np.round(img), 0, 255).astype(np.uint8)}


def numpy_reference(inputs, sizes):
    f = np.float32
    w, h, _ = sizes
    v = inputs["input"].astype(f) * f(1.0 / 255)
    lin = np.where(v <= f(0.04045), v * f(1.0 / 12.92),
                   np.power((v + f(0.055)) * f(1.0 / 1.055), f(2.4))).astype(f)
    p = edge_plane(lin, -2, -2, w + 2, h + 2).arr
    t = [f(k) for k in TAPS]
    bx = sum(t[i] * p[:, :, i:i + w] for i in range(5))
    by = sum(t[i] * bx[:, i:i + h] for i in range(5))
    enc = np.where(by <= f(0.0031308), by * f(12.92),
                   f(1.055) * np.power(by, f(1.0 / 2.4)) - f(0.055)).astype(f)
    return np.clip(np.round(enc * f(255)), 0, 255).astype(np.uint8)
