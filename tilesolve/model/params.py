"""Pipeline inputs: ``ImageParam`` (an array) and ``Param`` (a scalar)."""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from . import types as T
from .expr import Param  # noqa: F401  (re-exported)
from .types import Type


def index_args(owner: str, args, dims: int) -> tuple:
    """Normalize call arguments: a tuple of int32 Exprs of the right count."""
    if not isinstance(args, tuple):
        args = (args,)
    if len(args) != dims:
        raise PipelineError(f"{owner} has {dims} dimensions but is called with {len(args)} arguments")
    out = []
    for i, a in enumerate(args):
        a = E.as_expr(a)
        if not a.type.is_integral() and not a.type.is_bool():
            raise PipelineError(
                f"{owner}: argument {i} ({a}) has type {a.type}; indices must be integers "
                "(cast with ts.cast(ts.int32, ...))")
        out.append(E.cast(T.int32, a))
    return tuple(out)


class ImageParam:
    """An input array of ``dims`` dimensions, bound by name at realize() time."""

    def __init__(self, type: Type, dims: int, name: str):
        if not isinstance(type, Type):
            raise PipelineError(f"ImageParam {name!r}: first argument must be a ts type, got {type!r}")
        if not isinstance(dims, int) or dims < 1:
            raise PipelineError(f"ImageParam {name!r}: dims must be a positive int, got {dims!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise PipelineError(f"ImageParam name must be an identifier, got {name!r}")
        self.type = type
        self.dims = dims
        self.name = name

    def dimensions(self) -> int:
        return self.dims

    def __getitem__(self, args) -> E.Call:
        return E.Call(self, index_args(f"input {self.name}", args, self.dims))

    __call__ = lambda self, *args: self[args]  # noqa: E731

    def __setitem__(self, args, value) -> None:
        raise PipelineError(f"input {self.name} is an ImageParam: its values come from the "
                            "array passed to realize() and cannot be defined; define a Func "
                            "that reads it instead")

    def extent(self, dim: int) -> E.BufferExtent:
        if not 0 <= dim < self.dims:
            raise PipelineError(f"input {self.name} has {self.dims} dimensions; no dimension {dim}")
        return E.BufferExtent(self.name, dim)

    def dim(self, d: int) -> "Dimension":
        """Dimension ``d`` of the buffer passed at run time: ``min()``, ``extent()``,
        ``max()`` (Exprs), as Halide's ``img.dim(d)``."""
        self.extent(d)                         # checks d
        return Dimension(self, d)

    def min_param(self, d: int) -> E.Param:
        """The run-time min of dimension ``d``: a Param bound from the buffer passed (0
        for a plain numpy array, ``mins[d]`` for a ``ts.Buffer``), never by the caller."""
        self.extent(d)
        return E.Param(T.int32, f"{self.name}_min_{d}", 0)

    def width(self): return self.extent(0)
    def height(self): return self.extent(1)
    def channels(self): return self.extent(2)

    def __repr__(self) -> str:
        return f"ImageParam({self.type}, {self.dims}, {self.name!r})"


class Dimension:
    """``img.dim(d)``: the run-time min, extent and max of one dimension of an input."""

    __slots__ = ("image", "d")

    def __init__(self, image: ImageParam, d: int):
        self.image, self.d = image, d

    def min(self) -> E.Expr:
        return self.image.min_param(self.d)

    def extent(self) -> E.Expr:
        return self.image.extent(self.d)

    def max(self) -> E.Expr:
        return self.min() + self.extent() - 1
