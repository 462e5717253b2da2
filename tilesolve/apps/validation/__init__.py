"""The validation suite: pipelines the app suite does not have, to check that the
autoscheduler is fast on code nobody tuned it for.

Each module follows the app protocol (``tilesolve/apps/__init__.py``): ``build(sizes=None,
**params) -> (Pipeline, estimates)``, ``PAPER_SIZE`` (here a realistic size for the
algorithm: no paper measured these), ``SMALL_SIZE``, optional ``SMALL_BUILD``,
``make_inputs(sizes, seed=0, **params)`` and ``numpy_reference(inputs, sizes, **params)``,
written with numpy alone.  There is no hand schedule.  ``tilesolve bench --suite
validation --compare-halide`` needs no Halide twin either: ``tilesolve.interop.halide.
translate`` derives Halide's version of each pipeline from ours.

They stress what the 15 apps do not: wavelets (parity interleaving, subbands in a channel
dimension), resampling with per-column weight tables over an RDom whose extent is a
Param, a depthwise-separable layer (channels innermost), ``pow`` colour transfers, a
direct 2-D reduction with a zero-dimensional normaliser, a matrix-vector product (one
long reduction per point), a two-output pipeline, fixed-point uint8/int16 arithmetic
and bit shifts, a 5-level pyramid with boundary conditions on every level, pooling
over predicated RDoms, a guided upsampling grid, a uint16 histogram over the whole
image, min/max sorting networks.

    from tilesolve.apps.validation import PIPELINES     # or tilesolve.apps.suite("validation")
    pipe, est = PIPELINES["haar"].build()
"""
from __future__ import annotations

from types import ModuleType

from . import (avg_pool, bgu, corners, daubechies, depthwise_conv, gaussian_rdom, haar,
               hist_eq_u16, laplacian_blend, matvec, max_pool, median3x3, resize_down,
               resize_up, sobel_u8, srgb_blur, yuv_to_rgb)

PIPELINES: dict[str, ModuleType] = {
    "haar": haar,
    "daubechies": daubechies,
    "resize_down": resize_down,
    "resize_up": resize_up,
    "depthwise_conv": depthwise_conv,
    "srgb_blur": srgb_blur,
    "gaussian_rdom": gaussian_rdom,
    "matvec": matvec,
    "corners": corners,
    "sobel_u8": sobel_u8,
    "laplacian_blend": laplacian_blend,
    "avg_pool": avg_pool,
    "max_pool": max_pool,
    "bgu": bgu,
    "hist_eq_u16": hist_eq_u16,
    "median3x3": median3x3,
    "yuv_to_rgb": yuv_to_rgb,
}

