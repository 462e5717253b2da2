"""Producers spread over all the threads of a GPU block.

A producer computed per block whose region in the tiled dimensions does not match the
block's threads (a half-resolution member of a full-resolution kernel: camera_pipe's
Bayer ``deinterleaved``; a halo wider than the block) may have its tiled loops fused and
split by the block's threads in x and y (``schedule_gen._spread_member``), each thread
computing its points in serial steps, where the cost model (``cost_gpu._main_kernel``)
prices that below one thread per point with the block's other threads idle:

* the model spreads a half-resolution member of a full-resolution block, and a
  schedule written from its columns spreads exactly the members the model spread;
* such schedules, and a spread written by hand, run under the CPU emulation equal to the
  numpy reference, at sizes that are and are not multiples of the tile;
* camera_pipe's h100 greedy schedule from the paper size's estimates computes
  ``deinterleaved`` per block of a kernel (not at root in a kernel of its own).
"""
from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend import cuda as C
from tilesolve.solver.cost import CostModel
from tilesolve.solver.cost_gpu import spread_steps
from tilesolve.solver.problem import Problem
from tilesolve.solver.provenance import Provenance
from tilesolve.solver.schedule_gen import schedule_from_columns
from tilesolve.solver.space import Group, Tiling

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
H100 = ts.load_spec("h100")


