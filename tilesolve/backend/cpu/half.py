"""float16 in the LLVM backend: conversions to and from float32, and their runtime.

A float16 value lives in memory and in registers as LLVM's ``half``; every operation on it
is computed in float32 and rounded to float16 once (``widen`` the operands, compute,
``narrow`` the result), which is exactly the float16 rounding of the exact result for
``+ - * /`` and sqrt (float32 holds more than twice float16's 11 significant bits).  The
generated code therefore never relies on how LLVM legalizes arithmetic on ``half``.

A float64 is narrowed to float16 through float32 *rounded to odd*: the float32 neighbour of
the value whose last bit is 1 (or the value itself when exact).  With 13 bits to spare, the
one rounding to nearest that follows is the correct rounding of the float64 (rounding
through float32 to nearest would round twice, and differ on values close to a float16
midpoint).

Runtime: the conversions ``fpext half`` and ``fptrunc float to half`` are instructions on
targets with F16C (x86) or native half support (AArch64).  Elsewhere LLVM calls the
compiler-rt routines ``__extendhfsf2``, ``__truncsfhf2`` (and ``__truncdfhf2`` should a
float64 ever be narrowed directly), which a Python process need not have.  When they do not
resolve, :func:`install_runtime` binds them (``llvm.add_symbol``) to the implementations
below, written in LLVM IR with integer operations only (rounding to nearest, ties to even;
a NaN stays a NaN with its quiet bit set, as F16C does).  ``widen`` and ``narrow`` install
them on first use, before any code that may call them is loaded.
"""
from __future__ import annotations

import threading

import llvmlite.binding as llvm
from llvmlite import ir

HALF = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
I32 = ir.IntType(32)

RUNTIME_SYMBOLS = ("__extendhfsf2", "__truncsfhf2", "__truncdfhf2")


def _like(v, elem: ir.Type) -> ir.Type:
    """``elem``, or a vector of ``elem`` with as many lanes as ``v``."""
    if isinstance(v.type, ir.VectorType):
        return ir.VectorType(elem, v.type.count)
    return elem


def _splat(ty: ir.Type, value) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def widen(bld: ir.IRBuilder, v):
    """A half (or vector of half) value as float32: exact."""
    install_runtime()
    return bld.fpext(v, _like(v, F32))


def narrow(bld: ir.IRBuilder, v):
    """A float32 (or vector) value rounded to the nearest half (ties to even; past 65504,
    from 65520 on, to inf)."""
    install_runtime()
    return bld.fptrunc(v, _like(v, HALF))


def narrow_double(bld: ir.IRBuilder, v):
    """A float64 (or vector) value rounded to the nearest half, once (see the module
    docstring: through float32 rounded to odd)."""
    f32, i32, f64 = _like(v, F32), _like(v, I32), _like(v, F64)
    r = bld.fptrunc(v, f32)
    back = bld.fpext(r, f64)
    inexact = bld.fcmp_ordered("!=", back, v)
    fabs = bld.module.globals.get(f"llvm.fabs.{_mangle(f64)}")
    if fabs is None:
        fabs = ir.Function(bld.module, ir.FunctionType(f64, [f64]), f"llvm.fabs.{_mangle(f64)}")
    away = bld.fcmp_ordered(">", bld.call(fabs, [back]), bld.call(fabs, [v]))
    bits = bld.bitcast(r, i32)
    toward_zero = bld.select(away, bld.sub(bits, _splat(i32, 1)), bits)
    odd = bld.select(inexact, bld.or_(toward_zero, _splat(i32, 1)), bits)
    return narrow(bld, bld.bitcast(odd, f32))


def _mangle(ty: ir.Type) -> str:
    return f"v{ty.count}f64" if isinstance(ty, ir.VectorType) else "f64"


