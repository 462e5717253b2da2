"""The shared cost model on hand-computed cases (Mullapudi 2016 / Sioutas 2020)."""
import math

import pytest

import tilesolve as ts
from tilesolve.errors import SolverError
from tilesolve.solver.cost import CostModel, num_tiles, occupancy
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling
from tilesolve.specs import load_spec
from pinned import PINNED

W, H = 6400, 4800


def blur_pipeline():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by)


@pytest.fixture(scope="module")
def blur_problem():
    spec = load_spec("xeon-e5-2620v3")
    return Problem(blur_pipeline(), spec, {"blur_y": [W, H], "input": [W, H]})


def test_boundary_condition_is_inlined(blur_problem):
    assert blur_problem.inlined == frozenset({"input_repeat_edge"})
    assert blur_problem.funcs == ("blur_x", "blur_y")
    assert blur_problem.regions["blur_x"] == ((0, W - 1), (-1, H))


def test_a_load_with_arithmetic_is_not_data_movement():
    """A Func of one load and arithmetic on the loaded value (a float-to-byte
    conversion) is no data movement: read by a 3 x 3 stencil it would be converted nine
    times a point; it is computed once.  The boundary condition, which only moves data,
    is inlined."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    to_int, out = ts.Func("to_int"), ts.Func("out")
    to_int[x, y] = ts.cast(ts.uint8, ts.clamp(clamped[x, y] * 0.25 + 0.5, 0.0, 1.0) * 255.0)
    out[x, y] = sum(ts.cast(ts.uint16, to_int[x + i, y + j]) for i in (-1, 0, 1)
                    for j in (-1, 0, 1))
    p = Problem(ts.Pipeline(out), load_spec("xeon-e5-2620v3"),
                {"out": [1536, 1536], "input": [1536, 1536]})
    assert p.inlined == frozenset({"input_repeat_edge"})
    # a constant exterior only chooses its loaded value (a select): data movement
    ext = ts.boundary.constant_exterior(inp, 0.0)
    blur = ts.Func("blur")
    blur[x, y] = ext[x - 1, y] + ext[x, y] + ext[x + 1, y]
    p = Problem(ts.Pipeline(blur), load_spec("xeon-e5-2620v3"),
                {"blur": [1536, 1536], "input": [1536, 1536]})
    assert p.inlined == frozenset({ext.name})


def test_blur_tile_footprint_and_recompute(blur_problem):
    """A 32x32 tile of blur_y with blur_x computed per tile: blur_x needs
    32x34 points (two rows of overlap), the input 34x34 (one column each side
    and the two rows), all float32."""
    model = CostModel(blur_problem)
    g = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    c = model.cost(g, Tiling((32, 32)))
    assert c.n_tiles == num_tiles(((0, W - 1), (0, H - 1)), (32, 32)) == 200 * 150
    assert c.footprint_bytes == (32 * 34 + 34 * 34) * 4
    # recompute: blur_x computes 34 rows per 32 of output over 30000 tiles
    done = (32 * 34 + 32 * 32) * c.n_tiles
    need = W * (H + 2) + W * H
    assert c.recompute == pytest.approx(done / need)
    # arithmetic per tile: blur_x point = 2 adds + 1 div(4) + clamp ops + 3 loads
    # is inlined; the totals must be finite and split into the three terms
    assert c.feasible and math.isclose(c.total, sum(c.terms().values()))
    assert c.overhead == pytest.approx(200.0 * c.n_tiles * 2)
    assert c.loads == pytest.approx(blur_problem.spec.load_cost * c.n_tiles * 34 * 34)


def test_merge_reduces_memory_traffic(blur_problem):
    model = CostModel(blur_problem)
    apart = [model.cost(Group.singleton(n), Tiling((None, None))) for n in ("blur_x", "blur_y")]
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    fused = model.cost(group, Tiling((256, 32)))
    assert fused.feasible
    assert fused.loads + fused.stores < sum(c.loads + c.stores for c in apart)
    # tall tiles pay for rows beyond the prefetcher (the streams term); the best
    # tiling of the fused group still beats computing both stages at root
    assert fused.streams > 0
    best = model.best(group)[1]
    assert best.total < sum(c.total for c in apart) and best.streams < fused.streams


def test_footprint_over_cache_is_infeasible(blur_problem):
    model = CostModel(blur_problem)
    g = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    c = model.cost(g, Tiling((W // 2, H // 2)))
    assert not c.feasible and "footprint" in c.reason


def test_too_few_tiles_is_infeasible(blur_problem):
    model = CostModel(blur_problem)
    c = model.cost(Group.singleton("blur_y"), Tiling((W // 2, None)))
    assert not c.feasible and "parallelism" in c.reason


@pytest.mark.parametrize("spec,threads,regs,smem,expected", [
    # CUDA occupancy calculator, CC 8.0 (A100): 64 warps/SM, 32 blocks/SM, 64K regs
    ("a100", 256, 32, 0, 1.0),          # 8 blocks x 8 warps
    ("a100", 256, 64, 0, 0.5),          # registers: 64*32=2048/warp -> 4 blocks
    ("a100", 256, 32, 48 * 1024, 0.375),  # 164 KiB smem/SM -> 3 blocks x 8 warps / 64
    ("a100", 32, 32, 0, 0.5),           # 32 blocks x 1 warp / 64
    ("h100", 1024, 32, 0, 1.0),         # 2 blocks x 32 warps
    # 255 regs round up to 8192 per warp (unit 256): 65536 / (3 warps * 8192) = 2 blocks = 6 warps
    ("h100", 96, 255, 0, 6 / 64),
])
def test_occupancy_matches_calculator(spec, threads, regs, smem, expected):
    s = load_spec(spec)
    occ, _blocks = occupancy(s, threads, smem, regs)
    assert occ == pytest.approx(expected)


def test_gpu_columns_respect_hard_constraints():
    spec = load_spec("h100")
    p = Problem(blur_pipeline(), spec, {"blur_y": [W, H], "input": [W, H]})
    model = CostModel(p)
    from tilesolve.solver.tilings import candidate_tilings
    g = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    seen_feasible = 0
    for t in candidate_tilings(p, g):
        c = model.cost(g, t)
        if not c.feasible:
            continue
        seen_feasible += 1
        assert c.gpu.threads <= spec.max_threads_per_block
        assert c.gpu.shared_bytes <= spec.shared_mem_per_block_bytes
        assert c.gpu.occupancy >= spec.occupancy_threshold
        assert math.prod(s for s in t.sizes if s) % spec.warp_size == 0
    assert seen_feasible > 0


def test_missing_estimates_take_the_defaults():
    """No estimates: the output gets the default sizes, and the input, whose extent the
    boundary condition reads, the output's."""
    from tilesolve.solver.problem import DEFAULT_EXTENT
    p = Problem(blur_pipeline(), load_spec("xeon-e5-2620v3"), {})
    assert p.estimates["blur_y"] == [DEFAULT_EXTENT, DEFAULT_EXTENT]
    assert all(p.estimates[n] == [DEFAULT_EXTENT, DEFAULT_EXTENT]
               for n in p.pipeline.images)


