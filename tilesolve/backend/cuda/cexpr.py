"""Expressions of the loop IR as CUDA C text, with exactly ``model.evaluate``'s semantics.

The text needs no header: scalar types are our own typedefs (``ts_i32`` ...)
and the helpers below (Euclidean ``/`` and ``%``, NaN-propagating float
``min``/``max``, wrapping ``abs``) are ``__device__`` functions written in the
prelude, so the same text compiles with nvcc, NVRTC and g++ (under the CPU shim).

How each rule of ``types.py`` is kept:

* integer ``+ - *`` run in the unsigned type of the same width (wrap-around
  without signed-overflow UB), then convert back;
* integer ``/`` and ``%`` call ``ts_div``/``ts_mod``: Euclidean, ``x/0 == x%0 == 0``,
  ``x / -1`` negates with wrap-around (no trap on the most negative value);
* float ``%`` is ``a - b*floor(a/b)`` as in numpy's evaluation;
* float ``min``/``max`` propagate NaN like ``np.minimum``/``np.maximum``;
* casts to bool test ``!= 0``; other casts are C conversions (float -> int
  truncates); ``round`` is ``rint`` (ties to even in the default rounding mode);
* ``select`` is ``?:`` (the untaken branch is not evaluated, which only
  matters for Loads, and never changes a value);
* float16 is ``ts_f16``, a struct holding the IEEE binary16 bits (the layout of CUDA's
  ``__half``, with no header needed): every op converts its operands to float
  (``ts_hf``, exact), computes in float and rounds the result once (``ts_h``, to nearest,
  ties to even); float ``%`` rounds each of its ops, as numpy does.  On the device the
  conversions are the PTX instructions ``cvt.f32.f16`` and ``cvt.rn.f16.f32``; elsewhere
  (the CPU shim) integer code.  A double is rounded to float16 once, through float
  rounded to odd (``ts_hd``).
"""
from __future__ import annotations

import keyword
import math
import re

import numpy as np

from ...errors import LoweringError
from ...lower.ir import Load
from ...model import expr as E
from ...model import ops
from ...model.dispatch import NodeTable
from ...model.types import Type

_CTYPE = {("bool", 1): "bool", ("int", 8): "ts_i8", ("int", 16): "ts_i16",
          ("int", 32): "ts_i32", ("int", 64): "ts_i64", ("uint", 8): "ts_u8",
          ("uint", 16): "ts_u16", ("uint", 32): "ts_u32", ("uint", 64): "ts_u64",
          ("float", 16): "ts_f16", ("float", 32): "float", ("float", 64): "double"}