# -- the runtime: integer-only conversions for targets without half instructions -----------
_RUNTIME_IR = r"""
define float @__extendhfsf2(half %h) {
  %hb = bitcast half %h to i16
  %x = zext i16 %hb to i32
  %sign = and i32 %x, 32768
  %s = shl i32 %sign, 16
  %e = and i32 %x, 31744
  %m = and i32 %x, 1023
  %mag = and i32 %x, 32767
  %sh = shl i32 %mag, 13
  %norm = add i32 %sh, 939524096
  %infnan0 = or i32 %sh, 2139095040
  %isnan = icmp ne i32 %m, 0
  %quiet = select i1 %isnan, i32 4194304, i32 0
  %infnan = or i32 %infnan0, %quiet
  %mf = uitofp i32 %m to float
  %sub = fmul float %mf, 0x3E70000000000000
  %subb = bitcast float %sub to i32
  %iszero = icmp eq i32 %e, 0
  %ismax = icmp eq i32 %e, 31744
  %r1 = select i1 %ismax, i32 %infnan, i32 %norm
  %r2 = select i1 %iszero, i32 %subb, i32 %r1
  %r = or i32 %r2, %s
  %f = bitcast i32 %r to float
  ret float %f
}

define internal i16 @ts_f32_to_f16_bits(float %f) {
  %x = bitcast float %f to i32
  %hi = lshr i32 %x, 16
  %sign = and i32 %hi, 32768
  %a = and i32 %x, 2147483647
  %isnan = icmp ugt i32 %a, 2139095040
  %pay0 = lshr i32 %a, 13
  %pay1 = and i32 %pay0, 1023
  %nan = or i32 %pay1, 32256
  %isbig = icmp uge i32 %a, 1199566848
  %base = sub i32 %a, 939524096
  %b13 = lshr i32 %base, 13
  %b13odd = and i32 %b13, 1
  %nb0 = add i32 %base, 4095
  %nb1 = add i32 %nb0, %b13odd
  %normal = lshr i32 %nb1, 13
  %issub = icmp ult i32 %a, 947912704
  %ex = lshr i32 %a, 23
  %s0 = sub i32 126, %ex
  %sbig = icmp ugt i32 %s0, 31
  %sc = select i1 %sbig, i32 31, i32 %s0
  %s = select i1 %issub, i32 %sc, i32 14
  %mant0 = and i32 %a, 8388607
  %mant = or i32 %mant0, 8388608
  %s1 = sub i32 %s, 1
  %halfw = shl i32 1, %s1
  %hm1 = sub i32 %halfw, 1
  %ms = lshr i32 %mant, %s
  %msodd = and i32 %ms, 1
  %sb0 = add i32 %mant, %hm1
  %sb1 = add i32 %sb0, %msodd
  %subn = lshr i32 %sb1, %s
  %r0 = select i1 %issub, i32 %subn, i32 %normal
  %r1 = select i1 %isbig, i32 31744, i32 %r0
  %r2 = select i1 %isnan, i32 %nan, i32 %r1
  %r3 = or i32 %r2, %sign
  %r = trunc i32 %r3 to i16
  ret i16 %r
}

define half @__truncsfhf2(float %f) {
  %b = call i16 @ts_f32_to_f16_bits(float %f)
  %h = bitcast i16 %b to half
  ret half %h
}

declare double @llvm.fabs.f64(double)

define half @__truncdfhf2(double %d) {
  %r = fptrunc double %d to float
  %back = fpext float %r to double
  %inexact = fcmp one double %back, %d
  %ab = call double @llvm.fabs.f64(double %back)
  %ad = call double @llvm.fabs.f64(double %d)
  %away = fcmp ogt double %ab, %ad
  %bits = bitcast float %r to i32
  %dec = sub i32 %bits, 1
  %tz = select i1 %away, i32 %dec, i32 %bits
  %odd = or i32 %tz, 1
  %o = select i1 %inexact, i32 %odd, i32 %bits
  %of = bitcast i32 %o to float
  %hb = call i16 @ts_f32_to_f16_bits(float %of)
  %h = bitcast i16 %hb to half
  ret half %h
}
"""

_lock = threading.Lock()
_engine = None          # keeps the runtime's code alive once bound
_installed = False


def install_runtime() -> tuple[str, ...]:
    """Bind the half conversion routines that this process does not already resolve;
    returns the names bound (idempotent: later calls bind nothing)."""
    global _engine, _installed
    if _installed:
        return ()
    from .target import LLVM_LOCK, initialize_llvm, runtime_engine
    with _lock:
        if _installed:
            return ()
        initialize_llvm()
        with LLVM_LOCK:
            missing = tuple(s for s in RUNTIME_SYMBOLS if not llvm.address_of_symbol(s))
            if missing:
                engine = runtime_engine(_RUNTIME_IR)
                for s in missing:
                    llvm.add_symbol(s, engine.get_function_address(s))
                _engine = engine
        _installed = True
        return missing


def runtime_ir() -> str:
    """The runtime's LLVM IR (for tests that compile it for another target)."""
    return _RUNTIME_IR
