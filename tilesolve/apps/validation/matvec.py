"""MATVEC: a matrix-vector product, ``output(m) = sum_k matrix(k, m) * vector(k)``, as an
update with no pure definition (implicit zero).  float32, 1 Func, a one-dimensional
output; ``k`` (the vector's length) is a build parameter.  Memory-bound: each matrix
element is read once; the solver must find parallelism and vectors in the rows.
"""
from __future__ import annotations

import numpy as np

import tilesolve as ts

from .._common import paper_or
from .._npref import rng

PAPER_SIZE = [4096]
SMALL_SIZE = [37]
SMALL_BUILD = {"k": 53}


def build(sizes=None, k: int = 4096):
    m = ts.Var("m")
    mat = ts.ImageParam(ts.float32, 2, "matrix")
    vec = ts.ImageParam(ts.float32, 1, "vector")
    r = ts.RDom((0, vec.extent(0)), name="r")
    out = ts.Func("output")
    out[m] += mat[r.x, m] * vec[r.x]
    (rows,) = paper_or(sizes, PAPER_SIZE)
    return ts.Pipeline(out), {"output": [rows], "matrix": [k, rows], "vector": [k]}


def make_inputs(sizes, seed: int = 0, k: int = 4096):
    (rows,) = sizes
    g = rng(seed)
    return {"matrix": g.standard_normal((rows, k)).astype(np.float32),
            "vector": g.standard_normal(k).astype(np.float32)}


def numpy_reference(inputs, sizes, k: int = 4096):
    mat, vec = inputs["matrix"], inputs["vector"]
    acc = np.zeros(sizes[0], np.float32)
    for i in range(k):                      # the update's order: one term at a time
        acc = acc + mat[:, i] * vec[i]
    return acc
