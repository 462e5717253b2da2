"""The CPU code generator on hand-built loop IR, compared with numpy.

Each test writes a small loop-IR program (the shapes lowering produces: maps, stencils
with an intermediate allocation, parallel/vectorized/unrolled loops, lets, conditionals,
scatters, GPU-style block/thread loops with a barrier), compiles it and checks the result.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tilesolve as ts

from tilesolve.backend.cpu.codegen import generate
from tilesolve.backend.cpu.runtime import NativeKernel
from tilesolve.lower import ir as L
from tilesolve.lower import lower
from tilesolve.model import expr as E
from tilesolve.model import types as T

f32, i32 = T.float32, T.int32


def V(name):
    return E.Var(name)


def C(v, t=i32):
    return E.Const(t, v)


def buf(name, t=f32, dims=1, out=False):
    return L.Argument(name, "buffer", t, dims, out)


def ld(b, idx, t=f32):
    return L.load(b, idx, t)


def build(args, body, name="prog", **options):
    gen = generate(L.LoweredPipeline(name, tuple(args), body), **options)
    return NativeKernel(gen), gen


def at2(b, x, y):
    """Flat index of (x, y) in argument buffer b."""
    return x + y * V(f"{b}.stride.1")


def test_map_1d_with_param():
    k = E.Param(f32, "k")
    x = V("f.x")
    body = L.For("f.x", C(0), V("out.extent.0"), "serial",
                 L.Store("out", x, ld("inp", x) * k + E.cast(f32, x)))
    kern, gen = build([buf("inp"), buf("out", out=True), L.Argument("k", "scalar", f32)], body)
    a = np.random.default_rng(0).random(37).astype(np.float32)
    o = np.zeros(37, np.float32)
    assert kern([a, o], [1.5]) == 0
    np.testing.assert_array_equal(o, a * np.float32(1.5) + np.arange(37, dtype=np.float32))


def _stencil_program(memory, width_const=None):
    """tmp[x, r] = inp[x, y + r] + inp[x + 1, y + r] + inp[x + 2, y + r]  (a 3-row window)
    out[x, y] = tmp[x, 0] + tmp[x, 1] + tmp[x, 2], one window per row y."""
    x, y, r, xt = V("o.x"), V("o.y"), V("t.r"), V("t.x")
    w = V("out.extent.0") if width_const is None else C(width_const)
    tmp_x = L.For("t.x", C(0), w, "serial",
                  L.Store("tmp", xt + r * w,
                          ld("inp", at2("inp", xt, y + r)) + ld("inp", at2("inp", xt + 1, y + r))
                          + ld("inp", at2("inp", xt + 2, y + r))))
    produce = L.For("t.r", C(0), C(3), "serial", tmp_x)
    consume = L.For("o.x", C(0), w, "serial",
                    L.Store("out", at2("out", x, y),
                            ld("tmp", x) + ld("tmp", x + w) + ld("tmp", x + 2 * w)))
    alloc = L.Allocate("tmp", f32, (w, C(3)), memory,
                       L.Block.make([L.ProducerConsumer("tmp", True, produce),
                                     L.ProducerConsumer("tmp", False, consume)]))
    body = L.For("o.y", C(0), V("out.extent.1"), "parallel", alloc)
    return [buf("inp", dims=2), buf("out", dims=2, out=True)], body


@pytest.mark.parametrize("memory,width_const", [("heap", None), ("stack", 64), ("stack", None)])
def test_stencil_2d_with_intermediate_allocation(memory, width_const):
    args, body = _stencil_program(memory, width_const)
    kern, gen = build(args, body)
    h, w = 23, 64
    a = np.random.default_rng(1).random((h + 2, w + 2)).astype(np.float32)
    o = np.zeros((h, w), np.float32)
    assert kern([a, o], [], 2) == 0
    t = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    np.testing.assert_array_equal(o, t[:-2] + t[1:-1] + t[2:])
    on_heap = any("on the heap" in n for n in gen.notes)
    assert on_heap == (memory == "stack" and width_const is None)
    ir_text = kern.jit.llvm_ir()
    assert ("ts_rt_alloc" in ir_text) == (memory == "heap" or width_const is None)


def test_parallel_outer_loop_and_thread_counts():
    x, y = V("o.x"), V("o.y")
    body = L.For("o.y", C(0), V("out.extent.1"), "parallel",
                 L.For("o.x", C(0), V("out.extent.0"), "serial",
                       L.Store("out", at2("out", x, y), E.cast(f32, x * 1000 + y))))
    kern, gen = build([buf("out", dims=2, out=True)], body)
    assert "par.worker" in kern.jit.llvm_ir()
    want = (np.arange(50)[None, :] * 1000 + np.arange(41)[:, None]).astype(np.float32)
    for threads in (1, 2, 3, 0):
        o = np.zeros((41, 50), np.float32)
        assert kern([o], [], threads) == 0
        np.testing.assert_array_equal(o, want)


def test_vectorized_loads_dense_strided_reversed_and_gather():
    xo, xi = V("v.xo"), V("v.xi")
    x = xo * 8 + xi
    n = V("out.extent.0")
    value = (ld("inp", x) + ld("inp", 2 * x) * 10 + ld("inp", n - 1 - x) * 100
             + ld("inp", (x * 7) % 13) * 1000 + ld("inp", ld("idx", x, i32)) * 10000
             + ld("inp", xo))
    body = L.For("v.xo", C(0), n / 8, "serial",
                 L.For("v.xi", C(0), C(8), "vectorized", L.Store("out", x, value)))
    kern, gen = build([buf("inp"), buf("idx", i32), buf("out", out=True)], body)
    assert gen.notes == ()
    n_ = 64
    rng = np.random.default_rng(2)
    a = rng.integers(0, 10, 2 * n_).astype(np.float32)
    idx = rng.integers(0, 2 * n_, n_).astype(np.int32)
    o = np.zeros(n_, np.float32)
    assert kern([a, idx, o]) == 0
    xs = np.arange(n_)
    want = (a[xs] + a[2 * xs] * 10 + a[n_ - 1 - xs] * 100 + a[(xs * 7) % 13] * 1000
            + a[idx] * 10000 + a[xs // 8])
    np.testing.assert_array_equal(o, want.astype(np.float32))
    ir_text = kern.jit.llvm_ir()
    assert "load <8 x float>" in ir_text           # the dense loads


def test_vectorized_stores_scatter_reverse_and_uniform():
    xi = V("v.xi")
    body = L.Block.make([
        L.For("v.xi", C(0), C(8), "vectorized", L.Block.make([
            L.Store("rev", C(7) - xi, E.cast(f32, xi)),
            L.Store("odd", xi * 2 + 1, E.cast(f32, xi)),
            L.Store("last", C(0), E.cast(f32, xi) * 3),
        ])),
    ])
    kern, gen = build([buf("rev", out=True), buf("odd", out=True), buf("last", out=True)], body)
    rev, odd, last = np.zeros(8, np.float32), np.zeros(16, np.float32), np.zeros(1, np.float32)
    assert kern([rev, odd, last]) == 0
    np.testing.assert_array_equal(rev, np.arange(8)[::-1])
    np.testing.assert_array_equal(odd[1::2], np.arange(8))
    np.testing.assert_array_equal(odd[0::2], 0)
    assert last[0] == 21.0


def test_let_and_if_then_else_uniform_and_varying():
    x, y = V("o.x"), V("o.y")
    k = E.Param(i32, "k")
    inner = L.For("o.x", C(0), C(16), "vectorized", L.LetStmt(
        "o.row", y * V("out.stride.1"),
        L.IfThenElse(x < k,                          # varies across lanes -> masks
                     L.Store("out", x + V("o.row"), C(1.0, f32)),
                     L.Store("out", x + V("o.row"), C(2.0, f32)))))
    outer = L.For("o.y", C(0), V("out.extent.1"), "serial",
                  L.IfThenElse(y < 2, inner,                    # uniform: a branch
                               L.For("o.x2", C(0), C(16), "vectorized",
                                     L.Store("out", V("o.x2") + y * 16, C(3.0, f32)))))
    kern, gen = build([buf("out", dims=2, out=True), L.Argument("k", "scalar", i32)], outer)
    assert gen.notes == ()
    assert "llvm.masked.store" in kern.jit.llvm_ir()
    o = np.zeros((4, 16), np.float32)
    assert kern([o], [5]) == 0
    want = np.full((4, 16), 3.0, np.float32)
    want[:2, :5], want[:2, 5:] = 1.0, 2.0
    np.testing.assert_array_equal(o, want)


def test_histogram_scatter_with_computed_index():
    x = V("h.x")
    bin_ = E.clamp(ld("inp", x, i32), 0, 15)
    init = L.For("h.b", C(0), C(16), "serial", L.Store("hist", V("h.b"), C(0)))
    update = L.For("h.x", C(0), V("inp.extent.0"), "serial",
                   L.Store("hist", bin_, L.load("hist", bin_, i32) + 1))
    kern, gen = build([buf("inp", i32), buf("hist", i32, out=True)], L.Block.make([init, update]))
    a = np.random.default_rng(3).integers(-5, 25, 1000).astype(np.int32)
    h = np.full(16, 99, np.int32)
    assert kern([a, h]) == 0
    np.testing.assert_array_equal(h, np.bincount(np.clip(a, 0, 15), minlength=16))


def test_unrolled_loop_and_vector_body_with_inner_serial_reduction():
    xo, xi, r, u = V("s.xo"), V("s.xi"), V("s.r"), V("s.u")
    x = xo * 8 + xi
    # out[x] = sum_r inp[x + r] over r in [0, k): the loop over r sits inside the vector loop
    red = L.Block.make([
        L.Store("out", x, C(0.0, f32)),
        L.For("s.r", C(0), E.Param(i32, "k"), "serial",
              L.Store("out", x, ld("out", x) + ld("inp", x + r))),
    ])
    unrolled = L.For("s.u", C(0), C(3), "unrolled", L.Store("tri", u, E.cast(f32, u * u)))
    body = L.Block.make([
        L.For("s.xo", C(0), C(4), "serial", L.For("s.xi", C(0), C(8), "vectorized", red)),
        unrolled])
    kern, gen = build([buf("inp"), buf("out", out=True), buf("tri", out=True),
                       L.Argument("k", "scalar", i32)], body)
    assert gen.notes == ()
    a = np.arange(40, dtype=np.float32)
    o, tri = np.zeros(32, np.float32), np.zeros(3, np.float32)
    assert kern([a, o, tri], [5]) == 0
    np.testing.assert_array_equal(o, [a[i:i + 5].sum() for i in range(32)])
    np.testing.assert_array_equal(tri, [0, 1, 4])


def test_gpu_block_thread_loops_with_shared_memory_and_barrier():
    """Each block stages 16 values in shared memory, then thread t reads slot 15 - t: only
    correct if the serial emulation finishes the first phase before the second."""
    bk, t = V("g.b"), V("g.t")
    phase1 = L.Store("s", t, ld("inp", bk * 16 + t))
    phase2 = L.Store("out", bk * 16 + t, ld("s", C(15) - t))
    threads = L.For("g.t", C(0), C(16), "gpu_thread",
                    L.Block.make([phase1, L.Barrier(), phase2]))
    body = L.For("g.b", C(0), V("out.extent.0") / 16, "gpu_block",
                 L.Allocate("s", f32, (C(16),), "shared", threads))
    kern, gen = build([buf("inp"), buf("out", out=True)], body)
    a = np.arange(64, dtype=np.float32)
    o = np.zeros(64, np.float32)
    assert kern([a, o]) == 0
    np.testing.assert_array_equal(o, a.reshape(4, 16)[:, ::-1].ravel())


def test_nested_parallel_loop_runs_serially():
    x, y = V("o.x"), V("o.y")
    body = L.For("o.y", C(0), C(8), "parallel",
                 L.For("o.x", C(0), C(8), "parallel",
                       L.Store("out", x + y * 8, E.cast(f32, x - y))))
    kern, gen = build([buf("out", out=True)], body)
    assert any("o.x runs serially" in n for n in gen.notes)
    o = np.zeros(64, np.float32)
    assert kern([o], [], 2) == 0
    np.testing.assert_array_equal(o.reshape(8, 8), np.arange(8)[None, :] - np.arange(8)[:, None])


def test_bool_buffers_and_mixed_types():
    xo, xi = V("b.xo"), V("b.xi")
    x = xo * 16 + xi
    v = ld("inp", x, T.bool_)
    body = L.For("b.xo", C(0), C(2), "parallel",
                 L.For("b.xi", C(0), C(16), "vectorized", L.Block.make([
                     L.Store("nb", x, ~v),
                     L.Store("u8", x, E.select(v, E.cast(T.uint8, x), E.Const(T.uint8, 200))),
                 ])))
    kern, gen = build([buf("inp", T.bool_), buf("nb", T.bool_, out=True),
                       buf("u8", T.uint8, out=True)], body)
    a = np.random.default_rng(4).random(32) < 0.5
    nb, u8 = np.zeros(32, bool), np.zeros(32, np.uint8)
    assert kern([a, nb, u8], [], 2) == 0
    np.testing.assert_array_equal(nb, ~a)
    np.testing.assert_array_equal(u8, np.where(a, np.arange(32), 200))


def test_failed_heap_allocation_returns_error_code():
    huge = E.Param(i32, "n")
    use = L.Block.make([L.Store("big", V("o.y"), C(1.0, f32)),
                        L.Store("out", V("o.y"), ld("big", V("o.y")))])
    for extents in ((huge, huge), (huge, huge, huge)):      # 2**62 bytes; overflows i64
        body = L.For("o.y", C(0), C(2), "parallel", L.Allocate("big", f32, extents, "heap", use))
        kern, gen = build([buf("out", out=True), L.Argument("n", "scalar", i32)], body)
        o = np.zeros(2, np.float32)
        assert kern([o], [1 << 30], 2) == 1
        np.testing.assert_array_equal(o, 0)       # the allocation's scope was skipped
        assert kern([o], [4], 2) == 0
        np.testing.assert_array_equal(o, 1)


def test_blur_vectorized_by_16_uses_wide_registers():
    from tilesolve.backend.cpu.target import host_target
    if not host_target().info.has_feature("avx"):
        pytest.skip("the host CPU has no AVX: no ymm/zmm registers to look for")
    args, body = _stencil_program("heap")
    x, y = V("o.xi"), V("o.y")
    # the consumer loop, vectorized by 16 (extent divisible by 16 in this test)
    body = L.For("o.y", C(0), V("out.extent.1"), "serial", L.Allocate(
        "tmp", f32, (V("out.extent.0"), C(3)), "heap", L.Block.make([
            L.For("t.r", C(0), C(3), "serial",
                  L.For("t.xo", C(0), V("out.extent.0") / 16, "serial", L.For(
                      "t.xi", C(0), C(16), "vectorized", L.LetStmt(
                          "t.x", V("t.xo") * 16 + V("t.xi"),
                          L.Store("tmp", V("t.x") + V("t.r") * V("out.extent.0"),
                                  ld("inp", at2("inp", V("t.x"), y + V("t.r")))
                                  + ld("inp", at2("inp", V("t.x") + 1, y + V("t.r")))))))),
            L.For("o.xo", C(0), V("out.extent.0") / 16, "serial", L.For(
                "o.xi", C(0), C(16), "vectorized",
                L.Store("out", at2("out", V("o.xo") * 16 + x, y),
                        ld("tmp", V("o.xo") * 16 + x) / 3))),
        ])))
    kern, gen = build(args, body)
    assert gen.notes == ()
    asm = kern.jit.assembly()
    assert "ymm" in asm or "zmm" in asm
    a = np.random.default_rng(5).random((10, 34)).astype(np.float32)
    o = np.zeros((8, 32), np.float32)
    assert kern([a, o]) == 0
    np.testing.assert_array_equal(o, (a[:8, :32] + a[:8, 1:33]) / np.float32(3))


@pytest.mark.parametrize("seed", range(3))
def test_clamped_ramp_indices_fast_and_edge_paths(seed):
    """Boundary-condition indices (clamp of the vector loop variable) take a dense access
    when no lane is clamped and a gather/scatter otherwise; both must be exact, including
    ramps that wrap around int32 inside one vector."""
    n = 200
    xo, xi = V("c.xo"), V("c.xi")
    x = xo * 8 + xi + E.Param(i32, "p")
    hi = V("iota.extent.0") - 1
    idxs = [E.clamp(x - 1, 0, hi), E.clamp(x + 1, 0, hi) + 0, E.min_(E.max_(x, 0), hi) * 1,
            E.clamp(x * 2, 0, hi), E.clamp(C(7) - x, 0, hi), E.max_(E.min_(x, hi), 0),
            E.clamp(E.clamp(x, -5, 300) - 3, 0, hi), E.clamp(x * (1 << 29), 0, hi),
            E.clamp(E.clamp(x, 0, hi) - E.clamp(x - 2, 0, hi) + 2, 0, hi)]
    stores = [L.Store("out", xo * 8 + xi + k * V("out.stride.1"), ld("iota", e, i32))
              for k, e in enumerate(idxs)]
    stores.append(L.Store("sc", E.clamp(x, 0, V("sc.extent.0") - 1), E.cast(i32, x)))
    body = L.For("c.xo", C(0), C(n // 8), "serial", L.For("c.xi", C(0), C(8), "vectorized",
                                                      L.Block.make(stores)))
    kern, gen = build([buf("iota", i32), buf("out", i32, 2, True), buf("sc", i32, out=True),
                       L.Argument("p", "scalar", i32)], body)
    assert gen.notes == ()
    ir_text = kern.jit.llvm_ir()
    assert "load <8 x i32>" in ir_text and "store <8 x i32>" in ir_text
    rng = np.random.default_rng(seed)
    iota = rng.integers(-1000, 1000, 97).astype(np.int32)
    for p in [-30, 0, 50, int(rng.integers(-300, 100)), 2 ** 31 - 100]:
        out = np.zeros((len(idxs), n), np.int32)
        sc = np.full(64, -1, np.int32)
        assert kern([iota, out, sc], [p]) == 0
        xs = (np.arange(n, dtype=np.int64) + p).astype(np.int32)   # wraps like int32
        h = len(iota) - 1
        with np.errstate(over="ignore"):
            want = [np.clip(xs - 1, 0, h), np.clip(xs + 1, 0, h), np.clip(xs, 0, h),
                    np.clip(xs * 2, 0, h), np.clip(7 - xs, 0, h), np.clip(xs, 0, h),
                    np.clip(np.clip(xs, -5, 300) - 3, 0, h),
                    np.clip(xs * np.int32(1 << 29), 0, h),
                    np.clip(np.clip(xs, 0, h) - np.clip(xs - 2, 0, h) + 2, 0, h)]
        for k, w in enumerate(want):
            np.testing.assert_array_equal(out[k], iota[w], err_msg=f"index {k}, p={p}")
        want_sc = np.full(64, -1, np.int32)
        for v in xs:                                   # serial order: last write wins
            want_sc[min(max(v, 0), 63)] = v
        np.testing.assert_array_equal(sc, want_sc, err_msg=f"p={p}")


def _guarded_array(n: int, dtype) -> np.ndarray:
    """A writeable array of n elements that ends exactly at an inaccessible page, so that
    touching the element after the last one crashes (the test fails loudly)."""
    import ctypes
    import mmap
    page = mmap.PAGESIZE
    nbytes = n * np.dtype(dtype).itemsize
    size = (nbytes + page - 1) // page * page
    mem = mmap.mmap(-1, size + page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    libc = ctypes.CDLL(None)
    assert libc.mprotect(ctypes.c_void_p(base + size), page, 0) == 0     # PROT_NONE
    arr = np.frombuffer(mem, dtype=np.uint8, count=nbytes, offset=size - nbytes)
    arr = arr.view(dtype)
    return arr


@pytest.mark.parametrize("n", [1, 13, 16, 29])
def test_masked_vector_tails_never_touch_memory_past_the_guard(n):
    """``if x < n`` inside vectorized loops (what tails of updates look like): dense,
    reversed, gathered, clamped and uniform accesses under the lane mask, plus an else
    branch.  The arrays end at a guard page, so an unmasked access past n would crash."""
    xo, xi = V("m.xo"), V("m.xi")
    x = xo * 8 + xi
    nn = V("inp.extent.0")
    then = L.Block.make([
        L.Store("out", x, ld("inp", x) + ld("inp", nn - 1 - x) * 10
                + ld("inp", ld("idx", x, i32)) * 100
                + ld("inp", E.clamp(x + 1, 0, nn - 1)) * 1000),
        L.Store("last", C(0), E.cast(f32, x)),
    ])
    other = L.Store("cnt", x - nn, C(-1.0, f32))     # lanes past n, into another buffer
    body = L.For("m.xo", C(0), (nn + 7) / 8, "serial", L.For(
        "m.xi", C(0), C(8), "vectorized", L.IfThenElse(x < nn, then, L.IfThenElse(
            x < nn + V("cnt.extent.0"), other))))
    kern, gen = build([buf("inp"), buf("idx", i32), buf("out", out=True),
                       buf("last", out=True), buf("cnt", out=True)], body)
    assert gen.notes == ()
    rng = np.random.default_rng(n)
    inp, idx, out = _guarded_array(n, np.float32), _guarded_array(n, np.int32), \
        _guarded_array(n, np.float32)
    inp[:] = rng.integers(0, 9, n)
    idx[:] = rng.integers(0, n, n)
    extra = (-n) % 8
    cnt = _guarded_array(max(extra, 1), np.float32)
    cnt[:] = 5.0
    last = _guarded_array(1, np.float32)
    assert kern([inp, idx, out, last, cnt[:extra] if extra else cnt[:0]]) == 0
    xs = np.arange(n)
    want = inp + inp[::-1] * 10 + inp[idx] * 100 + inp[np.minimum(xs + 1, n - 1)] * 1000
    np.testing.assert_array_equal(out, want)
    assert last[0] == n - 1
    np.testing.assert_array_equal(cnt[:extra], -1.0)


def test_loads_are_not_reused_across_stores():
    """A Load node (hash-consed: the same object wherever it appears) must be re-read
    after a Store to its buffer, in straight-line code and across loop iterations."""
    i = V("s.i")
    acc0 = ld("acc", C(0))
    body = L.Block.make([
        L.Store("acc", C(0), C(1.0, f32)),
        L.Store("out", C(0), acc0),
        L.Store("acc", C(0), acc0 + 1),
        L.Store("out", C(1), acc0),
        L.For("s.i", C(0), C(5), "serial", L.Block.make([
            L.Store("trace", i, acc0),
            L.Store("acc", C(0), acc0 * 2),
        ])),
        L.Store("out", C(2), E.Let("t", acc0, E.Let("t", acc0 + 1, acc0 + 2) * 0 + acc0)),
    ])
    kern, gen = build([buf("acc", out=True), buf("out", out=True), buf("trace", out=True)], body)
    acc, out, trace = np.zeros(1, np.float32), np.zeros(3, np.float32), np.zeros(5, np.float32)
    assert kern([acc, out, trace]) == 0
    np.testing.assert_array_equal(out, [1, 2, 64])
    np.testing.assert_array_equal(trace, [2, 4, 8, 16, 32])


def test_register_tile_accumulators_stay_in_registers():
    """conv_layer's greedy schedule keeps a 8x2-vector tile of ``conv`` in flight while
    it loops over the reduction: the addresses of those 16 accumulators differ by
    constants, which LLVM sees only because addresses are built in 64 bits from the
    ``nsw`` index arithmetic. Its reduction loop then holds them in registers: the
    loop's block with the additions stores nothing (before: a load and a store of
    every accumulator per step, 1.8x Halide's time on the same schedule)."""
    import re
    from tilesolve.apps import get_app
    app = get_app("conv_layer")
    pipe, est = app.build(None)
    sched = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    ir_text = ts.compile(pipe, sched).llvm_ir()
    blocks = re.split(r"\n(?=[\w.\-]+:)", ir_text)
    loop = max((b for b in blocks if b.startswith("conv.s1.r.")),
               key=lambda b: b.count("fadd <16 x float>"))
    assert loop.count("fadd <16 x float>") >= 16, loop[:2000]
    assert "store" not in loop, loop[:2000]


