"""UNSHARP: unsharp mask of Halide's ``apps/unsharp`` (Mullapudi 2016, Table 1).

A 7-tap Gaussian (sigma 1.5, weights from a ``kernel`` Func) blurs the gray
image in y then x; the sharpened gray ``2*gray - blur`` divided by ``gray``
scales the color input:

    gray    = 0.299 r + 0.587 g + 0.114 b        (repeat_edge input)
    blur_y  = sum_{i=-3..3} kernel(|i|) gray(x, y+i)
    blur_x  = sum_{i=-3..3} kernel(|i|) blur_y(x+i, y)
    output(x, y, c) = (2 gray - blur_x) / gray * input(x, y, c)

8 Funcs (kernel, input_repeat_edge, gray, blur_y, blur_x, sharpen, ratio,
output), float32.  Paper size 1536 x 2560 x 3.
"""
from __future__ import annotations

import math

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import edge_plane, rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [64, 48, 3]
SIGMA = 1.5


def build(sizes=None):
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    inp = M.ImageParam(M.float32, 3, "input")
    s = SIGMA
    kernel = M.Func("kernel")
    kernel[x] = M.exp(-x * x / (2 * s * s)) / (math.sqrt(2 * math.pi) * s)
    bounded = M.repeat_edge(inp)
    gray = M.Func("gray")
    gray[x, y] = 0.299 * bounded[x, y, 0] + 0.587 * bounded[x, y, 1] + 0.114 * bounded[x, y, 2]
    blur_y = M.Func("blur_y")
    blur_y[x, y] = (kernel[0] * gray[x, y]
                    + kernel[1] * (gray[x, y - 1] + gray[x, y + 1])
                    + kernel[2] * (gray[x, y - 2] + gray[x, y + 2])
                    + kernel[3] * (gray[x, y - 3] + gray[x, y + 3]))
    blur_x = M.Func("blur_x")
    blur_x[x, y] = (kernel[0] * blur_y[x, y]
                    + kernel[1] * (blur_y[x - 1, y] + blur_y[x + 1, y])
                    + kernel[2] * (blur_y[x - 2, y] + blur_y[x + 2, y])
                    + kernel[3] * (blur_y[x - 3, y] + blur_y[x + 3, y]))
    sharpen = M.Func("sharpen")
    sharpen[x, y] = 2 * gray[x, y] - blur_x[x, y]
    ratio = M.Func("ratio")
    ratio[x, y] = sharpen[x, y] / gray[x, y]
    out = M.Func("output")
    out[x, y, c] = ratio[x, y] * inp[x, y, c]
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h, ch = sizes
    # strictly positive so that ``ratio`` never divides by zero
    return {"input": rng(seed).uniform(0.05, 1.0, (ch, h, w)).astype(np.float32)}


def numpy_reference(inputs, sizes):
    a = inputs["input"]
    w, h, _ = sizes
    f = np.float32
    k = [np.exp(f(-i * i) / f(2 * SIGMA * SIGMA)) / f(math.sqrt(2 * math.pi) * SIGMA)
         for i in range(4)]
    p = edge_plane(a, -3, -3, w + 3, h + 3).arr            # covers x, y in [-3, w+3)
    gray = f(0.299) * p[0] + f(0.587) * p[1] + f(0.114) * p[2]
    by = k[0] * gray[3:h + 3]
    for i in (1, 2, 3):
        by = by + k[i] * (gray[3 - i:h + 3 - i] + gray[3 + i:h + 3 + i])
    bx = k[0] * by[:, 3:w + 3]
    for i in (1, 2, 3):
        bx = bx + k[i] * (by[:, 3 - i:w + 3 - i] + by[:, 3 + i:w + 3 + i])
    g = gray[3:h + 3, 3:w + 3]
    ratio = (f(2) * g - bx) / g
    return (ratio[None] * a).astype(np.float32)


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/unsharp`` with tiles for its sliding windows:
    the 4-entry ``kernel`` at root; ``output`` in 256 x 32 tiles (channels inside a
    tile), parallel over rows of tiles; ``gray``, ``blur_y`` and ``ratio`` computed
    per tile (``blur_x`` and ``sharpen`` inlined into ``ratio``), all vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["kernel"].compute_root()
    s["output"].tile("x", "y", "xi", "yi", 256, 32).reorder("xi", "c", "yi", "x", "y") \
        .parallel("y").vectorize("xi", 16)
    for f in ("gray", "blur_y", "ratio"):
        s[f].compute_at("output", "x").vectorize("x", 16)
    return s
