"""HARRIS: Harris corner response of Halide's ``apps/harris`` (Mullapudi 2016, Table 1).

    gray     = 0.299 r + 0.587 g + 0.114 b
    Ix, Iy   = 3x3 Sobel derivatives of gray (divided by 12)
    Ixx, Iyy, Ixy = products;  Sxx, Syy, Sxy = 3x3 box sums of them
    output   = det - 0.04 trace^2,  det = Sxx Syy - Sxy^2, trace = Sxx + Syy

No boundary condition, as in Halide: the output is 6 pixels smaller than
the input in x and y.  Halide evaluates the output over ``[3, W-3)``; inputs
here start at 0, so ``gray`` reads ``input(x+3, y+3)`` and the output covers
``[0, W-6)`` (the same values, shifted).  12 Funcs, float32.  Paper size: input
1536 x 2560 x 3, output 1530 x 2554.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import rng

PAPER_SIZE = [1530, 2554]
SMALL_SIZE = [58, 42]


def _sum3x3(f, x, y):
    return (f[x - 1, y - 1] + f[x - 1, y] + f[x - 1, y + 1]
            + f[x, y - 1] + f[x, y] + f[x, y + 1]
            + f[x + 1, y - 1] + f[x + 1, y] + f[x + 1, y + 1])


def build(sizes=None):
    x, y = M.Var("x"), M.Var("y")
    inp = M.ImageParam(M.float32, 3, "input")
    F = {n: M.Func(n) for n in ("gray", "Iy", "Ix", "Ixx", "Iyy", "Ixy", "Sxx", "Syy", "Sxy",
                                "det", "trace", "output")}
    gray = F["gray"]
    gray[x, y] = (0.299 * inp[x + 3, y + 3, 0] + 0.587 * inp[x + 3, y + 3, 1]
                  + 0.114 * inp[x + 3, y + 3, 2])
    F["Iy"][x, y] = (gray[x - 1, y - 1] * (-1.0 / 12) + gray[x - 1, y + 1] * (1.0 / 12)
                     + gray[x, y - 1] * (-2.0 / 12) + gray[x, y + 1] * (2.0 / 12)
                     + gray[x + 1, y - 1] * (-1.0 / 12) + gray[x + 1, y + 1] * (1.0 / 12))
    F["Ix"][x, y] = (gray[x - 1, y - 1] * (-1.0 / 12) + gray[x + 1, y - 1] * (1.0 / 12)
                     + gray[x - 1, y] * (-2.0 / 12) + gray[x + 1, y] * (2.0 / 12)
                     + gray[x - 1, y + 1] * (-1.0 / 12) + gray[x + 1, y + 1] * (1.0 / 12))
    Ix, Iy = F["Ix"], F["Iy"]
    F["Ixx"][x, y] = Ix[x, y] * Ix[x, y]
    F["Iyy"][x, y] = Iy[x, y] * Iy[x, y]
    F["Ixy"][x, y] = Ix[x, y] * Iy[x, y]
    F["Sxx"][x, y] = _sum3x3(F["Ixx"], x, y)
    F["Syy"][x, y] = _sum3x3(F["Iyy"], x, y)
    F["Sxy"][x, y] = _sum3x3(F["Ixy"], x, y)
    Sxx, Syy, Sxy = F["Sxx"], F["Syy"], F["Sxy"]
    F["det"][x, y] = Sxx[x, y] * Syy[x, y] - Sxy[x, y] * Sxy[x, y]
    F["trace"][x, y] = Sxx[x, y] + Syy[x, y]
    tr = F["trace"]
    F["output"][x, y] = F["det"][x, y] - 0.04 * tr[x, y] * tr[x, y]
    w, h = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(F["output"]), {"output": [w, h], "input": [w + 6, h + 6, 3]}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    return {"input": rng(seed).random((3, h + 6, w + 6), dtype=np.float32)}


def numpy_reference(inputs, sizes):
    a = inputs["input"]
    w, h = sizes
    f = np.float32
    g = f(0.299) * a[0] + f(0.587) * a[1] + f(0.114) * a[2]   # gray at x-3, y-3 of the output grid

    def s(arr, dx, dy, n):
        """arr shifted by (dx, dy) over an n-pixel-smaller window (pixel (i,j) <-> arr[j+n, i+n])."""
        H, W = arr.shape
        return arr[n + dy:H - n + dy, n + dx:W - n + dx]

    c1, c2 = f(1.0 / 12), f(2.0 / 12)
    iy = (s(g, -1, -1, 1) * -c1 + s(g, -1, 1, 1) * c1 + s(g, 0, -1, 1) * -c2
          + s(g, 0, 1, 1) * c2 + s(g, 1, -1, 1) * -c1 + s(g, 1, 1, 1) * c1)
    ix = (s(g, -1, -1, 1) * -c1 + s(g, 1, -1, 1) * c1 + s(g, -1, 0, 1) * -c2
          + s(g, 1, 0, 1) * c2 + s(g, -1, 1, 1) * -c1 + s(g, 1, 1, 1) * c1)

    def box(p):
        out = None
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                out = s(p, dx, dy, 1) if out is None else out + s(p, dx, dy, 1)
        return out

    sxx, syy, sxy = box(ix * ix), box(iy * iy), box(ix * iy)
    det = sxx * syy - sxy * sxy
    tr = sxx + syy
    out = det - f(0.04) * tr * tr
    assert out.shape == (h + 2, w + 2)
    return out[1:h + 1, 1:w + 1]


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/harris`` with tiles for its sliding windows:
    ``output`` in 256 x 32 tiles, parallel over rows of tiles, ``gray``, ``Ix`` and
    ``Iy`` computed per tile, the products, box sums, det and trace inlined; all
    vectorized by 16 floats."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["output"].tile("x", "y", "xi", "yi", 256, 32).parallel("y").vectorize("xi", 16)
    for f in ("gray", "Ix", "Iy"):
        s[f].compute_at("output", "x").vectorize("x", 16)
    return s
