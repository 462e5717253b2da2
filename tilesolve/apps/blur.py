"""BLUR: the two-pass 3x3 box blur of Halide's ``apps/blur`` (Mullapudi 2016, Table 1).

    blur_x(x, y) = (input(x, y) + input(x+1, y) + input(x+2, y)) / 3
    blur_y(x, y) = (blur_x(x, y) + blur_x(x, y+1) + blur_x(x, y+2)) / 3

2 Funcs, no boundary condition: the input is two pixels wider and taller
than the output.  Halide's app is uint16 (integer sums wrap, ``/`` floors);
here the default is float32 (``dtype="uint16"`` gives the original).
Paper size: output 6400 x 4800.
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import rng

PAPER_SIZE = [6400, 4800]
SMALL_SIZE = [64, 48]


def build(sizes=None, dtype: str = "float32"):
    """The pipeline (output ``blur_y``) and estimates at ``sizes`` (paper size by default)."""
    t = M.types.type_named(dtype)
    x, y = M.Var("x"), M.Var("y")
    inp = M.ImageParam(t, 2, "input")
    blur_x, blur_y = M.Func("blur_x"), M.Func("blur_y")
    blur_x[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) / 3
    w, h = paper_or(sizes, PAPER_SIZE)
    return M.Pipeline(blur_y), {"blur_y": [w, h], "input": [w + 2, h + 2]}


def make_inputs(sizes, seed: int = 0, dtype: str = "float32"):
    w, h = sizes
    g = rng(seed)
    if dtype == "float32":
        a = g.random((h + 2, w + 2), dtype=np.float32)
    else:
        a = g.integers(0, 1 << 16, (h + 2, w + 2)).astype(np.uint16)   # sums may wrap
    return {"input": a}


def numpy_reference(inputs, sizes, dtype: str = "float32"):
    a = inputs["input"]
    w, h = sizes
    three = a.dtype.type(3)

    def div3(v):
        return v / three if a.dtype.kind == "f" else v // three

    bx = div3(a[:, 0:w] + a[:, 1:w + 1] + a[:, 2:w + 2])
    return div3(bx[0:h] + bx[1:h + 1] + bx[2:h + 2])


def hand_schedule(pipe):
    """Halide's CPU schedule for ``apps/blur``, as overlapped tiles (tilesolve has no
    sliding window): 256 x 32 tiles of ``blur_y``, parallel over rows of tiles,
    ``blur_x`` computed per tile (34 rows for 32), both vectorized by 16 floats."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["blur_y"].tile("x", "y", "xi", "yi", 256, 32).parallel("y").vectorize("xi", 16)
    s["blur_x"].compute_at("blur_y", "x").vectorize("x", 16)
    return s