def test_estimate_of_wrong_rank():
    with pytest.raises(SolverError, match="estimate for 'blur_y' has 1 sizes"):
        Problem(blur_pipeline(), load_spec("xeon-e5-2620v3"), {"blur_y": [10]})


@pytest.mark.parametrize("app", ["harris", "camera_pipe", "max_filter", "bilateral_grid",
                                 "local_laplacian", "hist_eq"])
def test_menu_facts_equal_per_tile_facts(app):
    """The vectorized facts (every tiling of a menu at once, shared between groups)
    equal the scalar interval analysis of one interior tile, for every tiling of
    the menu of every group of up to 3 members (data-dependent indices and the
    per-tiling fallback included)."""
    import numpy as np
    from tilesolve.analysis.footprint import MenuFacts, box_points, interior_tile, tile_facts
    from tilesolve.apps import get_app
    from tilesolve.solver.ilp.columns import enumerate_groups
    from tilesolve.solver.tilings import candidate_tilings
    pipe, est = get_app(app).build()
    p = Problem(pipe, load_spec("xeon-e5-2620v3"), est)
    checked = 0
    for g in enumerate_groups(p, 3, 60):
        menu = candidate_tilings(p, g)
        mf = MenuFacts(p, g.output, [t.sizes for t in menu])
        gf = mf.group(g.members)
        for i, t in enumerate(menu):
            one = tile_facts(p, g, interior_tile(p.regions[g.output], t.sizes))
            assert set(gf.member_regions) == set(one.member_regions)
            for m, box in one.member_regions.items():
                vec = gf.member_regions[m][:, :, i]
                assert [(lo, hi) for lo, hi in zip(vec[0], -vec[1])] == list(box), (g, t, m)
                assert gf.member_points[m][i] == one.member_points[m]
            assert set(gf.input_regions) == set(one.input_regions)
            for n, box in one.input_regions.items():
                vec = gf.input_regions[n][:, :, i]
                assert [(lo, hi) for lo, hi in zip(vec[0], -vec[1])] == list(box), (g, t, n)
                assert box_points(gf.input_regions[n])[i] == np.prod([hi - lo + 1 for lo, hi in box])
            for m, u in one.member_update_points.items():
                assert np.broadcast_to(gf.member_update_points[m], (len(menu),))[i] == u
            checked += 1
    assert checked > 50


