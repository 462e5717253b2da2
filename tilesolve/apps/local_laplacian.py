"""LOCAL_LAP: local Laplacian filter of Halide's ``apps/local_laplacian`` (Paris et al. 2011).

uint16 RGB in and out.  With ``J`` pyramid levels (8) and ``levels`` intensity
levels (a Param, 8):

* ``remap(i) = alpha * f * exp(-f^2 / 2)``, ``f = i / 256`` (a lookup Func);
* ``gray`` = luminance of the repeat-edge input scaled to [0, 1];
* ``gPyramid[0](x, y, k)``: gray remapped around intensity level ``k``;
  ``gPyramid[j]`` its Gaussian pyramid (downsample [1 3 3 1]/8 in y then x);
* ``lPyramid[j]`` its Laplacian pyramid (bilinear upsampling);
* ``inGPyramid[j]``: Gaussian pyramid of gray;
* ``outLPyramid[j]``: ``lPyramid[j]`` interpolated between the two levels
  that bracket ``inGPyramid[j]`` (a data-dependent read);
* ``outGPyramid``: collapse of the output Laplacian pyramid;
* ``output = uint16(clamp(input * (outG + 0.01) / (gray + 0.01), 0, 65535))``.

Funcs: 102 for J = 8 (Mullapudi 2016: 103).  Params: ``levels`` (int32, 8),
``alpha`` (float32, 1/7 as Halide's ``process`` passes ``alpha / (levels-1)``),
``beta`` (float32, 1).  The numpy reference recomputes every pyramid over a
region that shrinks exactly as the reads require; the uint16 output is
compared exactly (both compute the same float32 operations).
Paper size 1536 x 2560 x 3.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ..model.derived import lerp
from ._common import paper_or
from ._npref import Plane, edge_plane, gather, rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [64, 48, 3]
PARAMS = {"levels": 8, "alpha": 1.0 / 7, "beta": 1.0}
SMALL_BUILD = {"pyramid_levels": 4}


def _vars(n):
    return (M.Var("x"), M.Var("y"), M.Var("k"))[:n]


def _downsample(f, n, name):
    """[1 3 3 1] / 8 in y, then in x, at half resolution (n = 2 or 3 dims)."""
    x, y, *k = _vars(n)
    downy, downx = M.Func(f"{name}_downy"), M.Func(f"{name}_downx")
    downy[(x, y, *k)] = (f[(x, 2 * y - 1, *k)] + 3.0 * (f[(x, 2 * y, *k)] + f[(x, 2 * y + 1, *k)])
                         + f[(x, 2 * y + 2, *k)]) / 8.0
    downx[(x, y, *k)] = (downy[(2 * x - 1, y, *k)]
                         + 3.0 * (downy[(2 * x, y, *k)] + downy[(2 * x + 1, y, *k)])
                         + downy[(2 * x + 2, y, *k)]) / 8.0
    return downx


def _upsample(f, n, name):
    """Bilinear upsampling in x, then in y."""
    x, y, *k = _vars(n)
    upx, upy = M.Func(f"{name}_upx"), M.Func(f"{name}_upy")
    upx[(x, y, *k)] = lerp(f[((x + 1) / 2, y, *k)], f[((x - 1) / 2, y, *k)],
                           ((x % 2) * 2 + 1) / 4.0)
    upy[(x, y, *k)] = lerp(upx[(x, (y + 1) / 2, *k)], upx[(x, (y - 1) / 2, *k)],
                           ((y % 2) * 2 + 1) / 4.0)
    return upy


def _copy(name, src, n):
    f = M.Func(name)
    vs = _vars(n)
    f[vs] = src[vs]
    return f


def build(sizes=None, pyramid_levels: int = 8):
    J = pyramid_levels
    x, y, k = _vars(3)
    c = M.Var("c")
    inp = M.ImageParam(M.uint16, 3, "input")
    levels = M.Param(M.int32, "levels", PARAMS["levels"])
    alpha = M.Param(M.float32, "alpha", PARAMS["alpha"])
    beta = M.Param(M.float32, "beta", PARAMS["beta"])

    remap = M.Func("remap")
    fx = M.cast(M.float32, x) / 256.0
    remap[x] = alpha * fx * M.exp(-fx * fx / 2.0)
    clamped = M.repeat_edge(inp)
    floating = M.Func("floating")
    floating[x, y, c] = clamped[x, y, c] / 65535.0
    gray = M.Func("gray")
    gray[x, y] = 0.299 * floating[x, y, 0] + 0.587 * floating[x, y, 1] + 0.114 * floating[x, y, 2]

    g = [M.Func(f"gPyramid_{j}") for j in range(J)]
    level = k * (1.0 / (levels - 1))
    idx = gray[x, y] * M.cast(M.float32, levels - 1) * 256.0
    idx = M.clamp(M.cast(M.int32, idx), 0, (levels - 1) * 256)
    g[0][x, y, k] = beta * (gray[x, y] - level) + level + remap[idx - 256 * k]
    for j in range(1, J):
        d = _downsample(g[j - 1], 3, f"gPyramid_{j}")
        g[j][x, y, k] = d[x, y, k]

    lp = [M.Func(f"lPyramid_{j}") for j in range(J)]
    lp[J - 1][x, y, k] = g[J - 1][x, y, k]
    for j in range(J - 2, -1, -1):
        lp[j][x, y, k] = g[j][x, y, k] - _upsample(g[j + 1], 3, f"lPyramid_{j}")[x, y, k]

    ing = [_copy("inGPyramid_0", gray, 2)]
    for j in range(1, J):
        ing.append(_copy(f"inGPyramid_{j}", _downsample(ing[j - 1], 2, f"inGPyramid_{j}"), 2))

    outl = []
    for j in range(J):
        lv = ing[j][x, y] * M.cast(M.float32, levels - 1)
        li = M.clamp(M.cast(M.int32, lv), 0, levels - 2)
        lf = lv - M.cast(M.float32, li)
        f = M.Func(f"outLPyramid_{j}")
        f[x, y] = (1.0 - lf) * lp[j][x, y, li] + lf * lp[j][x, y, li + 1]
        outl.append(f)

    outg = [None] * J
    outg[J - 1] = _copy(f"outGPyramid_{J - 1}", outl[J - 1], 2)
    for j in range(J - 2, -1, -1):
        f = M.Func(f"outGPyramid_{j}")
        f[x, y] = _upsample(outg[j + 1], 2, f"outGPyramid_{j}")[x, y] + outl[j][x, y]
        outg[j] = f

    color = M.Func("color")
    eps = 0.01
    color[x, y, c] = inp[x, y, c] * (outg[0][x, y] + eps) / (gray[x, y] + eps)
    out = M.Func("output")
    out[x, y, c] = M.cast(M.uint16, M.clamp(color[x, y, c], 0.0, 65535.0))
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0, pyramid_levels: int = 8):
    w, h, ch = sizes
    g = rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = 0.5 + 0.3 * np.sin(xx / 5.0)[None] * np.cos(yy / 9.0)[None] + 0.1 * g.random((ch, h, w))
    out = {"input": np.clip(base * 65535, 0, 65535).astype(np.uint16)}
    out.update(PARAMS)
    return out


# ---------------------------------------------------------------------------
# numpy reference
# ---------------------------------------------------------------------------
f32 = np.float32


def _np_down(p: Plane) -> Plane:
    def d(lo, n):            # half-res range whose reads 2x-1 .. 2x+2 stay in [lo, lo+n)
        a = -(-(lo + 1) // 2)
        b = (lo + n - 3) // 2
        return a, b + 1
    x0, x1 = d(p.x0, p.x1 - p.x0)
    y0, y1 = d(p.y0, p.y1 - p.y0)
    Y = np.arange(y0, y1)[:, None]
    X = np.arange(p.x0, p.x1)[None, :]
    dy = (gather(p, X, 2 * Y - 1) + f32(3) * (gather(p, X, 2 * Y) + gather(p, X, 2 * Y + 1))
          + gather(p, X, 2 * Y + 2)) / f32(8)
    py = Plane(dy, p.x0, y0)
    X = np.arange(x0, x1)[None, :]
    Y = np.arange(y0, y1)[:, None]
    dx = (gather(py, 2 * X - 1, Y) + f32(3) * (gather(py, 2 * X, Y) + gather(py, 2 * X + 1, Y))
          + gather(py, 2 * X + 2, Y)) / f32(8)
    return Plane(dx, x0, y0)


def _np_lerp(a, b, w):
    return a * (f32(1) - w) + b * w


def _np_up(p: Plane) -> Plane:
    x0, x1 = 2 * p.x0 + 1, 2 * (p.x1 - 1) + 1          # reads (x-1)/2 .. (x+1)/2
    y0, y1 = 2 * p.y0 + 1, 2 * (p.y1 - 1) + 1
    X = np.arange(x0, x1)[None, :]
    Y = np.arange(p.y0, p.y1)[:, None]
    wx = ((X % 2) * 2 + 1).astype(f32) / f32(4)
    ux = Plane(_np_lerp(gather(p, (X + 1) // 2, Y), gather(p, (X - 1) // 2, Y), wx), x0, p.y0)
    X = np.arange(x0, x1)[None, :]
    Y = np.arange(y0, y1)[:, None]
    wy = ((Y % 2) * 2 + 1).astype(f32) / f32(4)
    return Plane(_np_lerp(gather(ux, X, (Y + 1) // 2), gather(ux, X, (Y - 1) // 2), wy), x0, y0)


def _sub(a: Plane, b: Plane, op) -> Plane:
    """``op(a, b)`` over the common region of two Planes."""
    x0, y0 = max(a.x0, b.x0), max(a.y0, b.y0)
    x1, y1 = min(a.x1, b.x1), min(a.y1, b.y1)
    return Plane(op(a.crop(x0, y0, x1 - x0, y1 - y0), b.crop(x0, y0, x1 - x0, y1 - y0)), x0, y0)


def _margin(J: int, ns) -> int:
    """The smallest level-0 margin for which the collapsed pyramid covers [0, n) for each n."""
    def down(a, b):
        return -(-(a + 1) // 2), (b - 2) // 2

    def up(a, b):
        return 2 * a + 1, 2 * b

    def meet(p, q):
        return max(p[0], q[0]), min(p[1], q[1])
    def covers(m, n):
        g = [(-m, n - 1 + m)]
        for _ in range(1, J):
            g.append(down(*g[-1]))
        out = g[J - 1]
        for j in range(J - 2, -1, -1):
            lp = meet(g[j], up(*g[j + 1]))          # lPyramid; inGPyramid has g's region
            out = meet(up(*out), lp)
        return out[0] <= 0 and out[1] >= n - 1
    for m in range(1, 4 * 2 ** J):
        if all(covers(m, n) for n in ns):
            return m
    raise AssertionError("no margin found")


def numpy_reference(inputs, sizes, pyramid_levels: int = 8):
    J = pyramid_levels
    w, h, _ = sizes
    L = int(inputs["levels"])
    alpha, beta = f32(inputs["alpha"]), f32(inputs["beta"])
    img = inputs["input"]
    m = _margin(J, (w, h))
    fl = edge_plane(img, -m, -m, w + m, h + m)
    fa = fl.arr / f32(65535.0)
    gray = Plane(f32(0.299) * fa[0] + f32(0.587) * fa[1] + f32(0.114) * fa[2], fl.x0, fl.y0)
    ks = np.arange(L).reshape(L, 1, 1)
    level = ks.astype(f32) * (f32(1.0) / f32(L - 1))
    idx = np.clip((gray.arr * f32(L - 1) * f32(256.0)).astype(np.int32), 0, (L - 1) * 256)
    fx = (idx[None] - 256 * ks).astype(f32) / f32(256.0)
    remap = alpha * fx * np.exp(-fx * fx / f32(2.0))
    g = [Plane(beta * (gray.arr[None] - level) + level + remap, gray.x0, gray.y0)]
    ing = [gray]
    for j in range(1, J):
        g.append(_np_down(g[-1]))
        ing.append(_np_down(ing[-1]))
    lp = [None] * J
    lp[J - 1] = g[J - 1]
    for j in range(J - 2, -1, -1):
        lp[j] = _sub(g[j], _np_up(g[j + 1]), lambda a, b: a - b)
    outl = []
    for j in range(J):
        def interp(lpj, gj):
            lv = gj * f32(L - 1)
            li = np.clip(lv.astype(np.int32), 0, L - 2)
            lf = lv - li.astype(f32)
            lo = np.take_along_axis(lpj, li[None], 0)[0]
            hi = np.take_along_axis(lpj, li[None] + 1, 0)[0]
            return (f32(1.0) - lf) * lo + lf * hi
        outl.append(_sub(lp[j], ing[j], interp))
    outg = outl[J - 1]
    for j in range(J - 2, -1, -1):
        outg = _sub(_np_up(outg), outl[j], lambda a, b: a + b)
    og = outg.crop(0, 0, w, h)
    gr = gray.crop(0, 0, w, h)
    color = img * (og + f32(0.01)) / (gr + f32(0.01))
    return np.clip(color, f32(0), f32(65535)).astype(np.uint16)


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/local_laplacian``: ``remap`` and ``gray`` at
    root; levels 1-4 of the input and remapped Gaussian pyramids at root, parallel
    over strips of rows (``gPyramid`` with ``k`` inside ``y``), each level's vertical
    downsampling computed per strip (Halide clones ``gPyramid[0]`` into level 1;
    here it is inlined there and computed once per strip as the first pass); deeper
    levels at root, parallel over ``k``; the output in 32-row strips, parallel, with
    every level of the collapsed output pyramid but the coarsest computed per strip.
    Vectorized by 16 floats."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    J = 0
    while f"gPyramid_{J}" in pipe.funcs:
        J += 1
    s["remap"].compute_root()
    s["output"].split("y", "yo", "y", 32).reorder("x", "c", "y", "yo").parallel("yo") \
        .vectorize("x", 16)
    s["gray"].compute_root().parallel("y", 16).vectorize("x", 16)
    for j in range(1, J):
        g = s[f"gPyramid_{j}"].compute_root().reorder("x", "k", "y")
        ing = s[f"inGPyramid_{j}"].compute_root()
        if j < 5:
            g.split("y", "yo", "y", 8).parallel("yo").vectorize("x", 16)
            ing.parallel("y", 8).vectorize("x", 16)
            s[f"gPyramid_{j}_downy"].compute_at(f"gPyramid_{j}", "yo").vectorize("x", 16)
            s[f"inGPyramid_{j}_downy"].compute_at(f"inGPyramid_{j}", "y").vectorize("x", 16)
        else:
            g.parallel("k")
    for j in range(J - 1):
        s[f"outGPyramid_{j}"].compute_at("output", "yo").vectorize("x", 16)
    s[f"outGPyramid_{J - 1}"].compute_root()
    return s
