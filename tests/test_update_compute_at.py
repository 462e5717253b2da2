"""Computing a Func at a loop of its consumer's *update* stage
(``s[p].compute_at(s[c].update(0), v)``, Halide's ``LoopLevel(c, v, 1)``), and the
solvers' groups that use it: a Func only the output's reduction reads is computed
per tile of that reduction (max_filter's column scan), and a block loop fused with
another keeps its steady state (no per-vector guard in full tiles)."""
from __future__ import annotations

import numpy as np
import pytest

import tilesolve as ts
from lowering_checks import check_lowered
from tilesolve.errors import ScheduleError
from tilesolve.lower import ir as L
from tilesolve.model.schedule_io import from_json
from pinned import PINNED


def _pipe():
    """``out(x, y) = max over r in [-2, 2] of f(x + r, y)``, ``f`` a pointwise map of
    a repeat-edge input: only the update reads ``f``."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = ts.boundary.repeat_edge(inp)
    f = ts.Func("f")
    f[x, y] = src[x, y] * 2.0 + 1.0
    r = ts.RDom((-2, 5), name="r")
    out = ts.Func("out")
    out[x, y] = -1e30
    out[x, y] = ts.max(out[x, y], f[x + r.x, y])
    return ts.Pipeline(out)


def _schedule(pipe, tail="auto", fuse=True):
    s = ts.Schedule(pipe)
    s["out"].vectorize("x", 4)
    u = s["out"].update(0)
    u.split("x", "xo", "xi", 8, tail=tail).split("y", "yo", "yi", 4)
    u.reorder("r.x", "xi", "yi", "xo", "yo")
    loop = "xo"
    if fuse:
        u.fuse("xo", "yo", "tile").parallel("tile")
        loop = "tile"
    u.vectorize("xi", 4)
    s["f"].compute_at(u, loop).vectorize("x", 4)
    return s


def _check(pipe, s, w, h):
    return check_lowered(pipe, s, w, h, seed=w * 31 + h, rtol=1e-6)


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("w,h", [(8, 4), (16, 12), (13, 7), (3, 2), (29, 9)])
def test_a_func_computed_per_tile_of_an_update_equals_the_reference(fuse, w, h):
    pipe = _pipe()
    low = _check(pipe, _schedule(pipe, fuse=fuse), w, h)
    # f is realized inside the update's tile loop, not at root
    text = str(low.body)
    assert "produce f" in text
    assert text.index("out.s1") < text.index("produce f")


def test_the_directive_prints_replays_and_round_trips():
    pipe = _pipe()
    s = _schedule(pipe)
    assert s.func_schedule("f").compute == ts.model.schedule_types.LoopLevel("at", "out", "tile", 1)
    assert "compute_at(out, tile, update=0)" in str(s)
    t = from_json(s.to_json(), pipe)
    assert t.func_schedules() == s.func_schedules()
    assert "update(0).tile" in str(s.func_schedule("f").compute)
    # update= spelled as a keyword gives the same schedule
    s2 = ts.Schedule(pipe)
    s2["out"].vectorize("x", 4)
    u = s2["out"].update(0)
    u.split("x", "xo", "xi", 8).split("y", "yo", "yi", 4).reorder("r.x", "xi", "yi", "xo", "yo")
    u.fuse("xo", "yo", "tile").parallel("tile").vectorize("xi", 4)
    s2["f"].compute_at("out", "tile", update=0).vectorize("x", 4)
    assert s2.func_schedules() == s.func_schedules()


def test_loop_nest_shows_the_producer_inside_the_update():
    pipe = _pipe()
    text = _schedule(pipe).loop_nest([16, 12], input_sizes={"input": [16, 12]})
    lines = text.splitlines()
    tile = next(i for i, ln in enumerate(lines) if "parallel tile" in ln)
    prod = next(i for i, ln in enumerate(lines) if "produce f" in ln)
    assert tile < prod
    # the first tile's f covers its 4 rows, and its 8 columns with the 2-column halo
    # on each side: 12 columns, 3 vectors of 4 (the first, clamped at the left edge, is
    # its own loop in the lowered program; then the clamp-free steady state)
    assert lines[prod + 1].strip() == "for y in [0, 3]:"
    assert lines[prod + 2].strip() == "for x in [0, 0]:"
    assert lines[prod + 5].strip() == "for x (steady) in [1, 2]:"


def test_errors_name_the_stage_and_loop():
    pipe = _pipe()
    s = ts.Schedule(pipe)
    with pytest.raises(ScheduleError, match="no loop zz in its update 0"):
        s["f"].compute_at(s["out"].update(0), "zz")
    with pytest.raises(ScheduleError, match="no update 3"):
        s["f"].compute_at("out", "x", update=3)
    with pytest.raises(ScheduleError, match="not both"):
        s["f"].compute_at(s["out"].update(0), "x", update=0)


def test_a_pure_stage_reader_outside_the_update_loop_is_refused():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    f = ts.Func("f")
    f[x, y] = inp[x, y] + 1.0
    r = ts.RDom((0, 2), name="r")
    out = ts.Func("out")
    out[x, y] = f[x, y]
    out[x, y] = out[x, y] + f[x, y] * r.x
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    s["f"].compute_at(s["out"].update(0), "x")
    with pytest.raises(ScheduleError, match=r"Func out \(pure stage\) reads it outside"):
        s.validate()


def test_full_blocks_of_a_fused_guarded_split_run_unguarded():
    """The steady state of a guard_with_if split whose block loop is fused with
    another: full tiles run without the per-vector guard (no masked vector ops)."""
    pipe = _pipe()
    low = _check(pipe, _schedule(pipe, tail="guard_with_if"), 29, 9)
    steady = [st for st in L.walk_stmts(low.body)
              if isinstance(st, L.IfThenElse) and st.steady]
    assert steady, "no steady-state version of the fused, guarded nest"


def test_halide_runs_the_same_schedule():
    pytest.importorskip("halide")
    from tilesolve.interop import halide as th
    pipe = _pipe()
    s = _schedule(pipe)
    a = np.random.default_rng(0).random((12, 16), dtype=np.float32)
    hp = th.translate(pipe)
    hp.apply_schedule(s)
    assert "LoopLevel(out, tile, 1)" in hp.schedule_source or "compute_at(out, tile)" in \
        hp.schedule_source
    hp.compile()
    hp.bind(input=a)
    (got,) = hp.run([16, 12])
    np.testing.assert_allclose(np.asarray(got), ts.reference.realize(pipe, [16, 12], input=a),
                               rtol=1e-6)


def _max_filter_problem():
    from tilesolve.apps import get_app
    from tilesolve.solver.problem import Problem
    app = get_app("max_filter")
    pipe, est = app.build(app.SMALL_SIZE, **app.SMALL_BUILD)
    return app, pipe, est, Problem(pipe, PINNED, est)


def test_only_the_reduction_reaches_the_scan():
    _, _, _, p = _max_filter_problem()
    st = p.output_stages("output")
    assert st["vert"] == frozenset({1}) and st["vert_log"] == frozenset({1})
    assert p.tiled_update("output") == 1
    assert p.member_stage("vert", "output") == 1
    assert p.can_join_group("vert", "output")
    # the column scan writes every row whatever the tile: never recomputed per tile
    assert p.is_scan("vert_log") and not p.can_join_group("vert_log", "output")
    from tilesolve.solver.problem import Problem
    _, pipe, est, _ = _max_filter_problem()
    gpu = Problem(pipe, ts.load_spec("h100"), est)
    assert gpu.tiled_update("output") is None and not gpu.can_join_group("vert", "output")


@pytest.mark.parametrize("method", ["greedy", "ilp", "beam"])
def test_solver_schedules_with_update_members_equal_the_reference(method):
    app, pipe, est, _ = _max_filter_problem()
    sizes = app.SMALL_SIZE
    s = ts.solve_schedule(pipe, PINNED, estimates=est, method=method)
    assert "s[vert].compute_at(output, " in str(s) and "update=0)" in str(s)
    assert "s[vert_log].compute_root()" in str(s)
    inp = app.make_inputs(sizes, radius=app.SMALL_BUILD["radius"])
    out = ts.compile(pipe, s).realize(sizes, **inp)
    ref = ts.reference.realize(pipe, sizes, **inp)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
