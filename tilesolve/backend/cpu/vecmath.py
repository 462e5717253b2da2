"""Vector transcendental functions for float32, in LLVM IR (no C library on the hot path).

Without a vector math library, LLVM lowers ``llvm.pow.v16f32`` (and ``exp``, ``sin``,
...) to sixteen calls of the C library's ``powf``, one lane at a time, and the calls
the code generator makes itself (``tanf``, ``atan2f``, ...) are per lane as well; a
vectorized stencil that calls them then runs several times slower than the same schedule
in Halide, whose code generator has vectorizable versions.  These are ours: range
reduction and a polynomial, tens of vector instructions, with the IEEE / C99 special
values of the C library.  ``tests/test_vecmath.py`` compares them with numpy in float64
and states each one's bound; the accuracy, in float32 ulps of the result:

* ``exp``, ``log`` (``vecmath_explog.py``): a few ulps over the whole float32 range;
* ``pow`` (``vecmath_pow.py``): ``y log2 |x|`` as float32 pairs with fused
  multiply-adds, within one ulp where ``|y log2 x| < 100`` (every sRGB or gamma curve)
  and 2.3 ulps up to the overflow; ``tanh``, through float64: half an ulp;
* ``sin``, ``cos``, ``tan`` (``vecmath_trig.py``): reduction modulo pi/2 in float64,
  a few ulps for ``|x| < 2^25``, the C library (per lane, only when some lane needs it)
  beyond; ``atan``, ``atan2``: a few ulps everywhere.

One table, :data:`EMITTERS`, says which functions are emitted here; only float32
vectors take this path (scalars and float64 keep the LLVM intrinsics or C library calls,
one call each, which is what they would cost anyway), and
``generate(..., vector_math=False)`` turns it off to compare.
"""
from __future__ import annotations

from llvmlite import ir

from .vecmath_explog import emit_exp, emit_log
from .vecmath_pow import emit_pow, emit_tanh
from .vecmath_trig import emit_atan, emit_atan2, emit_cos, emit_sin, emit_tan

EMITTERS = {"exp": emit_exp, "log": emit_log, "pow": emit_pow, "tanh": emit_tanh,
            "sin": emit_sin, "cos": emit_cos, "tan": emit_tan, "atan": emit_atan,
            "atan2": emit_atan2}


def applies(name: str, ty: ir.Type) -> bool:
    """Whether ``name`` on values of ``ty`` is emitted here."""
    return (name in EMITTERS and isinstance(ty, ir.VectorType)
            and isinstance(ty.element, ir.FloatType))


def emit(em, name: str, *args: ir.Value) -> ir.Value:
    """``name(*args)`` on float32 vectors (``applies`` holds)."""
    return EMITTERS[name](em, *args)
