"""``solve_schedule(pipe, spec)`` with no estimates: outputs get the default sizes,
inputs read through a boundary condition the output's, Params their defaults."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import APPS
from tilesolve.solver.problem import DEFAULT_EXTENT, DEFAULT_INNER_EXTENT, Problem
from tilesolve.specs import load_spec

SPEC = "xeon-e5-2620v3"


@pytest.mark.parametrize("name", sorted(APPS))
def test_every_app_solves_without_estimates_and_runs_at_its_small_size(name):
    mod = APPS[name]
    params = getattr(mod, "SMALL_BUILD", {}) or {}
    sizes = list(mod.SMALL_SIZE)
    pipe, _ = mod.build(sizes, **params)
    s = ts.solve_schedule(pipe, SPEC, method="greedy")
    out = pipe.output_names[0]
    assert s.provenance.predicted_cost > 0
    p = Problem(pipe, load_spec(SPEC), None)
    dims = pipe.funcs[out].dimensions()
    assert p.estimates[out] == [DEFAULT_EXTENT if d < 2 else DEFAULT_INNER_EXTENT
                                for d in range(dims)]
    if name in ("blur", "harris", "camera_pipe", "bilateral_grid"):
        inputs = mod.make_inputs(sizes, seed=0, **params)
        got = ts.compile(pipe, s).realize(sizes, **inputs)
        want = ts.reference.realize(pipe, sizes, **inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
