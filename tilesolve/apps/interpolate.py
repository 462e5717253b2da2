"""INTERP: multi-scale interpolation of Halide's ``apps/interpolate`` (Mullapudi 2016).

RGBA float32 in (``W x H x 4``), RGB float32 out (``W x H x 3``), ``levels``
pyramid levels (10, a build parameter):

* ``downsampled[0]``: alpha-premultiplied repeat-edge input;
* ``downx[l]``, ``downsampled[l]``: [1 2 1] / 4 at half resolution in x, then y;
  level 4 reads level 3 through a clamp to ``[0, W/8] x [0, H/8]`` (Halide's
  ``lambda``, here the Func ``clamped_3``) so the footprint stays near the image;
* ``interpolated[levels-1] = downsampled[levels-1]``; going up,
  ``upsampledx``/``upsampled`` average the two nearest coarser pixels and
  ``interpolated[l] = downsampled[l] + (1 - alpha_l) * upsampled[l]``;
* ``normalize = interpolated[0] / interpolated[0](c = 3)`` (the output).

50 Funcs for 10 levels (Mullapudi 2016: 52).  The numpy reference recomputes
every level over the region its reads allow; float tolerance.
Paper size 1536 x 2560 x 3.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import Plane, edge_plane, gather, rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [64, 48, 3]
SMALL_BUILD = {"levels": 6}


def build(sizes=None, levels: int = 10):
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    inp = M.ImageParam(M.float32, 3, "input")
    clamped = M.repeat_edge(inp)
    down = [M.Func(f"downsampled_{l}") for l in range(levels)]
    downx = [None] + [M.Func(f"downx_{l}") for l in range(1, levels)]
    down[0][x, y, c] = M.select(c < 3, clamped[x, y, c] * clamped[x, y, 3], clamped[x, y, 3])
    for l in range(1, levels):
        prev = down[l - 1]
        if l == 4:
            w = inp.width() / (1 << (l - 1))
            h = inp.height() / (1 << (l - 1))
            lam = M.Func(f"clamped_{l - 1}")
            lam[x, y, c] = prev[M.clamp(x, 0, w), M.clamp(y, 0, h), c]
            prev = lam
        downx[l][x, y, c] = (prev[x * 2 - 1, y, c] + 2.0 * prev[x * 2, y, c]
                             + prev[x * 2 + 1, y, c]) * 0.25
        down[l][x, y, c] = (downx[l][x, y * 2 - 1, c] + 2.0 * downx[l][x, y * 2, c]
                            + downx[l][x, y * 2 + 1, c]) * 0.25
    interp = [M.Func(f"interpolated_{l}") for l in range(levels)]
    interp[levels - 1][x, y, c] = down[levels - 1][x, y, c]
    for l in range(levels - 2, -1, -1):
        upx, up = M.Func(f"upsampledx_{l}"), M.Func(f"upsampled_{l}")
        upx[x, y, c] = (interp[l + 1][x / 2, y, c] + interp[l + 1][(x + 1) / 2, y, c]) / 2.0
        up[x, y, c] = (upx[x, y / 2, c] + upx[x, (y + 1) / 2, c]) / 2.0
        alpha = 1.0 - down[l][x, y, 3]
        interp[l][x, y, c] = down[l][x, y, c] + alpha * up[x, y, c]
    norm = M.Func("normalize")
    norm[x, y, c] = interp[0][x, y, c] / interp[0][x, y, 3]
    w, h, ch = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(norm), {"normalize": [w, h, ch], "input": [w, h, 4]}


def make_inputs(sizes, seed: int = 0, levels: int = 10):
    """RGBA with holes: alpha is 1 on a sparse set of pixels and 0 elsewhere (plus a floor)."""
    w, h = sizes[0], sizes[1]
    g = rng(seed)
    rgb = g.random((3, h, w), dtype=np.float32)
    alpha = np.where(g.random((1, h, w)) < 0.2, 1.0, 0.02).astype(np.float32)
    return {"input": np.concatenate([rgb, alpha])}


# ---------------------------------------------------------------------------
# numpy reference
# ---------------------------------------------------------------------------
f32 = np.float32


def _down(p: Plane) -> Plane:
    """[1 2 1]/4 in x then y at half resolution, over the region the reads allow."""
    x0, x1 = -(-(p.x0 + 1) // 2), (p.x1 - 2) // 2 + 1
    y0, y1 = -(-(p.y0 + 1) // 2), (p.y1 - 2) // 2 + 1
    X, Y = np.arange(x0, x1)[None, :], np.arange(p.y0, p.y1)[:, None]
    dx = Plane((gather(p, 2 * X - 1, Y) + f32(2) * gather(p, 2 * X, Y)
                + gather(p, 2 * X + 1, Y)) * f32(0.25), x0, p.y0)
    Y = np.arange(y0, y1)[:, None]
    return Plane((gather(dx, X, 2 * Y - 1) + f32(2) * gather(dx, X, 2 * Y)
                  + gather(dx, X, 2 * Y + 1)) * f32(0.25), x0, y0)


def _up(p: Plane) -> Plane:
    """Average of the two nearest coarser pixels in x, then y."""
    x0, x1 = 2 * p.x0, 2 * (p.x1 - 1) + 1      # reads x/2 .. (x+1)/2
    y0, y1 = 2 * p.y0, 2 * (p.y1 - 1) + 1
    X, Y = np.arange(x0, x1)[None, :], np.arange(p.y0, p.y1)[:, None]
    ux = Plane((gather(p, X // 2, Y) + gather(p, (X + 1) // 2, Y)) / f32(2), x0, p.y0)
    Y = np.arange(y0, y1)[:, None]
    return Plane((gather(ux, X, Y // 2) + gather(ux, X, (Y + 1) // 2)) / f32(2), x0, y0)


def _common(a: Plane, b: Plane):
    x0, y0 = max(a.x0, b.x0), max(a.y0, b.y0)
    x1, y1 = min(a.x1, b.x1), min(a.y1, b.y1)
    return (a.crop(x0, y0, x1 - x0, y1 - y0), b.crop(x0, y0, x1 - x0, y1 - y0), x0, y0)


def numpy_reference(inputs, sizes, levels: int = 10):
    w, h = sizes[0], sizes[1]
    img = inputs["input"]
    W, H = img.shape[2], img.shape[1]
    m = 16
    e = edge_plane(img, -m, -m, W + m, H + m)
    pre = np.concatenate([e.arr[:3] * e.arr[3:4], e.arr[3:4]])
    down = [Plane(pre, e.x0, e.y0)]
    for l in range(1, levels):
        prev = down[l - 1]
        if l == 4:
            cw, ch = W // (1 << (l - 1)), H // (1 << (l - 1))
            m4 = 2 ** (levels - 3) + 8        # the deeper levels shrink by half each
            X = np.clip(np.arange(-m4, cw + m4), 0, cw)[None, :]
            Y = np.clip(np.arange(-m4, ch + m4), 0, ch)[:, None]
            prev = Plane(gather(prev, X, Y), -m4, -m4)
        down.append(_down(prev))
    interp = down[levels - 1]
    for l in range(levels - 2, -1, -1):
        d, u, x0, y0 = _common(down[l], _up(interp))
        interp = Plane(d + (f32(1.0) - d[3:4]) * u, x0, y0)
    out = interp.crop(0, 0, w, h)
    return out[:3] / out[3:4]


def hand_schedule(pipe):
    """After Halide's CPU schedule for ``apps/interpolate``: every downsampled level
    but the first at root, in 8-row strips run in parallel, each with its horizontal
    pass computed per strip; the upsampled levels ``interpolated_1`` .. at root the
    same way (Halide recomputes them inline; at root each is computed once); the
    output in 128 x 32 tiles, parallel over rows of tiles, ``interpolated_0``
    computed per tile; vectorized by 16 floats."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    L = 0
    while f"downsampled_{L}" in pipe.funcs:
        L += 1
    for l in range(1, L):
        s[f"downsampled_{l}"].compute_root().split("y", "yo", "y", 8) \
            .reorder("x", "y", "c", "yo").parallel("yo").vectorize("x", 16)
        s[f"downx_{l}"].compute_at(f"downsampled_{l}", "yo").vectorize("x", 16)
    for l in range(1, L - 1):
        s[f"interpolated_{l}"].compute_root().split("y", "yo", "y", 8) \
            .reorder("x", "y", "c", "yo").parallel("yo").vectorize("x", 16)
    s["normalize"].tile("x", "y", "xi", "yi", 128, 32).reorder("xi", "yi", "c", "x", "y") \
        .parallel("y").vectorize("xi", 16)
    s["interpolated_0"].compute_at("normalize", "x").vectorize("x", 16)
    return s
