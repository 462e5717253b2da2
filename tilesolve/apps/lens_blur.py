"""LENSBLUR: synthetic depth of field from a stereo pair, Halide's ``apps/lens_blur``.

uint8 RGB left/right images in, float32 RGB out:

1. ``diff``/``cost``: a cost volume over ``slices`` disparities (squared
   colour differences, best of two sub-pixel offsets);
2. ``cost_confidence``: the variance of the cost across slices (two inline sums);
3. a push-pull pyramid (``pyramid_levels`` = 8) of confidence-weighted cost:
   [1 3 3 1] / 8 downsampling with a repeat-edge clamp at every level,
   bilinear upsampling blended 50/50 with the level below;
4. ``depth``: the slice of least filtered cost (Halide's ``argmin``);
5. ``bokeh_radius``, its square, and a separable max filter of it;
6. ``aperture_samples`` random offsets per pixel (Halide's hash ``random_float``)
   within the worst-case radius; each sample is weighted by whether its bokeh
   covers this pixel, and the weighted colours are averaged (alpha channel).

Params: ``slices`` (32), ``focus_depth`` (13), ``blur_radius_scale`` (0.5),
``aperture_samples`` (32).  Language gaps and their exact workarounds:
Tuples (``sample_locations`` is two Funcs, ``sample_u``/``sample_v``), ``argmin``
(``min_cost`` then the first slice reaching it: the same index), boundary
conditions on a Func with explicit bounds (written as clamps), ``random_float``
(``_common.random_float``: Halide's hash, tags 0 and 1), ``pow(e, 2)`` (``e * e``,
as Halide's simplifier emits).  71 Funcs (Mullapudi 2016: 74).  The numpy
reference (``lens_blur_ref.py``) compares with a float tolerance.
Paper size 992 x 1024 x 3 (Mullapudi 2016, Table 1).
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ..model.derived import lerp
from ._common import abs_same_type, absd, mux, paper_or, random_float
from ._npref import rng
from .lens_blur_ref import numpy_reference  # noqa: F401  (re-exported)

PAPER_SIZE = [992, 1024, 3]
SMALL_SIZE = [40, 32, 3]
PARAMS = {"slices": 32, "focus_depth": 13, "blur_radius_scale": 0.5, "aperture_samples": 32}

x, y, z, c = M.Var("x"), M.Var("y"), M.Var("z"), M.Var("c")


def _downsample(f, name):
    """[1 3 3 1] / 8 in x, then y (4-D: x, y, z, c)."""
    dx, dy = M.Func(f"{name}_downx"), M.Func(f"{name}_downy")
    dx[x, y, z, c] = (f[2 * x - 1, y, z, c] + 3.0 * (f[2 * x, y, z, c] + f[2 * x + 1, y, z, c])
                      + f[2 * x + 2, y, z, c]) / 8.0
    dy[x, y, z, c] = (dx[x, 2 * y - 1, z, c] + 3.0 * (dx[x, 2 * y, z, c] + dx[x, 2 * y + 1, z, c])
                      + dx[x, 2 * y + 2, z, c]) / 8.0
    return dy


def _upsample(f, name):
    ux, uy = M.Func(f"{name}_upx"), M.Func(f"{name}_upy")
    ux[x, y, z, c] = 0.25 * f[(x / 2) - 1 + 2 * (x % 2), y, z, c] + 0.75 * f[x / 2, y, z, c]
    uy[x, y, z, c] = 0.25 * ux[x, (y / 2) - 1 + 2 * (y % 2), z, c] + 0.75 * ux[x, y / 2, z, c]
    return uy


def _max_over(name, e):
    """Halide's inline ``maximum(e)`` over (x, y)."""
    f = M.Func(name)
    f[x, y] = float("-inf")
    f[x, y] = M.max_(f[x, y], e)
    return f


