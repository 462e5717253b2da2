"""BGU: bilateral guided upsampling, simplified (after Halide's ``apps/bgu``, Chen 2016):
a low-resolution operator (``low_in`` -> ``low_out``) is fitted, per cell of a bilateral
grid, by a gray affine model ``out = a in + b``, and the models are sliced at full
resolution with the full-resolution ``guide``:

    grid(gx, gy, z, k) += (1, u, u^2, o, u o)[k]      over the s x s low-res pixels of the
                           cell, z = the bin of u; u, o = low_in, low_out (repeat-edge)
    blur_z, blur_x, blur_y: [1 2 1] / 4 over the grid
    fit(gx, gy, z, j)    = (a, b)[j]: a = (cov + lambda) / (var + lambda), b = mean_o - a mean_u
    sliced(x, y, j)      = trilinear interpolation of fit at (x, y, guide(x, y))
    output               = clamp(sliced(x, y, 0) guide + sliced(x, y, 1), 0, 1)

Halide's app fits 3 x 4 colour matrices by least squares per cell; one gray model
keeps the structure (a scatter into a grid with a computed site, blurs in 3-D, a
per-cell solve, a data-dependent trilinear slice).  float32, 9 Funcs.  The low-res
images are ``RATIO`` times smaller than the output.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [2048, 1536]
SMALL_SIZE = [128, 96]
RATIO, CELL, BINS, LAMBDA, EPS = 4, 8, 8, 1e-3, 1e-4


def build(sizes=None):
    x, y, z, k, j = (ts.Var(n) for n in ("x", "y", "z", "k", "j"))
    guide = ts.ImageParam(ts.float32, 2, "guide")
    low_in = ts.ImageParam(ts.float32, 2, "low_in")
    low_out = ts.ImageParam(ts.float32, 2, "low_out")
    lam = ts.Param(ts.float32, "lambda", LAMBDA)
    ui, uo = ts.boundary.repeat_edge(low_in), ts.boundary.repeat_edge(low_out)
    r = ts.RDom((0, CELL), (0, CELL), name="r")
    u = ui[x * CELL + r.x, y * CELL + r.y]
    o = uo[x * CELL + r.x, y * CELL + r.y]
    zi = ts.cast(ts.int32, ts.clamp(u, 0.0, 1.0) * (BINS - 1) + 0.5)
    grid = ts.Func("grid")
    grid[x, y, zi, k] += ts.mux(k, [1.0, u, u * u, o, u * o])

    def blur(f, d, name):
        g = ts.Func(name)
        v = [x, y, z, k]
        lo, hi = list(v), list(v)
        lo[d], hi[d] = v[d] - 1, v[d] + 1
        g[x, y, z, k] = (f[tuple(lo)] + 2.0 * f[x, y, z, k] + f[tuple(hi)]) * 0.25
        return g
    blurred = blur(blur(blur(grid, 2, "blur_z"), 0, "blur_x"), 1, "blur_y")
    s = [blurred[x, y, z, i] for i in range(5)]
    n = s[0] + EPS
    mu, mo = s[1] / n, s[3] / n
    var, cov = s[2] / n - mu * mu, s[4] / n - mu * mo
    a = (cov + lam) / (var + lam)
    fit = ts.Func("fit")
    fit[x, y, z, j] = ts.select(j == 0, a, mo - a * mu)

    g = ts.clamp(guide[x, y], 0.0, 1.0)
    pos = [(ts.cast(ts.float32, v) + 0.5) * (1.0 / (RATIO * CELL)) - 0.5 for v in (x, y)]
    pos.append(g * (BINS - 1))
    cell = [ts.cast(ts.int32, ts.floor(p)) for p in pos]
    cell[2] = ts.clamp(cell[2], 0, BINS - 2)
    frac = [p - ts.cast(ts.float32, c) for p, c in zip(pos, cell)]

    def corner(dx, dy, dz):
        return fit[cell[0] + dx, cell[1] + dy, cell[2] + dz, j]

    def along_x(dy, dz):
        return ts.lerp(corner(0, dy, dz), corner(1, dy, dz), frac[0])

    def along_y(dz):
        return ts.lerp(along_x(0, dz), along_x(1, dz), frac[1])
    sliced, out = ts.Func("sliced"), ts.Func("output")
    sliced[x, y, j] = ts.lerp(along_y(0), along_y(1), frac[2])
    out[x, y] = ts.clamp(sliced[x, y, 0] * g + sliced[x, y, 1], 0.0, 1.0)
    w, h = paper_or(sizes, PAPER_SIZE)
    low = [w // RATIO, h // RATIO]
    return ts.Pipeline(out), {"output": [w, h], "guide": [w, h], "low_in": low, "low_out": low}


def make_inputs(sizes, seed: int = 0):
    w, h = sizes
    yy, xx = np.mgrid[0:h, 0:w]
    guide = 0.5 + 0.3 * np.sin(xx / 23.0) * np.cos(yy / 17.0) + 0.1 * np.sign(np.sin(xx / 41.0))
    guide = np.clip(guide + 0.02 * rng(seed).standard_normal((h, w)), 0, 1).astype(np.float32)
    low_in = guide.reshape(h // RATIO, RATIO, w // RATIO, RATIO).mean(axis=(1, 3))
    low_out = 0.9 * np.sqrt(low_in) + 0.05 * np.sin(6 * low_in)        # a tone curve
    return {"guide": guide, "low_in": low_in.astype(np.float32),
            "low_out": low_out.astype(np.float32), "lambda": LAMBDA}


def numpy_reference(inputs, sizes):
    f = np.float32
    w, h = sizes
    lam = f(inputs["lambda"])
    gw, gh = w // (RATIO * CELL) + 5, h // (RATIO * CELL) + 5      # cells from -2
    ui = edge_plane(inputs["low_in"], -2 * CELL, -2 * CELL, (gw - 2) * CELL, (gh - 2) * CELL).arr
    uo = edge_plane(inputs["low_out"], -2 * CELL, -2 * CELL, (gw - 2) * CELL, (gh - 2) * CELL).arr
    grid = np.zeros((5, BINS + 2, gh, gw), f)                        # [k, z + 1, gy + 2, gx + 2]
    cy, cx = np.mgrid[0:gh, 0:gw]
    for ry in range(CELL):
        for rx in range(CELL):
            u, o = ui[cy * CELL + ry, cx * CELL + rx], uo[cy * CELL + ry, cx * CELL + rx]
            zi = (np.clip(u, f(0), f(1)) * f(BINS - 1) + f(0.5)).astype(np.int32) + 1
            for kk, v in enumerate((np.ones_like(u), u, u * u, o, u * o)):
                grid[kk, zi, cy, cx] += v

    def blur(g, axis):
        n = g.shape[axis] - 2
        t = [np.take(g, range(i, i + n), axis=axis) for i in range(3)]
        return (t[0] + f(2) * t[1] + t[2]) * f(0.25)
    b = blur(blur(blur(grid, 1), 3), 2)            # [k, z, gy + 1, gx + 1]
    n = b[0] + f(EPS)
    mu, mo = b[1] / n, b[3] / n
    var, cov = b[2] / n - mu * mu, b[4] / n - mu * mo
    a = (cov + lam) / (var + lam)
    fit = np.stack([a, mo - a * mu])               # [j, z, gy + 1, gx + 1]
    g = np.clip(inputs["guide"], f(0), f(1))
    px = (np.arange(w).astype(f) + f(0.5)) * f(1.0 / (RATIO * CELL)) - f(0.5)
    py = (np.arange(h).astype(f) + f(0.5)) * f(1.0 / (RATIO * CELL)) - f(0.5)
    pz = g * f(BINS - 1)
    cx0, cy0 = np.floor(px).astype(np.int64), np.floor(py).astype(np.int64)
    cz0 = np.clip(np.floor(pz).astype(np.int64), 0, BINS - 2)
    fx, fy = (px - cx0.astype(f))[None, :], (py - cy0.astype(f))[:, None]
    fz = pz - cz0.astype(f)

    def corner(dx, dy, dz):
        return fit[:, cz0 + dz, (cy0 + dy + 1)[:, None], (cx0 + dx + 1)[None, :]]

    def lerp(p, q, t):
        return p * (f(1) - t) + q * t

    def along_y(dz):
        return lerp(lerp(corner(0, 0, dz), corner(1, 0, dz), fx),
                    lerp(corner(0, 1, dz), corner(1, 1, dz), fx), fy)
    s = lerp(along_y(0), along_y(1), fz)
    return np.clip(s[0] * g + s[1], f(0), f(1)).astype(f)
