"""RESIZE_UP: upsampling by 2 with a Lanczos-3 kernel (after Halide's ``apps/resize``; the
machinery is in ``_resample``): 6 taps a pixel per axis, from a Param scale 2.0, the
weights from ``sin``.  float32 RGB, 10 Funcs.
"""
from __future__ import annotations

from . import _resample as R

PAPER_SIZE = [1920, 1080, 3]
SMALL_SIZE = [64, 48, 3]
SCALE = 2.0
SUPPORT = 6

build, make_inputs, numpy_reference = R.variant(PAPER_SIZE, SCALE, R.lanczos3, R.np_lanczos3,
                                                SUPPORT)
