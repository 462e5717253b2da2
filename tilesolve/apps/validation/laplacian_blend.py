"""LAPLACIAN_BLEND: two RGB images blended through Laplacian pyramids under a mask's
Gaussian pyramid (Burt and Adelson), 5 levels:

    G(j+1) = down(G(j)),  down: [1 2 1] / 4 in x and y at the even sites (9 taps)
    L(j)   = G(j) - up(G(j+1)) (L of the last level = G),  up: the mean of the 2 x 2
             nearest coarse sites
    blend(j)  = L_a(j) m(j) + L_b(j) (1 - m(j))       m: the mask's Gaussian pyramid
    result(j) = blend(j) + up(result(j+1));   output = clamp(result(0), 0, 1)

Every level is read behind a repeat-edge of its own extent (``W / 2^j``: a boundary
condition on a Func, with bounds, 3 a level), so the sizes must divide by
``2^(levels - 1)``.  float32, 49 Funcs at 5 levels: a deep DAG of small stencils over
shrinking sizes.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import rng

PAPER_SIZE = [1920, 1088, 3]
SMALL_SIZE = [64, 48, 3]


def build(sizes=None, levels: int = 5):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    a = ts.ImageParam(ts.float32, 3, "image_a")
    b = ts.ImageParam(ts.float32, 3, "image_b")
    mask = ts.ImageParam(ts.float32, 2, "mask")
    W, H = a.width(), a.height()

    def edge(f, j, n, name):
        """``f`` (level ``j``, ``n`` dimensions) behind repeat-edge over the level's extent."""
        if j == 0:
            return ts.boundary.repeat_edge(f, name=name)
        bounds = [(0, W / (1 << j)), (0, H / (1 << j))] + [None] * (n - 2)
        return ts.boundary.repeat_edge(f, bounds, name=name)

    def at(f, n, xx, yy):
        return f[(xx, yy, c) if n == 3 else (xx, yy)]

    def down(f, n, name):
        """[1 2 1] / 4 in x and y at the even sites: one Func."""
        d = ts.Func(name)
        wt = (0.25, 0.5, 0.25)
        d[(x, y, c) if n == 3 else (x, y)] = sum(
            (wt[i] * wt[j]) * at(f, n, 2 * x + i - 1, 2 * y + j - 1)
            for j in range(3) for i in range(3))
        return d

    def up(f, name):
        """The mean of the 2 x 2 nearest coarse sites: one Func."""
        u = ts.Func(name)
        x0, x1, y0, y1 = x / 2, (x + 1) / 2, y / 2, (y + 1) / 2
        u[x, y, c] = ((f[x0, y0, c] + f[x1, y0, c]) + (f[x0, y1, c] + f[x1, y1, c])) * 0.25
        return u

    gauss = {}                            # (image, level) -> the level behind repeat-edge
    for key, src, n in (("a", a, 3), ("b", b, 3), ("m", mask, 2)):
        g = src
        for j in range(levels):
            gauss[key, j] = g = edge(g, j, n, f"g{key}{j}")
            if j + 1 < levels:
                g = down(g, n, f"down{key}{j + 1}")
    result = None
    for j in range(levels - 1, -1, -1):
        la, lb = gauss["a", j][x, y, c], gauss["b", j][x, y, c]
        if j + 1 < levels:
            la = la - up(gauss["a", j + 1], f"upa{j}")[x, y, c]
            lb = lb - up(gauss["b", j + 1], f"upb{j}")[x, y, c]
        m = gauss["m", j][x, y]
        blend = la * m + lb * (1.0 - m)
        level = ts.Func(f"result{j}")
        if result is None:
            level[x, y, c] = blend
        else:
            level[x, y, c] = blend + up(edge(result, j + 1, 3, f"result{j + 1}_edge"),
                                        f"upr{j}")[x, y, c]
        result = level
    out = ts.Func("output")
    out[x, y, c] = ts.clamp(result[x, y, c], 0.0, 1.0)
    w, h, ch = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": [w, h, ch], "image_a": [w, h, ch],
                              "image_b": [w, h, ch], "mask": [w, h]}


def make_inputs(sizes, seed: int = 0, levels: int = 5):
    w, h, ch = sizes
    g = rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    f = np.float32
    img_a = 0.5 + 0.4 * np.sin(xx / 4.0)[None] * np.linspace(0.5, 1, ch)[:, None, None]
    img_b = 0.5 + 0.4 * np.cos(yy / 6.0)[None] * np.linspace(1, 0.5, ch)[:, None, None]
    mask = 1.0 / (1.0 + np.exp((xx - w / 2) / (w / 16)))
    return {"image_a": (img_a + 0.03 * g.standard_normal((ch, h, w))).astype(f),
            "image_b": (img_b + 0.03 * g.standard_normal((ch, h, w))).astype(f),
            "mask": mask.astype(f)}


def _clamped(arr, xs, ys):
    """``arr[..., y, x]`` at the index vectors, clamped into the array."""
    h, w = arr.shape[-2:]
    return arr[..., np.clip(ys, 0, h - 1)[:, None], np.clip(xs, 0, w - 1)[None, :]]


def _down(arr):
    f = np.float32
    h, w = arr.shape[-2:]
    xs, ys = np.arange(w // 2), np.arange(h // 2)
    wt = (f(0.25), f(0.5), f(0.25))
    out = None
    for j in range(3):
        for i in range(3):
            t = (wt[i] * wt[j]) * _clamped(arr, 2 * xs + i - 1, 2 * ys + j - 1)
            out = t if out is None else out + t
    return out


def _up(arr, w, h):
    f = np.float32
    xs, ys = np.arange(w), np.arange(h)
    x0, x1, y0, y1 = xs // 2, (xs + 1) // 2, ys // 2, (ys + 1) // 2
    return ((_clamped(arr, x0, y0) + _clamped(arr, x1, y0))
            + (_clamped(arr, x0, y1) + _clamped(arr, x1, y1))) * f(0.25)


def numpy_reference(inputs, sizes, levels: int = 5):
    f = np.float32
    pyr = {}
    for key in ("image_a", "image_b", "mask"):
        g = [inputs[key]]
        for _ in range(levels - 1):
            g.append(_down(g[-1]))
        pyr[key] = g
    result = None
    for j in range(levels - 1, -1, -1):
        ga, gb, m = pyr["image_a"][j], pyr["image_b"][j], pyr["mask"][j]
        h, w = m.shape
        la, lb = ga, gb
        if j + 1 < levels:
            la = ga - _up(pyr["image_a"][j + 1], w, h)
            lb = gb - _up(pyr["image_b"][j + 1], w, h)
        blend = la * m + lb * (f(1) - m)
        result = blend if result is None else blend + _up(result, w, h)
    return np.clip(result, f(0), f(1)).astype(f)
