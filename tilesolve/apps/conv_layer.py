"""CONV: one convolutional layer + ReLU, Halide's ``apps/conv_layer`` as used by
Mullapudi 2016 (the 2017 version of the app: ``x, y, z, n`` order).

    conv(x, y, z, n) = bias(z)
    conv(x, y, z, n) += filter(r.x, r.y, r.z, z) * input(x + r.x, y + r.y, r.z, n)
    relu(x, y, z, n) = max(0, conv(x, y, z, n))

RDom ``r`` = 3 x 3 x CI.  Output W x H x CO x N = 128 x 128 x 64 x 4 (paper),
CI = 64; the input is (W+2) x (H+2) x CI x N (no boundary condition).
2 Funcs, float32.  The numpy reference accumulates in the same order
(r.x fastest, then r.y, then r.z), so results agree to rounding.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import rng

PAPER_SIZE = [128, 128, 64, 4]
SMALL_SIZE = [12, 10, 8, 2]
SMALL_BUILD = {"in_channels": 6}


def build(sizes=None, in_channels: int = 64):
    x, y, z, n = M.Var("x"), M.Var("y"), M.Var("z"), M.Var("n")
    inp = M.ImageParam(M.float32, 4, "input")
    filt = M.ImageParam(M.float32, 4, "filter")
    bias = M.ImageParam(M.float32, 1, "bias")
    r = M.RDom((0, 3), (0, 3), (0, in_channels), name="r")
    conv = M.Func("conv")
    conv[x, y, z, n] = bias[z]
    conv[x, y, z, n] = conv[x, y, z, n] + filt[r.x, r.y, r.z, z] * inp[x + r.x, y + r.y, r.z, n]
    relu = M.Func("relu")
    relu[x, y, z, n] = M.max_(0, conv[x, y, z, n])
    w, h, co, nb = paper_or(sizes, PAPER_SIZE)
    est = {"relu": [w, h, co, nb], "input": [w + 2, h + 2, in_channels, nb],
           "filter": [3, 3, in_channels, co], "bias": [co]}
    return M.Pipeline(relu), est


def make_inputs(sizes, seed: int = 0, in_channels: int = 64):
    w, h, co, nb = sizes
    g = rng(seed)
    return {"input": g.standard_normal((nb, in_channels, h + 2, w + 2)).astype(np.float32),
            "filter": (g.standard_normal((co, in_channels, 3, 3)) / 8).astype(np.float32),
            "bias": g.standard_normal(co).astype(np.float32)}


def numpy_reference(inputs, sizes, in_channels: int = 64):
    w, h, co, nb = sizes
    a, f, b = inputs["input"], inputs["filter"], inputs["bias"]
    # acc[n, z, y, x]
    acc = np.broadcast_to(b[None, :, None, None], (nb, co, h, w)).astype(np.float32)
    for rz in range(in_channels):
        for ry in range(3):
            for rx in range(3):
                patch = a[:, rz, ry:ry + h, rx:rx + w]                 # [n, y, x]
                acc = acc + f[:, rz, ry, rx][None, :, None, None] * patch[:, None]
    return np.maximum(np.float32(0), acc)


def hand_schedule(pipe):
    """After Halide's CPU schedule for ``apps/conv_layer``, vectorized over ``x`` (the
    channel is not innermost here): ``relu`` in 32 x 4 blocks, parallel over
    (channel, batch); ``conv`` per block, its update with the block innermost (2
    vectors of 16 x 4 rows unrolled: 8 accumulators) and the RDom outside."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["relu"].split("x", "x", "xi", 32).split("y", "y", "yi", 4) \
        .reorder("xi", "yi", "x", "y", "z", "n").fuse("z", "n", "zn").parallel("zn") \
        .vectorize("xi", 16)
    s["conv"].compute_at("relu", "x").vectorize("x", 16)
    s["conv"].update(0).reorder("x", "y", "r.x", "r.y", "r.z", "z", "n").vectorize("x", 16) \
        .unroll("x", 2).unroll("y", 4)
    return s
