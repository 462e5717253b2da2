"""Partial schedules: ``solve_schedule(pipe, spec, fixed=s)`` keeps every choice of the
Funcs ``s`` schedules and completes the rest, with every method."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.errors import ScheduleError, SolverError

SPEC = "xeon-e5-2620v3"
x, y = ts.Var("x"), ts.Var("y")
xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")


def _lines(s, funcs) -> list:
    return [ln for ln in str(s).splitlines() if any(ln.startswith(f"s[{f}]") for f in funcs)]


def _harris_fixed(pipe):
    fx = ts.Schedule(pipe)
    fx["output"].tile(x, y, xo, yo, xi, yi, 64, 32).parallel(yo).vectorize(xi, 16)
    fx["Sxx"].compute_at(pipe.funcs["output"], xo).vectorize(x, 16)
    fx["gray"].compute_root().parallel(y)
    return fx


@pytest.mark.parametrize("method", ["greedy", "ilp", "beam", "auto"])
def test_fixed_choices_are_kept_and_the_rest_is_solved(method):
    mod = get_app("harris")
    pipe, est = mod.build()
    fx = _harris_fixed(pipe)
    s = ts.solve_schedule(pipe, SPEC, est, method=method, fixed=fx, time_limit=5)
    pinned = ("output", "Sxx", "gray")
    assert _lines(s, pinned) == _lines(fx, pinned)
    others = [ln for ln in str(s).splitlines() if ln.startswith("s[")]
    assert len(others) > len(_lines(fx, pinned))          # the solver scheduled the rest
    sizes = list(mod.SMALL_SIZE)
    small, _ = mod.build(sizes)
    inputs = mod.make_inputs(sizes, seed=0)
    got = ts.compile(small, ts.Schedule.from_json(s.to_json(), small)).realize(sizes, **inputs)
    np.testing.assert_allclose(got, ts.reference.realize(small, sizes, **inputs),
                               rtol=1e-4, atol=1e-4)


def test_a_fixed_func_is_never_fused_or_inlined_by_the_solver():
    mod = get_app("blur")
    pipe, est = mod.build()
    free = ts.solve_schedule(pipe, SPEC, est, method="greedy")
    assert "compute_at" in str(free)                       # blur_x is fused when free
    fx = ts.Schedule(pipe)
    fx["blur_x"].compute_root().vectorize(x, 8)
    s = ts.solve_schedule(pipe, SPEC, est, method="greedy", fixed=fx)
    assert _lines(s, ["blur_x"]) == ["s[blur_x].compute_root().vectorize(x, 8)"]
    assert "compute_at" not in str(s)


def test_an_impossible_fixed_choice_names_it():
    """Sxx fixed at loop y of output, whose schedule is left to the solver: the solver
    tiles output, so loop y is gone, and the error names the fixed directive."""
    mod = get_app("harris")
    pipe, est = mod.build()
    fx = ts.Schedule(pipe)
    fx["Sxx"].compute_at(pipe.funcs["output"], y)
    with pytest.raises(ScheduleError, match=r"the fixed schedule: directive 0 \(compute_at on "
                                            r"Func Sxx\)"):
        ts.solve_schedule(pipe, SPEC, est, method="greedy", fixed=fx)
    with pytest.raises(SolverError, match="fixed must be a ts.Schedule"):
        ts.solve_schedule(pipe, SPEC, est, method="greedy", fixed="output")
    with pytest.raises(SolverError, match="different Pipeline"):
        ts.solve_schedule(pipe, SPEC, est, method="greedy", fixed=ts.Schedule(mod.build()[0]))