def build(sizes=None, pyramid_levels: int = 8):
    left_im = M.ImageParam(M.uint8, 3, "left_im")
    right_im = M.ImageParam(M.uint8, 3, "right_im")
    slices = M.Param(M.int32, "slices", PARAMS["slices"])
    focus = M.Param(M.int32, "focus_depth", PARAMS["focus_depth"])
    scale = M.Param(M.float32, "blur_radius_scale", PARAMS["blur_radius_scale"])
    samples = M.Param(M.int32, "aperture_samples", PARAMS["aperture_samples"])
    mbr = M.cast(M.int32, M.max_(slices - focus, focus) * scale)

    left, right = M.repeat_edge(left_im), M.repeat_edge(right_im)
    diff = M.Func("diff")
    diff[x, y, z, c] = M.min_(absd(left[x, y, c], right[x + 2 * z, y, c]),
                              absd(left[x, y, c], right[x + 2 * z + 1, y, c]))
    cost = M.Func("cost")
    d = [M.cast(M.float32, diff[x, y, z, i]) for i in range(3)]
    cost[x, y, z] = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]

    r = M.RDom((0, slices), name="r_slices")
    sum_sq, sum_mean = M.Func("cost_sq_sum"), M.Func("cost_mean_sum")
    sum_sq[x, y] = 0.0
    sum_sq[x, y] = sum_sq[x, y] + cost[x, y, r.x] * cost[x, y, r.x]
    sum_mean[x, y] = 0.0
    sum_mean[x, y] = sum_mean[x, y] + cost[x, y, r.x] / slices
    conf = M.Func("cost_confidence")
    conf[x, y] = sum_sq[x, y] / slices - sum_mean[x, y] * sum_mean[x, y]

    L = pyramid_levels
    push = [M.Func("cost_pyramid_push_0")]
    push[0][x, y, z, c] = mux(c, [cost[x, y, z] * conf[x, y], conf[x, y]])
    w, h = left_im.width(), left_im.height()
    for i in range(1, L):
        raw = M.Func(f"cost_pyramid_push_{i}")
        raw[x, y, z, c] = _downsample(push[i - 1], f"cost_pyramid_push_{i}")[x, y, z, c]
        w, h = w / 2, h / 2
        clamped = M.Func(f"cost_pyramid_push_{i}_repeat_edge")
        clamped[x, y, z, c] = raw[M.clamp(x, 0, w - 1), M.clamp(y, 0, h - 1), z, c]
        push.append(clamped)
    pull = [None] * L
    pull[L - 1] = M.Func(f"cost_pyramid_pull_{L - 1}")
    pull[L - 1][x, y, z, c] = push[L - 1][x, y, z, c]
    for i in range(L - 2, -1, -1):
        pull[i] = M.Func(f"cost_pyramid_pull_{i}")
        up = _upsample(pull[i + 1], f"cost_pyramid_pull_{i}")
        pull[i][x, y, z, c] = lerp(up[x, y, z, c], push[i][x, y, z, c], 0.5)
    filtered = M.Func("filtered_cost")
    filtered[x, y, z] = pull[0][x, y, z, 0] / pull[0][x, y, z, 1]

    # argmin over the slices: the least cost, then the first slice that reaches it
    rd = M.RDom((0, slices), name="r_depth")
    min_cost = M.Func("min_cost")
    min_cost[x, y] = float("inf")
    min_cost[x, y] = M.min_(min_cost[x, y], filtered[x, y, rd.x])
    depth = M.Func("depth")
    depth[x, y] = slices
    depth[x, y] = M.min_(depth[x, y],
                         M.select(filtered[x, y, rd.x] == min_cost[x, y], rd.x, slices))

    br = M.Func("bokeh_radius")
    br[x, y] = M.cast(M.float32, abs_same_type(depth[x, y] - focus)) * scale
    brs = M.Func("bokeh_radius_squared")
    brs[x, y] = br[x, y] * br[x, y]
    rm = M.RDom((-mbr, 2 * mbr + 1), name="r_max")
    wcy = _max_over("worst_case_bokeh_radius_y", br[x, y + rm.x])
    wc = _max_over("worst_case_bokeh_radius", wcy[x + rm.x, y])

    iwa = M.Func("input_with_alpha")
    iwa[x, y, c] = mux(c, [M.cast(M.float32, left[x, y, i]) for i in range(3)] + [255.0])

    su, sv = M.Func("sample_u"), M.Func("sample_v")
    for f, tag in ((su, 0), (sv, 1)):
        v = (random_float([z, y, x], tag) - 0.5) * 2 * wc[x, y]
        f[x, y, z] = M.clamp(M.cast(M.int32, v), -mbr, mbr)
    sx, sy = x + su[x, y, z], y + sv[x, y, z]
    r2 = su[x, y, z] * su[x, y, z] + sv[x, y, z] * sv[x, y, z]
    within_this = r2 < brs[x, y]
    within_sample = r2 < brs[sx, sy]
    in_front = depth[sx, sy] < depth[x, y]
    weight = M.Func("sample_weight")
    weight[x, y, z] = M.select((within_this | in_front) & within_sample, 1.0, 0.0)

    s = M.RDom((0, samples), name="s")
    out = M.Func("output")
    out[x, y, c] = iwa[x, y, c]
    out[x, y, c] = out[x, y, c] + weight[x, y, s.x] * iwa[x + su[x, y, s.x], y + sv[x, y, s.x], c]
    final = M.Func("final")
    final[x, y, c] = out[x, y, c] / out[x, y, 3]
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(final), {"final": sz, "left_im": sz, "right_im": sz}


