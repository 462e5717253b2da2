"""The demosaic stage of the camera pipe (Halide's ``Demosaic`` generator).

Input: ``deinterleaved(x, y, c)``, uint16, the 4 half-resolution Bayer
channels (0: green in red rows, 1: red, 2: blue, 3: green in blue rows).
Output: ``demosaiced(x, y, c)``, int16, full-resolution r, g, b.

Green at red/blue sites is interpolated in the direction (horizontal or
vertical) with the smaller difference; red/blue at green sites and red at
blue (blue at red) sites are interpolated and corrected with the green
channel's error at the same place; the diagonal case picks the diagonal
with the smaller difference.  All arithmetic is uint16 and wraps, as in
Halide; the final cast to int16 reinterprets underflowed values.
"""
from __future__ import annotations

from .. import model as M
from ._common import absd, mux
from ._common import avg_round_up as avg


def _interleave_x(a, b, name, x, y):
    out = M.Func(name)
    out[x, y] = M.select(x % 2 == 0, a[x / 2, y], b[x / 2, y])
    return out


def _interleave_y(a, b, name, x, y):
    out = M.Func(name)
    out[x, y] = M.select(y % 2 == 0, a[x, y / 2], b[x, y / 2])
    return out


def demosaic(deinterleaved: M.Func) -> M.Func:
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    F = {}
    for i, n in enumerate(("g_gr", "r_r", "b_b", "g_gb")):
        F[n] = M.Func(n)
        F[n][x, y] = deinterleaved[x, y, i]
    g_gr, r_r, b_b, g_gb = F["g_gr"], F["r_r"], F["b_b"], F["g_gb"]

    g_r = M.Func("g_r")
    gv_r, gvd_r = avg(g_gb[x, y - 1], g_gb[x, y]), absd(g_gb[x, y - 1], g_gb[x, y])
    gh_r, ghd_r = avg(g_gr[x + 1, y], g_gr[x, y]), absd(g_gr[x + 1, y], g_gr[x, y])
    g_r[x, y] = M.select(ghd_r < gvd_r, gh_r, gv_r)

    g_b = M.Func("g_b")
    gv_b, gvd_b = avg(g_gr[x, y + 1], g_gr[x, y]), absd(g_gr[x, y + 1], g_gr[x, y])
    gh_b, ghd_b = avg(g_gb[x - 1, y], g_gb[x, y]), absd(g_gb[x - 1, y], g_gb[x, y])
    g_b[x, y] = M.select(ghd_b < gvd_b, gh_b, gv_b)

    def corrected(name, g_here, g_a, g_b_, v_a, v_b):
        f = M.Func(name)
        f[x, y] = (g_here - avg(g_a, g_b_)) + avg(v_a, v_b)
        return f

    r_gr = corrected("r_gr", g_gr[x, y], g_r[x, y], g_r[x - 1, y], r_r[x - 1, y], r_r[x, y])
    b_gr = corrected("b_gr", g_gr[x, y], g_b[x, y], g_b[x, y - 1], b_b[x, y], b_b[x, y - 1])
    r_gb = corrected("r_gb", g_gb[x, y], g_r[x, y], g_r[x, y + 1], r_r[x, y], r_r[x, y + 1])
    b_gb = corrected("b_gb", g_gb[x, y], g_b[x, y], g_b[x + 1, y], b_b[x, y], b_b[x + 1, y])

    def diagonal(name, g_here, gg, vv, p, n):
        """Interpolate along the positive (p) or negative (n) diagonal, whichever is smoother."""
        (px0, py0), (px1, py1) = p
        (nx0, ny0), (nx1, ny1) = n
        vp = (g_here - avg(gg[x + px0, y + py0], gg[x + px1, y + py1])
              + avg(vv[x + px0, y + py0], vv[x + px1, y + py1]))
        vpd = absd(vv[x + px0, y + py0], vv[x + px1, y + py1])
        vn = (g_here - avg(gg[x + nx0, y + ny0], gg[x + nx1, y + ny1])
              + avg(vv[x + nx0, y + ny0], vv[x + nx1, y + ny1]))
        vnd = absd(vv[x + nx0, y + ny0], vv[x + nx1, y + ny1])
        f = M.Func(name)
        f[x, y] = M.select(vpd < vnd, vp, vn)
        return f

    r_b = diagonal("r_b", g_b[x, y], g_r, r_r, ((0, 0), (-1, 1)), ((-1, 0), (0, 1)))
    b_r = diagonal("b_r", g_r[x, y], g_b, b_b, ((0, 0), (1, -1)), ((1, 0), (0, -1)))

    chans = []
    for col, (gr, rr, bb, gb) in {"r": (r_gr, r_r, r_b, r_gb), "g": (g_gr, g_r, g_b, g_gb),
                                  "b": (b_gr, b_r, b_b, b_gb)}.items():
        top = _interleave_x(gr, rr, f"{col}_row0", x, y)
        bottom = _interleave_x(bb, gb, f"{col}_row1", x, y)
        chans.append(_interleave_y(top, bottom, f"{col}_full", x, y))
    out = M.Func("demosaiced")
    out[x, y, c] = M.cast(M.int16, mux(c, [f[x, y] for f in chans]))
    return out
