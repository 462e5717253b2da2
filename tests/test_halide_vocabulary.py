"""Halide's functions built from the op table (model/derived.py), each against an
independent numpy formula, in the reference and in a compiled (vectorized) build."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import PipelineError

x = ts.Var("x")
N = 301


def _inputs(dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, N, endpoint=True).astype(dtype)
    a[:4] = [info.min, info.max, 0, info.max - 1]
    return a


def _both(expr_of, dtype, want):
    """``expr_of(a, b)`` over two inputs of ``dtype``: the reference and a vectorized
    build both equal ``want(a, b)`` (numpy on int64)."""
    t = ts.Type("uint" if np.dtype(dtype).kind == "u" else "int", np.dtype(dtype).itemsize * 8)
    A, B = ts.ImageParam(t, 1, "a"), ts.ImageParam(t, 1, "b")
    f = ts.Func("f")
    f[x] = expr_of(A[x], B[x])
    pipe = ts.Pipeline(f)
    a, b = _inputs(dtype, 0), _inputs(dtype, 1)
    expect = want(a.astype(np.int64), b.astype(np.int64))
    inputs = {k: v for k, v in (("a", a), ("b", b)) if k in pipe.images}
    ref = ts.reference.realize(pipe, [N], **inputs)
    np.testing.assert_array_equal(ref.astype(np.int64), expect)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, 16)
    got = ts.compile(pipe, s).realize([N], **inputs)
    np.testing.assert_array_equal(got, ref)
    return ref


def _sat(v, dtype):
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32])
def test_widening_and_saturating_arithmetic(dtype):
    _both(lambda a, b: ts.widening_mul(a, b), dtype, lambda a, b: a * b)
    _both(lambda a, b: ts.saturating_add(a, b), dtype, lambda a, b: _sat(a + b, dtype))
    _both(lambda a, b: ts.saturating_sub(a, b), dtype, lambda a, b: _sat(a - b, dtype))
    _both(lambda a, b: ts.halving_add(a, b), dtype, lambda a, b: (a + b) >> 1)
    _both(lambda a, b: ts.rounding_halving_add(a, b), dtype, lambda a, b: (a + b + 1) >> 1)
    _both(lambda a, b: ts.absd(a, b), dtype, lambda a, b: np.abs(a - b))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16])
def test_fixed_point_shifts(dtype):
    _both(lambda a, b: ts.rounding_shift_right(a, 3), dtype,
          lambda a, b: ((a + 4) >> 3).astype(dtype))
    _both(lambda a, b: ts.rounding_mul_shift_right(a, b, 7), dtype,
          lambda a, b: _sat((a * b + 64) >> 7, dtype))
    _both(lambda a, b: ts.mul_shift_right(a, b, 5), dtype, lambda a, b: _sat((a * b) >> 5, dtype))


def test_integer_lerp_rounds_to_nearest():
    w = ts.Var("x")
    _both(lambda a, b: ts.lerp(a, b, ts.cast(ts.uint8, w * 37)), np.uint8,
          lambda a, b: (a * (255 - (np.arange(N) * 37 % 256)) + b * (np.arange(N) * 37 % 256)
                        + 127) // 255)


def test_variadic_select_min_max_and_mux():
    _both(lambda a, b: ts.select(x < 10, a, x < 20, b, a ^ b), np.uint8,
          lambda a, b: np.where(np.arange(N) < 10, a, np.where(np.arange(N) < 20, b, a ^ b)))
    _both(lambda a, b: ts.max(a, b, a ^ b), np.int16,
          lambda a, b: np.maximum(np.maximum(a, b), a ^ b))
    _both(lambda a, b: ts.min([a, b, a >> 1]), np.int16,
          lambda a, b: np.minimum(np.minimum(a, b), a >> 1))
    idx = np.clip(np.arange(N) % 5 - 1, 0, 2)             # mux clamps its index
    _both(lambda a, b: ts.mux(x % 5 - 1, [a, b, a & b]), np.uint8,
          lambda a, b: np.choose(idx, [a, b, a & b]))
    with pytest.raises(PipelineError, match="odd number of at least 3"):
        ts.select(x < 1, 1, x < 2, 2)


def test_abs_of_a_signed_integer_is_unsigned():
    e = ts.abs(ts.cast(ts.int8, x))
    assert e.type == ts.uint8
    f = ts.Func("f")
    f[x] = ts.abs(ts.cast(ts.int8, x - 128))
    got = ts.reference.realize(ts.Pipeline(f), [3])
    assert got.dtype == np.uint8 and got.tolist() == [128, 127, 126]
    assert ts.abs(ts.cast(ts.uint8, x)).type == ts.uint8
    assert ts.abs(ts.cast(ts.float32, x)).type == ts.float32


def test_float_predicates_and_fast_functions():
    A = ts.ImageParam(ts.float32, 1, "a")
    f, g, h = ts.Func("f"), ts.Func("g"), ts.Func("h")
    f[x] = ts.cast(ts.uint8, ts.is_nan(A[x])) + 2 * ts.cast(ts.uint8, ts.is_inf(A[x])) \
        + 4 * ts.cast(ts.uint8, ts.is_finite(A[x]))
    g[x] = ts.fast_inverse(A[x]) + ts.likely(A[x])
    h[x] = ts.tanh(A[x]) + ts.atan(A[x]) + ts.trunc(A[x])
    pipe = ts.Pipeline([f, g, h])
    a = np.array([np.nan, np.inf, -np.inf, 1.5, -2.5, 0.0], np.float32)
    got = ts.compile(pipe, ts.Schedule(pipe)).realize([6], a=a)
    ref = ts.reference.realize(pipe, [6], a=a)
    assert got[0].tolist() == [1, 2, 2, 4, 4, 4]
    for o, r in zip(got, ref):
        np.testing.assert_allclose(o, r, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(ref[2][3:], np.tanh(a[3:]) + np.arctan(a[3:]) + np.trunc(a[3:]),
                               rtol=1e-6)


def test_int64_is_a_user_type():
    A = ts.ImageParam(ts.int64, 1, "a")
    f = ts.Func("f")
    f[x] = A[x] * 3 + (A[x] >> 2)
    a = np.array([1 << 40, -(1 << 50), 7], np.int64)
    pipe = ts.Pipeline(f)
    got = ts.compile(pipe, ts.Schedule(pipe)).realize([3], a=a)
    np.testing.assert_array_equal(got, a * 3 + (a >> 2))


def test_reinterpret_reads_the_bits_of_a_float_and_back():
    A = ts.ImageParam(ts.float32, 1, "a")
    f = ts.Func("f")
    bits = ts.reinterpret(ts.uint32, A[x])
    f[x] = ts.reinterpret(ts.float32, (bits & 0x807FFFFF) | (127 << 23))   # the mantissa in [1, 2)
    g = ts.Func("g")
    g[x] = ts.cast(ts.int32, (ts.reinterpret(ts.uint32, A[x]) >> 23) & 0xFF) - 127
    pipe = ts.Pipeline([f, g])
    a = np.random.default_rng(7).standard_normal(N).astype(np.float32) * 1e3
    u = a.view(np.uint32)
    want_f = ((u & np.uint32(0x807FFFFF)) | np.uint32(127 << 23)).view(np.float32)
    want_g = ((u >> 23) & 0xFF).astype(np.int32) - 127
    s = ts.Schedule(pipe)
    s[f].vectorize(x, 16)
    s[g].vectorize(x, 8)
    for got in (ts.reference.realize(pipe, [N], a=a), ts.compile(pipe, s).realize([N], a=a)):
        np.testing.assert_array_equal(got[0].view(np.uint32), want_f.view(np.uint32))
        np.testing.assert_array_equal(got[1], want_g)
    c = ts.reinterpret(ts.uint32, ts.cast(ts.float32, 1.0))
    from tilesolve.analysis.simplify import simplify
    assert simplify(c).value == 0x3F800000


def test_reinterpret_needs_the_same_width_and_no_bool():
    A = ts.ImageParam(ts.float32, 1, "a")
    with pytest.raises(PipelineError, match="float32 and uint16 must be non-bool types of the same width"):
        ts.reinterpret(ts.uint16, A[x])
    with pytest.raises(PipelineError, match="same width"):
        ts.reinterpret(ts.uint8, A[x] > 0)
    with pytest.raises(PipelineError, match="must be a ts type"):
        ts.reinterpret("uint32", A[x])
