"""The k best schedules under the model: ``solve_schedule(..., k=5)`` (the ILP with
no-good cuts)."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.errors import SolverError

SPEC = "xeon-e5-2620v3"


def _body(s) -> str:
    return "\n".join(str(s).splitlines()[2:])         # without the provenance comments


@pytest.mark.parametrize("app", ["blur", "harris", "unsharp"])
def test_the_k_best_are_distinct_sorted_and_the_first_is_the_ilps(app):
    mod = get_app(app)
    pipe, est = mod.build()
    one = ts.solve_schedule(pipe, SPEC, est, method="ilp", time_limit=5)
    best = ts.solve_schedule(pipe, SPEC, est, k=5, time_limit=10)
    assert 2 <= len(best) <= 5
    costs = [s.provenance.predicted_cost for s in best]
    assert costs == sorted(costs) and [s.provenance.rank for s in best] == list(range(len(best)))
    assert len({_body(s) for s in best}) == len(best)
    assert _body(best[0]) == _body(one) and costs[0] == pytest.approx(
        one.provenance.predicted_cost)
    sizes = list(mod.SMALL_SIZE)
    small, _ = mod.build(sizes, **getattr(mod, "SMALL_BUILD", {}))
    inputs = mod.make_inputs(sizes, seed=0, **getattr(mod, "SMALL_BUILD", {}))
    want = ts.reference.realize(small, sizes, **inputs)
    for s in best[1:3]:
        s2 = ts.Schedule.from_json(s.to_json(), small)
        got = ts.compile(small, s2).realize(sizes, **inputs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert s2.provenance["rank"] == s.provenance.rank


def test_k_needs_the_ilp():
    pipe, est = get_app("blur").build()
    with pytest.raises(SolverError, match="k=3 takes the ILP's k best answers; method='greedy'"):
        ts.solve_schedule(pipe, SPEC, est, method="greedy", k=3)
    with pytest.raises(SolverError, match="k must be a positive int, got 0"):
        ts.solve_schedule(pipe, SPEC, est, k=0)
