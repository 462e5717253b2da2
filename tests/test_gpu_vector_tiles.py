"""The solvers' vectorized tiles: each thread computes 2 or 4 consecutive points along x
as a vectorized loop (float2/float4 accesses, ``backend/cuda/vector.py``).

* the GPU menu offers them (``cost_params.gpu_vector``) for blocks at least a warp wide,
  where the output's points fit a vector; a spec sets or removes them;
* the model counts their instructions and sectors (``gpu_sectors.vector_accesses``)
  exactly as the emulator's sector counter finds them in the kernel written from the
  schedule;
* the solvers choose one where it pays, and what they write, emulated, equals the
  reference at sizes that are and are not multiples of the tile.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.cuda import emulate as EM
from tilesolve.backend.cuda.codegen import generate
from tilesolve.lower import lower
from tilesolve.solver.cost import CostModel
from tilesolve.solver.gpu_sectors import member_sites, store_site, vector_accesses
from tilesolve.solver.problem import Problem
from tilesolve.solver.provenance import Provenance
from tilesolve.solver.schedule_gen import schedule_from_columns
from tilesolve.solver.space import Group

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
H100 = ts.load_spec("h100")


def _taps(t=ts.float32):
    """out(x, y) = in(x, y) + 2 in(x + 1, y) + in(x + 2, y): three taps of one input."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(t, 2, "input")
    out = ts.Func("out")
    out[x, y] = inp[x, y] + inp[x + 1, y] * 2 + inp[x + 2, y]
    return ts.Pipeline(out)


def _est(w, h):
    return {"out": [w, h], "input": [w + 2, h]}


def _schedule(p, model, tiling):
    g = Group.singleton("out")
    c = model.cost(g, tiling)
    return schedule_from_columns(p, [(g, tiling, c)], Provenance("test", c.total))


def test_the_menu_offers_vector_tiles_where_a_vector_holds_the_points():
    p = Problem(_taps(), H100, _est(2048, 1024))
    menu = CostModel(p).menu("out").tilings
    vec = [t for t in menu if t.serial is not None and t.serial[0] > 1]
    assert vec and {t.serial[0] for t in vec} == {4}
    # a warp or more of threads along x, each 4 points; no wider than the widest block
    assert all(t.threads_of(0) >= 32 and t.sizes[0] == 4 * t.threads_of(0) <= 256
               for t in vec)
    assert {t.serial[1] for t in vec} == {2, 4, 8}          # with serial rows
    # after every tiling without
    first = next(i for i, t in enumerate(menu) if t in vec)
    assert all(t not in vec for t in menu[:first]) and menu[first:] == vec
    two = CostModel(Problem(_taps(), H100.with_cost_params(gpu_vector=[2, 4]),
                            _est(2048, 1024))).menu("out").tilings
    assert {t.serial[0] for t in two if t.serial} == {1, 2, 4}
    off = CostModel(Problem(_taps(), H100.with_cost_params(gpu_vector=[1]),
                            _est(2048, 1024))).menu("out").tilings
    assert all(t.serial is None or t.serial[0] == 1 for t in off)
    # 4 doubles are 32 bytes, past the widest vector (16): none
    wide = CostModel(Problem(_taps(ts.float64), H100, _est(2048, 1024))).menu("out").tilings
    assert all(t.serial is None or t.serial[0] == 1 for t in wide)


def test_a_vector_width_the_backend_has_not_is_refused_naming_the_field():
    with pytest.raises(ts.SpecError, match=r"'cost_params.gpu_vector': expected a list of "
                                           r"vector widths 2 or 4"):
        H100.with_cost_params(gpu_vector=[3])


