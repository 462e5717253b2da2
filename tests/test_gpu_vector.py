"""Vector accesses in GPU kernels (``backend/cuda/vector.py``): a ``vectorized`` loop of
2 or 4 lanes inside a thread reads and writes its consecutive elements as one
float2/float4 (int4, ushort4 ...) access where the address is aligned, one a lane
elsewhere.

Every schedule here is emulated on the CPU shim (the CUDA text compiled with g++),
plain and with the sector counter, and compared with the reference; at sizes whose
rows are not a multiple of the vector, so both the vector and the lane-by-lane paths
run.  The memory touched is the same as the unrolled loop's; the warp-level requests
and sectors fall.
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend.cuda import emulate as EM
from tilesolve.backend.cuda import nvcc, vector
from tilesolve.backend.cuda.codegen import generate
from tilesolve.lower import ir as L
from tilesolve.lower import lower
from tilesolve.model import expr as E
from tilesolve.model import types as T
from tilesolve.model.visit import walk

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
BLUR = get_app("blur")


def _blur(vectorize: bool):
    """blur_y in 128 x 8 blocks of 32 x 8 threads, 4 points a thread along x; blur_x per
    block in shared memory, 4 points a thread too; the 4 points vectorized or unrolled."""
    pipe, _ = BLUR.build(BLUR.SMALL_SIZE)
    s = ts.Schedule(pipe, target="cuda")
    y = s["blur_y"].split("x", "xo", "xi", 128).split("xi", "xt", "xv", 4) \
        .split("y", "yo", "yi", 8).reorder("xv", "xt", "yi", "xo", "yo") \
        .gpu_blocks("xo", "yo").gpu_threads("xt", "yi")
    x = s["blur_x"].compute_at("blur_y", "xo").store_in("shared") \
        .split("x", "xt", "xv", 4).gpu_threads("xt", "y")
    for h in (x, y):
        h.vectorize("xv") if vectorize else h.unroll("xv")
    return pipe, s


def _run(pipe, s, sizes, inputs, count):
    got, report = EM.run(pipe, s, sizes, inputs, count_sectors=count)
    want = ts.reference.realize(pipe, sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(s))
    return report


@needs_cxx
@pytest.mark.parametrize("sizes", [[256, 64], [45, 19]])
def test_blur_with_vector_accesses_equals_the_reference_in_fewer_requests(sizes):
    """Vectorized, the text reads input's three taps as one window of 6 floats
    (``ts_vload<4, 6>``) and writes blur_x and blur_y through ``ts_vstore<4>``; emulated
    (plain and counted) it equals the reference and touches the same sectors per launch
    as the unrolled schedule.  Where rows hold whole vectors, a quarter of the warp
    requests and of the warp-level sectors (an unrolled loop's warp instruction covers
    every 4th float, a vector one 16 consecutive bytes a thread); elsewhere the rows
    that start misaligned read their window in pieces, and still fewer."""
    inputs = BLUR.make_inputs(sizes)
    reports = {}
    for vec in (False, True):
        pipe, s = _blur(vec)
        src = generate(lower(pipe, s)).source
        kernels = src[src.find("end of prelude"):]
        assert ("ts_vload<4, 6>(input_lanes0, input," in kernels) == vec   # one window
        assert ("ts_vstore<4>(blur_y," in kernels) == vec
        assert ("ts_vstore<4>(blur_x," in kernels) == vec
        assert ("__shared__ __align__(16) float blur_x[" in kernels) == vec
        _run(pipe, s, sizes, inputs, count=False)
        reports[vec] = _run(pipe, s, sizes, inputs, count=True)
    plain, vec = reports[False].total(), reports[True].total()
    assert vec.launch_sectors == plain.launch_sectors
    whole = sizes[0] % 4 == 0           # rows of whole vectors
    assert vec.requests <= (0.3 if whole else 0.8) * plain.requests
    assert vec.sectors <= (0.3 if whole else 0.6) * plain.sectors


def _loop(body_value, index, kind="vectorized", extent=4, lets=()):
    v = E.Var("v")
    st = L.Store("out", index(v), body_value(v))
    for name, val in reversed(lets):
        st = L.LetStmt(name, val, st)
    return L.For("v", E.Const(T.int32, 0), E.Const(T.int32, extent), kind, st)


def _ld(buf, idx, t=T.float32):
    return L.Load(buf, idx, t)


def test_a_lane_that_reads_what_an_earlier_lane_stored_keeps_its_own_load():
    """``out[x + v] = out[x + v - 1] + in[x + v]``: lane k reads what lane k - 1 stored,
    so the load of ``out`` and the store stay in the loop, one a lane, in order; ``in``'s
    load is vectorized."""
    x = E.Var("x")
    vl = vector.plan(_loop(lambda v: _ld("out", x + v - 1) + _ld("in", x + v), lambda v: x + v))
    assert [b for b, *_ in vl.loads] == ["in"]
    assert vl.store_base is None
    left = {n.buffer for st in L.walk_stmts(vl.body) for e in L.stmt_exprs(st)
            for n in walk(e) if isinstance(n, L.Load)}
    assert left == {"out", "in.lanes0"}


def test_taps_share_a_window_of_exactly_the_elements_they_read():
    """Taps a constant apart share one window; taps further apart than the vector take
    windows of their own, so no element between them (which no lane reads, and which
    may lie outside the buffer) is read."""
    x = E.Var("x")
    vl = vector.plan(_loop(lambda v: _ld("in", x + v) + _ld("in", x + v + 1)
                           + _ld("in", x + v + 9) + _ld("w", x + v - 2), lambda v: x + v))
    got = sorted((buf, str(start), n) for buf, start, _, _, n in vl.loads)
    assert got == [("in", str(x), 5), ("in", str(x + 9), 4), ("w", str(x - 2), 4)]


def test_loads_that_only_some_lanes_evaluate_are_not_hoisted():
    """A load in a select's branch (a boundary test) or right of ``&&`` runs only when
    the condition says so: reading it for every lane before the loop could read out of
    bounds.  A load whose index is not one element a lane (``in[2 * v]``) is not a
    vector either; with neither a vector load nor a dense store there is no vector form."""
    x = E.Var("x")
    sel = vector.plan(_loop(lambda v: E.select(x + v > 0, _ld("in", x + v - 1), E.Const(T.float32, 0.0)),
                            lambda v: x + v))
    assert sel.loads == [] and sel.store_base is not None
    strided = vector.plan(_loop(lambda v: _ld("in", x + v * 2), lambda v: x * 3 + v * 3))
    assert strided is None
    assert vector.plan(_loop(lambda v: _ld("in", x + v), lambda v: x + v, extent=3)) is None
    assert vector.plan(_loop(lambda v: _ld("in", x + v), lambda v: x + v, kind="unrolled")) is None


def test_lets_inside_the_loop_are_followed_to_find_the_lanes_index():
    """The index goes through the loop's lets (``xs = base + v``), as lowering writes it."""
    b = E.Var("base")
    vl = vector.plan(_loop(lambda v: _ld("in", E.Var("xs") * 1 + 7), lambda v: E.Var("xs"),
                           lets=[("xs", b + E.Var("v"))]))
    assert [(buf, str(start), n) for buf, start, _, _, n in vl.loads] == [("in", str(b + 7), 4)]
    assert str(vl.store_base) == "base"


