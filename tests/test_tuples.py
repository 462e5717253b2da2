"""Tuple-valued Funcs and argmax / argmin: the reference against numpy, and compiled
builds (solver schedules, a hand schedule, the CUDA emulation, Halide through the
bridge) against the reference; each misuse raises an error naming the Func."""
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import PipelineError, ScheduleError

x, y = ts.Var("x"), ts.Var("y")
W, H = 37, 23
SPEC = "xeon-e5-2620v3"


def _img(seed=0, dtype=np.float32, hi=10):
    rng = np.random.default_rng(seed)
    return (rng.random((H, W)) * hi).astype(dtype)


def _pair():
    img = ts.ImageParam(ts.float32, 2, "img")
    f = ts.Func("f")
    f[x, y] = (img[x, y] * 2, ts.cast(ts.int32, img[x, y]) + x)
    return img, f


def test_values_of_a_tuple_are_read_by_index_in_every_build():
    img, f = _pair()
    assert f.types == (ts.float32, ts.int32) and f.dimensions() == 2
    g = ts.Func("g")
    g[x, y] = f[x, y][0] + ts.cast(ts.float32, f[x + 1, y][1])
    pipe = ts.Pipeline(g)
    a = _img()
    ref = ts.reference.realize(pipe, [W - 1, H], img=a)
    f1 = (a.astype(np.int32) + np.arange(W)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(ref, a[:, :-1] * 2 + f1[:, 1:])
    for method in ("greedy", "ilp", "beam"):
        s = ts.solve_schedule(pipe, SPEC, {"g": [W - 1, H]}, method=method)
        np.testing.assert_array_equal(ts.compile(pipe, s).realize([W - 1, H], img=a), ref)
    s = ts.Schedule(pipe)
    xo, xi = ts.Var("xo"), ts.Var("xi")
    s[g].split(x, xo, xi, 8).vectorize(xi, 8)
    s[f].compute_at(g, xo)            # every value of the Tuple, at g's xo loop
    assert all(s.func_schedule(c).compute.func == "g" for c in f.components)
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([W - 1, H], img=a), ref)


def test_a_tuple_output_realizes_one_array_per_value():
    img, f = _pair()
    pipe = ts.Pipeline(f)
    a = _img(1)
    r0, r1 = ts.reference.realize(pipe, {"f": [W, H]}, img=a)
    np.testing.assert_array_equal(r0, a * 2)
    assert r1.dtype == np.int32
    s = ts.solve_schedule(pipe, SPEC, {"f": [W, H]})     # estimates by the Tuple's name
    o0, o1 = ts.compile(pipe, s).realize([W, H], img=a)
    np.testing.assert_array_equal(o0, r0)
    np.testing.assert_array_equal(o1, r1)
    v0, v1 = f.realize([W, H], img=a, spec=SPEC)
    np.testing.assert_array_equal(v1, r1)


def test_an_update_reading_its_own_value_and_undef():
    img = ts.ImageParam(ts.int32, 1, "img")
    r = ts.RDom((0, 16), name="r")
    h = ts.Func("h")
    h[x] = (ts.cast(ts.int32, 0), ts.cast(ts.float32, 1.0))
    h[ts.clamp(img[r], 0, 7)] = (h[ts.clamp(img[r], 0, 7)][0] + 1,
                                 h[ts.clamp(img[r], 0, 7)][1] * 2)
    h[x] = (ts.undef(ts.int32), h[x][1] + 0.5)
    pipe = ts.Pipeline(h)
    a = np.random.default_rng(2).integers(-2, 10, 16).astype(np.int32)
    count = np.bincount(np.clip(a, 0, 7), minlength=8)
    r0, r1 = ts.reference.realize(pipe, [8], img=a)
    np.testing.assert_array_equal(r0, count)
    np.testing.assert_array_equal(r1, (2.0 ** count + 0.5).astype(np.float32))
    s = ts.solve_schedule(pipe, SPEC, {"h": [8], "img": [16]})
    o0, o1 = ts.compile(pipe, s).realize([8], img=a)
    np.testing.assert_array_equal(o0, r0)
    np.testing.assert_array_equal(o1, r1)


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_argmax_and_argmin_give_the_first_extremum_in_iteration_order(kind):
    img = ts.ImageParam(ts.uint8, 2, "img")
    r = ts.RDom((2, W - 2), (1, H - 1), name="r")
    best = ts.Func("best")
    best[()] = getattr(ts, kind)(r, img[r.x, r.y])
    pipe = ts.Pipeline(best)
    a = np.random.default_rng(3).integers(0, 6, (H, W)).astype(np.uint8)   # many ties
    sub = a[1:, 2:]
    k = int((np.argmax if kind == "argmax" else np.argmin)(sub))   # first in row-major
    want = (2 + k % (W - 2), 1 + k // (W - 2), sub.reshape(-1)[k])
    got = ts.reference.realize(pipe, [], img=a)
    assert tuple(v.item() for v in got) == want
    s = ts.solve_schedule(pipe, SPEC, {"img": [W, H]})
    assert tuple(v.item() for v in ts.compile(pipe, s).realize([], img=a)) == want


def test_argmax_per_row_with_a_where_predicate():
    img = ts.ImageParam(ts.float32, 2, "img")
    r = ts.RDom((0, W), name="r")
    r.where(r.x % 2 == 1)                                   # odd columns only
    f = ts.Func("f")
    f[y] = ts.argmax(img[r.x, y])
    g = ts.Func("g")
    g[y] = ts.cast(ts.float32, f[y][0]) + f[y][1]
    pipe = ts.Pipeline(g)
    a = _img(4)
    cols = 1 + 2 * np.argmax(a[:, 1::2], axis=1)
    want = cols + a[np.arange(H), cols]
    ref = ts.reference.realize(pipe, [H], img=a)
    np.testing.assert_allclose(ref, want.astype(np.float32))
    s = ts.solve_schedule(pipe, SPEC, {"g": [H], "img": [W, H]})
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([H], img=a), ref)


