"""Per-thread serial tiles and short outer dimensions run inside each GPU thread.

* every serial / whole-channel tiling of a colour stencil's menu on ``h100``, made into a
  schedule by ``schedule_gen`` and run on the CPU shim at sizes that are and are not
  multiples of the tile, equals the reference (the shim checks every access's bounds);
* the cost model prices a serial tile's threads, points per thread, registers and the
  loads its unrolled points share;
* the solvers (greedy, ILP, beam) choose a serial tile for harris's output at the
  paper's size on ``h100``, where the model prices it below every plain block;
* nvcc compiles such a kernel, and in its PTX the unrolled rows share their shared-memory
  loads (a 3-row stencil over 4 rows: fewer than 12 loads).
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
import yaml

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend import cuda as C
from tilesolve.backend.cuda import nvcc
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.provenance import Provenance
from tilesolve.solver.schedule_gen import schedule_from_columns
from tilesolve.solver.space import Group

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not installed")
H100 = ts.load_spec("h100")


def _colour_blur():
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 3, "input")
    clamped = ts.boundary.repeat_edge(inp)
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y, c] = (clamped[x - 1, y, c] + clamped[x, y, c] * 2 + clamped[x + 1, y, c]) / 4
    by[x, y, c] = (bx[x, y - 1, c] + bx[x, y, c] + bx[x, y + 1, c]) / 3
    return ts.Pipeline(by)


def _menu(est, spec=H100):
    pipe = _colour_blur()
    p = Problem(pipe, spec, est)
    model = CostModel(p)
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    return pipe, p, model, group


def _schedule(p, model, group, tiling):
    cost = model.cost(group, tiling)
    return schedule_from_columns(p, [(group, tiling, cost)], Provenance("test", cost.total))


def test_the_menu_has_serial_and_whole_channel_tilings():
    _, _, model, _ = _menu({"blur_y": [512, 256, 3], "input": [512, 256, 3]})
    menu = model.menu("blur_y").tilings
    # (the vectorized tiles along x: tests/test_gpu_vector_tiles.py)
    serial = [t for t in menu if t.serial is not None and t.serial[0] == 1]
    whole = [t for t in menu if t.sizes[2] is not None]
    assert serial and whole
    assert {t.serial[1] for t in serial} == {2, 4, 8}
    assert all(t.sizes[1] <= 32 for t in serial)
    assert all(t.sizes[2] == 3 for t in whole)
    # the plain blocks come first (the solvers keep them on equal costs)
    first = next(i for i, t in enumerate(menu) if t.serial is not None or t.sizes[2])
    assert all(t.serial is None and t.sizes[2] is None for t in menu[:first])
    # every serial tiling's threads are a whole number of warps
    assert all(t.threads_of(0) * t.threads_of(1) % 32 == 0 for t in serial)


def test_a_spec_yaml_overrides_the_gpu_menu_and_weights(tmp_path):
    """The GPU menu's choices and the GPU model's weights are the spec's ``cost_params``:
    an h100 whose YAML sets ``gpu_serial: [4]`` and ``point_instructions: 60`` offers
    serial tiles of 4 points only, and prices a block's kernel higher; a CPU spec takes
    neither."""
    data = H100.to_dict()
    data["cost_params"] = {"gpu_serial": [4], "point_instructions": 60}
    path = tmp_path / "h100-tuned.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    tuned = ts.load_spec(path)
    assert tuned.cost_params.gpu_serial == (4,) and tuned.cost_params.point_instructions == 60
    est = {"blur_y": [512, 256, 3], "input": [512, 256, 3]}
    pipe = _colour_blur()
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    shipped, mine = CostModel(Problem(pipe, H100, est)), CostModel(Problem(pipe, tuned, est))
    def rows(model):
        return {t.serial[1] for t in model.menu("blur_y").tilings if t.serial and t.serial[0] == 1}
    assert rows(shipped) == {2, 4, 8}
    assert rows(mine) == {4}
    plain = next(t for t in shipped.menu("blur_y").tilings if t.sizes == (64, 8, None)
                 and t.serial is None)
    before, after = shipped.cost(group, plain), mine.cost(group, plain)
    assert before.feasible and after.total > before.total and after.arith > before.arith
    with pytest.raises(ts.SpecError, match=r"'cost_params.gpu_serial' is a parameter of "
                                           r"the GPU cost model"):
        ts.load_spec("xeon-e5-2620v3").with_cost_params(gpu_serial=[4])


def test_a_serial_tile_is_priced_per_thread():
    _, _, model, group = _menu({"blur_y": [2048, 1024, 3], "input": [2048, 1024, 3]})
    menu = model.menu("blur_y").tilings
    plain = next(t for t in menu if t.sizes == (64, 16, None) and t.serial is None)
    four = next(t for t in menu if t.sizes == (64, 16, None) and t.serial == (1, 4, 1))
    cp, cs = model.cost(group, plain), model.cost(group, four)
    # 18 rows of blur_x: over 64 x 18 threads the plain block would pass 1024, so they are
    # spread over the output's 64 x 16 (``cost_gpu._main_kernel``)
    assert cp.gpu.threads == 64 * 16 and dict(cp.gpu.spread) == {"blur_x": 1}
    assert cs.gpu.threads == 64 * 5
    assert cs.gpu.block == (64, 5) and cs.gpu.serial == (1, 4, 1)
    assert cs.gpu.shared_bytes == cp.gpu.shared_bytes == 64 * 18 * 4   # the whole tile
    assert cs.gpu.registers > cp.gpu.registers
    assert cs.gpu.blocks == cp.gpu.blocks
    whole = next(t for t in menu if t.sizes == (64, 16, 3) and t.serial == (1, 4, 1))
    cw = model.cost(group, whole)
    assert cw.gpu.blocks * 3 == cs.gpu.blocks
    assert cw.gpu.shared_bytes == 3 * cs.gpu.shared_bytes


def test_unrolled_points_share_their_loads():
    from tilesolve.solver.gpu_sectors import member_sites, unrolled_loads
    _, p, _, _ = _menu({"blur_y": [2048, 1024, 3], "input": [2048, 1024, 3]})
    sites = member_sites(p, "blur_y")
    every = tuple(range(len(sites)))
    assert len(sites) == 3
    assert unrolled_loads(p, "blur_y", every, {}) == 3
    assert unrolled_loads(p, "blur_y", every, {1: 4}) == pytest.approx(6 / 4)   # rows y-1..y+4
    assert unrolled_loads(p, "blur_y", every, {2: 3}) == 3                    # channels: none
    assert unrolled_loads(p, "blur_x", tuple(range(3)), {0: 2}) == pytest.approx(4 / 2)


@needs_cxx
def test_serial_and_whole_channel_schedules_equal_the_reference():
    pipe, p, model, group = _menu({"blur_y": [1024, 512, 3], "input": [1024, 512, 3]})
    menu = model.menu("blur_y").tilings
    picks = [t for t in menu if t.sizes[:2] in {(32, 8), (32, 16), (64, 32)}
             and (t.serial is not None or t.sizes[2] is not None)
             and model.cost(group, t).feasible]
    assert len(picks) >= 10 and any(t.sizes[2] for t in picks)
    rng = np.random.default_rng(5)
    for t in picks:
        s = _schedule(p, model, group, t)
        code = str(s)
        assert "unroll(" in code and ".gpu_threads(" in code
        emu = C.emulate_cuda(pipe, s)
        for w, h, ch in ((256, 128, 3), (45, 37, 3), (70, 9, 2), (33, 130, 5)):
            a = rng.random((ch, h, w), dtype=np.float32)
            want = ts.reference.realize(pipe, [w, h, ch], input=a)
            np.testing.assert_allclose(emu.realize([w, h, ch], input=a), want, rtol=1e-6,
                                       err_msg=f"{t}\n{code}")


@needs_cxx
def test_odd_serial_runs_and_two_lane_vectors_equal_the_reference():
    """A spec may ask for odd serial runs (``gpu_serial: [3, 5]``: 3 or 5 rows a thread)
    and 2-lane vectors beside 4 (``gpu_vector: [2, 4]``); each such tiling, with and
    without the channels in the thread, emulates equal to the reference at sizes that
    are and are not multiples of its tile."""
    spec = H100.with_cost_params(gpu_serial=[3, 5], gpu_vector=[2, 4])
    pipe, p, model, group = _menu({"blur_y": [1024, 512, 3], "input": [1024, 512, 3]}, spec)
    menu = model.menu("blur_y").tilings
    rows = {t.serial[1] for t in menu if t.serial}
    lanes = {t.serial[0] for t in menu if t.serial}
    assert rows == {3, 5} and lanes == {1, 2, 4}
    picks = [t for t in menu if t.serial and t.threads_of(0) == 32 and t.threads_of(1) == 4
             and model.cost(group, t).feasible]
    assert {(t.serial[0], t.serial[1]) for t in picks} == {(1, 3), (1, 5), (2, 3), (2, 5),
                                                            (4, 3), (4, 5)}
    rng = np.random.default_rng(6)
    for t in picks:
        s = _schedule(p, model, group, t)
        code = str(s)
        assert (".vectorize(" in code) == (t.serial[0] > 1)
        emu = C.emulate_cuda(pipe, s)
        for w, h, ch in ((256, 64, 3), (45, 37, 3), (9, 7, 2)):
            a = rng.random((ch, h, w), dtype=np.float32)
            want = ts.reference.realize(pipe, [w, h, ch], input=a)
            np.testing.assert_allclose(emu.realize([w, h, ch], input=a), want, rtol=1e-6,
                                       err_msg=f"{t}\n{code}")


def _harris():
    app = get_app("harris")
    pipe, est = app.build(app.PAPER_SIZE)
    return app, pipe, est


@pytest.mark.parametrize("method", ["greedy", "ilp", "beam"])
def test_the_solvers_choose_a_serial_tile_where_it_pays(method):
    """harris at 6400 x 4800 on h100: its fused output kernel is bound by issue and the
    load/store unit; threads computing 8 rows each share the stencil's loads."""
    app, pipe, est = _harris()
    s = ts.solve_schedule(pipe, "h100", estimates=est, method=method, time_limit=10.0)
    rec = next(g for g in s.provenance.groups if g.output == "output")
    assert rec.cost.gpu.serial is not None and max(rec.cost.gpu.serial) > 1
    problem = Problem(pipe, H100, est)
    model = CostModel(problem)
    group = Group(rec.output, frozenset(rec.members))
    plain = [c.total for t, c in model.cheapest(group, 10 ** 6) if t.serial is None]
    assert rec.cost.total < min(plain)
    line = next(ln for ln in str(s).splitlines() if ln.startswith("s[output]"))
    assert ".unroll(" in line and ".gpu_blocks(" in line


