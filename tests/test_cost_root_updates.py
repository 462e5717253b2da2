"""The cost of a tiled group's output's reductions, which run at root.

``schedule_gen`` runs a group output's update stages over its whole region
after the tiles of its pure definition, sweeping the register block's two
dimensions inside the others.  When one sweep's reads do not fit in the L2,
every sweep reads them again: conv_layer with ``conv`` as a group output (its
ReLU computed apart) streams its 4.3 MB input once per output channel, which
measured 2.2x the fused schedule on the development machine (the per-tile
facts alone priced it 1.02x).  That was conv's update blocked over rows ``y``;
since ``register_block._row_score`` blocks it over output channels, one sweep reads
a few input rows and the rereads vanish: the tests that need a sweep that does
not fit block over ``y`` explicitly (``ROWS_OVER_Y``)."""
import pytest

from tilesolve.apps import get_app
from tilesolve.solver.cost import CostModel, root_update_rereads, root_update_sweeps
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling
from tilesolve.specs import load_spec

SPEC = "xeon-e5-2620v3"          # a shipped spec: 256 KiB L2 per core
ROWS_OVER_Y = {"row_var_by_score": False}    # blocks over the first pure Var after x


def _problem(app, small=False, **params):
    """``app``'s problem on SPEC with the cost parameters ``params`` changed
    (``row_var_by_score=False``: register blocks over the first pure Var after x, as
    before the row choice)."""
    mod = get_app(app)
    if small:
        pipe, est = mod.build(mod.SMALL_SIZE, **(getattr(mod, "SMALL_BUILD", None) or {}))
    else:
        pipe, est = mod.build()
    return Problem(pipe, load_spec(SPEC).with_cost_params(**params), est)


def test_conv_blocked_over_channels_rereads_nothing():
    p = _problem("conv_layer")
    assert p.stage_info["conv"][1][0].block.y == "z"
    assert root_update_rereads(p, "conv") == 0.0


def test_conv_at_root_rereads_its_input_once_per_output_channel():
    p = _problem("conv_layer", **ROWS_OVER_Y)
    assert p.stage_info["conv"][1][0].block.y == "y"
    x, y, z, n = p.regions["conv"]
    channels, batch = z[1] - z[0] + 1, n[1] - n[0] + 1
    inp = p.regions["input"] if "input" in p.regions else None
    words = root_update_rereads(p, "conv")
    # one slab (x and y whole, one channel, one image) reads the whole input image
    # of its batch (130 x 130 x 64 floats); every channel reads it again
    assert words > 0
    if inp is not None:
        per_image = 1
        for lo, hi in inp[:3]:
            per_image *= hi - lo + 1
        assert words == pytest.approx((channels - 1) * batch * per_image, rel=0.05)


def test_a_slab_that_fits_in_l2_costs_nothing_more():
    assert root_update_rereads(_problem("conv_layer", small=True), "conv") == 0.0


def test_two_dimensional_reductions_have_no_outer_sweep():
    p = _problem("matmul")
    for f in p.funcs:
        assert root_update_rereads(p, f) == 0.0


def test_the_rereads_are_memory_loads_of_every_tiled_column_alike():
    p = _problem("conv_layer", **ROWS_OVER_Y)
    model = CostModel(p)
    g = Group.singleton("conv")
    words = root_update_rereads(p, "conv")
    costs = model.costs(g)
    menu = model.menu("conv")
    tiled = [i for i, t in enumerate(menu.tilings) if not t.is_untiled()]
    assert tiled
    for i in tiled[:5]:
        c = costs.cost(i)
        # loads = load_cost * (per-tile footprints + the sweep's rereads)
        assert c.loads >= p.spec.load_cost * words
    # the untiled column keeps Mullapudi's untiled-reduction pricing
    untiled = costs.cost(menu.index[Tiling.untiled(4)])
    assert untiled.loads < p.spec.load_cost * words


# -- the passes of root updates over a buffer the LLC cannot keep ------------------------

def test_a_root_scan_writes_its_buffer_once_a_pass_and_reads_it_where_it_reads_itself():
    # iir_blur's column filter: row 0 copied, a causal scan over the other rows (writes
    # each point, reads the row before, still in cache), an anti-causal one that reads
    # each point's own value first: 1 + (H - 1) + 2 (H - 1) words per column and channel
    p = _problem("iir_blur")
    (x0, x1), (y0, y1), (c0, c1) = p.regions["blur_cols_1"]
    cols, rows, chans = x1 - x0 + 1, y1 - y0 + 1, c1 - c0 + 1
    assert cols * rows * chans * 4 > p.spec.cost_params.llc_keep_fraction * p.spec.last_level_cache_bytes
    assert root_update_sweeps(p, "blur_cols_1") == cols * chans * (1 + 3 * (rows - 1))


def test_a_buffer_the_llc_keeps_makes_no_passes():
    p = _problem("iir_blur", small=True)
    assert root_update_sweeps(p, "blur_cols_1") == 0.0


def test_a_reduction_into_its_point_passes_over_the_points_not_the_rdom():
    # max_filter's output: a max over dx into each point (dx in no argument): one pass,
    # reading the initial value and writing the result
    p = _problem("max_filter")
    pts = p.region_points("output")
    assert p.func("output").updates[0].rdom is not None
    assert root_update_sweeps(p, "output") == 2 * pts
    # tiled with a producer read only by that update, the update runs in the tiles
    assert root_update_sweeps(p, "output", skip=1) == 0.0


def test_the_passes_are_loads_of_the_group_output_at_root_only():
    p = _problem("iir_blur")
    passes = root_update_sweeps(p, "blur_cols_1")
    root, fused = Group.singleton("blur_cols_1"), Group("output", frozenset({"output", "blur_cols_1"}))
    tiling = CostModel(p).costs(fused).best()[0]
    model = CostModel(p)
    at_root, in_tiles = model.cost(root, Tiling.untiled(3)), model.cost(fused, tiling)
    without = CostModel(_problem("iir_blur", update_pass_words=0.0))
    # at root: every pass is priced as loads from memory
    assert at_root.loads - without.cost(root, Tiling.untiled(3)).loads == pytest.approx(
        p.spec.load_cost * passes)
    # computed per tile of the transpose that reads it, the filter runs in the tile
    assert in_tiles.loads == without.cost(fused, tiling).loads
