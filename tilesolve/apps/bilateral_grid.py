"""BILATERAL: bilateral filter on a bilateral grid, Halide's ``apps/bilateral_grid`` (Chen 2007).

float32 gray image in and out, ``s_sigma`` = 8 (a build parameter), ``r_sigma``
a Param (0.1):

* ``histogram(x, y, z, c)``: for each grid cell, an RDom over its
  ``s_sigma x s_sigma`` pixels (repeat-edge input) adds ``(val, 1)`` at
  ``z = int(val / r_sigma + 0.5)`` -- an update whose left side is computed;
* ``blurz``, ``blurx``, ``blury``: [1 4 6 4 1] in z, x, y;
* ``interpolated``: trilinear sampling at ``(x / s, y / s, val / r_sigma)``;
* ``bilateral_grid = interpolated(c=0) / interpolated(c=1)``.

7 Funcs (with the boundary Func; Mullapudi 2016: 8).  The numpy reference
builds the grid with the same per-cell accumulation order (RDom ``r.x``
fastest), so float results agree to rounding.  Paper size 1536 x 2560.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ..model.derived import lerp
from ._common import mux, paper_or
from ._npref import edge_plane, rng

PAPER_SIZE = [1536, 2560]
SMALL_SIZE = [64, 48]
PARAMS = {"r_sigma": 0.1}


def build(sizes=None, s_sigma: int = 8):
    x, y, z, c = M.Var("x"), M.Var("y"), M.Var("z"), M.Var("c")
    inp = M.ImageParam(M.float32, 2, "input")
    r_sigma = M.Param(M.float32, "r_sigma", PARAMS["r_sigma"])
    clamped = M.repeat_edge(inp)
    s = s_sigma

    r = M.RDom((0, s), (0, s), name="r")
    val = clamped[x * s + r.x - s // 2, y * s + r.y - s // 2]
    val = M.clamp(val, 0.0, 1.0)
    zi = M.cast(M.int32, val * (1.0 / r_sigma) + 0.5)
    hist = M.Func("histogram")
    hist[x, y, z, c] = 0.0
    hist[x, y, zi, c] = hist[x, y, zi, c] + mux(c, [val, 1.0])

    def five(f, d):
        def at(o):
            a = [x, y, z, c]
            a[d] = a[d] + o
            return f[tuple(a)]
        return at(-2) + at(-1) * 4 + at(0) * 6 + at(1) * 4 + at(2)
    blurz, blurx, blury = M.Func("blurz"), M.Func("blurx"), M.Func("blury")
    blurz[x, y, z, c] = five(hist, 2)
    blurx[x, y, z, c] = five(blurz, 0)
    blury[x, y, z, c] = five(blurx, 1)

    v = M.clamp(inp[x, y], 0.0, 1.0)
    zv = v * (1.0 / r_sigma)
    zi = M.cast(M.int32, zv)
    zf = zv - M.cast(M.float32, zi)
    xf = M.cast(M.float32, x % s) / s
    yf = M.cast(M.float32, y % s) / s
    xi, yi = x / s, y / s
    interp = M.Func("interpolated")
    interp[x, y, c] = lerp(
        lerp(lerp(blury[xi, yi, zi, c], blury[xi + 1, yi, zi, c], xf),
             lerp(blury[xi, yi + 1, zi, c], blury[xi + 1, yi + 1, zi, c], xf), yf),
        lerp(lerp(blury[xi, yi, zi + 1, c], blury[xi + 1, yi, zi + 1, c], xf),
             lerp(blury[xi, yi + 1, zi + 1, c], blury[xi + 1, yi + 1, zi + 1, c], xf), yf),
        zf)
    out = M.Func("bilateral_grid")
    out[x, y] = interp[x, y, 0] / interp[x, y, 1]
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"bilateral_grid": sz, "input": sz}


def make_inputs(sizes, seed: int = 0, s_sigma: int = 8):
    w, h = sizes
    g = rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = 0.5 + 0.35 * np.sign(np.sin(xx / 9.0)) * np.cos(yy / 13.0) + 0.05 * g.standard_normal((h, w))
    return {"input": img.astype(np.float32), **PARAMS}


def numpy_reference(inputs, sizes, s_sigma: int = 8):
    f32 = np.float32
    w, h = sizes
    s = s_sigma
    img = inputs["input"]
    inv = f32(1.0) / f32(inputs["r_sigma"])
    gx0, gy0 = -2, -2                     # grid cells read by the blurs (margin 2)
    gx1, gy1 = (w - 1) // s + 4, (h - 1) // s + 4
    nz0, nz1 = -2, int(inv) + 4           # z cells read by blurz around [0, 1 / r_sigma + 1]
    nx, ny, nzs = gx1 - gx0, gy1 - gy0, nz1 - nz0
    grid = np.zeros((2, nzs, ny, nx), f32)            # [c, z, y, x]
    src = edge_plane(img, gx0 * s - s // 2, gy0 * s - s // 2, gx1 * s, gy1 * s).arr
    gy, gx = np.mgrid[0:ny, 0:nx]
    for ry in range(s):
        for rx in range(s):
            v = np.clip(src[gy * s + ry, gx * s + rx], f32(0), f32(1))
            zi = (v * inv + f32(0.5)).astype(np.int32) - nz0
            grid[0, zi, gy, gx] += v
            grid[1, zi, gy, gx] += f32(1)

    def five(a, axis):
        n = a.shape[axis] - 4
        t = [np.take(a, range(o, o + n), axis=axis) for o in range(5)]
        return t[0] + t[1] * f32(4) + t[2] * f32(6) + t[3] * f32(4) + t[4]
    b = five(five(five(grid, 1), 3), 2)              # z, then x, then y: [c, z-2, y-2, x-2]
    # b[c, zz, yy, xx] is the blurred grid at (x, y, z) = (xx + gx0 + 2, yy + gy0 + 2, zz + nz0 + 2)
    v = np.clip(img, f32(0), f32(1))
    zv = v * inv
    zi = zv.astype(np.int32)
    zf = zv - zi.astype(f32)
    Y, X = np.mgrid[0:h, 0:w]
    xf = (X % s).astype(f32) / f32(s)
    yf = (Y % s).astype(f32) / f32(s)
    xi, yi = X // s - gx0 - 2, Y // s - gy0 - 2
    zz = zi - nz0 - 2

    def at(c, dx, dy, dz):
        return b[c, zz + dz, yi + dy, xi + dx]

    def tri(c):
        return _lerp(_lerp(_lerp(at(c, 0, 0, 0), at(c, 1, 0, 0), xf),
                           _lerp(at(c, 0, 1, 0), at(c, 1, 1, 0), xf), yf),
                     _lerp(_lerp(at(c, 0, 0, 1), at(c, 1, 0, 1), xf),
                           _lerp(at(c, 0, 1, 1), at(c, 1, 1, 1), xf), yf), zf)
    return tri(0) / tri(1)


def _lerp(a, b, w):
    return a * (np.float32(1) - w) + b * w


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/bilateral_grid``: ``blurx`` at root (``x``
    inside ``z`` inside ``y``), parallel over grid rows; ``blurz`` per grid row of
    ``blurx`` and the histogram per row of ``blurz`` (its update with ``c``
    innermost); ``blury`` per task of the output, which runs 8 rows per task in
    parallel; ``interpolated`` inlined; vectorized by 16 floats."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["blurx"].compute_root().reorder("x", "z", "y", "c").parallel("y").vectorize("x", 16)
    s["blurz"].compute_at("blurx", "y").vectorize("x", 16)
    s["histogram"].compute_at("blurz", "y")
    s["histogram"].update(0).reorder("c", "r.x", "r.y", "x", "y")
    s["blury"].compute_at("bilateral_grid", "y").vectorize("x", 16)
    s["bilateral_grid"].parallel("y", 8).vectorize("x", 16)
    return s