@pytest.mark.skipif(shutil.which("g++") is None, reason="the CUDA emulation needs g++")
def test_a_tuple_under_the_cuda_emulation():
    from tilesolve.backend.cuda import emulate_cuda
    img, f = _pair()
    g = ts.Func("g")
    g[x, y] = f[x, y][0] - ts.cast(ts.float32, f[x, y][1])
    pipe = ts.Pipeline(g)
    a = _img(5)
    ref = ts.reference.realize(pipe, [W, H], img=a)
    s = ts.solve_schedule(pipe, "h100", {"g": [W, H]}, method="greedy")
    np.testing.assert_array_equal(emulate_cuda(pipe, s).realize([W, H], img=a), ref)


def test_a_tuple_through_the_halide_bridge():
    pytest.importorskip("halide", reason="the Halide bridge needs the halide package")
    from tilesolve.interop import halide as th
    img, f = _pair()
    g = ts.Func("g")
    g[x, y] = f[x, y][0] * ts.cast(ts.float32, f[x, y][1])
    pipe = ts.Pipeline(g)
    a = _img(6)
    hp = th.translate(pipe)
    hp.compute_root_all()
    np.testing.assert_array_equal(hp.realize([W, H], img=a),
                                  ts.reference.realize(pipe, [W, H], img=a))


def test_misuses_of_tuples_name_the_func():
    img, f = _pair()
    with pytest.raises(PipelineError, match="Func f is a Tuple of 2 values; pick one"):
        f[x, y] + 1
    with pytest.raises(PipelineError, match="Func f is a Tuple of 2 values; its types"):
        f.type
    with pytest.raises(PipelineError, match="Tuple of 2 values but this update gives 3"):
        f[x, y] = (1.0, 2, 3)
    with pytest.raises(PipelineError, match="Func f: the values of this Tuple update read "
                                            "each other and its left side"):
        f[ts.clamp(f[0, y][1], 0, 3), y] = (f[0, y][0] + 1, ts.cast(ts.int32, f[0, y][0]))
    with pytest.raises(PipelineError, match="value 0 of the pure definition is undef"):
        g = ts.Func("g2")
        g[x] = (ts.undef(ts.int32), x)
    with pytest.raises(PipelineError, match="undef.*only stand for one value"):
        h = ts.Func("h2")
        h[x] = ts.undef(ts.int32) + 1
    with pytest.raises(PipelineError, match="undef.*only stand for one value"):
        h[x] = ts.undef(ts.int32)
    k = ts.Func("k")
    k[x] = x
    with pytest.raises(PipelineError, match="Func k holds one value"):
        k[x] = (x, x)
    g = ts.Func("g")
    g[x, y] = f[x, y][0]
    s = ts.Schedule(ts.Pipeline(g))
    with pytest.raises(ScheduleError, match="Func f is a Tuple.*name one of f_0, f_1"):
        s[g].compute_at(f, x)
    r = ts.RDom((0, 4), name="r")
    with pytest.raises(PipelineError, match="argmax takes"):
        ts.argmax(r, img[r.x, 0], img[0, 0])

