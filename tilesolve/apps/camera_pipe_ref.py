"""numpy reference of the camera pipe (written from the algorithm, not the DSL).

Every stage is a Plane computed over the largest region its reads allow
(``combine``), in the same integer types as Halide (uint16 wraps); the
output is cropped to ``[0, W) x [0, H)``.
"""
from __future__ import annotations

import numpy as np

from ._npref import Plane, combine

u16, i16, i32, u8, f32 = np.uint16, np.int16, np.int32, np.uint8, np.float32


def _avg(a, b):
    """(a + b + 1) / 2 in the wider unsigned type, cast back."""
    wide = {np.dtype(u16): np.uint32, np.dtype(u8): np.uint16}[a.dtype]
    return ((a.astype(wide) + b.astype(wide) + 1) // 2).astype(a.dtype)


def _absd(a, b):
    return np.where(a > b, a - b, b - a)


def _deinterleave(p: Plane):
    """The 4 half-resolution channels (g_gr, r_r, b_b, g_gb) of a full-res plane."""
    x0 = -(-p.x0 // 2)
    y0 = -(-p.y0 // 2)
    x1 = (p.x1 - 2) // 2 + 1
    y1 = (p.y1 - 2) // 2 + 1
    i, j = 2 * x0 - p.x0, 2 * y0 - p.y0
    nx, ny = x1 - x0, y1 - y0
    sub = [p.arr[j + dy:j + dy + 2 * ny:2, i + dx:i + dx + 2 * nx:2]
           for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1))]
    return [Plane(s, x0, y0) for s in sub]


def _interleave(gr: Plane, rr: Plane, bb: Plane, gb: Plane) -> Plane:
    """Full resolution from 4 half-res planes: (even, even), (odd, even), (even, odd), (odd, odd)."""
    parts = combine(lambda *a: np.stack(a), (gr, 0, 0), (rr, 0, 0), (bb, 0, 0), (gb, 0, 0))
    _, ny, nx = parts.arr.shape
    out = np.empty((2 * ny, 2 * nx), parts.arr.dtype)
    out[0::2, 0::2], out[0::2, 1::2], out[1::2, 0::2], out[1::2, 1::2] = parts.arr
    return Plane(out, 2 * parts.x0, 2 * parts.y0)


def _demosaic(g_gr, r_r, b_b, g_gb):
    def green(gh_src, gh_dx, gv_src, gv_dy):
        def fn(h0, h1, v0, v1):
            return np.where(_absd(h1, h0) < _absd(v0, v1), _avg(h1, h0), _avg(v0, v1))
        return combine(fn, (gh_src, 0, 0), (gh_src, gh_dx, 0), (gv_src, 0, gv_dy), (gv_src, 0, 0))

    g_r = green(g_gr, 1, g_gb, -1)
    g_b = green(g_gb, -1, g_gr, 1)

    def corr(g_here, gg, vv, d0, d1):
        def fn(gh, ga, gb, va, vb):
            return (gh - _avg(ga, gb)) + _avg(va, vb)
        return combine(fn, (g_here, 0, 0), (gg,) + d0, (gg,) + d1, (vv,) + d0, (vv,) + d1)

    r_gr = corr(g_gr, g_r, r_r, (0, 0), (-1, 0))
    b_gr = corr(g_gr, g_b, b_b, (0, 0), (0, -1))
    r_gb = corr(g_gb, g_r, r_r, (0, 0), (0, 1))
    b_gb = corr(g_gb, g_b, b_b, (0, 0), (1, 0))

    def diag(g_here, gg, vv, p0, p1, n0, n1):
        def fn(gh, gp0, gp1, vp0, vp1, gn0, gn1, vn0, vn1):
            vp = (gh - _avg(gp0, gp1)) + _avg(vp0, vp1)
            vn = (gh - _avg(gn0, gn1)) + _avg(vn0, vn1)
            return np.where(_absd(vp0, vp1) < _absd(vn0, vn1), vp, vn)
        return combine(fn, (g_here, 0, 0), (gg,) + p0, (gg,) + p1, (vv,) + p0, (vv,) + p1,
                       (gg,) + n0, (gg,) + n1, (vv,) + n0, (vv,) + n1)

    r_b = diag(g_b, g_r, r_r, (0, 0), (-1, 1), (-1, 0), (0, 1))
    b_r = diag(g_r, g_b, b_b, (0, 0), (1, -1), (1, 0), (0, -1))
    r = _interleave(r_gr, r_r, r_b, r_gb)
    g = _interleave(g_gr, g_r, g_b, g_gb)
    b = _interleave(b_gr, b_r, b_b, b_gb)
    return combine(lambda *a: np.stack(a).astype(i16), (r, 0, 0), (g, 0, 0), (b, 0, 0))


def _matrix(inputs):
    kelvin = f32(inputs["color_temp"])
    alpha = (f32(1.0) / kelvin - f32(1.0 / 3200)) / f32(1.0 / 7000 - 1.0 / 3200)
    val = inputs["matrix_3200"] * alpha + inputs["matrix_7000"] * (f32(1) - alpha)
    return (val * f32(256.0)).astype(i16)        # [row, col]: matrix(col, row)


def _curve(inputs):
    black, white = int(inputs["blackLevel"]), int(inputs["whiteLevel"])
    x = np.arange(0, 1024)
    inv_range = f32(1.0) / f32(white - black)
    b = f32(2.0) - np.power(f32(2.0), f32(inputs["contrast"]) / f32(100.0))
    a = f32(2.0) - f32(2.0) * b
    xf = np.clip((x - black).astype(f32) * inv_range, f32(0), f32(1))
    g = np.power(xf, f32(1.0) / f32(inputs["gamma"]))
    one = f32(1.0)
    z = np.where(g > f32(0.5), one - (a * (one - g) * (one - g) + b * (one - g)), a * g * g + b * g)
    val = np.clip(z * f32(255.0) + f32(0.5), f32(0), f32(255)).astype(u8)
    return np.where(x <= black, u8(0), np.where(x > white, u8(255), val)).astype(u8)


def numpy_reference(inputs, sizes):
    w, h = sizes[0], sizes[1]
    raw = inputs["input"]
    shifted = Plane(raw, -16, -12)
    denoised = combine(
        lambda c, l, r, u, d: np.minimum(c, np.maximum(np.maximum(np.maximum(l, r), u), d)),
        (shifted, 0, 0), (shifted, -2, 0), (shifted, 2, 0), (shifted, 0, -2), (shifted, 0, 2))
    dm = _demosaic(*_deinterleave(denoised))
    m = _matrix(inputs).astype(i32)
    rgb = dm.arr.astype(i32)
    corrected = np.stack([
        ((m[j, 3] + m[j, 0] * rgb[0] + m[j, 1] * rgb[1] + m[j, 2] * rgb[2]) // 256).astype(i16)
        for j in range(3)])
    curved = Plane(_curve(inputs)[np.clip(corrected, 0, 1023)], dm.x0, dm.y0)
    strength = u8(np.clip(f32(inputs["sharpen_strength"]) * f32(32), 0, 255))
    uy = combine(lambda u, c, d: _avg(_avg(u, d), c), (curved, 0, -1), (curved, 0, 0), (curved, 0, 1))
    un = combine(lambda le, c, r: _avg(_avg(le, r), c), (uy, -1, 0), (uy, 0, 0), (uy, 1, 0))

    def sharpen(cv, u):
        mask = cv.astype(i16) - u.astype(i16)
        v = cv.astype(i16) + (mask * i16(strength)) // i16(32)
        return np.clip(v, 0, 255).astype(u8)
    out = combine(sharpen, (curved, 0, 0), (un, 0, 0))
    return out.crop(0, 0, w, h)
