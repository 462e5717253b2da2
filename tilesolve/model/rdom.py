"""Reduction domains: ``r = ts.RDom((0, W), (0, H)); r.x, r.y``.

Forms: ``RDom(min, extent)``, ``RDom((min, extent), ...)``, ``RDom([(min, extent), ...])``,
``RDom(img)`` (an ImageParam's whole domain), each with an optional name, by keyword (``name="r"``) or last positional argument as in
Halide (``RDom([(0, W), (0, H)], "r")``).

Bounds are ``(min, extent)`` pairs and may be Exprs of Params and input
extents.  ``r.where(pred)`` restricts the domain (points where ``pred`` is
false are skipped); ``pred`` may use the update's pure Vars (a triangular domain).  An update definition iterates its RDom in lexicographic
order with ``r.x`` innermost (fastest), as in Halide.
"""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from . import types as T

_names = [0]


class RDom:
    __slots__ = ("name", "mins", "extents", "predicates", "__weakref__")

    def __init__(self, *ranges, name: str | None = None):
        if ranges and isinstance(ranges[-1], str):    # Halide's RDom(region, "name")
            if name is not None:
                raise PipelineError(f"RDom: the name is given twice ({ranges[-1]!r} and "
                                    f"name={name!r})")
            name, ranges = ranges[-1], ranges[:-1]
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise PipelineError(f"RDom: the name must be a non-empty string, got {name!r}")
        if len(ranges) == 1 and hasattr(ranges[0], "extent") and hasattr(ranges[0], "dims"):
            img = ranges[0]                    # RDom(img): over an input's whole domain
            ranges = tuple((0, img.extent(i)) for i in range(img.dims))
        if len(ranges) == 2 and not any(isinstance(r, (tuple, list)) for r in ranges):
            ranges = (tuple(ranges),)          # RDom(min, extent)
        elif len(ranges) == 1 and isinstance(ranges[0], list):
            ranges = tuple(ranges[0])          # RDom([(0, W), (0, H)])
        if not ranges:
            raise PipelineError("an RDom needs at least one (min, extent) range")
        if name is None:
            _names[0] += 1
            name = f"r{_names[0]}"
        self.name = name
        mins, exts = [], []
        for i, r in enumerate(ranges):
            if not isinstance(r, (tuple, list)) or len(r) != 2:
                raise PipelineError(f"RDom {name}: range {i} must be a (min, extent) pair, got {r!r}")
            lo, ext = E.as_expr(r[0]), E.as_expr(r[1])
            for what, v in (("min", lo), ("extent", ext)):
                if not v.type.is_integral():
                    raise PipelineError(
                        f"RDom {name}: the {what} of dimension {i} must be an integer, got {v} ({v.type})")
                if any(isinstance(n, (E.Var, E.RVar, E.Call)) for n in _walk(v)):
                    raise PipelineError(
                        f"RDom {name}: the {what} of dimension {i} ({v}) may use only constants, "
                        "Params and input extents")
            if isinstance(ext, E.Const) and ext.value <= 0:
                raise PipelineError(f"RDom {name}: dimension {i} has extent {ext.value} <= 0")
            mins.append(E.cast(T.int32, lo))
            exts.append(E.cast(T.int32, ext))
        self.mins = tuple(mins)
        self.extents = tuple(exts)
        self.predicates: tuple = ()

    @property
    def dimensions(self) -> int:
        return len(self.mins)

    def __len__(self) -> int:
        return len(self.mins)

    def __getitem__(self, i: int) -> E.RVar:
        if not 0 <= i < len(self.mins):
            raise PipelineError(f"RDom {self.name} has {len(self.mins)} dimensions, not {i + 1}")
        return E.RVar(self, i)

    @property
    def x(self): return self[0]

    @property
    def y(self): return self[1]

    @property
    def z(self): return self[2]

    @property
    def w(self): return self[3]

    def rvars(self) -> tuple:
        return tuple(self[i] for i in range(len(self.mins)))

    def where(self, predicate) -> "RDom":
        """Restrict the domain to points where ``predicate`` (bool Expr) holds."""
        p = E.as_expr(predicate)
        if not p.type.is_bool():
            raise PipelineError(f"RDom {self.name}.where: predicate {p} is {p.type}, expected bool")
        for n in _walk(p):
            if isinstance(n, E.RVar) and n.rdom is not self:
                raise PipelineError(f"RDom {self.name}.where: predicate uses {n.name} of another RDom")
        self.predicates = self.predicates + (p,)
        return self

    def __repr__(self) -> str:
        rs = ", ".join(f"({m}, {e})" for m, e in zip(self.mins, self.extents))
        return f"RDom({rs}, name={self.name!r})"


def _walk(e):
    from .visit import walk
    return walk(e)
