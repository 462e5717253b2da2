"""The GPU cost model prices the steady state (solver/cost_gpu.py): the coordinate clamps
and bound tests a point of a member drops in the steady body (``boundary_ops``), paid
only by the blocks at the borders (``steady_fraction``)."""
from __future__ import annotations

import pytest

import tilesolve as ts
from tilesolve.solver import cost_gpu
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group

H100 = ts.load_spec("h100")


def _blur(boundary, est=(2048, 1024), spec=H100):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = boundary(inp) if boundary else inp
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (src[x - 1, y] + src[x, y] + src[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    pipe = ts.Pipeline(by)
    return Problem(pipe, spec, {"blur_y": list(est), "input": [est[0] + 2, est[1] + 2]})


def test_the_ops_a_steady_block_drops():
    # repeat_edge: max and min of x - 1, x, x + 1 and of y (the same node for the taps)
    assert cost_gpu.boundary_ops(_blur(ts.boundary.repeat_edge), "blur_x") == 8
    assert cost_gpu.boundary_ops(_blur(ts.boundary.repeat_edge), "blur_y") == 0
    assert cost_gpu.boundary_ops(_blur(None), "blur_x") == 0
    # constant_exterior: the selects and their bound tests
    assert cost_gpu.boundary_ops(_blur(ts.boundary.constant_exterior), "blur_x") > 0
    # a parity test and a lookup's clamp of a loaded value are not dropped
    x = ts.Var("x")
    inp = ts.ImageParam(ts.int32, 1, "input")
    lut = ts.ImageParam(ts.float32, 1, "lut")
    f = ts.Func("f")
    f[x] = ts.select(x % 2 == 0, lut[ts.clamp(inp[x], 0, 255)], 0.0)
    p = Problem(ts.Pipeline(f), H100, {"f": [1024], "input": [1024], "lut": [256]})
    assert cost_gpu.boundary_ops(p, "f") == 0


@pytest.mark.parametrize("ext,tile,want", [((64,), (16,), 0.5), ((64, 32), (16, 8), 0.25),
                                           ((32,), (16,), 0.0), ((17,), (16,), 0.0),
                                           ((160, 8), (16, 8), 0.8 * 0.0)])
def test_the_share_of_steady_blocks(ext, tile, want):
    region = [(0, e - 1) for e in ext]
    dims = tuple(range(len(ext))) + (None,) * (2 - len(ext))
    assert cost_gpu.steady_fraction(region, tile, dims) == pytest.approx(want)


def test_the_steady_state_lowers_the_issue_time_and_no_tiling_s_cost(monkeypatch):
    # (no staging: which staged kernels are priced depends on the plain one's bound, so
    # the kernels priced with and without the steady state would not pair up)
    p = _blur(ts.boundary.repeat_edge, (4096, 2048), H100.with_cost_params(stage_inputs=False))
    group = Group("blur_y", frozenset({"blur_x", "blur_y"}))
    issue = []
    bounds = cost_gpu.launch_bounds

    def recording(mach, k):
        b = bounds(mach, k)
        issue.append(b["issue"])
        return b
    monkeypatch.setattr(cost_gpu, "launch_bounds", recording)
    model = CostModel(p)
    n = len(model.menu("blur_y").tilings)
    with_steady = [model.costs(group).cost(i) for i in range(n)]
    steady_issue, issue[:] = list(issue), []
    monkeypatch.setattr(cost_gpu, "steady_fraction", lambda *a: 0.0)
    model = CostModel(p)
    without = [model.costs(group).cost(i) for i in range(n)]
    assert len(issue) == len(steady_issue) > 0
    assert all(a <= b for a, b in zip(steady_issue, issue))
    assert sum(steady_issue) < sum(issue)
    assert all(a.total <= b.total + 1e-9 for a, b in zip(with_steady, without) if b.feasible)