PRELUDE = r"""// ---- tilesolve CUDA prelude: scalar types and exact-semantics helpers ----
typedef signed char ts_i8;  typedef unsigned char ts_u8;
typedef short ts_i16;       typedef unsigned short ts_u16;
typedef int ts_i32;         typedef unsigned int ts_u32;
typedef long long ts_i64;   typedef unsigned long long ts_u64;
// wrap-around + - *: compute in an unsigned type at least 32 bits wide (no promotion to
// signed int, so no overflow UB), then convert back (conversions wrap)
template <class T> struct ts_unsigned { typedef ts_u32 type; };
template <> struct ts_unsigned<ts_i64> { typedef ts_u64 type; };
template <> struct ts_unsigned<ts_u64> { typedef ts_u64 type; };
template <class T> __device__ __forceinline__ T ts_add(T a, T b) {
  typedef typename ts_unsigned<T>::type U; return (T)(U)((U)a + (U)b); }
template <class T> __device__ __forceinline__ T ts_sub(T a, T b) {
  typedef typename ts_unsigned<T>::type U; return (T)(U)((U)a - (U)b); }
template <class T> __device__ __forceinline__ T ts_mul(T a, T b) {
  typedef typename ts_unsigned<T>::type U; return (T)(U)((U)a * (U)b); }
template <class T> __device__ __forceinline__ T ts_neg(T a) {
  typedef typename ts_unsigned<T>::type U; return (T)(U)((U)0 - (U)a); }
// Euclidean division and remainder; x / 0 == x % 0 == 0; x / -1 negates (wraps)
template <class T> __device__ __forceinline__ T ts_div(T a, T b) {
  if (b == 0) return (T)0;
  if ((T)-1 < (T)0 && b == (T)-1) return ts_neg(a);
  T q = (T)(a / b), r = (T)(a % b);
  if (r < 0) q = (b > 0) ? (T)(q - 1) : (T)(q + 1);
  return q; }
template <class T> __device__ __forceinline__ T ts_mod(T a, T b) {
  if (b == 0) return (T)0;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)0;
  T r = (T)(a % b);
  if (r < 0) r = (b > 0) ? ts_add(r, b) : ts_sub(r, b);
  return r; }
// shifts: a negative amount shifts the other way; the type's width or more shifts every
// bit out (0, or -1 for a negative signed value shifted right)
template <class T> __device__ __forceinline__ T ts_shift(T a, T s, bool left) {
  typedef typename ts_unsigned<T>::type U;
  const unsigned long long bits = 8ull * sizeof(T);
  unsigned long long m = (unsigned long long)(U)s;      // the magnitude, without overflow
  if ((T)-1 < (T)0 && s < (T)0) { left = !left; m = (unsigned long long)(U)((U)0 - (U)s); }
  if (left) return m >= bits ? (T)0 : (T)(U)((U)a << m);
  if (m >= bits) return (T)((T)-1 < (T)0 && a < (T)0 ? (T)-1 : (T)0);
  return (T)(a >> m); }
template <class D, class S> __device__ __forceinline__ D ts_reinterpret(S s) {
  union { S s; D d; } u; u.s = s; return u.d; }
template <class T> __device__ __forceinline__ T ts_iabs(T a) { return a < 0 ? ts_neg(a) : a; }
template <class T> __device__ __forceinline__ T ts_imin(T a, T b) { return a < b ? a : b; }
template <class T> __device__ __forceinline__ T ts_imax(T a, T b) { return a > b ? a : b; }
// float min/max propagate NaN (np.minimum / np.maximum)
__device__ __forceinline__ float ts_fmin(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
__device__ __forceinline__ float ts_fmax(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
__device__ __forceinline__ double ts_dmin(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
__device__ __forceinline__ double ts_dmax(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
__device__ __forceinline__ float ts_fmod(float a, float b) { return a - b * floorf(a / b); }
__device__ __forceinline__ double ts_dmod(double a, double b) { return a - b * floor(a / b); }
// float16: the binary16 bits; ops convert to float, compute, and round once
struct ts_f16 { unsigned short bits; };
__device__ __forceinline__ ts_f16 ts_hbits(unsigned short b) { ts_f16 h; h.bits = b; return h; }
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float ts_hf(ts_f16 h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f; }
__device__ __forceinline__ ts_f16 ts_h(float f) {
  unsigned short b; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f)); return ts_hbits(b); }
#else
__device__ __forceinline__ float ts_hf(ts_f16 h) {
  ts_u32 x = h.bits, sign = (x & 0x8000u) << 16, e = x & 0x7c00u, m = x & 0x3ffu, r;
  if (e == 0x7c00u) r = 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);   // inf, NaN (quiet)
  else if (e == 0) r = ts_reinterpret<ts_u32, float>((float)m * 5.9604644775390625e-08f);
  else r = ((x & 0x7fffu) << 13) + 0x38000000u;
  return ts_reinterpret<float, ts_u32>(sign | r); }
__device__ __forceinline__ ts_f16 ts_h(float f) {      // to nearest, ties to even
  ts_u32 x = ts_reinterpret<ts_u32, float>(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu, r;
  if (a > 0x7f800000u) r = 0x7e00u | ((a >> 13) & 0x3ffu);                   // NaN (quiet)
  else if (a >= 0x477ff000u) r = 0x7c00u;                                     // 65520 on: inf
  else if (a >= 0x38800000u) {                                                // normal
    ts_u32 base = a - 0x38000000u; r = (base + 0xfffu + ((base >> 13) & 1u)) >> 13; }
  else {                                                                      // subnormal, 0
    ts_u32 s = 126u - (a >> 23); if (s > 31u) s = 31u;
    ts_u32 m = (a & 0x7fffffu) | 0x800000u;
    r = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s; }
  return ts_hbits((unsigned short)(sign | r)); }
#endif
__device__ __forceinline__ ts_f16 ts_hd(double d) {    // once: through float rounded to odd
  if (d != d) return ts_h((float)d);
  if (d >= 65520.0 || d <= -65520.0) return ts_hbits(d > 0 ? 0x7c00 : 0xfc00);
  float r = (float)d;
  if ((double)r != d) {
    ts_u32 b = ts_reinterpret<ts_u32, float>(r);
    double ar = r < 0 ? -(double)r : (double)r, ad = d < 0 ? -d : d;
    if (ar > ad) b -= 1u;
    r = ts_reinterpret<float, ts_u32>(b | 1u); }
  return ts_h(r); }
__device__ __forceinline__ ts_f16 ts_hmod(ts_f16 a, ts_f16 b) {
  ts_f16 q = ts_h(ts_hf(a) / ts_hf(b)), p = ts_h(ts_hf(b) * floorf(ts_hf(q)));
  return ts_h(ts_hf(a) - ts_hf(p)); }
// vector accesses (``vector.py``): w[k] = b[i + k] for k < LEN, each run of N
// elements whose address is aligned to N of them one float2/float4 (int4, double2 ...)
// access, the others one each (the misalignment of b + i, in elements, chooses the
// runs); ts_vstore writes N elements, one access where aligned
template <class T, int N> struct alignas(sizeof(T) * N) ts_vec { T a[N]; };
template <int N, int O, int END, int M, class T> __device__ __forceinline__ void ts_vwin(
    T* w, const T* p) {
  if constexpr (O < END) {
    if constexpr ((((M + O) % N) + N) % N == 0 && O + N <= END) {
      const ts_vec<T, N> v = *(const ts_vec<T, N>*)(p + O);
#pragma unroll
      for (int j = 0; j < N; ++j) w[j] = v.a[j];
      ts_vwin<N, O + N, END, M>(w + N, p);
    } else {
      w[0] = p[O];
      ts_vwin<N, O + 1, END, M>(w + 1, p);
    }
  } }
template <int N, int LEN, class T> __device__ __forceinline__ void ts_vload(
    T* w, const T* b, ts_i64 i) {
  const T* p = b + i;
  switch ((int)(((unsigned long long)p / sizeof(T)) % N)) {
    case 0: ts_vwin<N, 0, LEN, 0>(w, p); break;
    case 1: ts_vwin<N, 0, LEN, 1>(w, p); break;
    case 2: ts_vwin<N, 0, LEN, 2>(w, p); break;
    default: ts_vwin<N, 0, LEN, 3>(w, p); break;
  } }
template <int N, class T> __device__ __forceinline__ void ts_vstore(T* b, ts_i64 i, const T* in) {
  T* p = b + i;
  if (((unsigned long long)p & (sizeof(ts_vec<T, N>) - 1)) == 0) {
    ts_vec<T, N> v;
#pragma unroll
    for (int k = 0; k < N; ++k) v.a[k] = in[k];
    *(ts_vec<T, N>*)p = v;
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = in[k];
  } }
// ---- end of prelude ----
"""