def _u16_pipeline():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.uint16, 2, "inp")
    f = ts.Func("f")
    f[x, y] = inp[x, y] // 2 + inp[x + 1, y] // 2
    return ts.Pipeline([f])


@needs_cxx
@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("sizes", [[64, 6], [37, 5]])
def test_uint16_vectors_equal_the_reference(lanes, sizes):
    """ushort2/ushort4 accesses (4 and 8 bytes), with rows that are and are not a
    multiple of the vector."""
    pipe = _u16_pipeline()
    s = ts.Schedule(pipe, target="cuda")
    s["f"].split("x", "xo", "xi", 16 * lanes).split("xi", "xt", "xv", lanes) \
        .reorder("xv", "xt", "xo", "y").gpu_blocks("xo", "y").gpu_threads("xt") \
        .vectorize("xv")
    src = generate(lower(pipe, s)).source
    assert f"ts_vload<{lanes}, {lanes + 1}>(" in src and f"ts_vstore<{lanes}>(" in src
    rng = np.random.default_rng(1)
    inputs = {"inp": rng.integers(0, 65535, size=(sizes[1], sizes[0] + 1), dtype=np.uint16)}
    for count in (False, True):
        got, _ = EM.run(pipe, s, sizes, inputs, count_sectors=count)
        np.testing.assert_array_equal(got, ts.reference.realize(pipe, sizes, **inputs))


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_nvcc_emits_vector_instructions():
    """The PTX of the vectorized blur has 128-bit global loads and stores."""
    pipe, s = _blur(True)
    ptx = nvcc.compile_cuda_source(generate(lower(pipe, s)).source, "sm_90", "ptx").binary
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    assert re.search(r"ld\.global(\.nc)?\.v4\.f32", ptx)
    assert re.search(r"st\.global\.v4\.f32", ptx)
