"""Inputs staged in shared memory by the GPU solver (``cost_gpu._staging``,
``schedule_gen._stage_input``).

A kernel may copy the box of a buffer outside its group that its members read at
several sites (a stencil's input) into shared memory first, spread over the block's
threads, and read it there: ``Schedule.wrap`` of the buffer for the Funcs that call
it, computed at the block loop.  The cost model prices each tiling with and without
(``GpuCost.staged`` records the choice) and ``schedule_gen`` follows it; the spec's
``cost_params.stage_weight`` scales a staged kernel's time in that comparison (0:
staged wherever it can be).  Every schedule here is emulated on the CPU shim (the CUDA
text compiled with g++) and compared with the reference.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend.cuda import emulate as EM
from tilesolve.solver import cost_gpu as CG
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")


def _spec(**params):
    return ts.load_spec("h100").with_cost_params(**params)


def _emulate_checked(app, pipe, sched, sizes):
    inputs = app.make_inputs(sizes)
    got, report = EM.run(pipe, sched, sizes, inputs, count_sectors=True)
    want = ts.reference.realize(pipe, sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(sched))
    return report


def test_a_staged_kernel_is_priced_with_its_copy_and_its_shared_buffer():
    """blur's fused kernel at 32 x 8: staged, the input's box (34 x 10 floats) joins
    blur_x's in shared memory, and the members' reads of it leave global memory."""
    app = get_app("blur")
    pipe, est = app.build(app.PAPER_SIZE)
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    costs = {}
    for weight in (1.0, 0.0):
        p = Problem(pipe, _spec(stage_weight=weight), est)
        assert CG.stage_candidates(p, group) == {"input": 3}
        costs[weight] = CostModel(p).cost(group, Tiling((32, 8)))
    plain, staged = costs[1.0].gpu, costs[0.0].gpu
    assert staged.staged == ("input",)
    assert staged.shared_bytes - plain.shared_bytes == 34 * 10 * 4
    off = Problem(pipe, _spec(stage_inputs=False, stage_weight=0.0), est)
    assert CostModel(off).cost(group, Tiling((32, 8))).gpu.staged == ()


@needs_cxx
@pytest.mark.parametrize("sizes", [[64, 48], [45, 19]])
def test_blur_staged_equals_the_reference_and_reads_each_input_sector_once_a_block(sizes):
    """With staging favoured the solver's schedule wraps blur's input for blur_x,
    computed per block in shared memory; emulated, it equals the reference, and the
    warp-level sectors come within 10 % of the block level (each sector of a block's box
    loaded once, a warp that straddles two rows of it touching one more), below 60 % of
    the unstaged schedule's."""
    app = get_app("blur")
    pipe, est = app.build(app.SMALL_SIZE)
    ratios = {}
    for weight in (1.0, 0.0):
        sched = ts.solve_schedule(pipe, _spec(stage_weight=weight), estimates=est,
                                  method="greedy")
        rep = _emulate_checked(app, pipe, sched, sizes)
        ratios[weight] = (rep.ratio("sectors"), rep.ratio("block_sectors"))
        if weight == 0.0:
            assert sched.wrappers == {"input_in_blur_x": ("input", ("blur_x",))}
            fs = sched.func_schedule("input_in_blur_x")
            assert fs.compute.func == "blur_y" and fs.memory == "shared"
            assert any(g.cost.gpu.staged == ("input",) for g in sched.provenance.groups)
    warp, block = ratios[0.0]
    assert warp <= 1.1 * block
    assert warp < 0.6 * ratios[1.0][0]


@needs_cxx
def test_camera_pipe_stages_its_raw_input_and_equals_the_reference():
    app = get_app("camera_pipe")
    pipe, est = app.build(app.SMALL_SIZE)
    sched = ts.solve_schedule(pipe, _spec(stage_weight=0.0), estimates=est, method="greedy")
    assert sched.wrappers, str(sched)
    inputs = app.make_inputs(app.SMALL_SIZE)
    got, _ = EM.run(pipe, sched, app.SMALL_SIZE, inputs)
    want = ts.reference.realize(pipe, app.SMALL_SIZE, **inputs)
    assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 0


@needs_cxx
def test_a_lookup_table_read_through_loaded_indices_is_staged_whole():
    """camera_pipe's ``curve``, a 1024-entry uint8 table read at ``curve[clamp(v, 0,
    1023)]`` with ``v`` computed from loaded data: a gather (it counts as
    ``GATHER_SITES`` sites), clamped to constants (its box is the whole table, 1 KB).
    With staging favoured the table is copied whole into shared memory per block, spread
    over the block's threads along its one dimension; emulated, the output equals the
    reference and the table's warp-level load sectors are its copy's, within 1.5 times
    the block level (the copy's second pass over the threads starts mid-sector; read
    through global memory, each warp's gather touches up to 32 sectors: 80 times the
    block level)."""
    app = get_app("camera_pipe")
    pipe, est = app.build(app.PAPER_SIZE)
    p = Problem(pipe, _spec(), est)
    site = next(s for s in CG.member_sites(p, "curved") if s.callee == "curve")
    assert site.data_dependent
    sched = ts.solve_schedule(pipe, _spec(stage_weight=0.0), estimates=est, method="greedy")
    assert sched.wrappers.get("curve_in_curved") == ("curve", ("curved",)), str(sched)
    assert sched.func_schedule("curve_in_curved").memory == "shared"
    inputs = app.make_inputs(app.SMALL_SIZE)
    got, rep = EM.run(pipe, sched, app.SMALL_SIZE, inputs, count_sectors=True)
    np.testing.assert_array_equal(got, ts.reference.realize(pipe, app.SMALL_SIZE, **inputs))
    warp, block = rep.by_buffer("sectors")["curve"][0], rep.by_buffer("block_sectors")["curve"][0]
    assert 0 < warp <= 1.5 * block


