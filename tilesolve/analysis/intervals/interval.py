"""Closed intervals with numeric, infinite or symbolic endpoints, and Boxes of them.

An endpoint is one of
* a Python number (int or float): the fast path the solver lives on;
* ``None``: unbounded (-inf for ``lo``, +inf for ``hi``);
* an ``Expr`` (symbolic, e.g. ``xo*32 + 31``): what lowering uses for tiles.

Operations on two numeric endpoints stay numeric; anything else builds
simplified Exprs (``min``/``max`` of the endpoints).  An interval with numeric
``lo > hi`` is empty; ``Interval.nothing()`` is the canonical empty one.
"""
from __future__ import annotations

import math

from ...model import expr as E
from .. import simplify as _S

__all__ = ["Interval", "Box"]


def _norm(v, is_lo: bool):
    """Normalize one endpoint: numpy scalars and Consts to numbers, +-inf to None."""
    if v is None:
        return None
    if isinstance(v, E.Const):
        v = v.value
    elif isinstance(v, E.Expr):
        return v
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, float) and math.isinf(v) and (v < 0) == is_lo:
        return None
    return v


def is_num(v) -> bool:
    return isinstance(v, (int, float))


def as_expr_like(v, other) -> E.Expr:
    """Endpoint ``v`` as an Expr, numbers taking the type of the Expr ``other``."""
    if isinstance(v, E.Expr):
        return v
    t = other.type
    if t.is_float():
        return E.Const(t, float(v))
    return E.Const(t, int(v))


def _sym(op, a, b):
    """``op(a, b)`` for endpoints, at least one an Expr; simplified."""
    if not isinstance(a, E.Expr):
        a = as_expr_like(a, b)
    elif not isinstance(b, E.Expr):
        b = as_expr_like(b, a)
    return _norm(_S.simplify(E.BinOp(op, a, b)), True)


def same(a, b) -> bool:
    """Endpoints known equal (identical Exprs or equal numbers; None only with None)."""
    if a is b:
        return True
    return is_num(a) and is_num(b) and a == b


def _pick(op, a, b, absorbing: bool):
    """``op`` ("min" or "max") of two endpoints where None is an infinity: the result
    when ``absorbing`` (min of lower ends, max of upper ends), else the other end."""
    if a is None or b is None:
        return None if absorbing else (b if a is None else a)
    if is_num(a) and is_num(b):
        return a if (a <= b if op == "min" else a >= b) else b
    return _sym(op, a, b)


def lo_min(a, b):
    """min of two lower endpoints (None is -inf)."""
    return _pick("min", a, b, True)


def lo_max(a, b):
    """max of two lower endpoints (None is -inf)."""
    return _pick("max", a, b, False)


def hi_max(a, b):
    """max of two upper endpoints (None is +inf)."""
    return _pick("max", a, b, True)


def hi_min(a, b):
    """min of two upper endpoints (None is +inf)."""
    return _pick("min", a, b, False)