@pytest.mark.parametrize("width", [16, 17, 31, 40, 63])
def test_upsampling_by_two_loads_densely(width):
    """``f[x / 2]`` and ``f[(x + 1) / 2]`` in a 16-wide vector loop read the 8 (even
    first lane) or 9 (odd) elements the lanes touch with dense loads and a shuffle, not
    a 16-element gather: the 9 as two overlapping 8-wide loads (an odd-width load is
    split by LLVM into one load per power of two); the odd and even cases both occur
    here, since the last vector of a row starts at width - 16. Equal to the
    reference."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    down = ts.Func("down")
    down[x, y] = inp[x, y] * 2
    up = ts.Func("up")
    up[x, y] = down[x / 2, y] + down[(x + 1) / 2, y] * 3
    pipe = ts.Pipeline(up)
    s = ts.Schedule(pipe)
    s[up].vectorize(x, 16)
    s[down].compute_root()
    compiled = ts.compile(pipe, s)
    text = compiled.llvm_ir()        # (the masked branch for widths < 16 gathers)
    assert "load <8 x float>" in text and "load <9 x float>" not in text
    sizes = [width, 3]
    src = np.random.default_rng(width).random((3, width // 2 + 2), dtype=np.float32)
    want = ts.reference.realize(pipe, sizes, input=src)
    np.testing.assert_array_equal(compiled.realize(sizes, input=src), want)


@pytest.mark.parametrize("lanes", [3, 7])
def test_upsampling_by_two_in_an_odd_number_of_lanes(lanes):
    """``f[x / 2]`` in a vector loop of an odd width (``vectorize`` without a width of a
    Func read at a clamped loaded index, so its region is ``lanes`` points): the dense
    load covers the ``(lanes - 1 + odd) // 2 + 1`` elements the lanes touch (it used to
    cover one fewer in the even case: a crash at code generation).  Equal to the
    reference."""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.int32, 1, "input")
    idx = ts.ImageParam(ts.int32, 1, "idx")
    down = ts.Func("down")
    down[x] = inp[x] * 3 - 4
    up = ts.Func("up")
    up[x] = down[x / 2] + down[(x + 1) / 2] * 2
    out = ts.Func("out")
    out[x] = up[ts.clamp(idx[x], 0, lanes - 1)] + x
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    s[up].compute_root().vectorize(x)          # its whole (constant) extent: ``lanes``
    s[down].compute_root()
    compiled = ts.compile(pipe, s)
    src = np.arange(lanes // 2 + 2, dtype=np.int32) * 7 % 11
    for n in (1, 9):
        where = (np.arange(n, dtype=np.int32) * 5) % (lanes + 2) - 1
        want = ts.reference.realize(pipe, [n], input=src, idx=where)
        np.testing.assert_array_equal(compiled.realize([n], input=src, idx=where), want)


@pytest.mark.parametrize("stride", [2, 3, 4, -2])
@pytest.mark.parametrize("dtype", [ts.float32, ts.uint8])
def test_strided_loads_read_whole_vectors_inside_their_span(stride, dtype):
    """``f[k x + c]`` in a vectorized loop reads the span its lanes touch with loads of a
    power-of-two width, the last moved back to end at the last lane's element, then one
    shuffle: no odd-width load (which LLVM splits into a load per power of two) and no
    gather.  Every width from one vector to a few, so the last vector of a row ends
    exactly at the input's last element; equal to the reference."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(dtype, 2, "input")
    f = ts.Func("f")
    k = abs(stride)
    idx = stride * x + (k - 1 if stride > 0 else 0)
    if stride < 0:
        idx = idx + inp.extent(0) - 1
    f[x, y] = inp[idx, y] + inp[idx - (k - 1), y]
    pipe = ts.Pipeline(f)
    lanes = 16 if dtype == ts.float32 else 32
    s = ts.Schedule(pipe)
    s[f].vectorize(x, lanes)
    compiled = ts.compile(pipe, s, cache_dir=False)
    text = compiled.llvm_ir()
    elem = "float" if dtype == ts.float32 else "i8"
    odd = re.findall(rf"load <(\d+) x {elem}>", text)
    assert odd and all(int(n) & (int(n) - 1) == 0 for n in odd), sorted(set(odd))
    for width in (lanes, lanes + 1, 2 * lanes - 1, 3 * lanes + 5):
        sizes = [width, 2]
        rng = np.random.default_rng(width)
        src = rng.integers(0, 100, (2, k * width), dtype=np.uint8)
        src = src.astype(np.float32) if dtype == ts.float32 else src
        want = ts.reference.realize(pipe, sizes, input=src)
        np.testing.assert_array_equal(compiled.realize(sizes, input=src), want)


