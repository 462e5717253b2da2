"""RESIZE_DOWN: downsampling by 2 with Keys' cubic kernel (after Halide's ``apps/resize``;
the machinery is in ``_resample``): 8 taps a pixel per axis, from a Param scale 0.5.
float32 RGB, 10 Funcs (the weight tables and their sums per axis,
the two passes, the clamp).
"""
from __future__ import annotations

from . import _resample as R

PAPER_SIZE = [960, 540, 3]
SMALL_SIZE = [32, 24, 3]
SCALE = 0.5
SUPPORT = 4

build, make_inputs, numpy_reference = R.variant(PAPER_SIZE, SCALE, R.cubic, R.np_cubic,
                                                SUPPORT)
