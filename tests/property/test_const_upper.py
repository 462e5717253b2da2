"""Soundness of ``const_upper`` and of the upper-bound simplification mode.

Tile-extent-like expressions: a chain of steps (``+ c``, ``/ k``, ``* k``, ``min``
with a run-time size, ``% k``, rounding down to a multiple) applied to a tile's start ``base`` and to its end
``base + tile - 1``, end minus start plus a constant, as lowering forms a
region's extent; ``base`` is itself a clamped tile start over the names.  At
random values of the names, the expression never exceeds its constant upper bound
(a buffer sized by a bound too small would be written out of bounds), and the
mode's rewrite of it has the same value.  Boxes of clamped reads (a tile's taps,
each clamped to ``[0, W - 1]`` or on one side only) never exceed the bound
``clamped_extent_upper`` gives them.
"""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tilesolve.analysis.simplify import clamped_extent_upper, const_upper, simplify
from tilesolve.analysis.simplify_rules import UPPER
from tilesolve.model import expr as E
from tilesolve.model import types as T
from tilesolve.model.evaluate import evaluate

xo, W, m = E.Var("xo"), E.Var("W"), E.Var("m")
NAMES = ("xo", "W", "m")


def c(v):
    return E.Const(T.int32, v)


@st.composite
def bases(draw):
    t = draw(st.sampled_from([1, 2, 8, 16, 32]))
    start = xo * t + draw(st.sampled_from([c(0), m, c(3)]))
    if draw(st.booleans()):
        start = E.min_(start, W - t)
    return start, t


@st.composite
def steps(draw):
    kind = draw(st.sampled_from(["add", "div", "div", "mul", "round", "min", "max", "mod"]))
    k = draw(st.sampled_from([1, 2, 3, 4, 8]))
    return kind, (c(draw(st.integers(-9, 9))) if kind == "add" else
                  W - draw(st.integers(0, 40)) if kind in ("min", "max") else
                  (c(k), c(k * draw(st.integers(1, 3)))) if kind == "round" else c(k))


def _apply(e, chain):
    for kind, v in chain:
        e = {"add": lambda: e + v, "div": lambda: e / v, "mul": lambda: e * v,
             "min": lambda: E.min_(e, v), "max": lambda: E.max_(e, v),
             "mod": lambda: e % v, "round": lambda: e / v[0] * v[1]}[kind]()
    return e


@st.composite
def extents(draw):
    base, t = draw(bases())
    chain = draw(st.lists(steps(), max_size=4))
    hi = _apply(base + (t - 1), chain)
    lo = _apply(base, draw(st.sampled_from([chain, chain[:-1], chain[1:],
                                            draw(st.lists(steps(), max_size=3))])))
    if draw(st.booleans()):
        hi, lo = hi + draw(st.integers(-2, 3)), lo
    else:
        hi, lo = hi, lo - draw(st.integers(-2, 3))
    return hi - lo


def _value(e, env) -> int:
    return int(np.asarray(evaluate(e, {k: np.int32(v) for k, v in env.items()})).item())


@given(extents(), st.lists(st.tuples(*(st.integers(-3000, 3000) for _ in NAMES)),
                           min_size=10, max_size=10))
def test_const_upper_is_never_exceeded(e, points):
    bound = const_upper(e)
    pushed = simplify(e, rules=UPPER)
    for p in points:
        env = dict(zip(NAMES, p))
        v = _value(e, env)
        assert _value(pushed, env) == v, f"{e} = {v} but the upper mode's {pushed} differs at {env}"
        assert bound is None or v <= bound, f"{e} = {v} at {env} exceeds its bound {bound}"


def test_the_strategy_draws_bounded_extents():
    """Most drawn tile extents have a constant bound (the test above checks something)."""
    found = []

    @given(extents())
    def draw(e):
        found.append(const_upper(e) is not None)
    draw()
    assert sum(found) >= len(found) // 4


# -- boxes of clamped reads (``clamped_extent_upper``) ---------------------------------
@st.composite
def clamped_boxes(draw):
    """A tile's box of reads clamped to ``[0, W - 1]`` (``repeat_edge``), as lowering
    writes it: the largest of the taps past the tile's end minus the smallest of those
    before its start, each tap clamped (or, as the simplifier leaves some, clamped on
    one side only), plus one."""
    base, t = draw(bases())
    taps = draw(st.lists(st.integers(-4, 4), min_size=1, max_size=4))

    def clamp(e):
        form = draw(st.sampled_from(["both", "both", "low", "high", "none"]))
        if form in ("both", "low"):
            e = E.max_(e, c(0))
        if form in ("both", "high"):
            e = E.min_(e, W - 1)
        return e
    hi = lo = None
    for d in taps:
        a, b = clamp(base + (t - 1 + d)), clamp(base + d)
        hi = a if hi is None else E.max_(hi, a)
        lo = b if lo is None else E.min_(lo, b)
    return hi - lo + 1


@given(clamped_boxes(), st.lists(st.tuples(st.integers(0, 3000), st.integers(-3000, 3000),
                                           st.integers(-3000, 3000)), min_size=10, max_size=10))
def test_clamped_extent_upper_is_never_exceeded(e, points):
    """The bound of a box of clamped reads (``xo``, a block loop's variable, at least 0;
    ``W`` and ``m`` anything) is never exceeded."""
    bound = clamped_extent_upper(e, {"xo": 0})
    for p in points:
        env = dict(zip(NAMES, p))
        v = _value(e, env)
        assert bound is None or v <= bound, f"{e} = {v} at {env} exceeds its bound {bound}"


def test_a_repeat_edge_box_is_bounded_by_its_taps():
    """``max(clamp(b + 31), clamp(b + 32)) - min(clamp(b - 1), clamp(b)) + 1``: 34, with
    ``b`` a tile's shifted start and the clamp's limit a run-time extent."""
    b = E.min_(xo * 32, m - 32)

    def g(e):
        return E.min_(E.max_(e, c(0)), W - 1)
    e = E.max_(g(b + 31), g(b + 32)) - E.min_(g(b - 1), E.max_(b, c(0))) + 1
    assert const_upper(e) is None
    assert clamped_extent_upper(e) == 34


def test_the_strategy_draws_bounded_clamped_boxes():
    """Many drawn boxes have a bound (the soundness test above checks something); those
    clamped on different sides at different taps may have none."""
    found = []

    @given(clamped_boxes())
    def draw(e):
        found.append(clamped_extent_upper(e, {"xo": 0}) is not None)
    draw()
    assert sum(found) >= len(found) // 5
