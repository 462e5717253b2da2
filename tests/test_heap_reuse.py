"""Heap allocations inside loops reuse one block per generated function (``codegen_memory``).

A heap buffer allocated inside a loop of the function being generated (the entry, or a
parallel loop's outlined body) takes the function's block for it, grown when a larger
size is asked, and released when the function returns; a buffer outside every loop is
allocated and released around its scope as before.  These tests give such buffers sizes
that grow and shrink from one iteration to the next (and between realizations), run them
serially and on two threads, with early ``Free``s, in unrolled copies, with an allocation
that fails in one iteration only, and in checked builds, which must test accesses
against the size asked for, not the capacity of the block behind it."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.compile import compile_lowered
from tilesolve.backend.cpu.codegen import generate
from tilesolve.backend.cpu.runtime import NativeKernel
from tilesolve.errors import RealizeError
from tilesolve.lower import ir as L
from tilesolve.lower.lower import lower
from tilesolve.model import expr as E
from tilesolve.model import types as T

f32, i32 = T.float32, T.int32
x, y = ts.Var("x"), ts.Var("y")


def _staged_row():
    """``f`` (a row of the input) computed per row of ``g``, over ``[min(0, e),
    min(W - 1, e)]`` with ``e = (5y % 7) * k``: an extent that grows and shrinks with
    ``y`` (1, 16, 4, 19, ... for ``k = 3``) and changes with the Param ``k``."""
    inp = ts.ImageParam(ts.float32, 2, "input")
    k = ts.Param(ts.int32, "k")
    edge = ts.boundary.repeat_edge(inp)
    f, g = ts.Func("f"), ts.Func("g")
    f[x, y] = edge[x, y] * 2 + edge[x + 1, y]
    g[x, y] = f[ts.min(x, (y * 5) % 7 * k), y] + 0.5
    pipe = ts.Pipeline(g)
    s = ts.Schedule(pipe)
    s[g].split("y", "yo", "yi", 4).parallel("yo")
    s[f].compute_at(g, "yi")
    return pipe, s


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("checked", [False, True])
def test_a_row_of_varying_size_per_iteration_equals_the_reference(threads, checked):
    pipe, s = _staged_row()
    c = ts.compile(pipe, s, num_threads=threads, checked=checked, cache_dir=False)
    assert "f.capacity" in c.generated.ir_text        # f's block is the function's
    rng = np.random.default_rng(threads + 2 * checked)
    for size, k in [((40, 19), 3), ((40, 19), 11), ((23, 9), 0), ((61, 30), 5)]:
        img = rng.random(size[::-1], dtype=np.float32)
        want = ts.reference.realize(pipe, list(size), input=img, k=k)
        np.testing.assert_allclose(c.realize(list(size), input=img, k=k), want, rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_checked_build_tests_against_the_size_asked_not_the_capacity(threads):
    """``f`` one element short: at ``y = 0`` it asks for no element (its block is one
    64-byte line), later rows for fewer than an earlier row got; each read past the
    size asked is caught, though the block behind it is larger."""
    pipe, s = _staged_row()

    def shrink(st):
        if isinstance(st, L.Allocate) and st.name == "f":
            ext = (st.extents[0] - 1,) + tuple(st.extents[1:])
            return dataclasses.replace(st, extents=ext, body=L.map_stmt(st.body, shrink))
        return None
    lowered = lower(pipe, s)
    bad = dataclasses.replace(lowered, body=L.map_stmt(lowered.body, shrink))
    c = compile_lowered(pipe, bad, schedule=s, num_threads=threads, checked=True)
    img = np.random.default_rng(7).random((19, 40), dtype=np.float32)
    with pytest.raises(RealizeError, match=r"Func f is accessed at element \d+ of its "
                                           r"allocation, outside \[0, -?\d+\]"):
        c.realize([40, 19], input=img, k=3)


# -- hand-built loop IR ----------------------------------------------------------------

def V(name):
    return E.Var(name)


def C(v, t=i32):
    return E.Const(t, v)


def _kernel(body, scalars=()):
    args = (L.Argument("out", "buffer", f32, 2, True),) + tuple(
        L.Argument(n, "scalar", i32) for n in scalars)
    gen = generate(L.LoweredPipeline("reuse", args, body))
    return NativeKernel(gen), gen


def _fill_and_sum(name, n, i, row):
    """``name[j] = i + j`` for ``j < n``, then ``out[row, i] = name[0] + name[n - 1]``."""
    j = V(f"{name}.j")
    return L.Block.make([
        L.For(f"{name}.j", C(0), n, "serial",
              L.Store(name, j, E.cast(f32, i + j))),
        L.Store("out", i + row * V("out.stride.1"),
                L.load(name, C(0), f32) + L.load(name, n - 1, f32)),
    ])


def _sizes(i):
    """Two sizes per iteration that grow and shrink: 100..500 and 3..1003 elements."""
    return (i * 7 % 5 + 1) * 100, E.select(i % 3 == 1, C(1000), C(0)) + i % 4 + 3


def _want(n_iter):
    i = np.arange(n_iter)
    a = (i * 7 % 5 + 1) * 100
    b = np.where(i % 3 == 1, 1000, 0) + i % 4 + 3
    return np.stack([2 * i + a - 1, 2 * i + b - 1, 2 * i + a - 1]).astype(np.float32)


@pytest.mark.parametrize("kind,threads", [("serial", 1), ("parallel", 1), ("parallel", 2)])
def test_sizes_that_grow_and_shrink_with_early_frees(kind, threads):
    """Per iteration: ``a`` (freed early, after its last reader), then ``b`` (which the
    freed ``a`` must not alias: both are read after ``b`` is written), then an unrolled
    loop of two copies of ``c``."""
    i = V("i")
    na, nb = _sizes(i)
    body_b = L.Allocate("b", f32, (nb,), "heap", L.Block.make([
        _fill_and_sum("b", nb, i, C(1)),
    ]))
    copies = L.For("u", C(0), C(2), "unrolled", L.Allocate(
        "c", f32, (na + V("u"),), "heap", _fill_and_sum("c", na, i, C(2))))
    body = L.For("i", C(0), V("out.extent.0"), kind, L.Allocate(
        "a", f32, (na,), "heap", L.Block.make([
            _fill_and_sum("a", na, i, C(0)),
            L.Free("a"),
            body_b,
            copies,
        ])))
    kern, gen = _kernel(body)
    ir_text = gen.ir_text
    assert all(f"{n}.capacity" in ir_text for n in "abc")
    for n_iter in (37, 5, 60):
        out = np.full((3, n_iter), -1, np.float32)
        assert kern([out], [], threads) == 0
        np.testing.assert_array_equal(out, _want(n_iter))


def test_an_allocation_outside_loops_is_released_at_its_scope_end():
    i = V("i")
    body = L.Allocate("a", f32, (V("out.extent.0"),), "heap", L.For(
        "i", C(0), V("out.extent.0"), "serial", L.Block.make([
            L.Store("a", i, E.cast(f32, i * 2)),
            L.Store("out", i, L.load("a", i, f32) + 1)])))
    kern, gen = _kernel(body)
    assert "a.capacity" not in gen.ir_text and "a.slot" in gen.ir_text
    out = np.zeros((1, 29), np.float32)
    assert kern([out], [], 1) == 0
    np.testing.assert_array_equal(out[0], np.arange(29) * 2 + 1)


@pytest.mark.parametrize("kind,threads", [("serial", 1), ("parallel", 2)])
def test_an_allocation_failing_in_one_iteration_reports_and_the_next_ones_run(kind, threads):
    """Iteration 1 asks for ``n x n`` floats (2**62 bytes: refused); the error code is
    returned, that iteration's scope is skipped, and the iterations around it (the
    block freed before the refused request, so allocated again after) are complete."""
    i, n = V("i"), E.Param(i32, "n")
    rows, cols = E.select(i == 1, n, C(1)), E.select(i == 1, n, i % 5 * 50 + 3)
    body = L.For("i", C(0), V("out.extent.0"), kind, L.Allocate(
        "a", f32, (cols, rows), "heap", _fill_and_sum("a", cols, i, C(0))))
    kern, gen = _kernel(body, ["n"])
    out = np.full((1, 12), -1, np.float32)
    assert kern([out], [1 << 30], threads) == 1
    k = np.arange(12)
    want = (2 * k + k % 5 * 50 + 2).astype(np.float32)
    np.testing.assert_array_equal(out[0, k != 1], want[k != 1])
    assert out[0, 1] == -1
    assert kern([out], [7], threads) == 0
    want[1] = 2 + 7 - 1
    np.testing.assert_array_equal(out[0], want)