_MATH32 = {"sqrt": "sqrtf", "exp": "expf", "log": "logf", "pow": "powf", "sin": "sinf",
           "cos": "cosf", "tan": "tanf", "atan2": "atan2f", "floor": "floorf",
           "ceil": "ceilf", "round": "rintf", "abs": "fabsf", "trunc": "truncf",
           **{n: n + "f" for n in ("atan", "asin", "acos", "sinh", "cosh", "tanh", "asinh",
                                   "acosh", "atanh")}}
_MATH64 = {"sqrt": "sqrt", "exp": "exp", "log": "log", "pow": "pow", "sin": "sin",
           "cos": "cos", "tan": "tan", "atan2": "atan2", "floor": "floor",
           "ceil": "ceil", "round": "rint", "abs": "fabs", "trunc": "trunc",
           **{n: n for n in ("atan", "asin", "acos", "sinh", "cosh", "tanh", "asinh",
                             "acosh", "atanh")}}
_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

_C_KEYWORDS = set(keyword.kwlist) | {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "bool", "class", "new", "delete",
    "template", "this", "namespace", "using", "operator", "private", "public", "protected",
    "friend", "virtual", "true", "false", "try", "catch", "throw", "typename", "main",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "abs",
    "dim3", "uint3", "cudasim", "printf", "malloc", "free", "memcpy", "assert", "isnan"}


