"""Boundary conditions: wrap an input so it can be read anywhere.

Each returns a new Func over the input's dimensions.  The input's extent is
known only at run time (or from estimates), so it appears symbolically as
``BufferExtent(input, dim)``; inputs start at index 0.

* ``repeat_edge``: clamp the index into the image (``aaa|abcd|ddd``).
* ``constant_exterior(value)``: ``value`` outside the image.
* ``mirror_image``: reflect, repeating the edge pixel (``dcba|abcd|dcba``).
* ``mirror_interior``: reflect without repeating it (``dcb|abcd|cba``).

Every index is finally clamped into ``[0, extent-1]``, so bounds inference
sees exactly the input's region.
"""
from __future__ import annotations

from . import expr as E
from .func import Func
from .params import ImageParam

_DIM_NAMES = ("x", "y", "c", "w", "v5", "v6", "v7", "v8")


def _vars(n: int):
    return tuple(E.Var(f"_{_DIM_NAMES[i]}") for i in range(n))


def _check(src):
    if not isinstance(src, ImageParam):
        from ..errors import PipelineError
        raise PipelineError(f"boundary conditions apply to an ImageParam, got {src!r}")


def _inside(v, ext):
    return E.clamp(v, 0, ext - 1)


def repeat_edge(src: ImageParam, name: str | None = None) -> Func:
    _check(src)
    vs = _vars(src.dims)
    f = Func(name or f"{src.name}_repeat_edge")
    f[vs] = src[tuple(_inside(v, src.extent(i)) for i, v in enumerate(vs))]
    return f


def constant_exterior(src: ImageParam, value=0, name: str | None = None) -> Func:
    _check(src)
    vs = _vars(src.dims)
    f = Func(name or f"{src.name}_constant_exterior")
    outside = None
    for i, v in enumerate(vs):
        o = (v < 0) | (v >= src.extent(i))
        outside = o if outside is None else (outside | o)
    inner = src[tuple(_inside(v, src.extent(i)) for i, v in enumerate(vs))]
    f[vs] = E.select(outside, E.as_expr(value, src.type), inner)
    return f


def _mirror(v, ext, interior: bool):
    if interior:
        period = E.max_(2 * ext - 2, 1)
        t = v % period
        idx = E.select(t < ext, t, period - t)
    else:
        period = 2 * ext
        t = v % period
        idx = E.select(t < ext, t, period - 1 - t)
    return _inside(idx, ext)


def mirror_image(src: ImageParam, name: str | None = None) -> Func:
    _check(src)
    vs = _vars(src.dims)
    f = Func(name or f"{src.name}_mirror_image")
    f[vs] = src[tuple(_mirror(v, src.extent(i), False) for i, v in enumerate(vs))]
    return f


def mirror_interior(src: ImageParam, name: str | None = None) -> Func:
    _check(src)
    vs = _vars(src.dims)
    f = Func(name or f"{src.name}_mirror_interior")
    f[vs] = src[tuple(_mirror(v, src.extent(i), True) for i, v in enumerate(vs))]
    return f
