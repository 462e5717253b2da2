"""IIR: first-order recursive low-pass filter of Halide's ``apps/iir_blur`` (Sioutas 2020).

Each pass blurs the columns with a causal then an anti-causal first-order
IIR filter and transposes; two passes blur y then x:

    blur(x, 0, c)    = in(x, 0, c)
    blur(x, ry, c)   = (1 - alpha) blur(x, ry - 1, c) + alpha in(x, ry, c)       ry = 1 .. H-1
    blur(x, fy, c)   = (1 - alpha) blur(x, fy + 1, c) + alpha blur(x, fy, c)     fy = H-2 .. 0
    transpose(x, y, c) = blur(y, x, c)

Halide's pure definition is ``undef`` (no initialisation); the language has
no ``undef``, so here it is ``0.0``, which every point then overwrites.
4 Funcs (blur_cols_0, transpose_0, blur_cols_1, output), float32, ``alpha``
a Param (0.1).  No boundary condition: the output has the input's size.
The numpy reference runs the same recurrences row by row; float tolerance.
Paper size 1536 x 2560 x 3.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import rng

PAPER_SIZE = [1536, 2560, 3]
SMALL_SIZE = [40, 32, 3]
PARAMS = {"alpha": 0.1}


def _blur_cols_transpose(src, height, alpha, k, out_name=None):
    x, y, c = M.Var("x"), M.Var("y"), M.Var("c")
    blur = M.Func(f"blur_cols_{k}")
    blur[x, y, c] = 0.0                                   # Halide: undef
    blur[x, 0, c] = src[x, 0, c]
    ry = M.RDom((1, height - 1), name=f"ry_{k}")
    blur[x, ry.x, c] = (1 - alpha) * blur[x, ry.x - 1, c] + alpha * src[x, ry.x, c]
    flip = height - ry.x - 1
    blur[x, flip, c] = (1 - alpha) * blur[x, flip + 1, c] + alpha * blur[x, flip, c]
    tr = M.Func(out_name or f"transpose_{k}")
    tr[x, y, c] = blur[y, x, c]
    return tr


def build(sizes=None):
    inp = M.ImageParam(M.float32, 3, "input")
    alpha = M.Param(M.float32, "alpha", PARAMS["alpha"])
    blury_t = _blur_cols_transpose(inp, inp.height(), alpha, 0)
    out = _blur_cols_transpose(blury_t, inp.width(), alpha, 1, "output")
    sz = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(out), {"output": sz, "input": sz}


def make_inputs(sizes, seed: int = 0):
    w, h, ch = sizes
    return {"input": rng(seed).random((ch, h, w), dtype=np.float32), **PARAMS}


def _np_blur_cols(a, alpha):
    """The causal + anti-causal column filter of ``a[c, y, x]`` along y."""
    one = np.float32(1)
    b = a.copy()
    for yy in range(1, a.shape[1]):
        b[:, yy] = (one - alpha) * b[:, yy - 1] + alpha * a[:, yy]
    for yy in range(a.shape[1] - 2, -1, -1):
        b[:, yy] = (one - alpha) * b[:, yy + 1] + alpha * b[:, yy]
    return b


def numpy_reference(inputs, sizes):
    alpha = np.float32(inputs["alpha"])
    a = inputs["input"]
    t = np.swapaxes(_np_blur_cols(a, alpha), 1, 2)       # transpose: [c, x, y]
    return np.ascontiguousarray(np.swapaxes(_np_blur_cols(t, alpha), 1, 2))


def hand_schedule(pipe):
    """After Halide's CPU schedule for ``apps/iir_blur`` (one vectorized loop per stage
    here): each transpose at root in 64-column strips run in parallel (channels
    inside), 16 x 64 blocks vectorized along the written rows; the column filter
    computed per strip and channel, its scans with ``x`` innermost, vectorized by 16."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    for k, tr in ((0, "transpose_0"), (1, "output")):
        s[tr].compute_root().split("y", "yo", "yi", 64).split("x", "xo", "xi", 16) \
            .reorder("xi", "yi", "xo", "c", "yo").parallel("yo").vectorize("xi")
        blur = f"blur_cols_{k}"
        s[blur].compute_at(tr, "c").vectorize("x", 16)
        for u in range(3):
            st = s[blur].update(u)
            if u > 0:
                st.reorder("x", f"ry_{k}.x")
            st.vectorize("x", 16)
    return s