# a buffer named ``exp`` would hide the function ``exp``: math names are reserved too
_C_KEYWORDS |= set(_MATH32.values()) | set(_MATH64.values())


def ctype(t: Type) -> str:
    """The C spelling of a scalar type (prelude typedefs for integers)."""
    try:
        return _CTYPE[(t.code, t.bits)]
    except KeyError:
        raise LoweringError(f"the CUDA backend has no C type for {t}") from None


class Namer:
    """IR names (``blur_y.s0.x.xo``) -> unique C identifiers (``blur_y_s0_x_xo``).

    The same IR name always gets the same identifier; two IR names never share
    one; C keywords, CUDA built-ins and the ``ts_`` prefix are avoided.
    """

    def __init__(self, reserved=()):
        self._by_name: dict[str, str] = {}
        self._used: set[str] = set(reserved)

    def __call__(self, name: str) -> str:
        c = self._by_name.get(name)
        if c is not None:
            return c
        base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
        if base[0].isdigit() or base.startswith("ts_") or base.startswith("__"):
            base = "v_" + base.lstrip("_")
        c = self._by_name[name] = self.fresh(base + "_" if base in _C_KEYWORDS else base)
        return c

    def fresh(self, base: str) -> str:
        """A new identifier not tied to any IR name."""
        c, k = base, 1
        while c in self._used:
            k += 1
            c = f"{base}_{k}"
        self._used.add(c)
        return c


def literal(c: E.Const) -> str:
    """A C literal of exactly ``c``'s type and value (hex floats: no rounding)."""
    t, v = c.type, c.value
    if t.is_bool():
        return "true" if v else "false"
    if t.is_float() and t.bits == 16:
        with np.errstate(over="ignore"):
            return f"ts_hbits({int(np.float16(v).view(np.uint16))}u)"
    if t.is_float():
        suffix = "f" if t.bits == 32 else ""
        if math.isnan(v):
            return f"__builtin_nan{suffix}(\"\")"
        if math.isinf(v):
            s = f"__builtin_huge_val{suffix}()"
            return s if v > 0 else f"(-{s})"
        text = float(v).hex() + suffix
        return f"({text})" if v < 0 or text.startswith("-") else text
    ct = ctype(t)
    if t.is_int() and v == t.min_value():
        return f"(({ct})({v + 1}LL - 1LL))"
    if t.code == "int" and t.bits == 32:
        return str(v) if v >= 0 else f"({v})"
    return f"(({ct}){v}{'ULL' if t.is_uint() else 'LL'})"


def _log2(e):
    """k if ``e`` is an integer constant 2**k > 0 (not the sign bit), else None."""
    if isinstance(e, E.Const) and e.type.is_integral() and e.value > 0:
        v = int(e.value)
        if v & (v - 1) == 0 and v.bit_length() < e.type.bits:
            return v.bit_length() - 1
    return None


def reciprocal(e: E.Expr, fast_math: bool):
    """The constant ``1 / e`` that multiplies instead of dividing by the float constant
    ``e``, or None.  Exact when ``e`` is a power of two whose reciprocal is a normal
    number (``x / 4 == x * 0.25`` for every ``x``, NaN and infinities included): always
    taken.  Otherwise ``x * rn(1 / c)`` may differ from ``rn(x / c)`` in the last bit:
    taken only under ``fast_math`` (the schedule's ``set_codegen(fma=True)``)."""
    if not (isinstance(e, E.Const) and e.type.is_float() and e.type.bits in (32, 64)):
        return None
    ft = np.float32 if e.type.bits == 32 else np.float64
    c = ft(e.value)
    if not np.isfinite(c) or c == 0:
        return None
    with np.errstate(over="ignore", under="ignore"):
        r = ft(1) / c
    if not np.isfinite(r) or r == 0:
        return None
    mantissa, _ = math.frexp(float(c))
    exact = abs(mantissa) == 0.5 and abs(r) >= np.finfo(ft).tiny
    if exact or fast_math:
        return E.Const(e.type, float(r))
    return None


