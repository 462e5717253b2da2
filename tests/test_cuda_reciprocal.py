"""A float division by a constant in the CUDA code (backend/cuda/cexpr.py, ``reciprocal``):
a multiplication by the reciprocal when that is exact (a power of two), always; by the
rounded reciprocal of any other constant only under fast math (the schedule's
``set_codegen(fma=True)``).  The emitted text, and the emulated results: bit-equal to the
reference where exact, within one unit in the last place under fast math."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend import cuda as C
from tilesolve.backend.cuda.cexpr import reciprocal
from tilesolve.model import expr as E
from tilesolve.model import types as T

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")

F32, F64 = T.float32, T.float64


def test_the_reciprocal_of_a_power_of_two_is_taken_always_of_others_under_fast_math():
    assert reciprocal(E.Const(F32, 4.0), False) is E.Const(F32, 0.25)
    assert reciprocal(E.Const(F32, -0.125), False) is E.Const(F32, -8.0)
    assert reciprocal(E.Const(F64, 2.0 ** -40), False) is E.Const(F64, 2.0 ** 40)
    assert reciprocal(E.Const(F32, 3.0), False) is None
    third = reciprocal(E.Const(F32, 3.0), True)
    assert third.value == float(np.float32(1) / np.float32(3))
    for never in (0.0, float("inf"), float("nan")):
        assert reciprocal(E.Const(F32, never), True) is None
    # 2**127's reciprocal is not a normal float32, 2**-149's overflows: both stay divisions
    assert reciprocal(E.Const(F32, 2.0 ** 127), False) is None
    assert reciprocal(E.Const(F32, 2.0 ** -149), True) is None
    assert reciprocal(E.Const(F32, 2.0 ** -127), False) is E.Const(F32, 2.0 ** 127)
    assert reciprocal(E.Const(T.int32, 4), True) is None         # integers: a shift already


def _pipe(t):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(t, 2, "input")
    f = ts.Func("f")
    f[x, y] = inp[x, y] / 4 + inp[x, y] / 3 - inp[x, y] / 0.1
    pipe = ts.Pipeline(f)
    return pipe, f, (x, y)


def _schedule(pipe, f, xy, fma):
    s = ts.Schedule(pipe, target="cuda")
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[f].gpu_tile(*xy, xo, yo, xi, yi, 16, 8)
    if fma:
        s.set_codegen(fma=True)
    return s


def _kernel_text(pipe, s):
    return C.generate(C.lower_cuda(pipe, s), bool(s.codegen.get("fma"))).source.split(
        'extern "C"', 1)[1]


def test_the_emitted_divisions():
    pipe, f, xy = _pipe(ts.float32)
    strict = _kernel_text(pipe, _schedule(pipe, f, xy, False))
    assert "* 0x1.0000000000000p-2f" in strict                  # / 4
    assert "/ 0x1.8000000000000p+1f" in strict                  # / 3 stays a division
    assert "/ 0x1.999999999999ap-4f" in strict                  # / 0.1 too
    fast = _kernel_text(pipe, _schedule(pipe, f, xy, True))
    assert "* 0x1.0000000000000p-2f" in fast
    assert " / " not in fast.split("{", 1)[1].replace("ts_div", "")   # no float division
    assert "* 0x1.5555560000000p-2f" in fast                    # rn(1 / 3)
    assert "* 0x1.4000000000000p+3f" in fast                    # rn(1 / 0.1f) = 10


@needs_cxx
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_emulated_results_are_exact_or_within_one_ulp_under_fast_math(dtype):
    t = ts.float32 if dtype == "float32" else ts.float64
    pipe, f, xy = _pipe(t)
    rng = np.random.default_rng(7)
    a = (rng.random((37, 53)) * 1000 - 500).astype(dtype)
    want = ts.reference.realize(pipe, [53, 37], input=a)
    strict = C.emulate_cuda(pipe, _schedule(pipe, f, xy, False)).realize([53, 37], input=a)
    np.testing.assert_array_equal(strict, want)
    # each term alone: x / 3 and x / 0.1 within one ulp of IEEE, and not always equal
    x, y = xy
    g = ts.Func("g")
    g[x, y] = pipe.images["input"][x, y] / 3
    gp = ts.Pipeline(g)
    fast = C.emulate_cuda(gp, _schedule(gp, g, xy, True)).realize([53, 37], input=a)
    ieee = ts.reference.realize(gp, [53, 37], input=a)
    np.testing.assert_array_max_ulp(fast, ieee, maxulp=1)
    assert (fast != ieee).any()          # the reciprocal really is what ran
    whole = C.emulate_cuda(pipe, _schedule(pipe, f, xy, True)).realize([53, 37], input=a)
    np.testing.assert_allclose(whole, want, rtol=4 * np.finfo(dtype).eps,
                               atol=4 * np.finfo(dtype).eps * np.abs(a).max() * 10)
