"""The whole app suite compiled for the CPU, against the reference evaluator.

For every app at its small size (``SMALL_SIZE``, ``SMALL_BUILD`` parameters),
``ts.compile(pipe, schedule).realize`` must equal ``ts.reference.realize``
under four schedules:

* ``naive``: ``ts.compile(pipe)`` with no schedule (every Func at root);
* ``hand``: the app module's ``hand_schedule(pipe)`` (Halide's app schedule);
* ``greedy``/``ilp``: ``ts.solve_schedule(pipe, "host", ...)`` with the
  estimates of the paper size (the ILP under a 2 s time limit);

and once more under the hand schedule at a size that no tile divides
(``SMALL_SIZE`` + (3, 5) in x and y).

Comparison (``assert_matches``): integer outputs exactly, except pipelines
that call transcendental math (exp, log, pow, ...), where the compiled code
and numpy use different math libraries that differ by an ulp or two: there
integers may differ by 1 on at most 1% of the elements.  Float outputs:
``|got - want| <= 1e-6 + 1e-5 |want|`` (the compiler never reassociates, so
what differs is the math library, amplified by a few operations).

Compiled code is reused within this module when two schedules print the same
(the ILP often returns the greedy answer), and the LLVM object cache makes
reruns cheap; the apps with big pipelines are marked ``slow``.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app, list_apps
from tilesolve.model import expr as E
from tilesolve.model.pipeline import definition_exprs
from tilesolve.model.visit import walk

FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6
TRANSCENDENTAL = {"exp", "log", "pow", "sin", "cos", "tan", "atan2", "sqrt"}
MODES = ("naive", "hand", "greedy", "ilp")
ILP_TIME_LIMIT = 2.0
ODD = (3, 5)
# Apps whose lowering + LLVM compile takes tens of seconds per schedule.
SLOW_APPS = {"camera_pipe", "local_laplacian", "interpolate", "nl_means", "lens_blur"}

# Known bugs in lowering/codegen/solver: strict xfails that flip when fixed (none today).
XFAIL: dict = {}


def _params(app) -> dict:
    return dict(getattr(app, "SMALL_BUILD", {}))


@functools.lru_cache(maxsize=None)
def _setup(name: str, sizes: tuple):
    """(pipe, paper estimates, inputs, reference output) at ``sizes``."""
    app = get_app(name)
    params = _params(app)
    pipe, _ = app.build(list(sizes), **params)
    _, paper_est = app.build(None, **params)
    inputs = app.make_inputs(list(sizes), seed=0, **params)
    ref = ts.reference.realize(pipe, list(sizes), **inputs)
    return pipe, paper_est, inputs, ref


def _schedule(name: str, pipe, est, mode: str):
    if mode == "naive":
        return None
    if mode == "hand":
        return get_app(name).hand_schedule(pipe)
    return ts.solve_schedule(pipe, "host", estimates=est, method=mode,
                             time_limit=ILP_TIME_LIMIT)


_COMPILED: dict = {}


def _compiled(pipe, sched):
    """``ts.compile``, reusing the result for a schedule that prints the same."""
    key = (id(pipe), None if sched is None else
           "\n".join(ln for ln in str(sched).splitlines() if not ln.startswith("#")))
    if key not in _COMPILED:
        _COMPILED[key] = ts.compile(pipe, sched)
    return _COMPILED[key]


def uses_transcendental_math(pipe) -> bool:
    for f in pipe.funcs.values():
        for d in f.definitions():
            for e in definition_exprs(d):
                if any(isinstance(n, E.Intrinsic) and n.name in TRANSCENDENTAL for n in walk(e)):
                    return True
    return False


def assert_matches(got, want, int_slack: int = 0):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    assert np.all(np.isfinite(want.astype(np.float64)))
    assert np.unique(want).size > 10, "the output should vary for the comparison to mean much"
    if np.issubdtype(want.dtype, np.integer):
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert diff.max() <= int_slack, f"max integer difference {diff.max()}"
        assert np.count_nonzero(diff) <= 0.01 * diff.size, f"{np.count_nonzero(diff)} differ"
    else:
        np.testing.assert_allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


def _check(name: str, mode: str, sizes: tuple):
    pipe, est, inputs, ref = _setup(name, sizes)
    sched = _schedule(name, pipe, est, mode)
    if sched is not None:
        sched.validate()
    got = _compiled(pipe, sched).realize(list(sizes), **inputs)
    assert_matches(got, ref, 1 if uses_transcendental_math(pipe) else 0)


def _case(name: str, mode: str, tag: str = ""):
    marks = []
    if name in SLOW_APPS:
        marks.append(pytest.mark.slow)
    reason = XFAIL.get((name, tag or mode))
    if reason:
        marks.append(pytest.mark.xfail(reason=reason, strict=True))
    return pytest.param(name, mode, marks=marks, id=f"{name}-{tag or mode}")


@pytest.mark.parametrize("name,mode", [_case(n, m) for n in list_apps() for m in MODES])
def test_compiled_app_matches_reference(name, mode):
    _check(name, mode, tuple(get_app(name).SMALL_SIZE))


def _odd_size(name: str) -> tuple:
    s = list(get_app(name).SMALL_SIZE)
    return tuple([s[0] + ODD[0], s[1] + ODD[1]] + s[2:])


@pytest.mark.parametrize("name,mode", [_case(n, "hand", "hand_odd_size") for n in list_apps()])
def test_hand_schedule_at_a_size_no_tile_divides(name, mode):
    _check(name, mode, _odd_size(name))


def test_every_app_has_a_legal_hand_schedule_at_paper_parameters():
    """The hand schedules also hold for the paper's build parameters (more levels,
    stages) and print as code that rebuilds them."""
    for name in list_apps():
        app = get_app(name)
        pipe, _ = app.build()
        s = app.hand_schedule(pipe).validate()
        assert not all(s.is_default(f) for f in pipe.funcs), name
        again = ts.Schedule.from_json(s.to_json(), pipe)
        assert str(again) == str(s)


def test_the_comparison_can_fail():
    """assert_matches rejects a float off by 1e-4 (relative) and an integer off by one."""
    want = np.linspace(0, 1, 100, dtype=np.float32)
    got = want.copy()
    got[7] = np.float32(got[7] * (1 + 1e-4))
    with pytest.raises(AssertionError):
        assert_matches(got, want)
    iwant = np.arange(100, dtype=np.uint16)
    igot = iwant.copy()
    igot[3] += 1
    with pytest.raises(AssertionError):
        assert_matches(igot, iwant)
    assert_matches(igot, iwant, int_slack=1)
