"""The GPU cost model in real units (solver/cost_gpu.py, solver/gpu_sectors.py).

* The model's sectors per warp instruction equal what the CPU shim's sector counter
  measures on the generated CUDA for the same accesses (coalesced, stride 2, transposed,
  shifted off the sector grid, a warp over 8 x 4 threads).
* A copy at the paper's sizes is DRAM-bound: its time is its bytes over the spec's
  bandwidth, plus a launch.
* A grid one block over full waves pays a whole extra wave; fewer warps a block (less
  in flight) take longer to wait out the same loads.
* Transposed reads cost more than coalesced ones; fusing blur's stages costs less than
  two kernels; the spec's optional timing fields move the bounds they name.
"""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.cuda import emulate as EM
from tilesolve.solver.cost import CostModel
from tilesolve.solver.cost_gpu import DEFAULTS, GpuMachine, KernelCounts, launch_bounds
from tilesolve.solver.gpu_sectors import member_sites, site_sectors
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
x, y = ts.Var("x"), ts.Var("y")
H100 = ts.load_spec("h100")


def _pipe(expr_of, dtype=ts.float32):
    inp = ts.ImageParam(dtype, 2, "inp")
    out = ts.Func("out")
    out[x, y] = expr_of(inp)
    return ts.Pipeline(out)


CASES = {  # name: (expression, input shape (h, w), output sizes, tile)
    "coalesced": (lambda i: i[x, y] * 2, (8, 64), [64, 8], (32, 1)),
    "stride2": (lambda i: i[2 * x, y], (8, 128), [64, 8], (32, 1)),
    "transposed": (lambda i: i[y, x], (64, 32), [64, 32], (32, 1)),
    "shifted": (lambda i: i[x + 1, y], (4, 72), [64, 4], (32, 1)),
    "rows": (lambda i: i[x, y], (8, 64), [64, 8], (8, 4)),
}


def _model_sectors(pipe, sizes, in_shape, tile) -> float:
    est = {"out": sizes, "inp": [in_shape[1], in_shape[0]]}
    p = Problem(pipe, H100, est)
    (site,) = [s for s in member_sites(p, "out") if s.callee == "inp"]
    return site_sectors(p, "out", site, (0, 1), tile[0], tile[0], tile[1], (0, 0))


@needs_cxx
@pytest.mark.parametrize("case", sorted(CASES))
def test_model_sectors_equal_the_emulators_count(case):
    expr, in_shape, sizes, tile = CASES[case]
    pipe = _pipe(expr)
    s = ts.Schedule(pipe, target="cuda")
    s[pipe.func("out")].gpu_tile(x, y, "xo", "yo", "xi", "yi", *tile)
    arr = np.random.default_rng(0).random(in_shape, dtype=np.float32)
    _, rep = EM.run(pipe, s, sizes, {"inp": arr}, count_sectors=True)
    (ld,) = [b.loads for b in rep.launches[0].buffers if b.buffer == "inp"]
    assert _model_sectors(pipe, sizes, in_shape, tile) == pytest.approx(ld.sectors_per_request)


def _copy_cost(w, h, tile):
    pipe = _pipe(lambda i: i[x, y] * 2)
    model = CostModel(Problem(pipe, H100, {"out": [w, h], "inp": [w, h]}))
    return model.cost(Group.singleton("out"), Tiling(tile))


def test_a_copy_takes_its_bytes_over_the_bandwidth():
    c = _copy_cost(8192, 8192, (64, 4))
    dram_us = 2 * 8192 * 8192 * 4 / (H100.memory_bandwidth_gbs * 1e9) * 1e6
    assert c.feasible
    assert c.loads + c.stores == pytest.approx(dram_us, rel=1e-6)   # DRAM decides
    assert c.loads == pytest.approx(c.stores)                         # read = written
    assert c.overhead == pytest.approx(H100.launch_overhead_us)
    assert c.total == pytest.approx(dram_us + H100.launch_overhead_us)


def test_the_tail_wave_counts_and_fewer_warps_wait_longer():
    m = GpuMachine.of(H100)
    per_wave = m.sms * 8
    full = KernelCounts(blocks=per_wave, blocks_per_sm=8, rounds=3)
    tail = KernelCounts(blocks=per_wave + 1, blocks_per_sm=8, rounds=3)
    one = launch_bounds(m, full)["latency"]
    assert launch_bounds(m, tail)["latency"] == pytest.approx(2 * one)
    assert one == pytest.approx((3 * DEFAULTS["dram_latency_cycles"]
                                 + DEFAULTS["block_overhead_cycles"]) / m.clock_hz)
    # the same blocks, 2 resident a SM instead of 8: four times the waves
    few = KernelCounts(blocks=per_wave, blocks_per_sm=2, rounds=3)
    assert launch_bounds(m, few)["latency"] == pytest.approx(4 * one)


def test_transposed_reads_cost_more_than_coalesced_ones():
    """In 32 x 1 blocks each sector a transposed read moves serves one lane (8 times the
    L2 traffic); in 32 x 8 blocks the block's 8 warps use all of each sector (the L2 bound
    stays under the DRAM one: the same time)."""
    est = {"out": [4096, 4096], "inp": [4096, 4096]}
    costs = {}
    for name, expr in (("coalesced", lambda i: i[x, y]), ("transposed", lambda i: i[y, x])):
        model = CostModel(Problem(_pipe(expr), H100, est))
        costs[name] = [model.cost(Group.singleton("out"), Tiling(t)).total
                       for t in ((32, 1), (32, 8))]
    assert costs["transposed"][0] > 1.5 * costs["coalesced"][0]
    assert costs["transposed"][1] == pytest.approx(costs["coalesced"][1])


def test_fusing_blur_costs_less_than_two_kernels():
    from tilesolve.apps import get_app
    app = get_app("blur")
    pipe, est = app.build(app.PAPER_SIZE)
    model = CostModel(Problem(pipe, H100, est))
    fused = model.best(Group("blur_y", frozenset({"blur_x", "blur_y"})))[1].total
    apart = (model.best(Group.singleton("blur_x"))[1].total
             + model.best(Group.singleton("blur_y"))[1].total)
    assert math.isfinite(fused) and fused < apart


def test_spec_timing_fields_move_their_bounds():
    slow = H100.replace(dram_latency_cycles=1200.0, warp_schedulers_per_sm=2,
                        l2_bandwidth_gbs=1000.0)
    a, b = GpuMachine.of(H100), GpuMachine.of(slow)
    k = KernelCounts(blocks=10_000, blocks_per_sm=8, rounds=2, instructions=500.0,
                     l2_load_sectors=64.0, l2_store_sectors=32.0)
    ba, bb = launch_bounds(a, k), launch_bounds(b, k)
    assert bb["issue"] == pytest.approx(2 * ba["issue"])
    assert bb["l2"] == pytest.approx(ba["l2"] * a.l2_bytes_per_s / 1e12)
    assert bb["latency"] > ba["latency"]
    assert a.l2_bytes_per_s == pytest.approx(2 * H100.memory_bandwidth_gbs * 1e9)
    with pytest.raises(ts.SpecError, match="dram_latency_cycles"):
        H100.replace(dram_latency_cycles=-1.0)