class Interval:
    """A closed interval ``[lo, hi]``; see the module docstring for endpoints."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo=None, hi=None):
        object.__setattr__(self, "lo", _norm(lo, True))
        object.__setattr__(self, "hi", _norm(hi, False))

    def __setattr__(self, name, value):
        raise AttributeError("Interval is immutable")

    # -- constructors ---------------------------------------------------------------
    @staticmethod
    def everything() -> "Interval":
        return Interval(None, None)

    @staticmethod
    def point(e) -> "Interval":
        return Interval(e, e)

    @staticmethod
    def nothing() -> "Interval":
        """The empty interval (``[0, -1]``: extent 0)."""
        return Interval(0, -1)

    # -- predicates -----------------------------------------------------------------
    @property
    def min(self):
        return self.lo

    @property
    def max(self):
        return self.hi

    def is_empty(self) -> bool:
        return is_num(self.lo) and is_num(self.hi) and self.lo > self.hi

    def is_bounded(self) -> bool:
        return self.lo is not None and self.hi is not None

    def is_const(self) -> bool:
        """Both endpoints are (finite or infinite) numbers, no None and no Expr."""
        return is_num(self.lo) and is_num(self.hi)

    def is_numeric(self) -> bool:
        """No symbolic endpoint (None allowed)."""
        return not isinstance(self.lo, E.Expr) and not isinstance(self.hi, E.Expr)

    def is_single_point(self) -> bool:
        return self.lo is not None and same(self.lo, self.hi)

    def is_everything(self) -> bool:
        return self.lo is None and self.hi is None

    # -- combination ------------------------------------------------------------------
    def union(self, other: "Interval") -> "Interval":
        """The smallest interval containing both (its hull)."""
        if self.is_empty():
            return other
        if other.is_empty():
            return self
        if self is other:
            return self
        return Interval(lo_min(self.lo, other.lo), hi_max(self.hi, other.hi))

    def intersect(self, other: "Interval") -> "Interval":
        if self.is_empty():
            return self
        if other.is_empty():
            return other
        return Interval(lo_max(self.lo, other.lo), hi_min(self.hi, other.hi))

    def extent(self):
        """``hi - lo + 1`` (integer intervals): a number, an Expr, or None if unbounded."""
        if not self.is_bounded():
            return None
        if self.is_const():
            return max(self.hi - self.lo + 1, 0)
        hi = self.hi if isinstance(self.hi, E.Expr) else as_expr_like(self.hi, self.lo)
        lo = self.lo if isinstance(self.lo, E.Expr) else as_expr_like(self.lo, hi)
        return _norm(_S.simplify(hi - lo + 1), True)

    def contains(self, v):
        """True/False if decided, None when symbolic endpoints leave it open.

        ``v`` is a number, an Expr or an Interval (contained as a whole).
        """
        if isinstance(v, Interval):
            if v.is_empty():
                return True
            a = self._le(self.lo, v.lo)
            b = self._le(v.hi, self.hi)
            if a is False or b is False:
                return False
            return True if (a and b) else None
        if self.is_empty():
            return False
        a, b = self._le(self.lo, v), self._le(v, self.hi)
        if a is False or b is False:
            return False
        return True if (a and b) else None

    @staticmethod
    def _le(x, y):
        """x <= y for endpoints; None as lo is -inf on the left, +inf on the right."""
        if x is None or y is None:
            return True
        if is_num(x) and is_num(y):
            return x <= y
        xe = as_expr_like(x, y) if not isinstance(x, E.Expr) else x
        ye = as_expr_like(y, xe) if not isinstance(y, E.Expr) else y
        return _S.prove(E.BinOp("le", xe, ye))

    # -- value behaviour ------------------------------------------------------------------
    def __iter__(self):
        yield self.lo
        yield self.hi

    def __eq__(self, other):
        if not isinstance(other, Interval):
            return NotImplemented
        return (same(self.lo, other.lo) or (self.lo is None and other.lo is None)) and \
            (same(self.hi, other.hi) or (self.hi is None and other.hi is None))

    def __hash__(self):
        return hash((_hkey(self.lo), _hkey(self.hi)))

    def __repr__(self) -> str:
        lo = "-inf" if self.lo is None else str(self.lo)
        hi = "+inf" if self.hi is None else str(self.hi)
        return f"[{lo}, {hi}]"


def _hkey(v):
    return ("e", id(v)) if isinstance(v, E.Expr) else v


class Box(tuple):
    """A tuple of Intervals, one per dimension, innermost first."""

    def __new__(cls, intervals=()):
        ivs = tuple(i if isinstance(i, Interval) else Interval(*i) for i in intervals)
        return super().__new__(cls, ivs)

    @staticmethod
    def from_sizes(sizes) -> "Box":
        """``[0, s-1]`` in every dimension."""
        return Box(Interval(0, int(s) - 1) for s in sizes)

    def union(self, other: "Box") -> "Box":
        self._check(other)
        return Box(a.union(b) for a, b in zip(self, other))

    def intersect(self, other: "Box") -> "Box":
        self._check(other)
        return Box(a.intersect(b) for a, b in zip(self, other))

    def _check(self, other):
        if len(self) != len(other):
            raise ValueError(f"boxes of {len(self)} and {len(other)} dimensions")

    def extents(self) -> tuple:
        return tuple(i.extent() for i in self)

    def size(self):
        """The number of points: a number, an Expr, or None if unbounded."""
        n = 1
        for ext in self.extents():
            if ext is None:
                return None
            if is_num(n) and is_num(ext):
                n *= ext
            else:
                a = n if isinstance(n, E.Expr) else as_expr_like(n, ext)
                b = ext if isinstance(ext, E.Expr) else as_expr_like(ext, a)
                n = _norm(_S.simplify(E.BinOp("mul", a, b)), True)
        return n

    def is_empty(self) -> bool:
        return any(i.is_empty() for i in self)

    def is_const(self) -> bool:
        return all(i.is_const() for i in self)

    def is_bounded(self) -> bool:
        return all(i.is_bounded() for i in self)

    def contains(self, point):
        """For a point (one value per dimension) or a Box: True/False/None."""
        if isinstance(point, Box):
            self._check(point)
            rs = [a.contains(b) for a, b in zip(self, point)]
        else:
            if len(point) != len(self):
                raise ValueError(f"a point of {len(point)} coordinates for a {len(self)}-d box")
            rs = [a.contains(v) for a, v in zip(self, point)]
        if any(r is False for r in rs):
            return False
        return True if all(rs) else None

    def __repr__(self) -> str:
        return "Box(" + ", ".join(map(repr, self)) + ")"
