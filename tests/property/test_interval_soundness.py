"""Soundness of bounds_of and of the simplifier, by sampling points.

Random typed expressions (every node kind: div/mod by negative, zero or
unknown divisors, wrapping casts, select, min/max, math, calls, Let) over Vars
with random Intervals; at random points inside, the value ``evaluate`` computes
lies inside ``bounds_of`` (for every subexpression, NaN excepted), and
``simplify(e)`` evaluates to the same value, in the upper-bound mode too (int32
index arithmetic assumed not to overflow, as the simplifier documents).
"""
import math

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import (FUNC_BOUNDS, TYPES, call_hook, exprs, int32_overflows, points, scopes,
                        subvalues)

import tilesolve as ts
from tilesolve.analysis.intervals import Interval, bounds_of
from tilesolve.analysis.simplify import simplify
from tilesolve.analysis.simplify_rules import UPPER
from tilesolve.model import expr as E
from tilesolve.model.evaluate import evaluate
from tilesolve.model.types import bool_, int32

ALL = TYPES + (bool_,)


def _value(e, env):
    return np.asarray(evaluate(e, env, call_hook)).item()


def _is_nan(v):
    return isinstance(v, float) and v != v


def _inside(iv: Interval, v) -> bool:
    return (iv.lo is None or iv.lo <= v) and (iv.hi is None or v <= iv.hi)


def _check_tree(e, env, scope) -> bool:
    """Assert every NaN-free subexpression's value is in its bounds; returns 'has NaN'."""
    if isinstance(e, E.Let):
        nan = _check_tree(e.value, env, scope)
        inner_env = dict(env)
        inner_env[e.name] = evaluate(e.value, env, call_hook)
        inner_scope = dict(scope)
        inner_scope[e.name] = bounds_of(e.value, scope, func_bounds=FUNC_BOUNDS)
        nan = _check_tree(e.body, inner_env, inner_scope) or nan
    else:
        nan = False
        for f in e._fields:
            v = getattr(e, f)
            for k in ((v,) if isinstance(v, E.Expr) else v if isinstance(v, tuple) else ()):
                if isinstance(k, E.Expr):
                    nan = _check_tree(k, env, scope) or nan
    v = _value(e, env)
    if _is_nan(v):
        return True
    if not nan:
        iv = bounds_of(e, scope, func_bounds=FUNC_BOUNDS)
        assert _inside(iv, v), f"{e} = {v} at {env} is outside its bounds {iv} (scope {scope})"
    return nan


@given(st.data())
def test_bounds_contain_every_value(data):
    for _ in range(3):
        e = data.draw(exprs(data.draw(st.sampled_from(ALL))))
        scope = data.draw(scopes(e))
        for _ in range(4):
            _check_tree(e, data.draw(points(scope)), scope)


@given(st.data())
def test_symbolic_bounds_contain_values(data):
    """Vars range over ``[xo*k + a, xo*k + b]``: the symbolic bounds, evaluated, contain the value."""
    e = data.draw(exprs(data.draw(st.sampled_from(ALL)), depth=3))
    scope = data.draw(scopes(e))
    xo = ts.Var("xo")
    k = data.draw(st.sampled_from([1, 2, 8, 32]))
    for v in ("x", "y", "z"):
        if v in scope:
            a = data.draw(st.integers(-40, 40))
            b = data.draw(st.integers(a, a + 40))
            scope[v] = Interval(xo * k + a, xo * k + b)
    iv = bounds_of(e, scope, func_bounds=FUNC_BOUNDS)
    for _ in range(3):
        xov = data.draw(st.integers(-50, 50))
        concrete = {n: (Interval(*(evaluate(E.as_expr(q), {"xo": np.int32(xov)}).item()
                                   for q in (s.lo, s.hi))) if n in "xyz" else s)
                    for n, s in scope.items()}
        env = data.draw(points(concrete))
        env["xo"] = np.int32(xov)
        assume(not int32_overflows(e, env))
        v = _value(e, env)
        if _is_nan(v) or any(_is_nan(x) for _, x, _, _ in subvalues(e, env)):
            continue
        ends = [None if q is None else np.asarray(evaluate(E.as_expr(q), env)).item()
                for q in (iv.lo, iv.hi)]
        # symbolic endpoints are index arithmetic too: assumed not to overflow
        assume(not any(isinstance(q, E.Expr) and int32_overflows(q, env) for q in (iv.lo, iv.hi)))
        assert _inside(Interval(*ends), v), f"{e} = {v}: outside {iv} = {ends} at {env}"


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


@given(st.data())
def test_simplify_preserves_values(data):
    for _ in range(3):
        _check_simplify(data)


def _check_simplify(data):
    e = data.draw(exprs(data.draw(st.sampled_from(ALL))))
    scope = data.draw(scopes(e))
    s = simplify(e)
    ss = simplify(e, scope)
    su = simplify(e, rules=UPPER)
    assert s.type == e.type and ss.type == e.type
    assert simplify(s) is s, f"not idempotent: {e} -> {s} -> {simplify(s)}"
    for _ in range(4):
        env = data.draw(points(scope))
        if int32_overflows(e, env):
            continue
        want = _value(e, env)
        assert _same(_value(s, env), want), f"{e} = {want} but simplified {s} = {_value(s, env)}"
        assert _same(_value(ss, env), want), f"{e} = {want} but {ss} (scope {scope}) differs"
        if not int32_overflows(su, env):    # the mode's rewrites are index arithmetic too
            assert _same(_value(su, env), want), f"{e} = {want} but the upper mode's {su} differs"


@given(st.data())
def test_simplified_bounds_are_sound(data):
    """The bounds the simplifier keeps (it decides min/max/compare with them) are sound."""
    from tilesolve.analysis.simplify import numeric_bounds
    e = data.draw(exprs(data.draw(st.sampled_from((bool_,) + tuple(t for t in TYPES
                                                                   if not t.is_float())))))
    scope = data.draw(scopes(e))
    lo, hi = numeric_bounds(e, scope)
    for _ in range(4):
        env = data.draw(points(scope))
        if int32_overflows(e, env):      # any int32 + - * inside, a compare's too
            continue
        v = _value(e, env)
        assert lo <= v <= hi, f"{e} = {v} outside simplifier bounds [{lo}, {hi}]"



def test_int32_full_range_arithmetic_wraps_soundly():
    x = ts.Var("x")
    iv = bounds_of(x + 1, {"x": Interval(0, int32.max_value())})
    assert iv.lo == int32.min_value() and iv.hi == int32.max_value()