def test_a_serial_schedule_is_priced_again_as_solved():
    """``predict_cost`` re-reads a solved schedule's columns with their points per
    thread: a serial tile is priced as the serial tile the solver chose, not as plain
    blocks of the same extents."""
    from tilesolve.solver.predict import cost_of_terms, predict_cost, schedule_columns
    app, pipe, est = _harris()
    s = ts.solve_schedule(pipe, "h100", estimates=est, method="greedy")
    serial = [t.serial for _g, t in schedule_columns(s)]
    assert any(t is not None and max(t) > 1 for t in serial)
    recorded = sum(cost_of_terms(g.cost) for g in s.provenance.groups)
    assert predict_cost(pipe, s, "h100", est) == pytest.approx(recorded, rel=1e-9)


@needs_cxx
def test_harris_serial_schedule_emulates_equal_to_the_reference():
    app, pipe, est = _harris()
    s = ts.solve_schedule(pipe, "h100", estimates=est, method="greedy")
    assert any(g.cost.gpu.serial for g in s.provenance.groups)
    inputs = app.make_inputs(app.SMALL_SIZE)
    got = C.emulate_cuda(pipe, s).realize(app.SMALL_SIZE, **inputs)
    want = ts.reference.realize(pipe, app.SMALL_SIZE, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_nvcc
def test_nvcc_compiles_a_serial_tile_whose_rows_share_loads():
    pipe, p, model, group = _menu({"blur_y": [2048, 1024, 3], "input": [2048, 1024, 3]})
    four = next(t for t in model.menu("blur_y").tilings
                if t.sizes == (64, 16, 3) and t.serial == (1, 4, 1))
    prog = C.generate(C.lower_cuda(pipe, _schedule(p, model, group, four)))
    r = nvcc.compile_cuda_source(prog.source, "sm_90", name="serial")
    assert set(r.kernels) == {k.name for k in prog.kernels}
    for k in prog.kernels:
        assert r.kernels[k.name].shared_bytes == k.shared_bytes == 3 * 64 * 18 * 4
    ptx = nvcc.compile_cuda_source(prog.source, "sm_90", output="ptx", name="serial").binary
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    loads = [len(re.findall(r"ld\.shared", body)) for body in ptx.split(".entry ")[1:]]
    # 4 rows x 3 channels x 3 taps = 36 loads as written; the kernel for images at least
    # a tile large loads the 6 rows of each channel once in each of its two bodies (the
    # interior blocks' steady state, without the clamps of repeat_edge, and the border
    # blocks'): 2 x 18
    assert loads and min(loads) == 2 * 18
