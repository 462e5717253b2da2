"""SOBEL_U8: fixed-point Sobel edge magnitude: uint8 in, int16 gradients, uint8 out.

    smooth_y(x, y) = in(x, y-1) + 2 in(x, y) + in(x, y+1)        int16 (widened)
    smooth_x(x, y) = in(x-1, y) + 2 in(x, y) + in(x+1, y)        int16
    gx = smooth_y(x+1, y) - smooth_y(x-1, y);  gy = smooth_x(x, y+1) - smooth_x(x, y-1)
    output = u8_sat((|gx| + |gy|) >> 3)                          (|int16| is uint16)

the input behind repeat-edge; 6 Funcs.  Integer arithmetic only: vectors of 16 or 32
lanes, and the widening/narrowing in between.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [3840, 2160]
SMALL_SIZE = [64, 48]


def build(sizes=None):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.uint8, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    sy, sx, gx, gy, out = (ts.Func(n) for n in ("smooth_y", "smooth_x", "gx", "gy", "output"))

    def wide(v):
        return ts.cast(ts.int16, v)
    sy[x, y] = wide(clamped[x, y - 1]) + 2 * wide(clamped[x, y]) + wide(clamped[x, y + 1])
    sx[x, y] = wide(clamped[x - 1, y]) + 2 * wide(clamped[x, y]) + wide(clamped[x + 1, y])
    gx[x, y] = sy[x + 1, y] - sy[x - 1, y]
    gy[x, y] = sx[x, y + 1] - sx[x, y - 1]
    out[x, y] = ts.u8_sat((ts.abs(gx[x, y]) + ts.abs(gy[x, y])) >> 3)
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    yy, xx = np.mgrid[0:h, 0:w]
    img = 128 + 100 * np.sign(np.sin(xx / 9.0 + yy / 23.0)) + 30 * rng(seed).standard_normal((h, w))
    return {"input": np.clip(img, 0, 255).astype(np.uint8)}


def numpy_reference(inputs, sizes):
    w, h = sizes
    p = edge_plane(inputs["input"], -2, -2, w + 2, h + 2).arr.astype(np.int64)

    def at(dx, dy):
        return p[2 + dy:2 + dy + h, 2 + dx:2 + dx + w]
    gx = sum(k * (at(1, dy) - at(-1, dy)) for k, dy in ((1, -1), (2, 0), (1, 1)))
    gy = sum(k * (at(dx, 1) - at(dx, -1)) for k, dx in ((1, -1), (2, 0), (1, 1)))
    return np.clip((np.abs(gx) + np.abs(gy)) >> 3, 0, 255).astype(np.uint8)
