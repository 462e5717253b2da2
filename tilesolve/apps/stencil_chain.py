"""STENCIL_CHAIN: a chain of 5x5 stencils, Halide's ``apps/stencil_chain``.

    stage_0 = input (repeat_edge)
    stage_s(x, y) = sum_{i, j = -2..2} w(i, j) * stage_{s-1}(x + i, y + j)
    output = stage_{S}

``S`` = 32 stages (a build parameter).  Halide's app is uint16 with weights
``(i + 3)(j + 3)`` (sums wrap); ``dtype="uint16"`` gives exactly that.  The
default here is float32 with the same weights divided by 225 (their sum),
so values stay bounded over 32 stages.  S + 2 Funcs.  The numpy reference
applies the same sums in the same order.  Paper size 1536 x 2560.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import edge_plane, rng

PAPER_SIZE = [1536, 2560]
SMALL_SIZE = [48, 40]
SMALL_BUILD = {"stages": 8}


def _weight(i, j, dtype):
    return (i + 3) * (j + 3) if dtype == "uint16" else (i + 3) * (j + 3) / 225.0


def build(sizes=None, stages: int = 32, dtype: str = "float32"):
    x, y = M.Var("x"), M.Var("y")
    t = M.types.type_named(dtype)
    inp = M.ImageParam(t, 2, "input")
    prev = M.repeat_edge(inp)
    for s in range(stages):
        f = M.Func(f"stage_{s}")
        e = M.cast(t, 0)
        for i in range(-2, 3):
            for j in range(-2, 3):
                e = e + _weight(i, j, dtype) * prev[x + i, y + j]
        f[x, y] = e
        prev = f
    out = M.Func("output")
    out[x, y] = prev[x, y]
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0, stages: int = 32, dtype: str = "float32"):
    w, h = sizes
    g = rng(seed)
    if dtype == "uint16":
        return {"input": g.integers(0, 1 << 16, (h, w)).astype(np.uint16)}
    return {"input": g.random((h, w), dtype=np.float32)}


def numpy_reference(inputs, sizes, stages: int = 32, dtype: str = "float32"):
    w, h = sizes
    img = inputs["input"]
    m = 2 * stages
    cur = edge_plane(img, -m, -m, w + m, h + m).arr
    tp = img.dtype.type
    for _ in range(stages):
        H, W = cur.shape
        e = np.zeros((H - 4, W - 4), img.dtype)
        for i in range(-2, 3):
            for j in range(-2, 3):
                e = e + tp(_weight(i, j, dtype)) * cur[2 + j:H - 2 + j, 2 + i:W - 2 + i]
        cur = e
    return cur


def hand_schedule(pipe, group: int = 8, tile=(256, 64)):
    """Halide's CPU schedule for ``apps/stencil_chain``: the stages in groups of
    ``group`` (Halide: 11) counted back from the output; the last stage of each group
    is computed at root in ``tile`` tiles, parallel over rows of tiles, and the other
    stages of its group are computed per tile (overlapped tiles, as tilesolve has no
    sliding window; the margin grows by 2 pixels a stage).  The final stage is
    inlined into ``output``.  Everything vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    n = sum(1 for name in pipe.funcs if name.startswith("stage_"))
    out, last = "output", n - 1
    while True:
        h = s[out]
        if out != "output":
            h.compute_root()
        h.tile("x", "y", "xi", "yi", tile[0], tile[1]).parallel("y").vectorize("xi", 16)
        first = max(0, last - group + 1)
        for i in range(first, last):
            s[f"stage_{i}"].compute_at(out, "x").vectorize("x", 16)
        if first == 0:
            return s
        last = first - 1
        out = f"stage_{last}"
