"""Scalar types and the one table of their semantics.

Every part of tilesolve (the reference, the interval analysis, every backend)
obeys the rules written here:

* Integers wrap (two's complement) on overflow.
* Integer ``/`` rounds toward minus infinity; ``%`` is never negative
  (Euclidean); division or modulo by zero gives zero (Halide's rule).
* float follows IEEE; no reassociation.  float16 is IEEE binary16: every operation on
  float16 operands gives the float16 rounding of its exact result, which is the float32
  result rounded to float16 once (exact for ``+ - * /`` and sqrt, because float32 holds
  more than twice float16's bits); math functions compute in float32 and round.
* Casts between integer types wrap; float -> int truncates toward zero
  (out-of-range values are undefined, as in Halide and C); int -> float rounds
  to nearest.
* A Python number adopts the type of the other operand; alone, a Python int is
  int32 and a Python float is float32.
* Mixed types (``match_types``): float beats int (the wider float wins); two
  integers of one signedness widen to the wider; a signed and an unsigned
  integer meet in a signed integer of the wider width; bool meets anything as
  that other type.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Type", "bool_", "uint8", "uint16", "uint32", "int8", "int16", "int32",
    "int64", "uint64", "float16", "float32", "float64", "ALL_TYPES", "match_types", "type_of_dtype",
]


@dataclass(frozen=True, slots=True)
class Type:
    """A scalar type: ``code`` is 'bool', 'int', 'uint' or 'float'."""

    code: str
    bits: int

    # -- predicates -------------------------------------------------------
    def is_bool(self) -> bool:
        return self.code == "bool"

    def is_int(self) -> bool:
        return self.code == "int"

    def is_uint(self) -> bool:
        return self.code == "uint"

    def is_float(self) -> bool:
        return self.code == "float"

    def is_integral(self) -> bool:
        """int or uint (not bool)."""
        return self.code in ("int", "uint")

    # -- numbers ------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        if self.code == "bool":
            return np.dtype(np.bool_)
        return np.dtype(f"{ {'int': 'int', 'uint': 'uint', 'float': 'float'}[self.code]}{self.bits}")

    @property
    def bytes(self) -> int:
        return 1 if self.code == "bool" else self.bits // 8

    def min_value(self):
        if self.code == "bool":
            return 0
        if self.code == "int":
            return -(1 << (self.bits - 1))
        if self.code == "uint":
            return 0
        return -float("inf")

    def max_value(self):
        if self.code == "bool":
            return 1
        if self.code == "int":
            return (1 << (self.bits - 1)) - 1
        if self.code == "uint":
            return (1 << self.bits) - 1
        return float("inf")

    def wrap(self, v: int) -> int:
        """Wrap a Python int into this integer type's range (two's complement)."""
        if self.code == "bool":
            return int(bool(v))
        if self.code == "uint":
            return v & ((1 << self.bits) - 1)
        if self.code == "int":
            m = 1 << self.bits
            v &= m - 1
            return v - m if v >= (m >> 1) else v
        raise TypeError(f"wrap() needs an integer type, not {self}")

    def significand_bits(self) -> int:
        """A float type's precision in bits (the implicit leading bit included): every
        integer of at most this many bits is exact in it."""
        if not self.is_float():
            raise TypeError(f"significand_bits() needs a float type, not {self}")
        return {16: 11, 32: 24, 64: 53}[self.bits]

    def can_represent(self, v) -> bool:
        if self.is_float():
            return True
        return self.min_value() <= v <= self.max_value()

    def __str__(self) -> str:
        return "bool" if self.code == "bool" else f"{self.code}{self.bits}"

    __repr__ = __str__

    def __call__(self, e):
        """``ts.float32(e)`` is ``ts.cast(ts.float32, e)``."""
        from .expr import cast
        return cast(self, e)


bool_ = Type("bool", 1)
uint8 = Type("uint", 8)
uint16 = Type("uint", 16)
uint32 = Type("uint", 32)
int8 = Type("int", 8)
int16 = Type("int", 16)
int32 = Type("int", 32)
int64 = Type("int", 64)
uint64 = Type("uint", 64)
float16 = Type("float", 16)
float32 = Type("float", 32)
float64 = Type("float", 64)

ALL_TYPES = (bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
             float16, float32, float64)
_BY_NAME = {str(t): t for t in ALL_TYPES}


def type_named(name: str) -> Type:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown type name {name!r}; expected one of {sorted(_BY_NAME)}") from None


def type_of_dtype(dtype) -> Type:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return bool_
    kind = {"i": "int", "u": "uint", "f": "float"}.get(dt.kind)
    if kind is None:
        raise ValueError(f"no tilesolve type for numpy dtype {dt}")
    t = Type(kind, dt.itemsize * 8)
    if t not in _BY_NAME.values():
        raise ValueError(f"no tilesolve type for numpy dtype {dt}")
    return t


def match_types(a: Type, b: Type) -> Type:
    """The common type two operands of a binary operator are converted to."""
    if a == b:
        return a
    if a.is_bool():
        return b
    if b.is_bool():
        return a
    if a.is_float() or b.is_float():
        if a.is_float() and b.is_float():
            return a if a.bits >= b.bits else b
        return a if a.is_float() else b
    if a.code == b.code:
        return a if a.bits >= b.bits else b
    # one signed, one unsigned: a signed integer of the wider width
    return Type("int", max(a.bits, b.bits))
