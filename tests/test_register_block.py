"""Register blocking of reductions: the cost model chooses it, schedule_gen emits it
with existing directives, and the compiled code matches the reference."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling
from tilesolve.specs import load_spec

from pinned import PINNED

SPECS = ["xeon-e5-2620v3", PINNED]


def _blocked_updates(s, name):
    return [d for d in s.directives if d.func == name and d.stage == 1]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("app,func", [("matmul", "prod"), ("conv_layer", "conv")])
def test_solver_blocks_the_reduction_and_it_matches_the_reference(app, func, spec):
    mod = get_app(app)
    params = dict(getattr(mod, "SMALL_BUILD", {}))
    sizes = list(mod.SMALL_SIZE)
    pipe, _ = mod.build(sizes, **params)
    _, paper_est = mod.build(None, **params)
    s = ts.solve_schedule(pipe, spec, paper_est, method="ilp", time_limit=5)
    ds = _blocked_updates(s, func)
    methods = [d.method for d in ds]
    splits = 3 if app == "matmul" else 2       # matmul: x, y and the K-blocked RDom
    assert methods[:splits + 1] == ["split"] * splits + ["reorder"] and "unroll" in methods, \
        str(s)
    reorder = next(d for d in ds if d.method == "reorder")
    names = [v for _, v in reorder.args]
    rvars = [n for n in names if n.startswith("r.") or n.startswith("r_x_k")]
    # the register block innermost, the RDom outside it, the blocks outside the RDom
    # (matmul's K = 2048 is K-blocked: the panel loop r_x_ko outside every block loop);
    # conv's rows are output channels (``_row_score``: one input vector a step, shared)
    row = "y" if app == "matmul" else "z"
    assert names[:2] == ["x_r", f"{row}_r"] and names.index(rvars[0]) == 2
    inner = [n for n in rvars if not n.endswith("_ko")]
    assert names.index("x_b") > names.index(inner[-1])
    assert (names[-1] == "r_x_ko") == (app == "matmul")
    # nb vectors x by rows of accumulators fit the vector registers
    split_x = next(d for d in ds if d.method == "split" and d.args[0][1] == "x")
    split_y = next(d for d in ds if d.method == "split" and d.args[0][1] == row)
    spec_ = load_spec(spec)
    lanes = spec_.vector_lanes(4)
    nb, by = split_x.args[3][1] // lanes, split_y.args[3][1]
    regs = 32 if spec_.vector_bits >= 512 else 16
    assert nb * by + spec_.cost_params.reserved_registers <= regs and nb * by > 1
    inputs = mod.make_inputs(sizes, seed=0, **params)
    got = ts.compile(pipe, s).realize(sizes, **inputs)
    want = ts.reference.realize(pipe, sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_blocking_lowers_the_predicted_reduction_cost():
    pipe, est = get_app("matmul").build()
    p = Problem(pipe, load_spec("xeon-e5-2620v3"), est)
    c = CostModel(p).cost(Group.singleton("prod"), Tiling((None, None)))
    points = 2048 ** 3
    # unblocked: 2 ops + 3 loads (A, B, the accumulator) + accumulator store + loop
    # iteration per point; blocked: loads shared across the block, no accumulator traffic
    assert c.arith < points * (2 + 3) * 0.6
    assert c.reduction < points * 0.5


def test_scans_and_unshared_reductions_are_not_blocked():
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.float32, 1, "a")
    r = ts.RDom((1, 1023))
    s = ts.Func("scan")
    s[x] = a[x]
    s[r.x] = s[r.x - 1] + a[r.x]
    p = Problem(ts.Pipeline(s), PINNED, {"scan": [1024], "a": [1024]})
    assert p.stage_info["scan"][1][0].block is None
    # a box sum: every operand depends on x and y, so a block shares no load
    b = ts.ImageParam(ts.float32, 2, "b")
    q = ts.RDom((0, 7))
    box = ts.Func("box")
    box[x, y] = 0.0
    box[x, y] += b[x + q.x, y]
    p = Problem(ts.Pipeline(box), PINNED, {"box": [512, 512]})
    assert p.stage_info["box"][1][0].block is None


def test_long_single_rvar_reductions_are_k_blocked():
    from tilesolve.solver.register_block import BlockInfo, k_block
    cp = PINNED.cost_params
    one = BlockInfo("x", "y", 0, 1, (), ("r.x",), ())
    two = BlockInfo("x", "y", 0, 1, (), ("r.x", "r.y"), ())
    assert k_block(cp, one, 2048) == cp.k_block == 128
    assert k_block(cp, one, cp.k_block * cp.k_block_min_steps - 1) == 0
    assert k_block(cp, two, 4096) == 0           # RVars of one RDom keep their nesting


def test_the_row_var_is_the_one_whose_loads_are_cheapest():
    """Blocking rows shares the loads that do not depend on them.  conv's input is
    read at ``x + r.x`` (a split vector load): blocked over output channels ``z``,
    one input vector serves the block and the filter's values are broadcast; over
    ``y`` every accumulator loads its own split vector.  matmul has one choice."""
    from tilesolve.solver.problem import Problem
    conv, est = get_app("conv_layer").build()
    p = Problem(conv, PINNED, est)
    blk = p.stage_info["conv"][1][0].block
    assert (blk.y, blk.others) == ("z", ("y", "n"))
    assert sorted(blk.load_classes) == [(False, True), (True, False)]
    # without the score, the first pure Var after x
    first = Problem(conv, PINNED.with_cost_params(row_var_by_score=False), est)
    assert first.stage_info["conv"][1][0].block.y == "y"
    # 4 output channels are too few rows for a block: rows of y then
    few, est4 = get_app("conv_layer").build([128, 128, 4, 4])
    assert Problem(few, PINNED, est4).stage_info["conv"][1][0].block.y == "y"
    mm, est = get_app("matmul").build()
    assert Problem(mm, PINNED, est).stage_info["prod"][1][0].block.y == "y"
    # a tie keeps the first pure Var after x
    x, y, z = ts.Var("x"), ts.Var("y"), ts.Var("z")
    a = ts.ImageParam(ts.float32, 3, "a")
    r = ts.RDom((0, 8), name="r")
    f = ts.Func("f")
    f[x, y, z] = 0.0
    f[x, y, z] += a[x, r.x, z] * a[x, y, r.x]
    p = Problem(ts.Pipeline(f), PINNED, {"f": [64, 64, 64], "a": [64, 64, 64]})
    assert p.stage_info["f"][1][0].block.y == "y"


def test_the_rdom_unroll_keeps_hoisted_operands_within_the_registers():
    """LLVM hoists the loads of unrolled RDom steps ahead of their uses: the unroll
    factor is halved until the accumulators and those operands fit."""
    from tilesolve.solver.register_block import BlockInfo, rdom_unroll, step_operands
    cp = PINNED.cost_params
    mm = BlockInfo("x", "y", 0, 1, (), ("r.x",), ((True, False), (False, True)))
    assert step_operands(mm, 4, 6) == 10 and step_operands(mm, 1, 2) == 3
    assert rdom_unroll(cp, 128) == cp.rdom_unroll == 4        # no register budget given
    assert rdom_unroll(cp, 128, 24, 10, 32) == 1              # 24 + 2 * 10 > 32
    assert rdom_unroll(cp, 128, 8, 6, 32) == 4                # 8 + 4 * 6 = 32
    assert rdom_unroll(cp, 128, 8, 6, 16) == 1
    assert rdom_unroll(cp, 128, 4, 5, 16) == 2                # 4 + 2 * 5 <= 16 < 4 + 4 * 5
    assert rdom_unroll(cp, 6, 8, 4, 16) == 1                  # 6 -> 3 -> 1: 8 + 3 * 4 > 16
    assert rdom_unroll(cp, 6, 4, 4, 16) == 3                  # 4 + 3 * 4 <= 16
    assert rdom_unroll(cp, 3, 4, 2, 16) == 3 and rdom_unroll(cp, 3, 12, 2, 16) == 1
    assert rdom_unroll(cp, 130) == 1                          # 4 does not divide 130
    # switched off, the budget is not kept
    off = PINNED.with_cost_params(unroll_within_registers=False).cost_params
    assert rdom_unroll(off, 128, 24, 10, 32) == 4


@pytest.mark.parametrize("spec", SPECS)
def test_the_solvers_matmul_unroll_fits_the_registers(spec):
    from tilesolve.solver.register_block import BlockInfo, step_operands
    mod = get_app("matmul")
    pipe, est = mod.build([256, 256], k=512)
    s = ts.solve_schedule(pipe, spec, {**est, "output": [2048, 2048], "A": [512, 2048],
                                       "B": [2048, 512]}, method="greedy")
    ds = _blocked_updates(s, "prod")
    spec_ = load_spec(spec)
    lanes = spec_.vector_lanes(4)
    nb = next(d for d in ds if d.method == "split" and d.args[0][1] == "x").args[3][1] // lanes
    by = next(d for d in ds if d.method == "split" and d.args[0][1] == "y").args[3][1]
    ur = [d.args[1][1] for d in ds if d.method == "unroll" and d.args[0][1].startswith("r")]
    ur = ur[0] if ur else 1
    regs = 32 if spec_.vector_bits >= 512 else 16
    per = step_operands(BlockInfo("x", "y", 0, 1, (), ("r.x",), ((True, False), (False, True))),
                        nb, by)
    assert ur == 1 or nb * by + ur * per <= regs, str(s)


def test_k_panel_block_order_follows_the_l2():
    """Within a K panel the x block loop goes inside the row block loop when the x
    operand's panel fits in half the L2 (then the row blocks are parallel)."""
    from tilesolve.solver.register_block import x_inside
    cp = PINNED.cost_params
    kb, l2 = cp.k_block, 2 << 20
    assert x_inside(cp, kb, 2048, 2048, 4, l2)           # 1 MB panel
    assert not x_inside(cp, kb, 4096, 1024, 4, l2)       # 2 MB: rows inside
    rows_inside = PINNED.with_cost_params(k_panel_l2_share=0.0).cost_params
    assert not x_inside(rows_inside, kb, 2048, 2048, 4, l2)
    spec = PINNED                         # 1 MiB L2: 1024 wide fits, 65536 does not
    mod = get_app("matmul")
    pipe, est = mod.build([256, 256], k=512)
    for width, fits in ((1024, True), (1 << 16, False)):
        s = ts.solve_schedule(pipe, spec, {**est, "output": [width, 2048], "A": [512, 2048],
                                           "B": [width, 512]}, method="greedy")
        reorder = next(d for d in _blocked_updates(s, "prod") if d.method == "reorder")
        names = [v for _, v in reorder.args]
        par = [d.args[0][1] for d in _blocked_updates(s, "prod") if d.method == "parallel"]
        assert fits == x_inside(cp, kb, width, 2048, 4, 1 << 20)
        assert (names.index("x_b") < names.index("y_b")) == fits, str(s)
        assert par == (["y_b"] if fits else ["x_b"]), str(s)
    inputs = mod.make_inputs([256, 256], seed=2, k=512)
    got = ts.compile(pipe, s).realize([256, 256], **inputs)
    want = np.asarray(inputs["A"], np.float64) @ np.asarray(inputs["B"], np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("k", [512, 700])
def test_a_k_blocked_matmul_matches_numpy(k):
    """K = 512 splits evenly into panels of 128; 700 leaves a partial last panel."""
    mod = get_app("matmul")
    sizes = [40, 24]
    pipe, est = mod.build(sizes, k=k)
    s = ts.solve_schedule(pipe, PINNED, {**est, "output": [2048, 2048], "A": [k, 2048],
                                         "B": [2048, k]}, method="greedy")
    assert "r_x_ko" in str(s)
    inputs = mod.make_inputs(sizes, seed=1, k=k)
    got = ts.compile(pipe, s).realize(sizes, **inputs)
    want = np.asarray(inputs["A"], np.float64) @ np.asarray(inputs["B"], np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


# ---------------------------------------------------------------------------
# Latency-bound accumulation chains (blocks with no shared load)
# ---------------------------------------------------------------------------
def _window(op, taps, name="win"):
    x, y = ts.Var("x"), ts.Var("y")
    b = ts.ImageParam(ts.float32, 2, "b")
    q = ts.RDom((0, taps), name="q")
    f = ts.Func(name)
    f[x, y] = float("-inf") if op == "max" else 0.0
    f[x, y] = ts.max(f[x, y], b[x + q.x, y]) if op == "max" else f[x, y] + b[x + q.x, y]
    return ts.Pipeline(f), f


def test_accumulation_chain_measures_latency_and_issue():
    from tilesolve.solver.register_block import accumulation_chain
    _, f = _window("max", 53)
    assert accumulation_chain(f, f.updates[0]) == (5.0, 2.0)     # max keeping NaN: 5 cycles
    _, f = _window("sum", 53)
    assert accumulation_chain(f, f.updates[0]) == (4.0, 2.0)
    x = ts.Var("x")
    a = ts.ImageParam(ts.float32, 1, "a")
    r = ts.RDom((0, 64))
    g = ts.Func("g")
    g[x] = 0.0
    g[x] = g[x] * 0.5 + a[x + r.x]              # multiply then add on the chain
    assert accumulation_chain(g, g.updates[0]) == (8.0, 3.0)
    s = ts.Func("scan")
    s[x] = a[x]
    s[r.x] = s[r.x - 1] + a[r.x]                # reads another point: not in place
    assert accumulation_chain(s, s.updates[0]) == (0.0, 0.0)


def test_a_latency_bound_max_is_blocked_and_matches_the_reference():
    """A 53-tap float max waits 5 cycles a step on its accumulator while issuing a load
    and a max: the block interleaves independent accumulators (x only: no load is
    shared); run at sizes the block does not divide, the tail is guarded."""
    pipe, f = _window("max", 53)
    p = Problem(pipe, PINNED, {"win": [1024, 512]})
    info = p.stage_info["win"][1][0]
    assert info.block is not None
    s = ts.solve_schedule(pipe, PINNED, {"win": [1024, 512]}, method="greedy")
    ds = _blocked_updates(s, "win")
    assert [d.method for d in ds][:2] == ["split", "reorder"] and "unroll" in str(s), str(s)
    cp = ts.compile(pipe, s)
    rng = np.random.default_rng(3)
    for w, h in ((1, 1), (17, 3), (67, 5), (128, 2)):
        b = rng.standard_normal((h, w + 52)).astype(np.float32)
        got = cp.realize([w, h], b=b)
        want = ts.reference.realize(pipe, [w, h], b=b)
        np.testing.assert_array_equal(got, want)
    # the sum (4 cycles against 2 issued plus its loop) is left in its default order
    pipe, _ = _window("sum", 7)
    assert Problem(pipe, PINNED, {"win": [1024, 512]}).stage_info["win"][1][0].block \
        is None


def test_a_chain_only_block_must_divide_the_extent():
    from tilesolve.solver.cost_terms import block_choice
    pipe, _ = _window("max", 53)
    spec = PINNED
    u = Problem(pipe, spec, {"win": [1024, 512]}).stage_info["win"][1][0]
    lanes = spec.vector_lanes(4)
    nb64 = block_choice(spec, u, lanes, 1.0, 64 * lanes, 1.0)[1]
    nb70 = block_choice(spec, u, lanes, 1.0, 4 * lanes + 6, 1.0)[1]
    assert int(nb64) > 1 and int(nb70) == 0


def test_max_filter_blocks_its_tiled_output_update():
    """max_filter's output update, tiled with its group (``vert`` per tile), keeps one
    vector accumulator over 53 taps by default; the solver splits the tile's vector
    loop into unrolled vectors outside the taps.  Run at the small size, equal to the
    reference."""
    mod = get_app("max_filter")
    sizes = list(mod.SMALL_SIZE)
    pipe, _ = mod.build(sizes, **mod.SMALL_BUILD)
    _, paper_est = mod.build(None, **mod.SMALL_BUILD)
    s = ts.solve_schedule(pipe, PINNED, paper_est, method="greedy")
    text = str(s)
    assert "split(xi, xi_b, xi_r" in text and "reorder(xi_r, dx.x, xi_b)" in text, text
    inputs = mod.make_inputs(sizes, seed=0, **mod.SMALL_BUILD)
    got = ts.compile(pipe, s).realize(sizes, **inputs)
    want = ts.reference.realize(pipe, sizes, **inputs)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("spec", SPECS)
def test_a_matrix_vector_product_runs_its_row_blocks_in_parallel(spec):
    """An update with no row loop of its own, over a column-major matrix
    (``out[m] += mat[m, r] * vec[r]``, ``m`` contiguous): its x blocks are the parallel
    tasks, outermost, each sweeping every K panel."""
    m, k = 4096, 4096
    x = ts.Var("m")
    mat = ts.ImageParam(ts.float32, 2, "matrix")
    vec = ts.ImageParam(ts.float32, 1, "vector")
    r = ts.RDom((0, vec.extent(0)), name="r")
    out = ts.Func("output")
    out[x] += mat[x, r.x] * vec[r.x]
    pipe = ts.Pipeline(out)
    s = ts.solve_schedule(pipe, spec, {"output": [m], "matrix": [m, k], "vector": [k]},
                          method="greedy")
    update = str(s).splitlines()[-1]
    assert ".parallel(m_b)" in update and "reorder(m_r, r_x_ki, r_x_ko, m_b)" in update
    rng = np.random.default_rng(7)
    a = rng.standard_normal((53, 37)).astype(np.float32)
    v = rng.standard_normal(53).astype(np.float32)
    got = ts.compile(pipe, s).realize([37], matrix=a, vector=v)
    np.testing.assert_array_equal(got, ts.reference.realize(pipe, [37], matrix=a, vector=v))


@pytest.mark.parametrize("spec", SPECS)
def test_a_gathered_operand_is_not_blocked_across_vectors(spec):
    """Over a row-major matrix (``out[m] += mat[r, m] * vec[r]``) each lane of ``m``
    reads its own row, a cache line a lane: more vectors in a block would keep more
    lines live than the L1's ways hold (the rows are 16 KB apart) and share none, so
    the update stays one vector wide, parallel over its vectors."""
    from tilesolve.apps.validation import PIPELINES
    from tilesolve.solver.register_block import _gathers
    app = PIPELINES["matvec"]
    pipe, est = app.build()                        # 4096 x 4096
    upd = pipe.func("output").updates[0]
    calls = [n for n in ts.model.visit.walk(upd.value) if isinstance(n, ts.model.expr.Call)]
    assert {c.target.name: _gathers(c, "m") for c in calls} == {
        "output": False, "matrix": True, "vector": False}
    s = ts.solve_schedule(pipe, spec, est, method="greedy")
    update = str(s).splitlines()[-1]
    assert "m_r" not in update and ".parallel(m)" in update and ".vectorize(m" in update
    small, _ = app.build(app.SMALL_SIZE, **app.SMALL_BUILD)
    inputs = app.make_inputs(app.SMALL_SIZE, **app.SMALL_BUILD)
    got = ts.compile(small, ts.Schedule.from_json(s.to_json(), small)).realize(
        app.SMALL_SIZE, **inputs)
    np.testing.assert_allclose(got, app.numpy_reference(inputs, app.SMALL_SIZE, **app.SMALL_BUILD),
                               rtol=1e-4, atol=1e-4)
