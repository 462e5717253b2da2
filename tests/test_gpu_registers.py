"""Producers computed by each thread in registers (``cost_gpu.register_members``,
``_in_registers``; ``schedule_gen`` computes them at the output's innermost thread loop).

With a serial tile, a producer read only by the output may be computed by every
thread for the points its own serial points read (Anderson 2021's producers at the
thread level): no shared memory and no barrier for it, its halo recomputed by each
thread.  The cost model prices each serial tiling with and without (``GpuCost.
in_registers``); ``cost_params.register_weight`` scales such a kernel's time in that
comparison (0: chosen wherever it fits).  Every schedule is emulated on the CPU shim
(the CUDA text compiled with g++) and compared with the reference.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend.cuda import emulate as EM
from tilesolve.lower import ir as L
from tilesolve.lower import lower
from tilesolve.solver import cost_gpu as CG
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")


def _spec(**params):
    return ts.load_spec("h100").with_cost_params(**params)


def test_a_thread_computes_the_rows_its_serial_points_read():
    """blur at 32 x 8 with 4 rows a thread: each thread needs blur_x at its column over
    4 + 2 rows; in registers, blur_x leaves the block's shared memory."""
    app = get_app("blur")
    pipe, est = app.build(app.PAPER_SIZE)
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    tiling = Tiling((32, 8), (1, 4))
    p = Problem(pipe, _spec(register_weight=0.0), est)
    model = CostModel(p)
    assert CG.register_members(model, group, tiling, [0, 1], ()) == {"blur_x": (6, 6)}
    cost = model.cost(group, tiling)
    assert cost.gpu.in_registers == ("blur_x",) and cost.gpu.shared_bytes == 0
    plain = CostModel(Problem(pipe, _spec(), est)).cost(group, tiling)
    assert plain.gpu.in_registers == () and plain.gpu.shared_bytes > 0
    # one point a thread: computing a producer per thread is inlining; not offered
    assert CG.register_members(model, group, Tiling((32, 8)), [0, 1], ()) == {}
    off = CostModel(Problem(pipe, _spec(register_producers=False, register_weight=0.0), est))
    assert off.cost(group, tiling).gpu.in_registers == ()


@needs_cxx
def test_camera_pipe_producers_in_registers_equal_the_reference():
    """camera_pipe's paper-size h100 schedule with producers in registers favoured: the
    chosen members are computed inside the thread loops in register arrays of constant
    size; emulated at the small size, equal to the reference."""
    app = get_app("camera_pipe")
    pipe, est = app.build(app.PAPER_SIZE)
    sched = ts.solve_schedule(pipe, _spec(register_weight=0.0), estimates=est, method="greedy")
    chosen = {m for g in sched.provenance.groups if g.cost.gpu for m in g.cost.gpu.in_registers}
    assert chosen, str(sched)
    lowered = lower(pipe, sched)
    allocs = {a.name: a for a in L.walk_stmts(lowered.body) if isinstance(a, L.Allocate)}
    for m in chosen:
        assert allocs[m].memory == "register", (m, allocs[m].memory)
        assert sched.func_schedule(m).compute.kind == "at"
    inputs = app.make_inputs(app.SMALL_SIZE)
    got, _ = EM.run(pipe, sched, app.SMALL_SIZE, inputs)
    want = ts.reference.realize(pipe, app.SMALL_SIZE, **inputs)
    np.testing.assert_array_equal(got, want)


@needs_cxx
@pytest.mark.parametrize("sizes", [[64, 48], [45, 19]])
def test_blur_with_blur_x_in_registers_equals_the_reference(sizes):
    """The schedule ``schedule_gen`` writes for a register producer, by hand: blur_y in
    32 x 16 blocks of 32 x 4 threads, 4 rows a thread (unrolled), blur_x computed at the
    inner thread loop: a 6-float register array a thread, no shared memory."""
    app = get_app("blur")
    pipe, _ = app.build(app.SMALL_SIZE)
    s = ts.Schedule(pipe, target="cuda")
    s["blur_y"].split("x", "xo", "xi", 32).split("y", "yo", "yi", 16) \
        .split("yi", "yt", "ys", 4).reorder("ys", "xi", "yt", "xo", "yo") \
        .gpu_blocks("xo", "yo").gpu_threads("xi", "yt").unroll("ys")
    s["blur_x"].compute_at("blur_y", "xi")
    lowered = lower(pipe, s)
    allocs = [a for a in L.walk_stmts(lowered.body) if isinstance(a, L.Allocate)]
    assert [(a.name, a.memory, tuple(int(x.value) for x in a.extents)) for a in allocs] \
        == [("blur_x", "register", (1, 6))] * len(allocs)
    inputs = app.make_inputs(sizes)
    got, _ = EM.run(pipe, s, sizes, inputs)
    want = ts.reference.realize(pipe, sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