@pytest.mark.parametrize("checked", [False, True])
def test_a_run_time_stride_across_lanes_loads_lane_by_lane(checked):
    """``mat[r, x]`` vectorized over x: each lane reads its own row, at ``r + x * stride``
    with the stride known only at run time.  The full vectors load lane by lane at
    addresses stepped in scalars (no ``llvm.masked.gather`` outside the masked tail);
    equal to the reference at widths around the vector, a transposed view included
    (and, checked, inside the buffers' bounds)."""
    x = ts.Var("x")
    mat = ts.ImageParam(ts.float32, 2, "mat")
    r = ts.RDom((0, mat.extent(0)), name="r")
    f = ts.Func("f")
    f[x] += mat[r.x, x] * (r.x + 1)
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].update(0).vectorize(x, 8)
    compiled = ts.compile(pipe, s, cache_dir=False, checked=checked)
    if not checked:
        steady = [blk for blk in re.split(r"\n(?=[\w.\-]+:)", compiled.llvm_ir())
                  if "fmul <8 x float>" in blk and "masked" not in blk]
        assert steady and not any("masked.gather" in blk for blk in steady)
    rng = np.random.default_rng(3)
    for rows in (8, 9, 15, 21):
        m = rng.standard_normal((rows, 5)).astype(np.float32)
        for arr in (m, np.asfortranarray(m), rng.standard_normal((5, rows)).astype(
                np.float32).T):
            want = ts.reference.realize(pipe, [rows], mat=arr)
            np.testing.assert_array_equal(compiled.realize([rows], mat=arr), want)


