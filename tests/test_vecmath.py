"""Vector math (backend/cpu/vecmath*.py): float32 exp, log, pow, sin, cos, tan, atan,
atan2 and tanh on vectors are emitted as our own code, not per-lane C library calls, and
agree with numpy in float64 to the bounds below (in float32 ulps of the exact result),
with the C library's special values (NaN, infinities, signed zeros, denormals).

Every result is compiled through ``ts.compile`` and run.  The bounds are above the
largest errors measured on millions of samples: pow 0.95 ulp where ``|y log2 x|`` is
below ~100 (sRGB, gamma, any base in [0, 255] to a power in [-4, 4]), 2.3 up to the
overflow, 4.0 ulps of 2^-149 for denormal results; tanh 0.50; exp 0.92; sin and cos
1.44; atan and atan2 1.64; log 2.83; tan 3.05."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.backend.cpu import vecmath

F32 = np.float32
TINY = float(np.finfo(F32).tiny)
BIG = float(np.finfo(F32).max)
ULP_BOUND = {"exp": 1, "log": 4, "pow": 4, "tanh": 1, "sin": 2, "cos": 2, "tan": 4,
             "atan": 2, "atan2": 2}
NUMPY = {"exp": np.exp, "log": np.log, "pow": np.power, "tanh": np.tanh, "sin": np.sin,
         "cos": np.cos, "tan": np.tan, "atan": np.arctan, "atan2": np.arctan2}
BINARY = {"pow", "atan2"}
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, 2.0 ** -149,
         -2.0 ** -149, 1e-40, TINY, BIG, -BIG, np.inf, -np.inf, np.nan, 16777215.0,
         16777216.0, -16777215.0, 0.99999994, 1.0000001, 1e10, -7.0, 1e-3, 100.0]


@functools.lru_cache(maxsize=None)
def compiled(fn: str, lanes: int = 16):
    x = ts.Var("x")
    ins = [ts.ImageParam(ts.float32, 1, n) for n in ("a", "b")[:1 + (fn in BINARY)]]
    f = ts.Func("f")
    f[x] = getattr(ts, fn)(*[i[x] for i in ins])
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, lanes)
    return ts.compile(pipe, s)


def run(fn, *args, lanes=16):
    args = [np.asarray(a, F32) for a in args]
    names = ("a", "b")[:len(args)]
    return compiled(fn, lanes).realize([len(args[0])], **dict(zip(names, args)))


def exact(fn, *args):
    with np.errstate(all="ignore"):
        return NUMPY[fn](*[np.asarray(a, F32).astype(np.float64) for a in args])


def ulp_error(got, want):
    """|got - want| in float32 ulps of ``want`` (float64); 0 where both are the same
    non-finite value or ``want`` is beyond float32's range and ``got`` the inf it
    rounds to."""
    with np.errstate(all="ignore"):
        w32 = want.astype(F32)
        spacing = np.maximum(np.spacing(np.abs(w32)).astype(np.float64), 2.0 ** -149)
        err = np.abs(got.astype(np.float64) - want) / spacing
    same = (got == w32) & ~np.isfinite(w32)
    return np.where(same | (np.isnan(got) & np.isnan(want)), 0.0, err)


def check(fn, *args, bound=None):
    """``fn(*args)`` compiled agrees with numpy in float64: NaN where it is NaN, the sign
    of zero and infinity, and within the function's ulp bound."""
    got, want = run(fn, *args), exact(fn, *args)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (fn, args, got, want)
    err = ulp_error(got, want)
    worst = int(np.argmax(err))
    assert err[worst] <= (bound or ULP_BOUND[fn]), \
        (fn, [a[worst] for a in args], got[worst], want[worst], err[worst])
    zero = (want == 0) | np.isinf(want)
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero])), fn
    return float(err.max())


def calls_libm(ir: str, fn: str) -> bool:
    """Whether LLVM IR calls ``fn`` as a vector intrinsic or its C function."""
    return f"llvm.{fn}.v" in ir or f'@"{fn}f"(' in ir or f"@{fn}f(" in ir