@needs_cxx
@pytest.mark.parametrize("w", [512, 516])
def test_the_model_counts_the_vector_accesses_the_emulator_counts(w):
    """128 x 16 tiles of 32 x 8 threads, 4 x 2 points a thread: each warp step (a row of
    a thread's points) reads the three taps as one window of 6 floats (a vector where
    aligned, single floats elsewhere) and writes one vector.  The model's requests and sectors a warp step, times the warp
    steps, are the counter's, over rows whose starts are aligned differently (the input
    is ``w + 2`` floats wide)."""
    h = 16
    pipe = _taps()
    p = Problem(pipe, H100, _est(w, h))
    model = CostModel(p)
    t = next(t for t in model.menu("out").tilings if t.sizes == (128, 16) and t.serial == (4, 2))
    s = _schedule(p, model, t)
    assert ".vectorize(xs)" in str(s)
    a = np.random.default_rng(1).random((h, w + 2), dtype=np.float32)
    got, rep = EM.run(pipe, s, [w, h], {"input": a}, count_sectors=True)
    np.testing.assert_allclose(got, ts.reference.realize(pipe, [w, h], input=a), rtol=1e-6)
    if w % 128:
        return          # the last block's threads past the edge skip their points
    steps = w * h // 128                      # a warp computes 128 points a step
    traffic = {b.buffer: b for launch in rep.launches for b in launch.buffers}
    loads = vector_accesses(p, "out", member_sites(p, "out"), (0, 1), 32, 32, 8, (0, 0), 4)
    stores = vector_accesses(p, "out", (store_site(p, "out"),), (0, 1), 32, 32, 8, (0, 0), 4)
    assert loads[0] == 3 and stores == (1, 16)
    assert traffic["input"].loads.requests == steps * loads[0]
    assert traffic["input"].loads.sectors == pytest.approx(steps * loads[1])
    assert traffic["out"].stores.requests == steps * stores[0]
    assert traffic["out"].stores.sectors == steps * stores[1]


@needs_cxx
@pytest.mark.parametrize("method", ["greedy", "ilp", "beam"])
def test_the_solvers_choose_a_vector_tile_where_loads_are_dear(method):
    """With a load instruction priced at 100 issue slots, the kernel is bound by issue and
    a vector tile issues a third of the loads: every solver picks one, its kernel text
    reads the taps with ``ts_vload``, and emulated it equals the reference, at sizes a
    multiple of the tile and not."""
    spec = H100.with_cost_params(load_instructions=100.0)
    pipe = _taps()
    s = ts.solve_schedule(pipe, spec, estimates=_est(4096, 2048), method=method,
                          time_limit=10.0)
    rec = s.provenance.groups[0]
    assert rec.cost.gpu.serial is not None and rec.cost.gpu.serial[0] == 4
    assert ".vectorize(" in str(s)
    src = generate(lower(pipe, s)).source
    assert "ts_vload<4, 6>(" in src
    rng = np.random.default_rng(2)
    for w, h in ((1024, 40), (517, 13), (9, 3)):
        a = rng.random((h, w + 2), dtype=np.float32)
        got, _ = EM.run(pipe, s, [w, h], {"input": a})
        np.testing.assert_allclose(got, ts.reference.realize(pipe, [w, h], input=a),
                                   rtol=1e-6, err_msg=str(s))


def test_shared_memory_windows_and_bank_conflicts():
    """A vector loop's reads of a producer in shared memory: three taps along x over 4
    lanes are one window of 6 elements whose alignment in the block's buffer is not
    known, so its pieces are averaged over the 4 alignments (3, 6, 3, 3: 3.75), each a
    4-way wavefront (a float4 per lane, or single floats 4 words apart); three taps
    along y are three windows of 4 (1, 4, 4, 4 pieces).  A producer's own threads 4
    points apart store into shared memory 4 to a bank for floats, 2 for 16-bit values,
    none for bytes."""
    from tilesolve.solver.gpu_sectors import _pieces, bank_ways, shared_windows
    assert [_pieces(m, 6, 4) for m in range(4)] == [3, 6, 3, 3]
    assert [_pieces(m, 4, 4) for m in range(4)] == [1, 4, 4, 4]
    assert (bank_ways(4, 4), bank_ways(4, 2), bank_ways(4, 1), bank_ways(2, 4),
            bank_ways(1, 4)) == (4, 2, 1, 2, 1)
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    mid, across, down = ts.Func("mid"), ts.Func("across"), ts.Func("down")
    mid[x, y] = inp[x, y] * 2
    across[x, y] = mid[x, y] + mid[x + 1, y] + mid[x + 2, y]
    down[x, y] = mid[x, y] + mid[x, y + 1] + mid[x, y + 2]
    for out, want in ((across, (3.75, 15.0)), (down, (9.75, 39.0))):
        pipe = ts.Pipeline(out)
        p = Problem(pipe, H100, {out.name: [1024, 512], "input": [1026, 514]})
        assert shared_windows(p, out.name, member_sites(p, out.name), (0, 1), 4) == want