class ExprPrinter:
    """Prints Exprs of the loop IR as C; ``names`` maps IR names to C identifiers;
    ``fast_math``: results may differ from IEEE division in the last bit (a division by
    a constant becomes a multiplication by its rounded reciprocal)."""

    def __init__(self, names: Namer, fast_math: bool = False):
        self.names = names
        self.fast_math = fast_math
        self.in_index = False

    def __call__(self, e: E.Expr) -> str:
        return self.expr(e)

    def index(self, e: E.Expr) -> str:
        """``e`` in an index context (a Load/Store index, loop bounds): int32/int64
        ``+ - *`` are plain C there, as in Halide: an index that overflows is out of
        bounds anyway, and the compiler may then assume it does not."""
        return self.expr(e, True)

    def expr(self, e: E.Expr, index: bool = False) -> str:
        """``e`` as C.  Iterative (operands printed before their users, each distinct
        node once per context), so the depth of ``e`` is not limited by Python's
        recursion limit."""
        done: dict = {}             # (id(node), in an index) -> its text
        stack = [(e, index, False)]
        try:
            while stack:
                n, ix, ready = stack.pop()
                if (id(n), ix) in done:
                    continue
                ops_ = _operands(n, ix)
                if not ready:
                    stack.append((n, ix, True))
                    stack.extend(x + (False,) for x in ops_ if (id(x[0]), x[1]) not in done)
                    continue
                self.in_index = ix          # what the op table's rules see
                done[(id(n), ix)] = self.node(n, [done[(id(c), cix)] for c, cix in ops_])
        finally:
            self.in_index = False
        return done[(id(e), index)]

    def node(self, e: E.Expr, args: list) -> str:
        """One node as C, given its operands' texts (those of ``_operands``)."""
        return _C(e, self, args)


_C = NodeTable("CUDA C", E.NODE_KINDS + (Load,))


@_C.on(E.Const)
def _c_const(e, p, args):
    return literal(e)


@_C.on(E.Var, E.Param)
def _c_name(e, p, args):
    return p.names(e.name)


@_C.on(Load)
def _c_load(e, p, args):
    return f"{p.names(e.buffer)}[{args[0]}]"


@_C.on(E.Cast)
def _c_cast(e, p, args):
    return _cast(e.value.type, e.type, args[0])


@_C.on(E.BinOp)
def _c_binop(e, p, args):
    return ops.impl("cuda", e.op)(p, e, *args)


@_C.on(E.Not)
def _c_not(e, p, args):
    return f"(!{args[0]})"


@_C.on(E.Select)
def _c_select(e, p, args):
    return f"({args[0]} ? {args[1]} : {args[2]})"


@_C.on(E.Intrinsic)
def _c_intrinsic(e, p, args):
    return ops.impl("cuda", e.name)(p, e, args)


@_C.on(E.Let)
def _c_let(e, p, args):
    t = ctype(e.value.type)
    return (f"([&]() -> {ctype(e.type)} {{ const {t} {p.names(e.name)} = "
            f"{args[0]}; return {args[1]}; }}())")


@_C.on(E.Call, E.BufferExtent, E.RVar)
def _c_unlowered(e, p, args):
    raise LoweringError(f"the CUDA backend got an unlowered {type(e).__name__} node ({e}); "
                        "lowering should have replaced it")


def _is_half(t: Type) -> bool:
    return t.is_float() and t.bits == 16


def _cast(src: Type, dst: Type, a: str) -> str:
    """A C conversion with the rules of types.py; float16 through float (exact as a
    source; as a destination rounded once, from float, an integer or a double)."""
    if _is_half(src) and src != dst:
        a, src = f"ts_hf({a})", Type("float", 32)
    if dst.is_bool():
        return f"({a} != 0)"
    if _is_half(dst) and src != dst:
        return f"ts_hd({a})" if src.bits == 64 and src.is_float() else f"ts_h((float)({a}))"
    return f"(({ctype(dst)}){a})"


