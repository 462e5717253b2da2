"""CAMERA: the Frankencamera raw pipeline of Halide's ``apps/camera_pipe``.

raw uint16 (W+32) x (H+48)  ->  uint8 W x H x 3, in stages:

1. ``shifted(x, y) = input(x+16, y+12)`` (padding so no boundary condition is needed);
2. hot-pixel suppression: clamp each pixel to the max of its 4 neighbours at distance 2;
3. deinterleave the GRBG Bayer mosaic into 4 half-resolution channels;
4. demosaic (edge-directed green, red/blue corrected with green's second
   derivative), interleave back to full resolution, int16 (``demosaic.py``);
5. colour correction with a 3x4 Q8.8 matrix interpolated between two calibrated
   matrices by inverse colour temperature;
6. gamma and contrast curve as a 1024-entry uint8 LUT (``curve``), applied by lookup;
7. sharpening: unsharp mask with a [1 2 1] blur, weighted by ``sharpen_strength``.

Inputs: ``input`` (uint16 raw), ``matrix_3200``/``matrix_7000`` (float32 4x3);
Params ``color_temp`` (3700), ``gamma`` (2.0), ``contrast`` (50),
``sharpen_strength`` (1.0), ``blackLevel`` (25), ``whiteLevel`` (1023).

Language gaps worked around: Halide's zero-dimensional ``sharpen_strength_x32()``
is a 1-D Func read at 0; ``absd``/``mux``/``avg`` are built from select and casts.
The numpy reference (``camera_pipe_ref.py``) recomputes every stage from the
same formulas over shrinking "valid" regions; integer output, compared exactly.
35 Funcs (Mullapudi 2016: 30).  Paper size: output 2560 x 1920 x 3.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import avg_round_up as avg
from ._common import mux, paper_or
from ._npref import rng
from .camera_pipe_ref import numpy_reference  # noqa: F401  (re-exported)
from .demosaic import demosaic

PAPER_SIZE = [2560, 1920, 3]
SMALL_SIZE = [64, 48, 3]
PARAMS = {"color_temp": 3700.0, "gamma": 2.0, "contrast": 50.0, "sharpen_strength": 1.0,
          "blackLevel": 25, "whiteLevel": 1023}
MATRIX_3200 = [[1.6697, -0.2693, -0.4004, -42.4346],
               [-0.3576, 1.0615, 1.5949, -37.1158],
               [-0.2175, -1.8751, 6.9640, -26.6970]]
MATRIX_7000 = [[2.2997, -0.4478, 0.1706, -39.0923],
               [-0.3826, 1.5906, -0.2080, -25.4311],
               [-0.0888, -0.7344, 2.2832, -20.0826]]


def build(sizes=None):
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    raw = M.ImageParam(M.uint16, 2, "input")
    m3200 = M.ImageParam(M.float32, 2, "matrix_3200")
    m7000 = M.ImageParam(M.float32, 2, "matrix_7000")
    P = {n: M.Param(M.float32, n, PARAMS[n])
         for n in ("color_temp", "gamma", "contrast", "sharpen_strength")}
    black = M.Param(M.int32, "blackLevel", PARAMS["blackLevel"])
    white = M.Param(M.int32, "whiteLevel", PARAMS["whiteLevel"])

    shifted = M.Func("shifted")
    shifted[x, y] = raw[x + 16, y + 12]

    denoised = M.Func("denoised")         # hot pixel suppression
    a = M.max_(M.max_(M.max_(shifted[x - 2, y], shifted[x + 2, y]), shifted[x, y - 2]),
               shifted[x, y + 2])
    denoised[x, y] = M.clamp(shifted[x, y], 0, a)

    deint = M.Func("deinterleaved")
    deint[x, y, c] = mux(c, [denoised[2 * x, 2 * y], denoised[2 * x + 1, 2 * y],
                             denoised[2 * x, 2 * y + 1], denoised[2 * x + 1, 2 * y + 1]])

    demosaiced = demosaic(deint)

    # colour correction
    matrix = M.Func("matrix")
    kelvin = P["color_temp"]
    alpha = (1.0 / kelvin - 1.0 / 3200) / (1.0 / 7000 - 1.0 / 3200)
    val = m3200[x, y] * alpha + m7000[x, y] * (1 - alpha)
    matrix[x, y] = M.cast(M.int16, val * 256.0)          # Q8.8 fixed point
    ir, ig, ib = (M.cast(M.int32, demosaiced[x, y, i]) for i in range(3))
    chans = [M.cast(M.int16, (matrix[3, j] + matrix[0, j] * ir + matrix[1, j] * ig
                              + matrix[2, j] * ib) / 256) for j in range(3)]
    corrected = M.Func("corrected")
    corrected[x, y, c] = mux(c, chans)

    # tone curve LUT
    curve = M.Func("curve")
    inv_range = 1.0 / (white - black)
    b = 2.0 - M.pow_(2.0, P["contrast"] / 100.0)
    a = 2.0 - 2.0 * b
    xf = M.clamp(M.cast(M.float32, x - black) * inv_range, 0.0, 1.0)
    g = M.pow_(xf, 1.0 / P["gamma"])
    z = M.select(g > 0.5, 1.0 - (a * (1.0 - g) * (1.0 - g) + b * (1.0 - g)), a * g * g + b * g)
    lut_val = M.cast(M.uint8, M.clamp(z * 255.0 + 0.5, 0.0, 255.0))
    curve[x] = M.select(x <= black, 0, M.select(x > white, 255, lut_val))
    curved = M.Func("curved")
    curved[x, y, c] = curve[M.clamp(corrected[x, y, c], 0, 1023)]

    # sharpen
    strength = M.Func("sharpen_strength_x32")   # zero-dimensional in Halide
    strength[M.Var("_")] = M.saturating_cast(M.uint8, P["sharpen_strength"] * 32)

    def blur121(p, q, r):
        return avg(avg(p, r), q)
    unsharp_y = M.Func("unsharp_y")
    unsharp_y[x, y, c] = blur121(curved[x, y - 1, c], curved[x, y, c], curved[x, y + 1, c])
    unsharp = M.Func("unsharp")
    unsharp[x, y, c] = blur121(unsharp_y[x - 1, y, c], unsharp_y[x, y, c], unsharp_y[x + 1, y, c])
    mask = M.Func("mask")
    mask[x, y, c] = M.cast(M.int16, curved[x, y, c]) - M.cast(M.int16, unsharp[x, y, c])
    sharpened = M.Func("sharpened")
    sharpened[x, y, c] = M.saturating_cast(
        M.uint8, curved[x, y, c] + (mask[x, y, c] * strength[0]) / 32)
    processed = M.Func("processed")
    processed[x, y, c] = sharpened[x, y, c]

    w, h, ch = paper_or(sizes, PAPER_SIZE)
    est = {"processed": [w, h, ch], "input": [w + 32, h + 48],
           "matrix_3200": [4, 3], "matrix_7000": [4, 3]}
    return M.Pipeline(processed), est


def make_inputs(sizes, seed: int = 0):
    """A synthetic raw frame: a smooth scene, Bayer-sampled, with noise and hot pixels."""
    w, h = sizes[0], sizes[1]
    W, H = w + 32, h + 48
    g = rng(seed)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    scene = 160 + 130 * np.sin(xx / 7.0) * np.cos(yy / 11.0)
    raw = scene + g.normal(0, 20, (H, W))
    hot = g.random((H, W)) < 0.01
    raw[hot] = 1023
    raw = np.clip(raw, 0, 1023).astype(np.uint16)
    out = {"input": raw,
           "matrix_3200": np.array(MATRIX_3200, np.float32),
           "matrix_7000": np.array(MATRIX_7000, np.float32)}
    out.update(PARAMS)
    return out


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/camera_pipe`` with tiles in place of its
    sliding windows and folded storage: ``matrix``, the ``curve`` LUT and the sharpen
    strength at root; ``processed`` in 128 x 32 tiles (channels inside a tile),
    parallel over rows of tiles; the hot-pixel filter, the deinterleaved channels,
    demosaic's ``g_r``/``g_b`` and output, the curved image and the unsharp blur's
    first pass computed per tile; everything vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    for f in ("matrix", "curve", "sharpen_strength_x32"):
        s[f].compute_root()
    s["processed"].tile("x", "y", "xi", "yi", 128, 32).reorder("xi", "c", "yi", "x", "y") \
        .parallel("y").vectorize("xi", 16)
    for f in ("denoised", "deinterleaved", "g_r", "g_b", "demosaiced", "curved", "unsharp_y"):
        s[f].compute_at("processed", "x").vectorize("x", 16)
    return s
