"""Rank statistics shared by the autotuner and the calibration fit."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["ranks", "spearman"]


def ranks(a) -> np.ndarray:
    """Ranks 1..n, ties sharing the average of their ranks."""
    a = np.asarray(a, dtype=np.float64)
    order = np.argsort(a, kind="mergesort")
    r = np.empty(len(a), dtype=np.float64)
    r[order] = np.arange(1, len(a) + 1)
    _, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=r)
    return sums[inverse] / counts[inverse]


def spearman(x, y) -> float | None:
    """Spearman's rank correlation of ``x`` and ``y`` (Pearson's of their ranks,
    ties averaged); None with fewer than 3 pairs or when either side is constant."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}")
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float((rx * rx).sum()) * float((ry * ry).sum()))
    return None if den == 0 else float((rx * ry).sum()) / den
