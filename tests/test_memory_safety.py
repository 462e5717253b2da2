"""Compiled code never touches memory it does not own.

Each case below once ran compiled code out of bounds (two segfaults, three garbage
results).  Now the region checks that run once before the pipeline refuse it, with the
same class of error as the reference evaluator, and name the Func at fault."""
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import BoundsError, RealizeError

x = ts.Var("x")


def _both_raise(pipe, sizes, error, match, **inputs):
    """The reference and the compiled pipeline (under the naive schedule and, when
    given, a solver's) refuse the same way."""
    with pytest.raises(error, match=match):
        ts.reference.realize(pipe, sizes, **inputs)
    with pytest.raises(error, match=match):
        ts.compile(pipe).realize(sizes, **inputs)


def test_update_over_an_rdom_past_the_output_without_inputs():
    f = ts.Func("f")
    f[x] = 0
    r = ts.RDom(0, 1 << 22)
    f[r.x] = f[r.x] + 1
    _both_raise(ts.Pipeline(f), [10], RealizeError, r"output f .*4194303")


def test_unclamped_data_dependent_store_into_an_output():
    v = ts.ImageParam(ts.int32, 1, "vals")
    h = ts.Func("hist")
    h[x] = 0
    r = ts.RDom(0, 4)
    h[v[r.x]] = h[v[r.x]] + 1
    vals = np.array([1, 2, -10**8, 10**8], np.int32)
    _both_raise(ts.Pipeline(h), [256], BoundsError, r"hist.*no usable bound", vals=vals)


def test_a_uint8_index_bounds_a_histogram_store():
    v = ts.ImageParam(ts.uint8, 1, "v")
    h = ts.Func("hist")
    h[x] = 0
    r = ts.RDom(0, 4)
    h[v[r.x]] = h[v[r.x]] + 1
    vals = np.array([1, 2, 200, 3], np.uint8)
    _both_raise(ts.Pipeline(h), [100], RealizeError, r"output hist .*255", v=vals)
    got = ts.compile(ts.Pipeline(h)).realize([256], v=vals)      # large enough: runs
    np.testing.assert_array_equal(got, ts.reference.realize(ts.Pipeline(h), [256], v=vals))


@pytest.mark.parametrize("offset", [5, -3])
def test_an_output_read_by_another_outside_its_region(offset):
    f, g = ts.Func("f"), ts.Func("g")
    f[x] = x
    g[x] = f[x + offset]
    _both_raise(ts.Pipeline([f, g]), [8], RealizeError, r"output f ")


def test_an_output_read_on_both_sides_by_another():
    a, b = ts.Func("a"), ts.Func("b")
    a[x] = x * 10
    b[x] = a[x - 1] + a[x + 2]
    _both_raise(ts.Pipeline([a, b]), [4], RealizeError, r"output a ")
    c, d = ts.Func("c"), ts.Func("d")        # clamped: legal, and equal to the reference
    c[x] = x * 10
    d[x] = c[ts.max(x - 1, 0)] + c[ts.min(x + 2, 3)]
    got = ts.compile(ts.Pipeline([c, d])).realize([4])
    for g, w in zip(got, ts.reference.realize(ts.Pipeline([c, d]), [4])):
        np.testing.assert_array_equal(g, w)


def test_an_update_reading_itself_at_an_unbounded_data_dependent_index():
    idx = ts.ImageParam(ts.int32, 1, "idx")
    f = ts.Func("f")
    f[x] = x
    f[x] = f[idx[x]] + 100
    i = np.array([0, 1, 2, 10**7, 3, 4, 5, 6], np.int32)
    _both_raise(ts.Pipeline(f), [8], BoundsError, r"f .*no usable bound", idx=i)


def test_an_update_past_the_output_reading_a_clamped_input():
    inp = ts.ImageParam(ts.int32, 1, "inp")
    f = ts.Func("f")
    f[x] = inp[ts.clamp(x, 0, 3)]
    r = ts.RDom(0, 20)
    f[r.x] = f[r.x] + 1
    _both_raise(ts.Pipeline(f), [8], RealizeError, r"output f .*19", inp=np.arange(4, dtype=np.int32))


def test_data_dependent_reads_of_an_internal_func_and_of_an_input():
    idx = ts.ImageParam(ts.int32, 1, "idx")
    inp = ts.ImageParam(ts.int32, 1, "inp")
    f, g, h = ts.Func("f"), ts.Func("g"), ts.Func("h")
    f[x] = x * 2
    g[x] = f[idx[x]]
    h[x] = inp[idx[x]]
    i = np.array([0, 1, 2, 10**7], np.int32)
    with pytest.raises(BoundsError, match="f"):
        ts.compile(ts.Pipeline(g)).realize([4], idx=i)
    _both_raise(ts.Pipeline(h), [4], BoundsError, "inp", idx=i, inp=i)


def test_round_up_reads_of_an_output_past_its_size_are_refused():
    """Found by the fuzz profile in a checked build: a producer computed at root with a
    round_up split reads an output (a boundary-condition Func, also realized) one element
    past the size asked for.  The lowered program's own reads of outputs are checked
    before running, so nothing reads past the output buffer."""
    inp = ts.ImageParam(ts.int32, 1, "in0")
    e = ts.boundary.repeat_edge(inp)
    f0, f1 = ts.Func("f0"), ts.Func("f1")
    f0[x] = e[x] * 3
    f1[x] = f0[x] + e[x] * 2
    pipe = ts.Pipeline([f1, e])
    s = ts.Schedule(pipe)
    s[f0].compute_root().split("x", "xo", "xi", 2, tail="round_up")
    for checked in (False, True):
        with pytest.raises(RealizeError, match=r"output in0_repeat_edge .*\[0, 1\]"):
            ts.compile(pipe, s, checked=checked).realize([1], in0=np.zeros(1, np.int32))
    a = np.arange(4, dtype=np.int32)                 # an even size: runs, equal
    for g, w in zip(ts.compile(pipe, s, checked=True).realize([4], in0=a),
                    ts.reference.realize(pipe, [4], in0=a)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler for the CUDA emulation")
def test_cuda_runtimes_check_the_lowered_programs_regions_not_the_algorithms():
    """A GPU producer computed at root with a round_up tile reads its input up to the
    tile's end: 8 elements for an output of 5.  The CUDA runtimes (GPU and emulation)
    once checked the algorithm's region ([0, 4]) and ran, reading past the input; they
    now use the same RegionCheck as the CPU runtime, made from the lowered program."""
    from tilesolve.backend import cuda as C
    inp = ts.ImageParam(ts.int32, 1, "inp")
    f, g = ts.Func("f"), ts.Func("g")
    f[x] = inp[x] * 2
    g[x] = f[x] + 1
    pipe = ts.Pipeline(g)
    s = ts.Schedule(pipe, target="cuda")
    s[f].compute_root().gpu_tile("x", "xo", "xi", 8, tail="round_up")
    s[g].gpu_tile("x", "xo", "xi", 8)
    emu = C.emulate_cuda(pipe, s)
    with pytest.raises(RealizeError, match=r"input 'inp' is too small: .*\[0, 7\]"):
        emu.realize([5], inp=np.arange(5, dtype=np.int32))
    a = np.arange(8, dtype=np.int32)
    np.testing.assert_array_equal(emu.realize([5], inp=a), ts.reference.realize(pipe, [5], inp=a))
