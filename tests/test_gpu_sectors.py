"""The CPU shim's sector counter: the 32-byte sectors each warp-level global access moves.

Each case is a one-kernel pipeline whose traffic can be counted by hand: a coalesced
copy moves 4 sectors a warp (32 floats, 128 bytes), a stride-2 read 8, a transposed
read 32, a read shifted by one float 5, a warp of 8 x 4 threads 4 (one sector a row);
the counting build computes the same values as the plain one.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend import cuda as C
from tilesolve.backend.cuda import emulate as EM
import cuda_samples as S
from tilesolve.backend.cuda.sectors import MemoryReport, Traffic, sectors_of
from tilesolve.errors import TilesolveError

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
x, y = ts.Var("x"), ts.Var("y")
rng = np.random.default_rng(3)


def _one_kernel(expr_of, in_shape, dtype=ts.float32, tile=(32, 1)):
    """out[x, y] = expr_of(inp) tiled ``tile`` on the GPU; (pipeline, schedule)."""
    inp = ts.ImageParam(dtype, 2, "inp")
    out = ts.Func("out")
    out[x, y] = expr_of(inp)
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe, target="cuda")
    s[out].gpu_tile(x, y, "xo", "yo", "xi", "yi", *tile)
    return pipe, s


def _count(pipe, sched, sizes, arr):
    got, rep = EM.run(pipe, sched, sizes, {"inp": arr}, count_sectors=True)
    want = ts.reference.realize(pipe, sizes, inp=arr)
    np.testing.assert_array_equal(got, want)
    assert len(rep.launches) == 1
    return rep, {b.buffer: b for b in rep.launches[0].buffers}


@needs_cxx
def test_a_coalesced_copy_moves_the_compulsory_sectors():
    pipe, s = _one_kernel(lambda inp: inp[x, y] * 2, None)
    rep, b = _count(pipe, s, [64, 8], rng.random((8, 64), dtype=np.float32))
    warps = 64 * 8 // 32
    assert b["inp"].loads == Traffic(warps, 4 * warps, 4 * warps, 4 * warps, 64 * 8 * 4)
    assert b["out"].stores == Traffic(warps, 4 * warps, 4 * warps, 4 * warps, 64 * 8 * 4)
    assert b["inp"].stores == Traffic() and b["out"].loads == Traffic()
    assert rep.compulsory_sectors == 2 * 64 * 8 * 4 // 32
    assert rep.ratio() == rep.ratio("block_sectors") == rep.ratio("launch_sectors") == 1.0
    assert rep.per_output_point() == pytest.approx(2 * 4 / 32)
    assert rep.launches[0].record.grid == (2, 8, 1) and rep.launches[0].record.block == (32, 1, 1)
    assert rep.launches[0].record.buffers == (("inp", "inp", 2048), ("out", "out", 2048))


@needs_cxx
def test_a_stride_two_read_moves_twice_the_sectors_it_uses():
    pipe, s = _one_kernel(lambda inp: inp[2 * x, y], None)
    rep, b = _count(pipe, s, [64, 8], rng.random((8, 128), dtype=np.float32))
    warps = 64 * 8 // 32
    ld = b["inp"].loads
    assert (ld.requests, ld.sectors, ld.sectors_per_request) == (warps, 8 * warps, 8.0)
    assert ld.bytes * 2 == ld.sectors * 32                     # half of each sector used
    assert ld.launch_sectors == sectors_of(128 * 8 * 4)         # every sector touched


@needs_cxx
def test_a_transposed_read_moves_one_sector_a_lane():
    pipe, s = _one_kernel(lambda inp: inp[y, x], None)
    rep, b = _count(pipe, s, [64, 32], rng.random((64, 32), dtype=np.float32))
    ld = b["inp"].loads
    assert ld.sectors_per_request == 32.0
    assert b["out"].stores.sectors_per_request == 4.0
    # a block's warp reads 32 rows' sectors once each: block-distinct = per request
    assert ld.block_sectors == ld.sectors
    assert ld.launch_sectors == sectors_of(64 * 32 * 4)


@needs_cxx
def test_a_read_shifted_by_one_element_straddles_a_fifth_sector():
    pipe, s = _one_kernel(lambda inp: inp[x + 1, y], None)
    rep, b = _count(pipe, s, [64, 4], rng.random((4, 72), dtype=np.float32))
    assert b["inp"].loads.sectors_per_request == 5.0          # rows of 288 bytes: aligned
    assert b["out"].stores.sectors_per_request == 4.0


@needs_cxx
def test_a_warp_spans_rows_of_a_narrow_block():
    """A block of 8 x 4 threads is one warp over 4 rows: one sector a row."""
    pipe, s = _one_kernel(lambda inp: inp[x, y], None, tile=(8, 4))
    rep, b = _count(pipe, s, [64, 8], rng.random((8, 64), dtype=np.float32))
    assert b["inp"].loads.requests == 64 * 8 // 32
    assert b["inp"].loads.sectors_per_request == 4.0
    assert rep.ratio() == 1.0


@needs_cxx
def test_bytes_narrower_than_a_word():
    pipe, s = _one_kernel(lambda inp: inp[x, y] + 1, None, dtype=ts.uint8, tile=(64, 1))
    arr = rng.integers(0, 255, (4, 128), dtype=np.uint8)
    rep, b = _count(pipe, s, [128, 4], arr)
    assert b["inp"].loads.sectors_per_request == 1.0          # 32 lanes x 1 byte
    assert b["inp"].loads.requests == 128 * 4 // 32
    assert rep.ratio() == 1.0


@needs_cxx
def test_shared_memory_kernel_counts_and_equals_the_plain_build():
    """blur with blur_x in shared memory (barriers: the shim's fibers): the counting build
    computes the same values; every input sector is read, every output sector written."""
    pipe = S.blur_pipeline()
    s = ts.Schedule(pipe, target="cuda")
    s[pipe.func("blur_y")].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 16, 8)
    s[pipe.func("blur_x")].compute_at(pipe.func("blur_y"), "xo").gpu_threads("x", "y")
    w, h = 48, 24
    arr = rng.random((h, w), dtype=np.float32)             # repeat_edge: same size
    plain = C.emulate_cuda(pipe, s).realize([w, h], input=arr)
    emu = C.emulate_cuda(pipe, s, count_sectors=True)
    np.testing.assert_array_equal(emu.realize([w, h], input=arr), plain)
    rep = emu.last_report
    assert isinstance(rep, MemoryReport) and rep.output_points == w * h
    by = rep.by_buffer("launch_sectors")
    assert by["blur_y"] == (0, sectors_of(w * h * 4))
    assert by["input"][0] == sectors_of(arr.nbytes) and by["input"][1] == 0
    assert rep.ratio("launch_sectors") == pytest.approx(1.0)
    # 16-wide warps over two rows; the 3 x-taps are read by 3 instructions
    assert rep.ratio() > rep.ratio("block_sectors") > 1.0
    assert "compulsory" in rep.text()


@needs_cxx
def test_the_plain_emulation_has_no_report_and_levels_are_checked():
    pipe, s = _one_kernel(lambda inp: inp[x, y], None)
    emu = C.emulate_cuda(pipe, s)
    emu.realize([32, 2], inp=rng.random((2, 32), dtype=np.float32))
    assert emu.last_report is None
    _, rep = EM.run(pipe, s, [32, 2], {"inp": rng.random((2, 32), dtype=np.float32)},
                    count_sectors=True)
    with pytest.raises(TilesolveError, match="level 'dram'"):
        rep.ratio("dram")


@needs_cxx
def test_buffer_names_that_prefix_one_another():
    """Parameters ``f`` and ``f_up``: each is wrapped as itself (a textual replacement of
    the shorter one must not reach into the longer)."""
    inp = ts.ImageParam(ts.float32, 2, "inp")
    f, f_up, out = ts.Func("f"), ts.Func("f_up"), ts.Func("out")
    f[x, y] = inp[x, y] + 1
    f_up[x, y] = inp[x, y] * 2
    out[x, y] = f[x, y] + f_up[x, y]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe, target="cuda")
    for g in (f, f_up, out):
        s[g].compute_root().gpu_tile(x, y, "xo", "yo", "xi", "yi", 32, 1)
    arr = rng.random((4, 64), dtype=np.float32)
    got, rep = EM.run(pipe, s, [64, 4], {"inp": arr}, count_sectors=True)
    np.testing.assert_allclose(got, (arr + 1) + arr * 2, rtol=1e-6)
    last = {b.buffer: b for b in rep.launches[-1].buffers}
    assert last["f"].loads.sectors == last["f_up"].loads.sectors == 64 * 4 * 4 // 32
