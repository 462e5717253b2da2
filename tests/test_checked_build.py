"""``ts.compile(..., checked=True)``: every load and store is tested against its buffer.

A correct program runs as in a normal build; a program that touches memory it does not
own (here made by shrinking an allocation, or by calling the code without the region
checks that normally run first) raises ``RealizeError`` naming the Func, the coordinate
and the range, and touches nothing."""
import dataclasses

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.compile import compile_lowered
from tilesolve.errors import RealizeError, TilesolveError
from tilesolve.lower import ir as L
from tilesolve.lower.lower import lower

x, y = ts.Var("x"), ts.Var("y")


def _two_stage():
    inp = ts.ImageParam(ts.float32, 2, "input")
    f, g = ts.Func("f"), ts.Func("g")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x, y] + f[x + 1, y]
    pipe = ts.Pipeline(g)
    s = ts.Schedule(pipe)
    s[g].split("x", "xo", "xi", 4).vectorize("xi").parallel("y")
    s[f].compute_at(g, "xo")
    return pipe, s


def test_a_correct_program_runs_checked_like_unchecked():
    pipe, s = _two_stage()
    img = np.random.default_rng(0).random((10, 14), dtype=np.float32)
    c = ts.compile(pipe, s, checked=True, num_threads=2)
    assert c.generated.checked and set(c.generated.fault_names) == {"input", "f", "g"}
    want = ts.reference.realize(pipe, [13, 10], input=img)
    np.testing.assert_allclose(c.realize([13, 10], input=img), want, rtol=1e-6)
    np.testing.assert_allclose(ts.compile(pipe, s).realize([13, 10], input=img), want, rtol=1e-6)


def _shrunk(lowered, name):
    """``lowered`` with allocation ``name`` one element short in dimension 0."""
    def fn(st):
        if isinstance(st, L.Allocate) and st.name == name:
            ext = (st.extents[0] - 1,) + tuple(st.extents[1:])
            return dataclasses.replace(st, extents=ext, body=L.map_stmt(st.body, fn))
        return None
    return dataclasses.replace(lowered, body=L.map_stmt(lowered.body, fn))


@pytest.mark.parametrize("threads", [1, 2])
def test_an_allocation_too_small_is_caught_and_named(threads):
    pipe, s = _two_stage()
    img = np.random.default_rng(1).random((10, 14), dtype=np.float32)
    bad = _shrunk(lower(pipe, s), "f")
    c = compile_lowered(pipe, bad, schedule=s, num_threads=threads, checked=True)
    with pytest.raises(RealizeError, match=r"Func f is accessed at element \d+ of its "
                                           r"allocation, outside \[0, \d+\]"):
        c.realize([13, 10], input=img)


def test_an_input_read_outside_is_caught_with_its_coordinate():
    """The region check that runs before the code is bypassed (the kernel is called
    directly with a too-small input): the checked code itself refuses the read."""
    inp = ts.ImageParam(ts.int32, 1, "input")
    f = ts.Func("f")
    f[x] = inp[x + 2]
    pipe = ts.Pipeline(f)
    c = ts.compile(pipe, checked=True)
    small = np.arange(5, dtype=np.int32)
    out = np.zeros(5, np.int32)
    fault = [0, 0, 0]
    rc = c._kernel([small, out] if c.generated.buffer_args[0].name == "input" else [out, small],
                   [], 1, fault)
    assert rc == 2
    assert c.generated.fault_names[fault[0]] == "input" and fault[1:] == [5, 4]
    with pytest.raises(RealizeError, match=r"input 'input' is too small"):
        c.realize([5], input=small)                  # the normal path: checked before


def test_vector_gathers_and_masked_stores_are_checked():
    """A data-dependent (clamped) gather under vectorization and a masked update: all in
    bounds, so checked == reference."""
    idx = ts.ImageParam(ts.int32, 1, "idx")
    tab = ts.ImageParam(ts.float32, 1, "tab")
    f = ts.Func("f")
    f[x] = tab[ts.clamp(idx[x], 0, 15)]
    f[x] = ts.select(x % 3 == 0, f[x] * 2, f[x])
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize("x", 8)
    rng = np.random.default_rng(2)
    i = rng.integers(-5, 20, 37).astype(np.int32)
    t = rng.random(16, dtype=np.float32)
    got = ts.compile(pipe, s, checked=True).realize([37], idx=i, tab=t)
    np.testing.assert_allclose(got, ts.reference.realize(pipe, [37], idx=i, tab=t), rtol=1e-6)


def test_checked_is_for_cpu_code():
    pipe, _ = _two_stage()
    with pytest.raises(TilesolveError, match="checked=True is for CPU code"):
        ts.compile(pipe, target="cuda", checked=True)