def test_tall_tiles_pay_for_rows_beyond_the_prefetcher():
    """Measured at 6400x4800 (2 threads): blur with tiles of 128x64 ran 31.5 ms, with
    128x16 13.0 ms.  Without the streams term the model ranks them the other way
    (fewer halo rows recomputed); with it, as measured.  Untiled columns read whole
    rows: no stream term."""
    host = load_spec("xeon-e5-2620v3").replace(cost_params=None)   # the built-in values
    STREAM_MISS_LOADS = host.cost_params.stream_miss_loads
    est = {"blur_y": [6400, 4800], "input": [6402, 4802]}
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))

    def totals(spec):
        model = CostModel(Problem(blur_pipeline(), spec, est))
        return [model.cost(group, Tiling(t)) for t in ((128, 64), (128, 16))]
    tall, flat = totals(host)
    assert tall.total > flat.total and tall.streams > 0
    problem = Problem(blur_pipeline(), host, est)
    assert CostModel(problem).cost(Group.singleton("blur_x"), Tiling((None, None))).streams == 0
    assert [c.total for c in totals(host.with_cost_params(stream_miss_loads=STREAM_MISS_LOADS))] == \
        [tall.total, flat.total]
    # a machine whose prefetcher follows every row (as calibrate finds on some): no term
    tall, flat = totals(host.with_cost_params(stream_miss_loads=0.0))
    assert tall.streams == 0 and tall.total < flat.total
    half = totals(host.with_cost_params(stream_miss_loads=STREAM_MISS_LOADS / 2))[0]
    assert abs(half.streams - totals(host)[0].streams / 2) <= 1e-6 * half.streams


def test_only_the_arithmetic_of_stages_that_move_memory_hides_under_it():
    """``memory_overlap``: the group's output (it stores) and the members that read from
    outside the group overlap their arithmetic with the group's memory traffic; haar's
    ``shrunk`` and ``inv_y`` read only in-cache buffers, so theirs adds in full."""
    from tilesolve.apps.validation import haar
    pipe, est = haar.build()
    p = Problem(pipe, PINNED, est)
    assert {"haar_x", "shrunk", "inv_y"} <= set(p.funcs)
    group = Group("output", frozenset({"output", "inv_y", "shrunk", "haar_x"}))
    tiling = CostModel(p).best(group)[0]
    cost = CostModel(p).cost(group, tiling)
    cached = PINNED.cost_params.cached_load_ops

    def work(name):
        (ops, loads), _ = p.stage_info[name]
        return p.region_points(name) * (ops + cached * loads)

    assert cost.moving == pytest.approx(work("output") + work("haar_x"))
    share = PINNED.cost_params.memory_overlap
    assert cost.overlap == pytest.approx(share * min(cost.moving, cost.loads + cost.stores))
    assert cost.total == pytest.approx(sum(cost.terms().values()))
    plain = CostModel(Problem(pipe, PINNED.with_cost_params(memory_overlap=0.0), est))
    assert plain.cost(group, tiling).total == pytest.approx(cost.total + cost.overlap)