def _operands(e: E.Expr, ix: bool) -> tuple:
    """The operands ``ExprPrinter.node`` prints ``e`` from, each with its context (a
    Load's index is an index context; everything else inherits its user's)."""
    if isinstance(e, Load):
        return ((e.index, True),)
    if isinstance(e, (E.Cast, E.Not)):
        return (((e.value if isinstance(e, E.Cast) else e.a), ix),)
    if isinstance(e, E.BinOp):
        return ((e.a, ix), (e.b, ix))
    if isinstance(e, E.Select):
        return ((e.cond, ix), (e.true_value, ix), (e.false_value, ix))
    if isinstance(e, E.Intrinsic):
        return tuple((a, ix) for a in e.args)
    if isinstance(e, E.Let):
        return ((e.value, ix), (e.body, ix))
    return ()


# -- the op table's CUDA C spellings: rule(printer, e, *printed operands) ------------------
@ops.register("cuda", *ops.of_kind("cmp"))
def _c_compare(p, e, a, b):
    if _is_half(e.a.type):
        a, b = f"ts_hf({a})", f"ts_hf({b})"
    return f"({a} {_CMP[e.op]} {b})"


@ops.register("cuda", "and", "or")
def _c_logic(p, e, a, b):
    return f"({a} {'&&' if e.op == 'and' else '||'} {b})"


@ops.register("cuda", "bitand", "bitor", "bitxor", "shl", "shr")
def _c_bits(p, e, a, b):
    ct = ctype(e.a.type)
    if e.op in ("shl", "shr"):
        return f"ts_shift<{ct}>({a}, {b}, {'true' if e.op == 'shl' else 'false'})"
    return f"(({ct})({a} {E.OP_SYMBOL[e.op]} {b}))"


@ops.register("cuda", "add", "sub", "mul", "div", "mod", "min", "max")
def _c_arith(p, e, a, b):
    op, t = e.op, e.a.type
    ct = ctype(t)
    if _is_half(t):
        if op == "mod":
            return f"ts_hmod({a}, {b})"
        a, b = f"ts_hf({a})", f"ts_hf({b})"
        if op in _ARITH:
            return f"ts_h({a} {_ARITH[op]} {b})"
        return f"ts_h(ts_f{op}({a}, {b}))"
    if t.is_float():
        r = reciprocal(e.b, p.fast_math) if op == "div" else None
        if r is not None:                    # a multiplication, exact for a power of two
            return f"({a} * {literal(r)})"
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        pre = "ts_f" if t.bits == 32 else "ts_d"
        return f"{pre}{op}({a}, {b})"      # ts_fmin ts_fmax ts_fmod (ts_d...)
    if op in _ARITH and op != "div" and p.in_index and t.is_int() and t.bits >= 32:
        return f"({a} {_ARITH[op]} {b})"
    k = _log2(e.b)
    if k is not None and op == "div":        # Euclidean: floor, an arithmetic shift
        return f"(({ct})({a} >> {k}))" if k else a
    if k is not None and op == "mod":        # Euclidean: never negative, a mask
        return f"(({ct})({a} & {(1 << k) - 1}))"
    if op in ("min", "max"):
        return f"ts_i{op}<{ct}>({a}, {b})"
    return f"ts_{op}<{ct}>({a}, {b})"


@ops.register("cuda", "reinterpret")
def _c_reinterpret(p, e, args):
    return f"ts_reinterpret<{ctype(e.type)}, {ctype(e.args[0].type)}>({args[0]})"


@ops.register("cuda", *ops.of_kind("math"))
def _c_math(p, e, args):
    t = e.type
    if e.name == "abs" and not t.is_float():
        return args[0] if not t.is_int() else f"ts_iabs<{ctype(t)}>({args[0]})"
    if not t.is_float():
        raise LoweringError(f"math function {e.name} on {t} ({e}); the model converts its "
                            "arguments to float first")
    if _is_half(t):                      # in float, rounded once
        return f"ts_h({_MATH32[e.name]}({', '.join(f'ts_hf({a})' for a in args)}))"
    table = _MATH32 if t.bits == 32 else _MATH64
    return f"{table[e.name]}({', '.join(args)})"
