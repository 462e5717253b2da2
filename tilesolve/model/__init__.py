"""The algorithm language (and, in schedule.py, the schedule value)."""
from . import types
from .boundary import constant_exterior, mirror_image, mirror_interior, repeat_edge  # noqa: F401
from .expr import (BinOp, BufferExtent, Call, Cast, Const, Expr, Intrinsic, Let, Not,  # noqa: F401
                   Param, RVar, Select, Var, abs_, as_expr, atan2, cast, ceil, clamp, cos,
                   exp, floor, log, max_, min_, pow_, round_, saturating_cast, select, sin,
                   sqrt, tan)
from .func import Definition, Func  # noqa: F401
from .params import ImageParam  # noqa: F401
from .pipeline import Pipeline  # noqa: F401
from .rdom import RDom  # noqa: F401
from .reductions import maximum, minimum, product, sum  # noqa: F401,A004
from .types import (ALL_TYPES, Type, bool_, float32, float64, int8, int16, int32,  # noqa: F401
                    uint8, uint16, uint32)

__all__ = ["types"]
