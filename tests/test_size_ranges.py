"""Schedules for a range of sizes: ``estimates={"out": ([min...], [max...])}`` gives
size classes, each with its own schedule, compiled together and dispatched on sizes."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.errors import SolverError
from tilesolve.model.schedule_classes import SizeClasses, scale_of
from tilesolve.solver.ranges import best_cut

SPEC = "xeon-e5-2620v3"


@pytest.mark.parametrize("app,lo,hi", [("blur", [1, 1], [2048, 2048]),
                                       ("harris", [8, 8], [3000, 2000])])
def test_a_range_schedule_equals_the_reference_across_its_range(app, lo, hi):
    mod = get_app(app)
    pipe, _ = mod.build([64, 64])
    out = pipe.output_names[0]
    rs = ts.solve_schedule(pipe, SPEC, {out: (lo, hi)}, method="greedy")
    assert isinstance(rs, SizeClasses) and 1 <= len(rs.classes) <= 3
    assert rs.classes[0].lo == 0 and rs.classes[-1].hi == float("inf")
    assert all(a.hi == b.lo for a, b in zip(rs.classes, rs.classes[1:]))
    text = rs.explain()
    assert f"class {len(rs.classes) - 1}:" in text and "worst ratio" in text
    fast = ts.compile(pipe, rs, checked=True)
    for sizes in (lo, [lo[0] + 6, lo[1] + 3], [37, 23], [301, 97], hi):
        inputs = mod.make_inputs(sizes, seed=1)
        got = fast.realize(sizes, **inputs)
        np.testing.assert_allclose(got, ts.reference.realize(pipe, sizes, **inputs),
                                   rtol=1e-4, atol=1e-4)
        want = rs.schedule_for(sizes)
        assert fast.build_for(sizes) is fast.builds[[c.schedule for c in rs.classes].index(want)]


def test_the_cut_minimizes_the_worst_ratio():
    # three candidates; candidate 0 is best small, 2 best large, 1 in the middle
    costs = [[1.0, 1.5, 3.0], [2.0, 1.8, 3.0], [4.0, 3.0, 3.1], [9.0, 6.0, 5.0]]
    parts, picks, ratios = best_cut(costs, 3)
    assert max(ratios) <= 1.04 and len(parts) <= 3
    one = best_cut(costs, 1)
    assert len(one[0]) == 1 and max(one[2]) == pytest.approx(min(
        max(costs[i][j] / min(costs[i]) for i in range(4)) for j in range(3)))
    assert scale_of([4, 9]) == pytest.approx(6.0)


def test_range_errors_name_the_estimate():
    pipe, _ = get_app("blur").build([64, 64])
    with pytest.raises(SolverError, match="range estimate for 'blur_y' must be"):
        ts.solve_schedule(pipe, SPEC, {"blur_y": ([64, 64], [32, 900])}, method="greedy")
    with pytest.raises(SolverError, match="max_classes must be a positive int"):
        ts.solve_schedule(pipe, SPEC, {"blur_y": ([64, 64], [640, 900])}, method="greedy",
                          max_classes=0)
