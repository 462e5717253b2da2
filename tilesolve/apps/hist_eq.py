"""HIST_EQ: histogram equalization of Halide's ``apps/hist`` (Mullapudi 2016, Table 1).

uint8 RGB in and out:

* ``Y``, ``Cr``, ``Cb``: float32 luma and chroma;
* ``hist_rows(bin, y) += 1`` over an RDom along each row (``bin = int(clamp(Y, 0, 255))``,
  an update with a computed left side);
* ``hist(x) += hist_rows(x, ry)``: sum of the row histograms;
* ``cdf``: running sum, an update scanning ``b`` in ``[1, 255]`` that reads its own
  previous element;
* ``equalize = clamp(cdf(uint8(Y)) * 255 / (W H), 0, 255)`` -- a data-dependent
  read, bounded by the uint8 index type;
* the output converts (equalized Y, Cr, Cb) back to RGB, saturated to uint8.

9 Funcs (Mullapudi 2016: 7).  The numpy reference uses np.bincount and
np.cumsum and the same float32 formulas; uint8 output compared exactly.
Paper size 1536 x 2560 x 3.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import mux, paper_or
from ._npref import rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [64, 48, 3]


def build(sizes=None):
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    inp = M.ImageParam(M.uint8, 3, "input")
    Y = M.Func("Y")
    Y[x, y] = 0.299 * inp[x, y, 0] + 0.587 * inp[x, y, 1] + 0.114 * inp[x, y, 2]
    Cr, Cb = M.Func("Cr"), M.Func("Cb")
    Cr[x, y] = (inp[x, y, 0] - Y[x, y]) * 0.713 + 128
    Cb[x, y] = (inp[x, y, 2] - Y[x, y]) * 0.564 + 128

    hist_rows = M.Func("hist_rows")
    hist_rows[x, y] = 0
    rx = M.RDom((0, inp.width()), name="rx")
    b = M.cast(M.int32, M.clamp(Y[rx.x, y], 0, 255))
    hist_rows[b, y] = hist_rows[b, y] + 1

    hist = M.Func("hist")
    hist[x] = 0
    ry = M.RDom((0, inp.height()), name="ry")
    hist[x] = hist[x] + hist_rows[x, ry.x]

    cdf = M.Func("cdf")
    cdf[x] = hist[0]
    rb = M.RDom((1, 255), name="b")
    cdf[rb.x] = cdf[rb.x - 1] + hist[rb.x]

    cdf_bin = M.Func("cdf_bin")
    cdf_bin[x, y] = M.cast(M.uint8, M.clamp(Y[x, y], 0, 255))
    eq = M.Func("equalize")
    eq[x, y] = M.clamp(cdf[cdf_bin[x, y]] * (255.0 / (inp.height() * inp.width())), 0, 255)

    def u8(e):
        return M.cast(M.uint8, M.clamp(e, 0, 255))
    red = u8(eq[x, y] + (Cr[x, y] - 128) * 1.4)
    green = u8(eq[x, y] - 0.343 * (Cb[x, y] - 128) - 0.711 * (Cr[x, y] - 128))
    blue = u8(eq[x, y] + 1.765 * (Cb[x, y] - 128))
    out = M.Func("output")
    out[x, y, c] = mux(c, [red, green, blue])
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    """A low-contrast image (values squeezed into [60, 140)) so equalization has work to do."""
    w, h, ch = sizes
    g = rng(seed)
    return {"input": g.integers(60, 140, (ch, h, w)).astype(np.uint8)}


def numpy_reference(inputs, sizes):
    f32 = np.float32
    img = inputs["input"]
    H, W = img.shape[1:]
    r, g, b = (img[i].astype(f32) for i in range(3))
    Y = f32(0.299) * r + f32(0.587) * g + f32(0.114) * b
    Cr = (r - Y) * f32(0.713) + f32(128)
    Cb = (b - Y) * f32(0.564) + f32(128)
    bins = np.clip(Y, f32(0), f32(255)).astype(np.int32)
    hist = np.bincount(bins.ravel(), minlength=256).astype(np.int32)
    cdf = np.cumsum(hist).astype(np.int32)
    eq = np.clip(cdf[bins].astype(f32) * (f32(255.0) / f32(H * W)), f32(0), f32(255))

    def u8(e):
        return np.clip(e, f32(0), f32(255)).astype(np.uint8)
    red = u8(eq + (Cr - f32(128)) * f32(1.4))
    green = u8(eq - f32(0.343) * (Cb - f32(128)) - f32(0.711) * (Cr - f32(128)))
    blue = u8(eq + f32(1.765) * (Cb - f32(128)))
    w, h = sizes[0], sizes[1]
    return np.stack([red, green, blue])[:, :h, :w]


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/hist`` without ``rfactor``/``in()``: the row
    histograms at root, 8 rows per parallel task; the column sum at root with the
    256 bins vectorized inside the row loop; the ``cdf`` scan at root; the output
    with ``c`` inside the vectorized ``x`` steps, 8 rows per parallel task; ``Y``,
    ``Cr``, ``Cb`` and ``equalize`` inlined; vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["hist_rows"].compute_root().parallel("y", 8).vectorize("x", 16)
    s["hist_rows"].update(0).parallel("y", 8)
    s["hist"].compute_root().vectorize("x", 16)
    s["hist"].update(0).reorder("x", "ry.x").vectorize("x", 16)
    s["cdf"].compute_root()
    s["output"].vectorize("x", 16).reorder("x_v", "c", "x", "y").parallel("y", 8)
    return s
