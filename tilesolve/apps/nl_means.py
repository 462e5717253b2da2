"""NLMEANS: non-local means denoising of Halide's ``apps/nl_means`` (Mullapudi 2016, Table 1).

float32 RGB, patch 7 and search area 7 (build parameters; Params in Halide),
``sigma`` a Param (0.12), repeat-edge input:

* ``d(x, y, dx, dy)``: squared colour difference between the pixel and its
  ``(dx, dy)`` neighbour, summed over channels (inline ``sum`` over an RDom);
* ``blur_d_y``, ``blur_d``: box sums over the patch in y then x (inline sums);
* ``w = exp(-blur_d / (sigma^2 patch^2))`` (Halide uses ``fast_exp``; the language
  has ``exp`` only);
* ``non_local_means_sum(x, y, c)``: update over the search RDom adding
  ``w * (rgb, 1)`` of the neighbour; ``output = clamp(sum / sum(c = 3), 0, 1)``.

``dc(x, y, dx, dy, c) = (a - b)^2``: Halide writes ``pow(a - b, 2)`` and its
simplifier turns it into a product; here it is the product.
12 Funcs (3 of them the inline sums; Mullapudi 2016: 13).  The numpy
reference sums in the same order; float tolerance.  Paper size
1536 x 2560 x 3 (Mullapudi 2016 used 192 x 320 x 3).
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import mux, paper_or
from ._npref import edge_plane, rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [40, 32, 3]
PARAMS = {"sigma": 0.12}
SMALL_BUILD = {"patch_size": 5, "search_area": 5}


def build(sizes=None, patch_size: int = 7, search_area: int = 7):
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    dx, dy = M.Var("dx"), M.Var("dy")
    inp = M.ImageParam(M.float32, 3, "input")
    sigma = M.Param(M.float32, "sigma", PARAMS["sigma"])
    inv_sigma_sq = -1.0 / (sigma * sigma * patch_size * patch_size)
    clamped = M.repeat_edge(inp)

    dc = M.Func("dc")
    diff = clamped[x, y, c] - clamped[x + dx, y + dy, c]
    dc[x, y, dx, dy, c] = diff * diff
    ch = M.RDom((0, 3), name="channels")
    d = M.Func("d")
    d[x, y, dx, dy] = _sum_over(dc[x, y, dx, dy, ch.x], "d_sum", (x, y, dx, dy))
    p = M.RDom((-(patch_size // 2), patch_size), name="patch_dom")
    blur_d_y = M.Func("blur_d_y")
    blur_d_y[x, y, dx, dy] = _sum_over(d[x, y + p.x, dx, dy], "blur_d_y_sum", (x, y, dx, dy))
    blur_d = M.Func("blur_d")
    blur_d[x, y, dx, dy] = _sum_over(blur_d_y[x + p.x, y, dx, dy], "blur_d_sum", (x, y, dx, dy))
    w = M.Func("w")
    w[x, y, dx, dy] = M.exp(blur_d[x, y, dx, dy] * inv_sigma_sq)

    cwa = M.Func("clamped_with_alpha")
    cwa[x, y, c] = mux(c, [clamped[x, y, 0], clamped[x, y, 1], clamped[x, y, 2], 1.0])
    half = search_area // 2
    s = M.RDom((-half, search_area), (-half, search_area), name="s_dom")
    nlm_sum = M.Func("non_local_means_sum")
    nlm_sum[x, y, c] = 0.0
    nlm_sum[x, y, c] = nlm_sum[x, y, c] + w[x, y, s.x, s.y] * cwa[x + s.x, y + s.y, c]
    out = M.Func("non_local_means")
    out[x, y, c] = M.clamp(nlm_sum[x, y, c] / nlm_sum[x, y, 3], 0.0, 1.0)
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"non_local_means": sz, "input": sz}


def _sum_over(e, name, free):
    """Halide's inline ``sum(e)`` as an explicit Func over ``free`` (in that order)."""
    f = M.Func(name)
    f[free] = 0.0
    f[free] = f[free] + e
    return f[free]


def make_inputs(sizes, seed: int = 0, patch_size: int = 7, search_area: int = 7):
    w, h, ch = sizes
    g = rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    clean = 0.5 + 0.4 * np.sin(xx / 6.0)[None] * np.cos(yy / 8.0)[None] * np.ones((ch, 1, 1))
    noisy = clean + 0.05 * g.standard_normal((ch, h, w))
    return {"input": noisy.astype(np.float32), **PARAMS}


def numpy_reference(inputs, sizes, patch_size: int = 7, search_area: int = 7):
    f32 = np.float32
    img = inputs["input"]
    sigma = f32(inputs["sigma"])
    w, h, _ = sizes
    inv = f32(-1.0) / (sigma * sigma * f32(patch_size) * f32(patch_size))
    ph, sh = patch_size // 2, search_area // 2
    m = ph + sh + 1
    p = edge_plane(img, -m, -m, w + m, h + m).arr          # p[:, y + m, x + m]
    H, W = p.shape[1:]
    acc = np.zeros((4, h, w), f32)
    for sy in range(-sh, sh + 1):
        for sx in range(-sh, sh + 1):
            # d over the region y, x in [-ph, h + ph) x [-ph, w + ph)
            ys, xs = slice(m - ph, m + h + ph), slice(m - ph, m + w + ph)
            ys2, xs2 = slice(m - ph + sy, m + h + ph + sy), slice(m - ph + sx, m + w + ph + sx)
            d = f32(0)
            for c in range(3):
                diff = p[c, ys, xs] - p[c, ys2, xs2]
                d = d + diff * diff
            by = f32(0)
            for k in range(patch_size):
                by = by + d[k:k + h, :]
            bd = f32(0)
            for k in range(patch_size):
                bd = bd + by[:, k:k + w]
            wgt = np.exp(bd * inv)
            nb = p[:, m + sy:m + sy + h, m + sx:m + sx + w]
            for c in range(4):
                acc[c] = acc[c] + wgt * (nb[c] if c < 3 else f32(1))
    return np.clip(acc[:3] / acc[3:4], f32(0), f32(1))


def hand_schedule(pipe):
    """After Halide's CPU schedule for ``apps/nl_means``: the output in 64 x 16 tiles
    (channels inside), parallel over rows of tiles; per tile the patch distances, their
    two box sums and the weighted sum (Halide computes the last per vector); every
    update with ``x`` innermost, vectorized by 16 floats."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["non_local_means"].tile("x", "y", "xi", "yi", 64, 16).reorder("xi", "yi", "c", "x", "y") \
        .parallel("y").vectorize("xi", 16)
    for f in ("non_local_means_sum", "blur_d_sum", "blur_d_y_sum", "d_sum"):
        s[f].compute_at("non_local_means", "x").vectorize("x", 16)
    s["non_local_means_sum"].update(0).reorder("x", "y", "c", "s_dom.x", "s_dom.y") \
        .vectorize("x", 16)
    s["blur_d_sum"].update(0).reorder("x", "patch_dom.x").vectorize("x", 16)
    s["blur_d_y_sum"].update(0).reorder("x", "patch_dom.x").vectorize("x", 16)
    s["d_sum"].update(0).reorder("x", "channels.x").vectorize("x", 16)
    return s
