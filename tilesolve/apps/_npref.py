"""numpy helpers for the apps' independent references (no DSL involved).

A ``Plane`` is an array that knows which global coordinates it covers:
``arr[..., j, i]`` holds the value at ``x = x0 + i``, ``y = y0 + j`` (numpy
axes reversed, as everywhere).  ``gather`` reads a Plane at integer index
arrays and raises if an index falls outside it, so a reference that computes
each stage over "where its reads are defined" can never silently use a wrong
border value.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Plane:
    arr: np.ndarray
    x0: int
    y0: int

    @property
    def x1(self) -> int:
        """One past the last x covered."""
        return self.x0 + self.arr.shape[-1]

    @property
    def y1(self) -> int:
        return self.y0 + self.arr.shape[-2]

    def grid(self):
        """Global (X, Y) int64 index arrays of shape (h, w)."""
        return np.meshgrid(np.arange(self.x0, self.x1), np.arange(self.y0, self.y1))

    def crop(self, x0, y0, w, h) -> np.ndarray:
        """The values over ``[x0, x0+w) x [y0, y0+h)`` (must be covered)."""
        i, j = x0 - self.x0, y0 - self.y0
        if i < 0 or j < 0 or i + w > self.arr.shape[-1] or j + h > self.arr.shape[-2]:
            raise IndexError(f"crop {x0, y0, w, h} outside plane {self.x0, self.y0, self.x1, self.y1}")
        return self.arr[..., j:j + h, i:i + w]


def gather(p: Plane, X, Y) -> np.ndarray:
    """``p`` at global coordinates (X, Y) (broadcast together); leading axes kept."""
    i = np.asarray(X) - p.x0
    j = np.asarray(Y) - p.y0
    h, w = p.arr.shape[-2:]
    if i.min() < 0 or i.max() >= w or j.min() < 0 or j.max() >= h:
        raise IndexError(f"gather x in [{i.min() + p.x0}, {i.max() + p.x0}], y in "
                         f"[{j.min() + p.y0}, {j.max() + p.y0}] outside plane x [{p.x0}, {p.x1}), "
                         f"y [{p.y0}, {p.y1})")
    i, j = np.broadcast_arrays(i, j)
    return p.arr[..., j, i]


def edge_plane(img: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> Plane:
    """The repeat-edge extension of ``img`` (axes ``[..., H, W]``) over ``[x0,x1) x [y0,y1)``."""
    h, w = img.shape[-2:]
    xs = np.clip(np.arange(x0, x1), 0, w - 1)
    ys = np.clip(np.arange(y0, y1), 0, h - 1)
    return Plane(img[..., ys[:, None], xs[None, :]], x0, y0)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def combine(fn, *refs) -> Plane:
    """``fn`` of Planes read at offsets, over the largest region where all are defined.

    Each ref is ``(plane, dx, dy)``, meaning ``plane(x + dx, y + dy)``;
    ``fn`` receives the cropped arrays in the same order.
    """
    x0 = max(p.x0 - dx for p, dx, dy in refs)
    x1 = min(p.x1 - dx for p, dx, dy in refs)
    y0 = max(p.y0 - dy for p, dx, dy in refs)
    y1 = min(p.y1 - dy for p, dx, dy in refs)
    if x1 <= x0 or y1 <= y0:
        raise IndexError("combine: the planes have no common region")
    arrays = [p.crop(x0 + dx, y0 + dy, x1 - x0, y1 - y0) for p, dx, dy in refs]
    return Plane(fn(*arrays), x0, y0)
