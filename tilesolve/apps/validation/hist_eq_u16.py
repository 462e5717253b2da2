"""HIST_EQ_U16: histogram equalization of a uint16 image over 1024 bins, the bin's
low bits interpolating between neighbouring CDF entries:

    hist(b)  += 1 at b = input(r.x, r.y) >> 6      RDom(input): the whole image, serial
    cdf(b)    = hist(0);  cdf(r) = cdf(r - 1) + hist(r), r in [1, 1024)      (a scan)
    lo, hi    = cdf(max(b - 1, 0)) (0 for b = 0), cdf(b)
    output    = u16_sat(round((lo + (hi - lo) (input & 63) / 64) * 65535 / (W H)))

3 Funcs; uint16 in and out, int32 counts, the mapping in float32.  The histogram is
one reduction over every pixel; the output a data-dependent lookup.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import rng

PAPER_SIZE = [2560, 1600]
SMALL_SIZE = [64, 48]
BINS, SHIFT = 1024, 6


def build(sizes=None):
    x, y, b = ts.Var("x"), ts.Var("y"), ts.Var("b")
    inp = ts.ImageParam(ts.uint16, 2, "input")
    hist, cdf, out = ts.Func("hist"), ts.Func("cdf"), ts.Func("output")
    r = ts.RDom(inp, name="r")
    hist[ts.cast(ts.int32, inp[r.x, r.y] >> SHIFT)] += 1
    cdf[b] = hist[0]
    s = ts.RDom((1, BINS - 1), name="s")
    cdf[s.x] = cdf[s.x - 1] + hist[s.x]
    v = inp[x, y]
    bin_ = ts.cast(ts.int32, v >> SHIFT)
    lo = ts.select(bin_ == 0, 0, cdf[ts.max(bin_ - 1, 0)])
    hi = cdf[bin_]
    frac = ts.cast(ts.float32, v & ((1 << SHIFT) - 1)) * (1.0 / (1 << SHIFT))
    level = ts.cast(ts.float32, lo) + ts.cast(ts.float32, hi - lo) * frac
    scale = 65535.0 / ts.cast(ts.float32, inp.width() * inp.height())
    out[x, y] = ts.u16_sat(ts.round(level * scale))
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    g = rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    dark = 9000 + 6000 * np.sin(xx / 13.0) * np.cos(yy / 7.0) + 2500 * g.standard_normal((h, w))
    return {"input": np.clip(dark, 0, 65535).astype(np.uint16)}


def numpy_reference(inputs, sizes):
    f = np.float32
    a = inputs["input"]
    w, h = sizes
    bins = (a >> SHIFT).astype(np.int64)
    cdf = np.cumsum(np.bincount(bins.ravel(), minlength=BINS)).astype(np.int64)
    hi = cdf[bins]
    lo = np.where(bins == 0, 0, cdf[np.maximum(bins - 1, 0)])
    frac = (a & ((1 << SHIFT) - 1)).astype(f) * f(1.0 / (1 << SHIFT))
    level = lo.astype(f) + (hi - lo).astype(f) * frac
    scale = f(65535.0) / f(w * h)
    return np.clip(np.round(level * scale), 0, 65535).astype(np.uint16)
