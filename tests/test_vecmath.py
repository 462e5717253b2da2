"""Vector exp and log (backend/cpu/vecmath.py): a vectorized float32 exp or log is
emitted as our own polynomial code, not per-lane C library calls, and agrees with
numpy (float64) to a few units in the last place over the whole float32 range,
with IEEE special values."""
from __future__ import annotations

import numpy as np
import pytest

import tilesolve as ts

ULP = 2.0 ** -23


def _compiled(fn, lanes=16):
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "input")
    f = ts.Func("f")
    f[x] = getattr(ts, fn)(inp[x])
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, lanes)
    return ts.compile(pipe, s)


def _run(cp, a):
    n = len(a) - len(a) % 16
    return cp.realize([n], input=a[:n]), a[:n]


def _rel_err(got, want):
    want = want.astype(np.float64)
    scale = np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    return np.abs(got.astype(np.float64) - want) / scale


@pytest.mark.parametrize("fn", ["exp", "log"])
def test_vector_code_calls_no_c_library(fn):
    ir = _compiled(fn).llvm_ir()
    assert f"{fn}f" not in ir and f"llvm.{fn}.v" not in ir


def test_exp_is_accurate_over_the_float32_range():
    g = np.random.default_rng(1)
    a = np.concatenate([np.linspace(-87.3, 88.7, 200_000), g.normal(0, 3, 50_000),
                        g.uniform(-1e-3, 1e-3, 10_000)]).astype(np.float32)
    got, a = _run(_compiled("exp"), a)
    err = _rel_err(got, np.exp(a.astype(np.float64)))
    assert err.max() < 4 * ULP, err.max()


def test_exp_special_values_and_denormal_results():
    a = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 89.0, 88.72, 100.0, -100.0,
                  -87.5, -95.0, -103.0, -104.5, -200.0, 1e-30, -1e-30] * 1, np.float32)
    got, a = _run(_compiled("exp"), a)
    want = np.exp(a.astype(np.float64)).astype(np.float32)   # denormals and overflow in f32
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=4 * ULP, atol=2.0 ** -149 * 4)


def test_log_is_accurate_over_the_float32_range():
    g = np.random.default_rng(2)
    a = np.concatenate([np.exp(np.linspace(-87, 88, 200_000)), g.uniform(0.5, 2.0, 50_000),
                        1 + g.uniform(-1e-4, 1e-4, 10_000)]).astype(np.float32)
    got, a = _run(_compiled("log"), a)
    want = np.log(a.astype(np.float64))
    # relative to |log x|, except near x = 1 where log x -> 0: there, to x - 1
    err = np.abs(got - want) / np.maximum(np.abs(want), np.abs(a.astype(np.float64) - 1) + 1e-30)
    assert err.max() < 4 * ULP, err.max()


def test_log_special_values_and_denormal_inputs():
    a = np.array([np.inf, np.nan, 0.0, -0.0, -1.0, -np.inf, 1.0, 2.0 ** -130, 2.0 ** -149,
                  np.finfo(np.float32).max, np.finfo(np.float32).tiny, 0.5, 4.0, 1e-40,
                  3.0, 7.0], np.float32)
    got, a = _run(_compiled("log"), a)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(a.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=4 * ULP)


@pytest.mark.parametrize("lanes", [4, 8])
def test_other_widths_and_a_pipeline_with_both(lanes):
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "input")
    f = ts.Func("f")
    f[x] = ts.log(ts.exp(inp[x]) + 1.0)         # softplus
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, lanes)
    a = np.linspace(-30, 30, 1003).astype(np.float32)
    got = ts.compile(pipe, s).realize([1003], input=a)
    # log(1 + e) near 1 turns one ulp of 1 + e (1.2e-7) into the absolute error
    np.testing.assert_allclose(got, ts.reference.realize(pipe, [1003], input=a), rtol=1e-6,
                               atol=3e-7)
