"""Window gathers (backend/cpu/codegen_memory.py, ``_window_gather``): a vector load at
coordinates computed in float whose lanes lie within one vector's width of each other
is one masked window load and a permute instead of a load a lane.  Resampling up and
down by several factors equals its numpy reference whichever form runs (the lanes near
or far apart, each tap clamped at the image edges), in plain and checked builds; the module's IR holds the permutes for targets that have them and
per-lane loads only for those that do not."""
from __future__ import annotations

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps.validation import _resample as R
from tilesolve.backend.cpu.codegen import generate
from tilesolve.lower.lower import lower


def _resample(sizes, scale):
    pipe, _ = R.build(sizes, scale, R.cubic, 4)
    return pipe


def _schedule(pipe, lanes):
    """Every Func at root but the boundary condition; the taps' loop outside the
    vectorized x loop."""
    s = ts.Schedule(pipe)
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    for name, f in pipe.funcs.items():
        if name == "input_repeat_edge":
            continue
        v = f.pure.args[0]
        s[f].compute_root().vectorize(v, lanes)
        for i, u in enumerate(f.updates):
            r = u.rdom
            s[f].update(i).reorder(v, r.x, *f.pure.args[1:]).vectorize(v, lanes)
    return s


@pytest.mark.parametrize("scale", [2.0, 1.5, 0.5, 0.3])
@pytest.mark.parametrize("lanes", [8, 16])
def test_resampling_equals_the_reference(scale, lanes):
    sizes = [37, 11, 2]
    pipe = _resample(sizes, scale)
    s = _schedule(pipe, lanes)
    inputs = R.make_inputs(sizes, 0, scale)
    want = R.numpy_reference(inputs, sizes, 4, R.np_cubic)
    for checked in (False, True):
        got = ts.compile(pipe, s, cache_dir=False, checked=checked).realize(sizes, **inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"scale {scale}, {lanes} lanes, checked {checked}")


@pytest.mark.parametrize("lanes,window,permutes,absent", [
    (16, 16, ("permvar.sf.512",), ("avx2.permps",)),
    (8, 8, ("avx2.permps",), ("permvar",)),
    (16, 8, (), ("permvar", "permps")),
    (16, 0, (), ("permvar", "permps")),
])
def test_the_permutes_are_those_the_target_has(lanes, window, permutes, absent):
    """``window_gathers``: the most lanes the target permutes (16: AVX-512F, 8: AVX2)."""
    pipe = _resample([64, 16, 3], 2.0)
    text = generate(lower(pipe, _schedule(pipe, lanes)), window_gathers=window).ir_text
    for p in permutes:
        assert p in text, p
    for p in absent:
        assert p not in text, p


def test_set_codegen_turns_them_off():
    """``Schedule.set_codegen(window_gathers=False)``: one load a lane, the same values."""
    sizes = [37, 11, 2]
    pipe = _resample(sizes, 2.0)
    s = _schedule(pipe, 8)
    inputs = R.make_inputs(sizes, 0, 2.0)
    on = ts.compile(pipe, s, cache_dir=False)
    off = ts.compile(pipe, s.copy().set_codegen(window_gathers=False), cache_dir=False)
    assert "perm" not in off.generated.ir_text
    np.testing.assert_array_equal(off.realize(sizes, **inputs), on.realize(sizes, **inputs))