def test_a_run_time_stride_across_lanes_stores_lane_by_lane():
    """A transpose vectorized over y stores each lane in its own row (``x + y * stride``,
    the stride the output's, known at run time): one scalar store a lane at addresses
    stepped in scalars, in lane order; equal to the reference, also into a window of
    a wider array (``out=``)."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int16, 2, "input")
    f = ts.Func("f")
    f[x, y] = inp[y, x] * 3
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].reorder(y, x).vectorize(y, 8)
    compiled = ts.compile(pipe, s, cache_dir=False)
    text = generate(lower(pipe, s)).ir_text           # no vector of indices to extract
    assert "store i16" in text and "extractelement <8 x i32>" not in text
    rng = np.random.default_rng(5)
    for w, h in ((5, 8), (7, 17), (3, 30)):
        src = rng.integers(-99, 99, (w, h), dtype=np.int16)
        want = ts.reference.realize(pipe, [w, h], input=src)
        np.testing.assert_array_equal(compiled.realize([w, h], input=src), want)
        out = np.zeros((h, 2 * w + 3), np.int16)[:, 1:w + 1]    # rows of a wider array
        compiled.realize([w, h], input=src, out=out)
        np.testing.assert_array_equal(out, want)


def test_gathers_by_where_their_index_comes_from():
    """A vector load at lane-varying coordinates computed in float (a resampling tap,
    ``in[floor(x * 0.7) + r]``) loads lane by lane outside masked tails; at indices read
    from memory (a lookup table) it stays one ``llvm.masked.gather``.  Both equal the
    reference."""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "input")
    lut = ts.ImageParam(ts.uint8, 1, "lut")
    r = ts.RDom((0, 3), name="r")
    tap = ts.Func("tap")
    tap[x] += inp[ts.cast(ts.int32, ts.floor(ts.cast(ts.float32, x) * 0.7)) + r.x]
    look = ts.Func("look")
    look[x] = ts.cast(ts.float32, lut[ts.clamp(ts.cast(ts.int32, inp[x] * 100.0), 0, 100)])
    rng = np.random.default_rng(2)
    for f, has_gather in ((tap, False), (look, True)):
        pipe = ts.Pipeline(f)
        s = ts.Schedule(pipe)
        s[f].vectorize(x, 16)
        if f.updates:
            s[f].update(0).vectorize(x, 16)
        low = lower(pipe, s)
        chosen, forced = (sum(" call " in ln and "masked.gather" in ln for ln in
                              generate(low, scalar_gathers=g).ir_text.splitlines())
                          for g in (None, False))
        assert forced > 0 and (chosen == forced if has_gather else chosen < forced)
        compiled = ts.compile(pipe, s, cache_dir=False)
        for n in (16, 23, 40):
            ins = {"input": rng.random(n + 3, dtype=np.float32)}
            if f is look:
                ins["lut"] = rng.integers(0, 255, 101, dtype=np.uint8)
            want = ts.reference.realize(pipe, [n], **ins)
            np.testing.assert_array_equal(compiled.realize([n], **ins), want)


@pytest.mark.parametrize("mode", ["default", "scalar"])
def test_gathers_under_a_mask_read_the_active_lanes(mode):
    """A gather is one ``llvm.masked.gather`` (the target's gather instruction where LLVM
    deems it fast); under a lane-varying condition its mask is the condition's, so the
    other lanes take the else branch's value.  ``scalar_gathers=True``: per-lane loads,
    the same values."""
    x = V("v.x")
    k = E.Param(i32, "k")
    body = L.For("v.x", C(0), C(16), "vectorized",
                 L.IfThenElse(x < k, L.Store("out", x, ld("inp", ld("idx", x, i32))),
                              L.Store("out", x, C(-1.0, f32))))
    kern, _ = build([buf("inp"), buf("idx", i32), buf("out", out=True),
                     L.Argument("k", "scalar", i32)], body, scalar_gathers=mode == "scalar")
    assert ("llvm.masked.gather" in kern.jit.llvm_ir()) == (mode == "default")
    a = np.arange(32, dtype=np.float32) * 3
    idx = np.array([31 - 2 * i for i in range(16)], np.int32)
    for kk in (0, 5, 16):
        o = np.zeros(16, np.float32)
        assert kern([a, idx, o], [kk]) == 0
        want = np.where(np.arange(16) < kk, a[idx], -1.0).astype(np.float32)
        np.testing.assert_array_equal(o, want)


def test_a_vectorized_loop_wider_than_max_lanes_runs_as_vectors_of_max_lanes():
    """``vectorize(x)`` without a width over a large constant region (a lookup table
    indexed by a uint16: 65,536 points) runs as vectors of MAX_LANES lanes and a rest
    vector, not one 65,536-lane value that LLVM cannot compile."""
    from tilesolve.backend.cpu.codegen_vector import MAX_LANES
    x = ts.Var("x")
    inp = ts.ImageParam(ts.uint16, 1, "inp")
    lut, out = ts.Func("lut"), ts.Func("out")
    lut[x] = ts.cast(ts.float32, x) * 0.5 + ts.cast(ts.float32, x % 7)
    out[x] = lut[ts.cast(ts.int32, inp[x]) % 65000]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    s[lut].compute_root().vectorize(x)
    s[out].vectorize(x, 8)
    c = ts.compile(pipe, s, cache_dir=False)
    assert any(f"vectors of {MAX_LANES}" in n for n in c.notes)
    a = np.random.default_rng(3).integers(0, 65536, 37).astype(np.uint16)
    np.testing.assert_array_equal(c.realize([37], inp=a),
                                  ts.reference.realize(pipe, [37], inp=a))


@pytest.mark.parametrize("taps", [(0, 1), (-1, 0, 1, 2), (0, 2, 3)])
def test_strided_siblings_share_their_span_load(taps):
    """Loads of one buffer at ``2x + c`` for several constants ``c`` in one statement
    (a wavelet's pair, a decimating filter's taps) share the span they read: the taps
    ``c, c + 1`` one 32-float load for 16 lanes, picked twice, instead of two loads
    each.  Only inside the siblings' joint span, so the last vector of a row still ends
    at the input's last element; equal to the reference, checked builds too."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    f = ts.Func("f")
    lo = -min(taps)
    f[x, y] = sum(inp[2 * x + c + lo, y] * (c + 2) for c in taps)
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, 16)
    lowered = lower(pipe, s)

    def vector_loads(**kw):
        return re.findall(r"load <(\d+) x float>", generate(lowered, **kw).ir_text)

    shared, own = vector_loads(), vector_loads(shared_spans=False)
    # the steady vector body loads each tap's span alone: two 16-float chunks a tap
    assert own.count("16") >= 2 * len(taps) and "32" not in own, own
    assert "32" in shared and len(shared) < len(own), (shared, own)
    span = max(taps) - min(taps)
    for checked in (False, True):
        compiled = ts.compile(pipe, s, cache_dir=False, checked=checked)
        for width in (16, 17, 31, 53):
            sizes = [width, 3]
            src = np.random.default_rng(width).random((3, 2 * width + span), dtype=np.float32)
            want = ts.reference.realize(pipe, sizes, input=src)
            np.testing.assert_allclose(compiled.realize(sizes, input=src), want, rtol=1e-6)
