"""Separable resampling by a Param scale factor (after Halide's ``apps/resize``), shared
by ``resize_down`` (Keys cubic) and ``resize_up`` (Lanczos-3).

For an output column x, the source position is ``sx = (x + 0.5) / scale - 0.5``; a
kernel of ``support`` pixels stretched by ``1 / min(scale, 1)`` covers the taps
``begin(x) + r``, ``r`` in ``[0, taps)``, with ``begin(x) = ceil(sx - radius)``:

    weight_raw_x(x, r) = kernel((begin(x) + r - sx) * min(scale, 1))
    weight_sum_x(x)   += weight_raw_x(x, r)                                 (over r)
    weight_x(x, r)     = weight_raw_x(x, r) / weight_sum_x(x)               (a table)
    resized_x(x, y, c) += weight_x(x, r) * input(begin(x) + r, y, c)       (repeat-edge)
    resized_y(x, y, c) = the same in y, over resized_x
    output             = clamp(resized_y, 0, 1)

``taps = ceil(support / min(scale, 1))`` is an RDom extent computed from the Param.
float32 RGB, 10 Funcs (with the boundary Func).  The numpy reference builds the same
weight tables with float32 numpy.
"""
from __future__ import annotations

import math

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import rng


def cubic(t):
    """Keys' cubic (a = -0.5), support 4, on an Expr."""
    a = ts.abs(t)
    near = (1.5 * a - 2.5) * a * a + 1.0
    far = ((-0.5 * a + 2.5) * a - 4.0) * a + 2.0
    return ts.select(a < 1.0, near, a < 2.0, far, 0.0)


def lanczos3(t):
    """Lanczos with 3 lobes, support 6, on an Expr."""
    pt = t * math.pi
    v = 3.0 * ts.sin(pt) * ts.sin(pt * (1.0 / 3)) / (pt * pt)
    return ts.select(t == 0.0, 1.0, ts.abs(t) < 3.0, v, 0.0)


def np_cubic(t):
    f = np.float32
    a = np.abs(t)
    near = (f(1.5) * a - f(2.5)) * a * a + f(1.0)
    far = ((f(-0.5) * a + f(2.5)) * a - f(4.0)) * a + f(2.0)
    return np.where(a < 1, near, np.where(a < 2, far, f(0))).astype(f)


def np_lanczos3(t):
    f = np.float32
    pt = t * f(math.pi)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = f(3.0) * np.sin(pt) * np.sin(pt * f(1.0 / 3)) / (pt * pt)
    return np.where(t == 0, f(1), np.where(np.abs(t) < 3, v, f(0))).astype(f)


def build(sizes, scale: float, kernel, support: int):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    k = ts.Var("k")
    inp = ts.ImageParam(ts.float32, 3, "input")
    s = ts.Param(ts.float32, "scale", scale)
    kscale = ts.min(s, 1.0)
    radius = (0.5 * support) / kscale
    taps = ts.cast(ts.int32, ts.ceil(support / kscale))
    clamped = ts.boundary.repeat_edge(inp)

    def source(v):
        return (ts.cast(ts.float32, v) + 0.5) / s - 0.5

    def begin(v):
        return ts.cast(ts.int32, ts.ceil(source(v) - radius))

    funcs = {}
    for axis in ("x", "y"):
        v = x if axis == "x" else y
        r = ts.RDom((0, taps), name=f"r{axis}")
        raw, norm, wt = (ts.Func(f"weight_raw_{axis}"), ts.Func(f"weight_sum_{axis}"),
                         ts.Func(f"weight_{axis}"))
        raw[v, k] = kernel((ts.cast(ts.float32, begin(v) + k) - source(v)) * kscale)
        norm[v] += raw[v, r.x]
        wt[v, k] = raw[v, k] / norm[v]
        funcs[axis] = (wt, r)
    (wx, rx), (wy, ry) = funcs["x"], funcs["y"]
    rsx, rsy, out = ts.Func("resized_x"), ts.Func("resized_y"), ts.Func("output")
    rsx[x, y, c] += wx[x, rx.x] * clamped[begin(x) + rx.x, y, c]
    rsy[x, y, c] += wy[y, ry.x] * rsx[x, begin(y) + ry.x, c]
    out[x, y, c] = ts.clamp(rsy[x, y, c], 0.0, 1.0)
    w, h, ch = sizes
    src = input_size(sizes, scale)
    return ts.Pipeline(out), {"output": [w, h, ch], "input": src}


def input_size(sizes, scale: float) -> list:
    """The input's sizes for an output of ``sizes`` resampled by ``scale``."""
    w, h, ch = sizes
    return [int(round(w / scale)), int(round(h / scale)), ch]


def make_inputs(sizes, seed: int, scale: float):
    w, h, ch = input_size(sizes, scale)
    yy, xx = np.mgrid[0:h, 0:w]
    base = 0.5 + 0.4 * np.sin(xx / 3.0 + yy / 17.0)
    img = base[None] * np.linspace(0.6, 1.0, ch)[:, None, None]
    img = img + 0.05 * rng(seed).standard_normal((ch, h, w))
    return {"input": np.clip(img, 0, 1).astype(np.float32), "scale": scale}


def _table(n, scale, support, kernel):
    """(begin, weights[n, taps]) of one axis, in float32 as the pipeline computes them."""
    f = np.float32
    s = f(scale)
    kscale = min(s, f(1))
    radius = f(0.5 * support) / kscale
    taps = int(np.ceil(f(support) / kscale))
    src = (np.arange(n).astype(f) + f(0.5)) / s - f(0.5)
    begin = np.ceil(src - radius).astype(np.int32)
    pos = (begin[:, None] + np.arange(taps)[None, :]).astype(f)
    raw = kernel((pos - src[:, None]) * kscale)
    total = raw[:, 0].copy()
    for r in range(1, taps):
        total = total + raw[:, r]
    return begin, raw / total[:, None]


def numpy_reference(inputs, sizes, support: int, np_kernel):
    f = np.float32
    img = inputs["input"]
    w, h, _ = sizes
    scale = inputs["scale"]
    bx, wx = _table(w, scale, support, np_kernel)
    by, wy = _table(h, scale, support, np_kernel)
    ih, iw = img.shape[1:]
    taps = wx.shape[1]
    rows = np.clip(np.arange(by.min(), by.max() + taps), 0, ih - 1)
    src = img[:, rows]                                     # rows by.min() ...
    xs = np.clip(bx[:, None] + np.arange(taps)[None, :], 0, iw - 1)
    rx = wx[:, 0] * src[:, :, xs[:, 0]]
    for r in range(1, taps):
        rx = rx + wx[:, r] * src[:, :, xs[:, r]]
    ry = None
    for r in range(taps):
        t = wy[:, r][:, None] * rx[:, by + r - by.min()]
        ry = t if ry is None else ry + t
    return np.clip(ry, f(0), f(1)).astype(f)


def variant(paper_size, scale: float, kernel, np_kernel, support: int):
    """``build``, ``make_inputs`` and ``numpy_reference`` of the app protocol for
    resampling by ``scale`` with ``kernel`` (an Expr function; ``np_kernel`` its numpy
    twin) of ``support`` pixels."""
    def build_(sizes=None):
        return build(paper_or(sizes, paper_size), scale, kernel, support)

    def make_inputs_(sizes, seed: int = 0):
        return make_inputs(sizes, seed, scale)

    def numpy_reference_(inputs, sizes):
        return numpy_reference(inputs, sizes, support, np_kernel)
    return build_, make_inputs_, numpy_reference_
