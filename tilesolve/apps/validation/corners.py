"""CORNERS: a two-output corner detector: Harris' response and Shi-Tomasi's (the smaller
eigenvalue of the structure tensor), computed from one structure tensor:

    gray       = 0.299 r + 0.587 g + 0.114 b, behind repeat-edge (a Func's bounds)
    Ix, Iy     = Sobel derivatives / 8
    Sxx, Syy, Sxy = [1 2 1] / 4 in y then x over Ix^2, Iy^2, Ix Iy
    harris     = Sxx Syy - Sxy^2 - 0.04 (Sxx + Syy)^2
    shi_tomasi = (Sxx + Syy) / 2 - sqrt(((Sxx - Syy) / 2)^2 + Sxy^2)

float32 RGB in (0..255); two outputs of the input's width and height, 15 Funcs.  Both outputs
read the smoothed tensor: the solver must place it for two consumers.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [1920, 1080]
SMALL_SIZE = [64, 48]
K = 0.04


def _smooth(f, x, y, name):
    """[1 2 1] / 4 in y, then in x: two Funcs."""
    sy, sx = ts.Func(f"{name}_y"), ts.Func(name)
    sy[x, y] = (f[x, y - 1] + 2.0 * f[x, y] + f[x, y + 1]) * 0.25
    sx[x, y] = (sy[x - 1, y] + 2.0 * sy[x, y] + sy[x + 1, y]) * 0.25
    return sx


def build(sizes=None):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 3, "input")
    gray = ts.Func("gray")
    gray[x, y] = 0.299 * inp[x, y, 0] + 0.587 * inp[x, y, 1] + 0.114 * inp[x, y, 2]
    g = ts.boundary.repeat_edge(gray, [(0, inp.width()), (0, inp.height())])
    ix, iy = ts.Func("Ix"), ts.Func("Iy")
    ix[x, y] = ((g[x + 1, y - 1] + 2.0 * g[x + 1, y] + g[x + 1, y + 1])
                - (g[x - 1, y - 1] + 2.0 * g[x - 1, y] + g[x - 1, y + 1])) * 0.125
    iy[x, y] = ((g[x - 1, y + 1] + 2.0 * g[x, y + 1] + g[x + 1, y + 1])
                - (g[x - 1, y - 1] + 2.0 * g[x, y - 1] + g[x + 1, y - 1])) * 0.125
    ixx, iyy, ixy = ts.Func("Ixx"), ts.Func("Iyy"), ts.Func("Ixy")
    ixx[x, y] = ix[x, y] * ix[x, y]
    iyy[x, y] = iy[x, y] * iy[x, y]
    ixy[x, y] = ix[x, y] * iy[x, y]
    sxx, syy, sxy = (_smooth(f, x, y, n) for f, n in ((ixx, "Sxx"), (iyy, "Syy"), (ixy, "Sxy")))
    a, b, c = sxx[x, y], syy[x, y], sxy[x, y]
    harris, shi = ts.Func("harris"), ts.Func("shi_tomasi")
    harris[x, y] = a * b - c * c - K * (a + b) * (a + b)
    half = (a - b) * 0.5
    shi[x, y] = (a + b) * 0.5 - ts.sqrt(half * half + c * c)
    sz = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline([harris, shi]), {"harris": sz, "shi_tomasi": sz, "input": sz + [3]}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    yy, xx = np.mgrid[0:h, 0:w]
    checker = ((xx // 8 + yy // 8) % 2).astype(np.float64)
    img = 50 + 150 * checker[None] + 12 * rng(seed).standard_normal((3, h, w))
    return {"input": img.astype(np.float32)}


def numpy_reference(inputs, sizes):
    f = np.float32
    a = inputs["input"]
    w, h = sizes
    two, q, e = f(2), f(0.25), f(0.125)
    gray = f(0.299) * a[0] + f(0.587) * a[1] + f(0.114) * a[2]
    g = edge_plane(gray, -2, -2, w + 2, h + 2).arr        # x, y in [-2, n + 2)

    def at(dx, dy):                      # g(x + dx, y + dy) for x, y in [-1, n + 1)
        return g[1 + dy:h + 3 + dy, 1 + dx:w + 3 + dx]
    ix = ((at(1, -1) + two * at(1, 0) + at(1, 1)) - (at(-1, -1) + two * at(-1, 0) + at(-1, 1))) * e
    iy = ((at(-1, 1) + two * at(0, 1) + at(1, 1)) - (at(-1, -1) + two * at(0, -1) + at(1, -1))) * e

    def smooth(v):                       # [-1, n + 1) -> [0, n)
        sy = (v[:-2] + two * v[1:-1] + v[2:]) * q
        return (sy[:, :-2] + two * sy[:, 1:-1] + sy[:, 2:]) * q
    sxx, syy, sxy = smooth(ix * ix), smooth(iy * iy), smooth(ix * iy)
    harris = sxx * syy - sxy * sxy - f(K) * (sxx + syy) * (sxx + syy)
    half = (sxx - syy) * f(0.5)
    shi = (sxx + syy) * f(0.5) - np.sqrt(half * half + sxy * sxy)
    return harris, shi
