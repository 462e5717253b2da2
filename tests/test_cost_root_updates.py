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
not fit block over ``y`` explicitly (``rows_over_y``)."""
import pytest

from tilesolve.apps import get_app
from tilesolve.solver.cost import CostModel, root_update_rereads
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group, Tiling
from tilesolve.specs import load_spec

SPEC = "xeon-e5-2620v3"          # a shipped spec: 256 KiB L2 per core


@pytest.fixture
def rows_over_y(monkeypatch):
    """Register blocks over the first pure Var after x, as before the row choice."""
    from tilesolve.solver import register_block
    monkeypatch.setattr(register_block, "_row_score", lambda calls, x, row: 0.0)


def _problem(app, small=False):
    mod = get_app(app)
    if small:
        pipe, est = mod.build(mod.SMALL_SIZE, **(getattr(mod, "SMALL_BUILD", None) or {}))
    else:
        pipe, est = mod.build()
    return Problem(pipe, load_spec(SPEC), est)


def test_conv_blocked_over_channels_rereads_nothing():
    p = _problem("conv_layer")
    assert p.stage_info["conv"][1][0].block.y == "z"
    assert root_update_rereads(p, "conv") == 0.0


def test_conv_at_root_rereads_its_input_once_per_output_channel(rows_over_y):
    p = _problem("conv_layer")
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


def test_the_rereads_are_memory_loads_of_every_tiled_column_alike(rows_over_y):
    p = _problem("conv_layer")
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
