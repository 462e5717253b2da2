"""RESIZE_DOWN: downsampling by 2 with Keys' cubic kernel (after Halide's ``apps/resize``;
the machinery is in ``_resample``): 8 taps a pixel per axis, from a Param scale 0.5.
float32 RGB, 10 Funcs (the weight tables and their sums per axis,
the two passes, the clamp).
"""
from __future__ import annotations

from .._common import paper_or
from . import _resample as R

PAPER_SIZE = [960, 540, 3]
SMALL_SIZE = [32, 24, 3]
SCALE = 0.5
SUPPORT = 4


def build(sizes=None):
    return R.build(paper_or(sizes, PAPER_SIZE), SCALE, R.cubic, SUPPORT)


def make_inputs(sizes, seed: int = 0):
    return R.make_inputs(sizes, seed, SCALE)


def numpy_reference(inputs, sizes):
    return R.numpy_reference(inputs, sizes, SUPPORT, R.np_cubic)