def _half_res(heavy: int = 0):
    """A full-resolution output reading a half-resolution producer (a 2x2 box mean of the
    input, then ``heavy`` multiply-adds) at its own point's half coordinates and their
    right neighbour."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    cl = ts.boundary.repeat_edge(inp)
    half = ts.Func("half")
    v = (cl[2 * x, 2 * y] + cl[2 * x + 1, 2 * y] + cl[2 * x, 2 * y + 1]
         + cl[2 * x + 1, 2 * y + 1]) * 0.25
    for k in range(heavy):           # arithmetic enough to make the kernel issue-bound
        v = v * (0.5 + 0.01 * k) + 0.25
    half[x, y] = v
    out = ts.Func("out")
    out[x, y] = cl[x, y] * 3.0 - half[x // 2, y // 2] + half[x // 2 + 1, y // 2] * 0.5
    return ts.Pipeline(out)


def test_spread_steps_counts_warps_of_the_whole_block():
    # 612 points over a 72 x 5 block: two steps, 12 warps then 8 (252 points)
    assert spread_steps(72, 5, 34, 18) == (20, 2)
    assert spread_steps(64, 4, 64, 4) == (8, 1)
    assert spread_steps(32, 1, 4, 3) == (1, 1)


def _columns(est, tiling, heavy=0):
    pipe = _half_res(heavy)
    p = Problem(pipe, H100, est)
    model = CostModel(p)
    group = Group("out", frozenset({"half", "out"}))
    cost = model.cost(group, tiling)
    return pipe, p, model, group, cost


def test_the_model_spreads_a_half_resolution_member_and_the_schedule_follows():
    est = {"out": [4096, 4096], "input": [4096, 4096]}
    pipe, p, model, group, cost = _columns(est, Tiling((64, 16)), heavy=100)
    assert dict(cost.gpu.spread).keys() == {"half"}
    s = schedule_from_columns(p, [(group, Tiling((64, 16)), cost)],
                              Provenance("test", cost.total), model=model)
    line = next(ln for ln in str(s).splitlines() if ln.startswith("s[half]"))
    assert ".fuse(x, y, x_y)" in line and ".gpu_threads(x_y_i, x_y_t)" in line
    # with a spread's index arithmetic priced out of reach the model keeps one thread a
    # point of the member (33 x 9 of the block's 64 x 16 threads, the others idle), dearer
    dear = H100.replace(cost_params=dataclasses.replace(H100.cost_params,
                                                        spread_point_instructions=1e6))
    plain = CostModel(Problem(pipe, dear, est)).cost(group, Tiling((64, 16)))
    assert plain.gpu.spread == () and plain.gpu.block == cost.gpu.block == (64, 16)
    assert plain.arith > 0 and cost.total < plain.total


@needs_cxx
@pytest.mark.parametrize("tiling", [Tiling((64, 16)), Tiling((32, 8)), Tiling((32, 32), (1, 4)),
                                    Tiling((64, 32), (1, 8))],
                         ids=str)
def test_spread_schedules_equal_the_reference(tiling):
    est = {"out": [2048, 1024], "input": [2048, 1024]}
    pipe, p, model, group, cost = _columns(est, tiling, heavy=3)
    assert cost.feasible and cost.gpu.spread, cost
    s = schedule_from_columns(p, [(group, tiling, cost)], Provenance("test", cost.total),
                              model=model)
    code = str(s)
    assert ".fuse(" in code
    emu = C.emulate_cuda(pipe, s)
    rng = np.random.default_rng(3)
    for w, h in ((256, 128), (70, 45), (33, 130), (17, 9)):
        a = rng.random((h, w), dtype=np.float32)
        want = ts.reference.realize(pipe, [w, h], input=a)
        np.testing.assert_allclose(emu.realize([w, h], input=a), want, rtol=1e-6,
                                   atol=1e-6, err_msg=f"{tiling} at {w}x{h}\n{code}")


@needs_cxx
def test_a_spread_written_by_hand_equals_the_reference():
    """The directives by hand: a 3-D member (its third dimension inside each thread) and
    a serial run of 2 rows, over a 32 x 8 block."""
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 3, "input")
    cl = ts.boundary.repeat_edge(inp)
    half = ts.Func("half")
    half[x, y, c] = cl[2 * x, 2 * y, c] + cl[2 * x + 1, 2 * y + 1, c] * 2.0
    out = ts.Func("out")
    out[x, y, c] = cl[x, y, c] - half[x // 2, y // 2, c] + half[(x + 1) // 2, (y + 1) // 2, c]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe, target="cuda")
    s[out].compute_root().gpu_tile(x, y, ts.Var("xo"), ts.Var("yo"), ts.Var("xi"),
                                   ts.Var("yi"), 32, 8)
    s[out].gpu_blocks(c)
    h = s[half]
    h.compute_at(out, "xo").store_in("shared")
    h.split("y", "y", "ys", 2, tail="guard_with_if").reorder("ys", "x", "y", "c")
    h.fuse("x", "y", "f").split("f", "fo", "fi", 32, tail="guard_with_if")
    h.split("fo", "fn", "ft", 8, tail="guard_with_if").reorder("ys", "c", "fn", "fi", "ft")
    h.gpu_threads("fi", "ft")
    emu = C.emulate_cuda(pipe, s)
    rng = np.random.default_rng(4)
    for w, hh, ch in ((64, 32, 2), (45, 37, 3)):
        a = rng.random((ch, hh, w), dtype=np.float32)
        want = ts.reference.realize(pipe, [w, hh, ch], input=a)
        np.testing.assert_allclose(emu.realize([w, hh, ch], input=a), want, rtol=1e-6,
                                   atol=1e-6)


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler for the CUDA emulation")
def test_camera_pipe_h100_paper_schedule_fuses_deinterleaved():
    """At 2560 x 1920 on h100 the half-resolution Bayer channels are computed per block of
    the demosaic's kernel, spread over its threads: no kernel of their own; the schedule,
    run at the small size, equals the reference."""
    from test_gpu_apps_emulated import _check
    app = get_app("camera_pipe")
    pipe, est = app.build(app.PAPER_SIZE)
    s = ts.solve_schedule(pipe, "h100", estimates=est, method="greedy")
    assert any(g.cost.gpu.serial or any(t is not None for t in g.tiling[2:])
               for g in s.provenance.groups), "no serial tile or channels in the thread"
    _check(app, pipe, s)
    outputs = {g.output for g in s.provenance.groups}
    assert "deinterleaved" not in outputs
    rec = next(g for g in s.provenance.groups if "deinterleaved" in g.members)
    assert "deinterleaved" in dict(rec.cost.gpu.spread)
    line = next(ln for ln in str(s).splitlines() if ln.startswith("s[deinterleaved]"))
    assert ".compute_at(" in line and ".fuse(" in line