@pytest.mark.parametrize("fn", sorted(vecmath.EMITTERS))
def test_vector_code_calls_no_c_library_per_lane(fn):
    ir = compiled(fn).llvm_ir()
    assert f"llvm.{fn}.v" not in ir
    if fn in ("sin", "cos", "tan"):      # the C library only in the branch for |x| >= 2^25
        assert "br i1" in ir
    else:
        assert ir.count("call float @") == 0, fn


@pytest.mark.parametrize("fn", sorted(vecmath.EMITTERS))
def test_option_vector_math_false_gives_the_c_library_code(fn):
    from tilesolve.backend.cpu.codegen import generate
    from tilesolve.lower import lower
    cp = compiled(fn)
    libm = generate(lower(cp.pipeline, cp.schedule, target="cpu"), vector_math=False)
    ours = generate(lower(cp.pipeline, cp.schedule, target="cpu"))
    assert calls_libm(libm.ir_text, fn)
    assert not calls_libm(ours.ir_text, fn) or fn in ("sin", "cos", "tan")


def test_exp_log_over_the_float32_range():
    g = np.random.default_rng(1)
    a = np.concatenate([np.linspace(-87.3, 88.7, 100_000), g.normal(0, 3, 20_000),
                        g.uniform(-1e-3, 1e-3, 5_000), [-103.5, -100.0, -95.0, 88.72, 89.0]])
    check("exp", a)
    b = np.concatenate([np.exp(np.linspace(-87, 88, 100_000)), g.uniform(0.5, 2.0, 20_000),
                        1 + g.uniform(-1e-4, 1e-4, 5_000), [2.0 ** -130, 2.0 ** -149, BIG]])
    check("log", b)


def test_pow_over_the_image_processing_range_and_beyond():
    g = np.random.default_rng(2)
    n = 60_000
    x = np.concatenate([g.uniform(0, 1, n), g.uniform(0, 1, n), np.exp(g.uniform(-80, 80, n)),
                        g.uniform(0, 255, n)])
    y = np.concatenate([np.full(n, 2.4), np.full(n, 1 / 2.4), g.uniform(-1, 1, n),
                        g.uniform(-20, 20, n)])
    assert check("pow", x, y, bound=1) <= 1     # |y log2 x| below ~100: within an ulp
    # |y log2 x| up to 150, results near the overflow: the error of log2 (about 2^-32
    # relative) times y log2 x
    xs = np.concatenate([g.uniform(1.5, 3.0, n), g.uniform(0.5, 2, n)])
    ys = np.concatenate([np.log(g.uniform(2.0 ** 120, BIG, n)) / np.log(xs[:n]),
                         g.uniform(-150, 150, n)])
    check("pow", xs, ys.astype(F32), bound=3)
    # denormal results: in ulps of the denormals (2^-149)
    xs = g.uniform(0.3, 0.7, n)
    ys = np.log(g.uniform(2.0 ** -149, 2.0 ** -120, n)) / np.log(xs)
    check("pow", xs, ys.astype(F32))


def test_pow_negative_bases_integer_and_not():
    g = np.random.default_rng(3)
    x = -g.uniform(0, 10, 40_000)
    y = np.concatenate([g.integers(-30, 30, 20_000), g.uniform(-5, 5, 20_000)])
    got = check("pow", x, y)
    assert got <= 1


def test_pow_special_values_every_pair_of_edges():
    e = np.array(EDGES, F32)
    x, y = np.tile(e, len(e)), np.repeat(e, len(e))
    check("pow", x, y)
    got = run("pow", x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)                            # numpy's float32 power: C's powf
    special = ~np.isfinite(want) | (want == 0) | (x == 1) | (y == 0)
    np.testing.assert_array_equal(got[special], want[special])
    special &= ~np.isnan(want)                       # a NaN's sign bit is not specified
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))


def test_sin_cos_tan_reduction_over_the_documented_range():
    g = np.random.default_rng(4)
    a = np.concatenate([g.uniform(-10, 10, 50_000), g.uniform(-1e4, 1e4, 50_000),
                        np.exp(g.uniform(-20, np.log(2.0 ** 25), 50_000)) *
                        g.choice([-1, 1], 50_000)])
    # the float32 numbers nearest to multiples of pi/2, where cancellation is worst
    k = np.unique(g.integers(1, 2 ** 24, 20_000)).astype(np.float64)
    near = (k * np.pi / 2).astype(F32)
    near = np.concatenate([near, np.nextafter(near, F32(0)), np.nextafter(near, F32(np.inf))])
    for fn in ("sin", "cos", "tan"):
        check(fn, np.concatenate([a, near]))


