"""YUV_TO_RGB: YUV 4:2:0 (uint8 planes, chroma at half resolution) to planar uint8 RGB
with BT.601 fixed-point arithmetic and bit shifts:

    u_x(x, y)  = u(x / 2, y) where x & 1 is 0,
                 else rounding_halving_add(u(x / 2, y), u(x / 2 + 1, y))
    u_up(x, y) = the same in y over u_x                        (v likewise; planes repeat-edge)
    C = 298 (Y - 16) + 128,  D = U - 128,  E = V - 128          int32
    R = (C + 409 E) >> 8,  G = (C - 100 D - 208 E) >> 8,  B = (C + 516 D) >> 8
    output(x, y, c) = u8_sat(select(c == 0, R, c == 1, G, B))

The chroma sites are ``x / 2``, not ``x >> 1``: the symbolic interval engine has no
rule for a shift of a symbolic value, so a Func read at ``x >> 1`` would be allocated
over the whole int32 range in y.

7 Funcs.  Three inputs of two sizes; integer shifts, a variadic select over channels.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import edge_plane, rng

PAPER_SIZE = [1920, 1080, 3]
SMALL_SIZE = [64, 48, 3]


def _upsample(plane, x, y, name):
    """Chroma at full resolution: in x, then in y, averaging neighbours on odd sites."""
    cl = ts.boundary.repeat_edge(plane)
    ux, uy = ts.Func(f"{name}_x"), ts.Func(f"{name}_up")
    ux[x, y] = ts.select((x & 1) == 0, cl[x / 2, y],
                         ts.rounding_halving_add(cl[x / 2, y], cl[x / 2 + 1, y]))
    uy[x, y] = ts.select((y & 1) == 0, ux[x, y / 2],
                         ts.rounding_halving_add(ux[x, y / 2], ux[x, y / 2 + 1]))
    return uy


def build(sizes=None):
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    yp = ts.ImageParam(ts.uint8, 2, "y_plane")
    up = ts.ImageParam(ts.uint8, 2, "u_plane")
    vp = ts.ImageParam(ts.uint8, 2, "v_plane")
    u, v = _upsample(up, x, y, "u"), _upsample(vp, x, y, "v")
    i32 = ts.int32
    cc = 298 * (ts.cast(i32, yp[x, y]) - 16) + 128
    d, e = ts.cast(i32, u[x, y]) - 128, ts.cast(i32, v[x, y]) - 128
    out = ts.Func("output")
    out[x, y, c] = ts.u8_sat(ts.select(c == 0, (cc + 409 * e) >> 8,
                                       c == 1, (cc - 100 * d - 208 * e) >> 8,
                                       (cc + 516 * d) >> 8))
    w, h, ch = paper_or(sizes, PAPER_SIZE)
    half = [(w + 1) // 2, (h + 1) // 2]
    return ts.Pipeline(out), {"output": [w, h, ch], "y_plane": [w, h], "u_plane": half,
                              "v_plane": half}


def make_inputs(sizes, seed: int = 0):
    w, h, _ = sizes
    g = rng(seed)
    hw, hh = (w + 1) // 2, (h + 1) // 2
    yy, xx = np.mgrid[0:hh, 0:hw]
    return {"y_plane": g.integers(16, 236, (h, w)).astype(np.uint8),
            "u_plane": np.clip(128 + 90 * np.sin(xx / 5.0) + g.integers(-8, 8, (hh, hw)),
                               0, 255).astype(np.uint8),
            "v_plane": np.clip(128 + 90 * np.cos(yy / 4.0) + g.integers(-8, 8, (hh, hw)),
                               0, 255).astype(np.uint8)}


def _up(plane, w, h):
    """The chroma plane at full resolution, as int64."""
    p = edge_plane(plane, 0, 0, w // 2 + 2, h // 2 + 2).arr.astype(np.int64)
    xs, ys = np.arange(w), np.arange(h)
    a, b = p[:, xs >> 1], p[:, (xs >> 1) + 1]
    ux = np.where(xs & 1, (a + b + 1) >> 1, a)
    a, b = ux[ys >> 1], ux[(ys >> 1) + 1]
    return np.where((ys & 1)[:, None], (a + b + 1) >> 1, a)


def numpy_reference(inputs, sizes):
    w, h, _ = sizes
    yv = inputs["y_plane"].astype(np.int64)
    d = _up(inputs["u_plane"], w, h) - 128
    e = _up(inputs["v_plane"], w, h) - 128
    cc = 298 * (yv - 16) + 128
    rgb = np.stack([(cc + 409 * e) >> 8, (cc - 100 * d - 208 * e) >> 8, (cc + 516 * d) >> 8])
    return np.clip(rgb, 0, 255).astype(np.uint8)