def _repeat_edge_blur():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    cl = ts.Func("cl")
    cl[x, y] = inp[ts.clamp(x, 0, inp.width() - 1), ts.clamp(y, 0, inp.height() - 1)]
    bx, out = ts.Func("bx"), ts.Func("out")
    bx[x, y] = cl[x - 1, y] + cl[x, y] + cl[x + 1, y]
    out[x, y] = bx[x, y - 1] + bx[x, y] + bx[x, y + 1]
    return ts.Pipeline([out])


@needs_cxx
def test_an_input_read_through_repeat_edge_is_staged_and_equals_the_reference():
    """A 3 x 3 blur of a ``repeat_edge`` input: the box of its clamped reads is bounded
    by the taps (``clamped_extent_upper``: 34 x 10 for a 32 x 8 tile, whatever the
    image's size), so with staging favoured the input is wrapped for the inlined
    boundary Func and copied per block into shared memory.  Emulated at sizes down to 5
    x 3 (every block clamped), it equals the reference, and the warp-level sectors come
    within 15 % of the block level (unstaged: 3.4 times it)."""
    pipe = _repeat_edge_blur()
    est = {"out": [1536, 2560], "input": [1536, 2560]}
    ratios = {}
    for weight in (1.0, 0.0):
        sched = ts.solve_schedule(pipe, _spec(stage_weight=weight), estimates=est,
                                  method="greedy")
        assert bool(sched.wrappers) == (weight == 0.0), str(sched)
        rng = np.random.default_rng(0)
        for sizes in ([64, 48], [45, 19], [5, 3]):
            arr = rng.random((sizes[1], sizes[0]), dtype=np.float32)
            got, rep = EM.run(pipe, sched, sizes, {"input": arr}, count_sectors=True)
            np.testing.assert_allclose(got, ts.reference.realize(pipe, sizes, input=arr),
                                       rtol=1e-6, err_msg=f"{sizes}\n{sched}")
            if sizes == [64, 48]:
                ratios[weight] = rep.ratio("sectors") / rep.ratio("block_sectors")
    assert sched.wrappers == {"input_in_cl": ("input", ("cl",))}
    assert ratios[0.0] <= 1.15 < 3 < ratios[1.0]


def test_unsharp_input_is_not_staged_its_box_grows_with_the_channel():
    """unsharp's ``gray`` reads all three channels of the input at every point: a block
    of one channel (or of three: the next block's) reads channels 0 to its own, a box
    whose extent depends on the block, so no constant-size buffer stages it; the input
    is a candidate (4 sites) but a run-time-sized one, and the schedule reads it from
    global memory."""
    app = get_app("unsharp")
    pipe, est = app.build(app.SMALL_SIZE)
    spec = _spec(stage_weight=0.0)
    sched = ts.solve_schedule(pipe, spec, estimates=est, method="greedy")
    assert not sched.wrappers
    p = Problem(pipe, spec, est)
    group = next(Group(g.output, frozenset(g.members)) for g in sched.provenance.groups)
    assert CG.stage_candidates(p, group).get("input") == 4
    model = CostModel(p)
    assert "input" in CG._runtime_inputs(model, group, [Tiling((16, 16, None))])


def test_calls_through_an_inlined_func_shared_with_another_kernel_are_not_redirected():
    """An inlined Func that reads the input and is used inside and outside a group: its
    calls cannot be redirected for the group alone, so the input is no candidate."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.Func("scaled")
    clamped[x, y] = inp[x, y] * 2.0
    a, b, out, other = ts.Func("a"), ts.Func("b"), ts.Func("out"), ts.Func("other")
    a[x, y] = clamped[x - 1, y] + clamped[x + 1, y]
    b[x, y] = clamped[x, y - 1] + clamped[x, y + 1]
    out[x, y] = a[x, y - 1] + a[x, y + 1]
    other[x, y] = b[x - 1, y] * b[x + 1, y]
    pipe = ts.Pipeline([out, other])
    p = Problem(pipe, _spec(), {"out": [256, 256], "other": [256, 256]})
    shared_f = next(n for n in pipe.graph.successors("input"))
    assert shared_f in p.inlined
    group = Group("out", frozenset({"a", "out"}) - p.inlined)
    assert CG.staging_consumers(p, group, "input") is None
    assert "input" not in CG.stage_candidates(p, group)
    alone = Problem(ts.Pipeline(out), _spec(), {"out": [256, 256]})
    group = Group("out", frozenset({"a", "out"}) - alone.inlined)
    assert shared_f in CG.staging_consumers(alone, group, "input")
    assert "input" in CG.stage_candidates(alone, group)


def test_a_fixed_schedule_with_a_wrapper_is_refused_by_name():
    """The solvers complete a schedule of the pipeline's own Funcs: a fixed schedule that
    wraps an input is refused, naming the wrapper and its source."""
    app = get_app("blur")
    pipe, est = app.build(app.SMALL_SIZE)
    fixed = ts.Schedule(pipe, target="cuda")
    fixed.wrap("input", ["blur_x"])
    with pytest.raises(ts.SolverError, match=r"input_in_blur_x \(of input\)"):
        ts.solve_schedule(pipe, "h100", estimates=est, method="greedy", fixed=fixed)
