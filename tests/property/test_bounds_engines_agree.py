"""The interval engine's numeric fast paths agree with its symbolic mode.

``bounds_of`` (analysis/intervals/bounds.py: Interval objects, symbolic endpoints
allowed) is the reference.  On numeric scopes, the solvers' fast path
(``FastBounder``: plain number pairs), its vectorized form over many scopes at once
(``VecBounder``: numpy arrays; it refuses what it does not vectorize) must give the
very same interval, not just a sound one: they apply the op table's interval rules
(analysis/intervals/numeric.py).  (The simplifier's bounds are those of the
simplified Expr, often tighter: their soundness is test_interval_soundness's.)"""
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies import FUNC_BOUNDS, TYPES, exprs, scopes

from tilesolve.analysis.fastbounds import FastBounder
from tilesolve.analysis.intervals import bounds_of
from tilesolve.analysis.vecbounds import Unsupported, VecBounder
from tilesolve.model.types import bool_


def _pair(iv):
    return (-math.inf if iv.lo is None else iv.lo, math.inf if iv.hi is None else iv.hi)


def _numeric(scope):
    return {k: _pair(v) for k, v in scope.items()}


@given(st.data())
def test_fast_numeric_bounds_equal_the_symbolic_engines(data):
    e = data.draw(exprs(data.draw(st.sampled_from(TYPES + (bool_,)))))
    scope = data.draw(scopes(e))
    want = _pair(bounds_of(e, scope, func_bounds=FUNC_BOUNDS))
    assert FastBounder(_numeric(scope), FUNC_BOUNDS).bounds(e) == want, e


@given(st.data())
def test_vectorized_bounds_equal_the_fast_path_in_every_lane(data):
    t = data.draw(st.sampled_from(TYPES))
    e = data.draw(exprs(t))
    k = 4
    lanes = [data.draw(scopes(e)) for _ in range(k)]
    if not lanes[0]:
        return
    arrays = {n: (np.array([float(_pair(s[n])[0]) for s in lanes]),
                  np.array([float(_pair(s[n])[1]) for s in lanes])) for n in lanes[0]}
    try:
        lo, hi = VecBounder(arrays, k, FUNC_BOUNDS).bounds(e)
    except Unsupported:
        return                                  # falls back to the fast path per scope
    for i, s in enumerate(lanes):
        want = FastBounder(_numeric(s), FUNC_BOUNDS).bounds(e)
        got = (np.broadcast_to(lo, (k,))[i], np.broadcast_to(hi, (k,))[i])
        assert got == tuple(float(v) for v in want), (e, i, got, want)