def make_inputs(sizes, seed: int = 0, pyramid_levels: int = 8):
    """A random texture and its copy shifted by a per-region disparity."""
    w, h, ch = sizes
    p = dict(PARAMS)
    g = rng(seed)
    left = g.integers(0, 256, (ch, h, w))
    xx = np.arange(w)[None, :]
    yy = np.arange(h)[:, None]
    disp = (((xx * 3) // w + (yy * 2) // h) * max(1, p["slices"] // 6)) % p["slices"]
    src = np.clip(xx - 2 * disp, 0, w - 1)
    right = left[:, np.broadcast_to(yy, (h, w)), src]
    return {"left_im": left.astype(np.uint8), "right_im": right.astype(np.uint8), **p}


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/lens_blur``: the first cost pyramid level at
    root (``c``, ``z`` inside each 16-wide ``x`` step, 4 rows per parallel task) with
    the cost volume and its two sums computed per step; ``cost_pyramid_pull_1`` at
    root, parallel over slices, with the deeper push and pull levels computed per
    slice; the argmin (``min_cost``, ``depth``) and ``input_with_alpha`` at root, 8
    rows per parallel task; the output parallel over rows, with the worst-case bokeh
    radius per row and the sample offsets, weights and gather per 16-wide step.
    Updates run with ``x`` innermost; vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    L = 0
    while f"cost_pyramid_pull_{L}" in pipe.funcs:
        L += 1
    s["cost_pyramid_push_0"].compute_root().vectorize("x", 16) \
        .reorder("x_v", "c", "z", "x", "y").parallel("y", 4)
    s["cost"].compute_at("cost_pyramid_push_0", "x").vectorize("x", 16)
    for f in ("cost_sq_sum", "cost_mean_sum"):
        s[f].compute_at("cost_pyramid_push_0", "x").vectorize("x", 16)
        s[f].update(0).reorder("x", "y", "r_slices.x").vectorize("x", 16)
    s["cost_pyramid_pull_1"].compute_root().reorder("x", "y", "c", "z").parallel("z") \
        .vectorize("x", 16)
    for i in range(1, L):
        s[f"cost_pyramid_push_{i}"].compute_at("cost_pyramid_pull_1", "z").vectorize("x", 16)
        if i > 1:
            s[f"cost_pyramid_pull_{i}"].compute_at("cost_pyramid_pull_1", "z") \
                .vectorize("x", 16)
    for f in ("min_cost", "depth"):
        s[f].compute_root().parallel("y", 8).vectorize("x", 16)
        s[f].update(0).reorder("x", "y", "r_depth.x").parallel("y", 8).vectorize("x", 16)
    s["input_with_alpha"].compute_root().vectorize("x", 16).reorder("x_v", "c", "x", "y") \
        .parallel("y", 8)
    s["final"].vectorize("x", 16).reorder("x_v", "c", "x", "y").parallel("y")
    for f in ("worst_case_bokeh_radius_y", "worst_case_bokeh_radius"):
        s[f].compute_at("final", "y").vectorize("x", 16)
        s[f].update(0).reorder("x", "y", "r_max.x").vectorize("x", 16)
    s["output"].compute_at("final", "x").vectorize("x", 16)
    s["output"].update(0).reorder("x", "c", "s.x", "y").vectorize("x", 16)
    for f in ("sample_weight", "sample_u", "sample_v"):
        s[f].compute_at("final", "x").vectorize("x", 16)
    return s
