"""The solvers' boxes over a menu of scopes equal the interval engine's, scope by scope.

``CallSpans`` (analysis/intervals/spans.py) bounds a call's arguments once, symbolic
in the names whose intervals vary between scopes, and evaluates the endpoints over
arrays of scopes; nodes whose symbolic rule is not the numeric one are bounded per
scope with the numeric rules.  So each scope's box must be the very interval
``bounds_of`` finds in that scope (analysis/intervals/bounds.py, numeric scopes), not
just a sound one, wherever int32 index arithmetic does not overflow (what both
assume)."""
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies import FUNC_BOUNDS, LUT, TYPES, VARS, exprs, scopes

import tilesolve as ts
from tilesolve.analysis.intervals import Interval, bounds_of
from tilesolve.analysis.intervals.spans import CallSpans
from tilesolve.model import expr as E
from tilesolve.model.types import bool_, int32
from tilesolve.model.visit import walk

LIMITS = (int32.min_value(), int32.max_value())
PROBE = ts.Func("probe")          # a callee the random expressions never call
PROBE[VARS[0]] = VARS[0]


def _pair(iv):
    return (-math.inf if iv.lo is None else float(iv.lo),
            math.inf if iv.hi is None else float(iv.hi))


def _near_overflow(e, scope) -> bool:
    """Does an int32 subexpression of ``e`` reach the end of the type in ``scope`` (where
    the numeric rules wrap and the symbolic ones assume no overflow)?"""
    for n in walk(e):
        if getattr(n, "type", None) == int32 and not isinstance(n, E.Let):
            lo, hi = _pair(bounds_of(n, scope, func_bounds=FUNC_BOUNDS))
            if (math.isfinite(lo) and lo <= LIMITS[0]) or (math.isfinite(hi) and hi >= LIMITS[1]):
                return True
    return False


@given(st.data())
def test_call_boxes_over_scopes_equal_the_engine_in_each_scope(data):
    e = data.draw(exprs(data.draw(st.sampled_from(TYPES + (bool_,)))))
    k = 4
    varying = [v.name for v in VARS]
    base = data.draw(scopes(e))
    lanes = []
    for _ in range(k):
        lane = dict(base)
        lane.update({n: iv for n, iv in data.draw(scopes(e)).items() if n in varying})
        lanes.append(lane)
    if any(_near_overflow(e, lane) for lane in lanes):
        return
    used = [n for n in varying if n in base]
    constant = {n: iv for n, iv in base.items() if n not in used}
    values = {n: tuple(np.array([float(getattr(lane[n], end)) for lane in lanes])
                       for end in ("lo", "hi")) for n in used}
    other = E.Call(PROBE, (E.Const(int32, 7),))
    spans = CallSpans((E.Call(PROBE, (e,)), other), constant, used, FUNC_BOUNDS)
    (lo, hi), = spans.boxes(values, k)["probe"]
    for i, lane in enumerate(lanes):
        want = _pair(bounds_of(e, lane, func_bounds=FUNC_BOUNDS))
        want = (min(want[0], 7.0), max(want[1], 7.0))       # the union with the call at 7
        assert (lo[i], hi[i]) == want, (e, i, (lo[i], hi[i]), want)


def test_calls_to_one_callee_are_united_per_dimension():
    """Every call contributes (their union's lower end: the least of their lower ends),
    and a clamp's bounds follow each scope's interval."""
    x, y = VARS[0], VARS[1]
    clamped = E.binop("max", E.binop("min", y * 2, E.Const(int32, 50)), E.Const(int32, 0))
    calls = (E.Call(LUT, (x - 2,)), E.Call(LUT, (x + 3,)), E.Call(LUT, (clamped,)))
    spans = CallSpans(calls, {}, ["x", "y"])
    values = {"x": (np.array([0.0, 10.0]), np.array([5.0, 20.0])),
              "y": (np.array([-4.0, 20.0]), np.array([3.0, 40.0]))}
    (lo, hi), = spans.boxes(values, 2)["lut"]
    assert list(lo) == [-2.0, 8.0] and list(hi) == [8.0, 50.0]


def test_a_remainder_is_bounded_in_each_scope():
    """``x % 4`` is exact per scope: one point where x is, a period where it spans one."""
    x = VARS[0]
    spans = CallSpans((E.Call(LUT, (x % 4,)),), {}, ["x"])
    values = {"x": (np.array([5.0, 8.0, 0.0]), np.array([5.0, 10.0, 63.0]))}
    (lo, hi), = spans.boxes(values, 3)["lut"]
    assert list(lo) == [1.0, 0.0, 0.0] and list(hi) == [1.0, 2.0, 3.0]
    for i in range(3):
        want = bounds_of(x % 4, {"x": Interval(values["x"][0][i], values["x"][1][i])})
        assert (lo[i], hi[i]) == _pair(want)
