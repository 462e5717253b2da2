"""MATMUL: dense matrix multiplication as a plain RDom reduction (Mullapudi 2016, Fig. 3).

    prod(x, y) = 0
    prod(x, y) += A(r, y) * B(x, r)          r in [0, K)
    output(x, y) = prod(x, y)

``A`` is K x N (``A(k, i)``, numpy ``A[i, k]``), ``B`` is M x K, the output
M x N: in numpy terms ``output = A @ B``.  2 Funcs, float32, 2048 x 2048
(paper).  The numpy reference is ``A @ B`` in float64, so the comparison
has a tolerance scaled by sqrt(K).
"""
from __future__ import annotations

import numpy as np

from .. import model as M
from ._common import paper_or
from ._npref import rng

PAPER_SIZE = [2048, 2048]
SMALL_SIZE = [48, 40]


def build(sizes=None, k: int | None = None):
    """``k``: the inner dimension (the output width by default: square matrices)."""
    x, y = M.Var("x"), M.Var("y")
    A = M.ImageParam(M.float32, 2, "A")
    B = M.ImageParam(M.float32, 2, "B")
    r = M.RDom((0, A.width()), name="r")
    prod = M.Func("prod")
    prod[x, y] = 0.0
    prod[x, y] = prod[x, y] + A[r.x, y] * B[x, r.x]
    out = M.Func("output")
    out[x, y] = prod[x, y]
    w, h = paper_or(sizes, PAPER_SIZE)
    k = w if k is None else k
    return M.Pipeline(out), {"output": [w, h], "A": [k, h], "B": [w, k]}


def make_inputs(sizes, seed: int = 0, k: int | None = None):
    w, h = sizes
    k = w if k is None else k
    g = rng(seed)
    return {"A": g.standard_normal((h, k)).astype(np.float32),
            "B": g.standard_normal((k, w)).astype(np.float32)}


def numpy_reference(inputs, sizes, k: int | None = None):
    return (inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)).astype(np.float32)


def hand_schedule(pipe):
    """A register-blocked matmul: ``output`` in 32 x 8 tiles, parallel over rows of
    tiles; ``prod`` per tile, its update with the tile innermost (2 vectors of 16 x
    8 rows unrolled: 16 accumulators) and ``r`` outside."""
    from ..model.schedule import Schedule
    s = Schedule(pipe)
    s["output"].tile("x", "y", "xi", "yi", 32, 8).parallel("y").vectorize("xi", 16)
    s["prod"].compute_at("output", "x").vectorize("x", 16)
    s["prod"].update(0).reorder("x", "y", "r.x").vectorize("x", 16).unroll("x", 2) \
        .unroll("y", 8)
    return s
