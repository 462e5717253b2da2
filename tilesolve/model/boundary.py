"""Boundary conditions: wrap an input or a Func so it can be read anywhere.

Each returns a new Func over the source's dimensions.  An input's extent is
known only at run time (or from estimates), so it appears symbolically as
``BufferExtent(input, dim)``; inputs start at index 0.  ``bounds`` (a ``(min,
extent)`` or None per dimension, as in Halide) gives the region that is inside;
it is required for a Func, and None leaves that dimension's index as it is.

* ``repeat_edge``: clamp the index into the image (``aaa|abcd|ddd``).
* ``constant_exterior(value)``: ``value`` outside the image.
* ``mirror_image``: reflect, repeating the edge pixel (``dcba|abcd|dcba``).
* ``mirror_interior``: reflect without repeating it (``dcb|abcd|cba``).

Every bounded index is finally clamped into ``[min, min + extent - 1]``, so bounds
inference sees exactly that region of the source.
"""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from . import types as T
from .func import Func
from .params import ImageParam

_DIM_NAMES = ("x", "y", "c", "w", "v5", "v6", "v7", "v8")


def dim_vars(n: int) -> tuple:
    """The pure Vars of a Func over ``n`` dimensions made from an input (``_x``, ``_y``,
    ``_c``...): the boundary conditions' and the schedule's wrapper Funcs'."""
    return tuple(E.Var(f"_{_DIM_NAMES[i]}") for i in range(n))




def _ranges(src, bounds, what: str) -> list:
    """Per dimension of ``src``: ``(min, extent)`` Exprs, or None where the index passes
    through.  An ImageParam's default is its whole buffer; a Func has no extent of its
    own, so its bounds must be given."""
    if isinstance(bounds, str):
        raise PipelineError(f"{what}: bounds must be a list of (min, extent) or None per "
                            f"dimension, got the string {bounds!r} (the name is name=...)")
    if isinstance(src, ImageParam):
        dims = src.dims
        default = [(E.as_expr(0), src.extent(i)) for i in range(dims)]
    elif isinstance(src, Func):
        dims = src.dimensions()
        if bounds is None:
            raise PipelineError(
                f"{what} of Func {src.name} needs bounds: a (min, extent) or None for each of "
                f"its {dims} dimensions (only an ImageParam's bounds are known)")
        default = [None] * dims
    else:
        raise PipelineError(f"{what} applies to an ImageParam or a Func, got {src!r}")
    if bounds is None:
        return default
    bounds = list(bounds)
    if len(bounds) != dims:
        raise PipelineError(f"{what} of {src.name}: {len(bounds)} bounds for {dims} dimensions")
    out = []
    for i, b in enumerate(bounds):
        if b is None:
            out.append(None)
            continue
        if not isinstance(b, (tuple, list)) or len(b) != 2:
            raise PipelineError(f"{what} of {src.name}: the bounds of dimension {i} must be a "
                                f"(min, extent) pair or None, got {b!r}")
        lo, ext = E.as_expr(b[0]), E.as_expr(b[1])
        for v in (lo, ext):
            if not v.type.is_integral():
                raise PipelineError(f"{what} of {src.name}: the bounds of dimension {i} must be "
                                    f"integers, got {v} ({v.type})")
        out.append((E.cast(T.int32, lo), E.cast(T.int32, ext)))
    return out


def _inside(v, r):
    return v if r is None else E.clamp(v, r[0], r[0] + r[1] - 1)


def _wrap(src, bounds, name, what, index_of) -> Func:
    ranges = _ranges(src, bounds, what)
    vs = dim_vars(len(ranges))
    f = Func(name or f"{src.name}_{what}")
    f[vs] = src[tuple(index_of(v, r) for v, r in zip(vs, ranges))]
    return f


def repeat_edge(src, bounds=None, *, name: str | None = None) -> Func:
    return _wrap(src, bounds, name, "repeat_edge", _inside)


def constant_exterior(src, value=0, bounds=None, *, name: str | None = None) -> Func:
    ranges = _ranges(src, bounds, "constant_exterior")
    vs = dim_vars(len(ranges))
    f = Func(name or f"{src.name}_constant_exterior")
    outside = None
    for v, r in zip(vs, ranges):
        if r is None:
            continue
        o = (v < r[0]) | (v >= r[0] + r[1])
        outside = o if outside is None else (outside | o)
    inner = src[tuple(_inside(v, r) for v, r in zip(vs, ranges))]
    t = inner.type
    f[vs] = inner if outside is None else E.select(outside, E.as_expr(value, t), inner)
    return f


def _mirror(v, r, interior: bool):
    if r is None:
        return v
    lo, ext = r
    v = v - lo
    if interior:
        period = E.max_(2 * ext - 2, 1)
        t = v % period
        idx = E.select(t < ext, t, period - t)
    else:
        period = 2 * ext
        t = v % period
        idx = E.select(t < ext, t, period - 1 - t)
    return _inside(idx + lo, r)


def mirror_image(src, bounds=None, *, name: str | None = None) -> Func:
    return _wrap(src, bounds, name, "mirror_image", lambda v, r: _mirror(v, r, False))


def mirror_interior(src, bounds=None, *, name: str | None = None) -> Func:
    return _wrap(src, bounds, name, "mirror_interior", lambda v, r: _mirror(v, r, True))
