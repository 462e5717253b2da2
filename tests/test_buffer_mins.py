"""Buffers that do not start at 0, as Halide's: inputs passed as ``ts.Buffer(array,
mins=...)``, outputs realized over ``[min, min + size)``, ``img.dim(d).min()`` in the
algorithm; the reference, solver schedules and a checked build agree; misuses raise
errors naming the buffer."""
import shutil

import numpy as np
import pytest

import tilesolve as ts

x, y = ts.Var("x"), ts.Var("y")
W, H = 37, 23
SPEC = "xeon-e5-2620v3"


def _img(seed=0):
    return (np.random.default_rng(seed).random((H, W)) * 10).astype(np.float32)

def test_an_output_over_a_shifted_domain_and_an_input_with_mins_in_every_build():
    img = ts.ImageParam(ts.float32, 2, "img")
    clamped = ts.boundary.repeat_edge(
        img, [(img.dim(0).min(), img.dim(0).extent()), (img.dim(1).min(), img.dim(1).extent())])
    blur = ts.Func("blur")
    blur[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y + 1]) / 3
    pipe = ts.Pipeline(blur)
    data = _img(8)
    crop = ts.Buffer(data, mins=[-5, 40])                   # covers x in [-5, 32), y in [40, 63)
    pad = np.pad(data, 1, mode="edge")
    want = (pad[1:-1, :-2] + pad[1:-1, 1:-1] + pad[2:, 2:]) / np.float32(3)
    ref = ts.reference.realize(pipe, [W, H], mins=[-5, 40], img=crop)
    np.testing.assert_allclose(ref, want.astype(np.float32), rtol=1e-6)
    part = ts.reference.realize(pipe, [10, 4], mins=[0, 45], img=crop)
    np.testing.assert_array_equal(part, ref[5:9, 5:15])
    for method in ("greedy", "ilp"):
        s = ts.solve_schedule(pipe, SPEC, {"blur": [W, H], "img": [W, H]}, method=method)
        c = ts.compile(pipe, s)
        np.testing.assert_array_equal(c.realize([W, H], mins=[-5, 40], img=crop), ref)
        np.testing.assert_array_equal(c.realize([10, 4], mins=[0, 45], img=crop), part)
        np.testing.assert_array_equal(c.realize([W, H], img=data),            # at 0 again
                                      ts.reference.realize(pipe, [W, H], img=data))
    checked = ts.compile(pipe, s, checked=True)
    np.testing.assert_array_equal(checked.realize([10, 4], mins=[0, 45], img=crop), part)


def test_misuses_of_buffer_mins_are_errors_naming_the_buffer():
    from tilesolve.errors import RealizeError
    img = ts.ImageParam(ts.int32, 1, "img")
    f = ts.Func("f")
    f[x] = img[x] + img.dim(0).min()
    pipe = ts.Pipeline(f)
    c = ts.compile(pipe, ts.Schedule(pipe))
    a = np.arange(8, dtype=np.int32)
    with pytest.raises(RealizeError, match="input 'img' is too small.*coordinates 3 to 10"):
        c.realize([8], img=ts.Buffer(a, mins=[3]))             # f reads img over [0, 7]
    with pytest.raises(RealizeError, match="'img_min_0' is the min of dimension 0 of input"):
        c.realize([4], img=a, img_min_0=3)
    with pytest.raises(RealizeError, match="the mins of output f must be 1 ints"):
        c.realize([4], img=a, mins=[1, 2])
    with pytest.raises(RealizeError, match="give the mins by keyword"):
        ts.Buffer(a, [3])
    with pytest.raises(RealizeError, match="sizes must be a list of positive ints"):
        ts.Buffer(ts.int32, [0, 3])
    if shutil.which("g++") is not None:
        from tilesolve.backend.cuda import emulate_cuda
        s = ts.solve_schedule(pipe, "h100", {"f": [8], "img": [8]}, method="greedy")
        with pytest.raises(RealizeError, match="the CUDA backend runs buffers that start at 0"):
            emulate_cuda(pipe, s).realize([4], img=ts.Buffer(a, mins=[3]))