def test_sin_cos_tan_huge_arguments_take_the_c_library():
    g = np.random.default_rng(5)
    a = np.concatenate([np.exp(g.uniform(np.log(2.0 ** 25), np.log(BIG), 2_000)),
                        [2.0 ** 25, BIG, -BIG, np.inf, -np.inf, np.nan]])
    mixed = np.stack([a, g.uniform(-3, 3, a.size)], 1).ravel()   # lanes of both kinds
    for fn in ("sin", "cos", "tan"):
        check(fn, a)
        check(fn, mixed)


def test_atan_atan2_tanh():
    g = np.random.default_rng(6)
    a = np.concatenate([g.uniform(-3, 3, 50_000), np.exp(g.uniform(-90, 88, 50_000)) *
                        g.choice([-1, 1], 50_000), g.uniform(-0.1, 0.1, 10_000)])
    check("atan", a)
    check("tanh", a)
    y = np.exp(g.uniform(-80, 80, a.size)) * g.choice([-1, 1], a.size)
    check("atan2", a, y.astype(F32))
    check("atan2", a, g.uniform(-3, 3, a.size))


@pytest.mark.parametrize("fn", ["atan2", "sin", "cos", "tan", "atan", "tanh", "exp", "log"])
def test_special_values_match_the_c_library(fn):
    e = np.array(EDGES, F32)
    args = (np.tile(e, len(e)), np.repeat(e, len(e))) if fn in BINARY else (e,)
    check(fn, *args)
    got = run(fn, *args)
    with np.errstate(all="ignore"):
        want = NUMPY[fn](*args)                          # numpy's float32: C's results
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special])
    special &= ~np.isnan(want)                       # a NaN's sign bit is not specified
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))


def floats32(**kw):
    return st.floats(width=32, allow_nan=True, allow_infinity=True, **kw)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(fn=st.sampled_from(sorted(vecmath.EMITTERS)),
       a=st.lists(st.one_of(floats32(), st.sampled_from(EDGES),
                            st.floats(-30, 30, width=32)), min_size=1, max_size=40),
       data=st.data())
def test_hypothesis_any_float32_operands(fn, a, data):
    if fn in BINARY:
        b = data.draw(st.lists(st.one_of(floats32(), st.sampled_from(EDGES),
                                         st.floats(-8, 8, width=32)),
                               min_size=len(a), max_size=len(a)))
        check(fn, a, b)
    else:
        check(fn, a)


@pytest.mark.parametrize("lanes", [4, 8])
def test_other_widths_and_a_pipeline_with_several(lanes):
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "input")
    f = ts.Func("f")
    v = inp[x]
    f[x] = ts.log(ts.exp(v) + 1.0) + ts.pow(ts.abs(v), 0.5) * ts.sin(v) + ts.atan2(v, 2.0)
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, lanes)
    a = np.linspace(-30, 30, 1003).astype(F32)
    got = ts.compile(pipe, s).realize([1003], input=a)
    np.testing.assert_allclose(got, ts.reference.realize(pipe, [1003], input=a), rtol=2e-6,
                               atol=2e-6)


@pytest.mark.parametrize("fn", ["exp", "sin", "tanh"])
def test_a_point_does_not_depend_on_the_size_realized(fn):
    """Below a split's factor a stage runs its small-extent nest; with math whose
    vector code rounds differently from the C library, that nest stays vectorized,
    so each point equals the one a larger realize computes, bit for bit."""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "inp")
    f = ts.Func("f")
    f[x] = getattr(ts, fn)(inp[x] * 0.37 + 0.1)
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, 8)
    c = ts.compile(pipe, s, cache_dir=False)
    a = np.random.default_rng(4).uniform(-4, 4, 64).astype(np.float32)
    big = c.realize([64], inp=a)
    for n in (1, 3, 7):
        np.testing.assert_array_equal(c.realize([n], inp=a[:n]), big[:n])
