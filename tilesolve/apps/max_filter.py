"""MAXFILTER: circular max filter of Halide's ``apps/max_filter`` (Mullapudi 2016, Table 1).

float32 RGB, radius 26 (a build parameter), repeat-edge input:

* ``vert_log(x, y, c, t)``: max over ``[y, y + 2^t)`` for ``t`` in ``[0, slices)``,
  built by an update over an RDom (rows x slices) that reads slice ``t - 1``
  of itself -- a scan;
* ``slice_for_radius(t) = floor(log2(2t + 1))``;
* ``vert(x, y, c, t)``: max over ``[y - t, y + t]`` from two overlapping
  ``vert_log`` samples;
* ``filter_height(dx)``: number of rows of the disc at column offset ``dx``
  (an inline ``sum``);
* ``output = maximum over dx of vert(x + dx, y, c, filter_height(dx))`` (an update over dx).

The language has no ``<<``: ``1 << e`` is a select chain (``pow2_int``).
7 Funcs (Mullapudi 2016: 9).  The numpy reference takes the max over the
same windows directly from the repeat-edge image; exact comparison (max of
float32 values).  Paper size 1536 x 2560 x 3.
"""
from __future__ import annotations

import math

import numpy as np

from .. import model as M
from ._common import paper_or, pow2_int
from ._npref import edge_plane, rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [64, 48, 3]
SMALL_BUILD = {"radius": 6}


def _slices(radius: int) -> int:
    return int(math.ceil(math.log(radius) / math.log(2))) + 1


def build(sizes=None, radius: int = 26):
    x, y, c, t = M.Var("x"), M.Var("y"), M.Var("c"), M.Var("t")
    src = M.ImageParam(M.float32, 3, "input")
    inp = M.repeat_edge(src)
    slices = _slices(radius)

    vert_log = M.Func("vert_log")
    vert_log[x, y, c, t] = inp[x, y, c]
    r = M.RDom((-radius, src.height() + radius), (1, slices - 1), name="r")
    step = M.clamp(pow2_int(r.y - 1, slices), 0, radius * 2)
    vert_log[x, r.x, c, r.y] = M.max_(vert_log[x, r.x, c, r.y - 1],
                                      vert_log[x, r.x + step, c, r.y - 1])

    slice_for_radius = M.Func("slice_for_radius")
    slice_for_radius[t] = M.cast(M.int32, M.floor(M.log(2 * t + 1) / math.log(2)))

    vert = M.Func("vert")
    sl = M.clamp(slice_for_radius[t], 0, slices)
    first = vert_log[x, y - t, c, sl]
    second = vert_log[x, y + t + 1 - M.clamp(pow2_int(sl, slices), 0, 2 * radius), c, sl]
    vert[x, y, c, t] = M.max_(first, second)

    filter_height = M.Func("filter_height")
    dy = M.RDom((0, radius + 1), name="dy")
    filter_height[x] = M.sum(M.select(x * x + dy.x * dy.x < (radius + 0.25) * (radius + 0.25), 1, 0),
                             name="filter_height_sum")

    dx = M.RDom((-radius, 2 * radius + 1), name="dx")
    # Halide's inline ``maximum``, written out so that the Func keeps the (x, y, c)
    # order (ts.maximum would order its free Vars by name: c, x, y)
    out = M.Func("output")
    out[x, y, c] = float("-inf")
    out[x, y, c] = M.max_(out[x, y, c],
                          vert[x + dx.x, y, c, M.clamp(filter_height[dx.x], 0, radius + 1)])
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0, radius: int = 26):
    """Dim noise with sparse bright peaks, so the output shows each peak's disc."""
    w, h, ch = sizes
    g = rng(seed)
    img = 0.3 * g.random((ch, h, w))
    peaks = g.random((ch, h, w)) < 0.004
    img[peaks] = 0.5 + 0.5 * g.random(int(peaks.sum()))
    return {"input": img.astype(np.float32)}


def numpy_reference(inputs, sizes, radius: int = 26):
    """Max of the repeat-edge image over, for each dx, the rows [y - t(dx), y + t(dx)]."""
    img = inputs["input"]
    w, h, _ = sizes
    R = radius
    rr = np.float32(R + 0.25) * np.float32(R + 0.25)
    heights = [sum(1 for d in range(R + 1) if np.float32(dx * dx + d * d) < rr)
               for dx in range(-R, R + 1)]
    m = R + 2
    p = edge_plane(img, -m, -m, w + m, h + m).arr            # index = coord + m
    out = np.full((img.shape[0], h, w), -np.inf, np.float32)
    for dx, t in zip(range(-R, R + 1), heights):
        t = min(max(t, 0), R + 1)
        col = p[:, :, m + dx:m + dx + w]
        v = col[:, m - t:m - t + h]
        for d in range(-t + 1, t + 1):
            v = np.maximum(v, col[:, m + d:m + d + h])
        out = np.maximum(out, v)
    return out


def hand_schedule(pipe):
    """After Halide's CPU schedule for ``apps/max_filter``: the small LUTs at root;
    ``vert_log`` at root (Halide computes it per 256-column strip of the output, but
    here the output's update reads it, which allows only root), in 256-column strips
    run in parallel, its scan with ``x`` innermost; ``vert`` inlined; the output 8
    rows per parallel task, its update with ``x`` inside ``dx``; vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    for f in ("slice_for_radius", "filter_height_sum", "filter_height"):
        s[f].compute_root()
    s["vert_log"].compute_root().split("x", "xo", "x", 256).reorder("x", "y", "c", "t", "xo") \
        .parallel("xo").vectorize("x", 16)
    s["vert_log"].update(0).split("x", "xo", "x", 256).reorder("x", "r.x", "r.y", "c", "xo") \
        .parallel("xo").vectorize("x", 16)
    s["output"].parallel("y", 8).vectorize("x", 16)
    s["output"].update(0).reorder("x", "dx.x", "y", "c").parallel("y", 8).vectorize("x", 16)
    return s
