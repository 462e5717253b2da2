"""DEPTHWISE_CONV: a depthwise-separable convolution layer (after Halide's
``apps/depthwise_separable_conv``), channels innermost as in Halide's app:

    padded(ci, x, y)    = input, 0 outside the image in x and y
    depthwise(ci, x, y) = sum_{3x3 r} dw_filter(ci, r.x, r.y) * padded(ci, x + r.x - 1, y + r.y - 1)
    pointwise(co, x, y) = bias(co) + sum_ci pw_filter(co, ci) * depthwise(ci, x, y)
    output              = max(pointwise, 0)                                   (ReLU)

float32, 4 Funcs, stride 1, 'same' padding.  ``ci`` (input channels) is a build
parameter; the output has ``co`` channels (its first size).
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import rng

PAPER_SIZE = [64, 112, 112]
SMALL_SIZE = [12, 20, 14]
SMALL_BUILD = {"ci": 8}


def build(sizes=None, ci: int = 32):
    c, x, y = ts.Var("c"), ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 3, "input")
    dw = ts.ImageParam(ts.float32, 3, "dw_filter")
    pw = ts.ImageParam(ts.float32, 2, "pw_filter")
    bias = ts.ImageParam(ts.float32, 1, "bias")
    padded = ts.boundary.constant_exterior(inp, 0.0, [None, (0, inp.extent(1)),
                                                      (0, inp.extent(2))])
    depthwise, pointwise, out = ts.Func("depthwise"), ts.Func("pointwise"), ts.Func("output")
    r = ts.RDom((0, 3), (0, 3), name="r")
    depthwise[c, x, y] += dw[c, r.x, r.y] * padded[c, x + r.x - 1, y + r.y - 1]
    k = ts.RDom((0, inp.extent(0)), name="k")
    pointwise[c, x, y] = bias[c]
    pointwise[c, x, y] += pw[c, k.x] * depthwise[k.x, x, y]
    out[c, x, y] = ts.max(pointwise[c, x, y], 0.0)
    co, w, h = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": [co, w, h], "input": [ci, w, h], "dw_filter": [ci, 3, 3],
                              "pw_filter": [co, ci], "bias": [co]}


def make_inputs(sizes, seed: int = 0, ci: int = 32):
    co, w, h = sizes
    g = rng(seed)
    f = np.float32
    return {"input": g.standard_normal((h, w, ci)).astype(f),
            "dw_filter": (g.standard_normal((3, 3, ci)) / 3).astype(f),
            "pw_filter": (g.standard_normal((ci, co)) / np.sqrt(ci)).astype(f),
            "bias": (0.1 * g.standard_normal(co)).astype(f)}


def numpy_reference(inputs, sizes, ci: int = 32):
    f = np.float32
    a, dw, pw, bias = (inputs[k] for k in ("input", "dw_filter", "pw_filter", "bias"))
    co, w, h = sizes
    p = np.zeros((h + 2, w + 2, ci), f)
    p[1:h + 1, 1:w + 1] = a
    dep = np.zeros((h, w, ci), f)
    for ry in range(3):
        for rx in range(3):
            dep = dep + dw[ry, rx] * p[ry:ry + h, rx:rx + w]
    out = np.broadcast_to(bias, (h, w, co)).astype(f)
    for k in range(ci):
        out = out + pw[k] * dep[:, :, k:k + 1]
    return np.maximum(out, f(0))
