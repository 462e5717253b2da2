"""The simplifier: hand-checked rewrites, the semantics it must keep, prove()."""
import math

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.analysis.intervals import Interval
from tilesolve.analysis.simplify import numeric_bounds, prove, simplify
from tilesolve.analysis.simplify_rules import const_int
from tilesolve.model import expr as E
from tilesolve.model.expr import is_const
from tilesolve.model.evaluate import evaluate

x, y, z, xo = ts.Var("x"), ts.Var("y"), ts.Var("z"), ts.Var("xo")
u = ts.cast(ts.uint8, x)
pf = ts.Param(ts.float32, "pf")


def c(t, v):
    return E.Const(t, v)


RULE_CASES = [
    (x + 0, x), (x * 1, x), (x * 0, c(ts.int32, 0)), (x - x, c(ts.int32, 0)),
    (0 + x, x), (ts.min(x, x), x), (ts.max(y, y), y),
    ((x + 1) + 2, x + 3), (3 + x, x + 3), ((x + 3) - x, c(ts.int32, 3)),
    ((x * 2) * 3, x * 6), (x * 2 + x * 3, x * 5), (x + y - x, y),
    (xo * 32 + 31 - xo * 32, c(ts.int32, 31)),
    (ts.min(x + 1, x + 5), x + 1), (ts.max(x - 1, x + 2), x + 2),
    (ts.min(ts.min(x, 3), 1), ts.min(x, 1)),
    ((xo * 32 + 31) / 32, xo), ((xo * 32 + 31) / 2, xo * 16 + 15),
    ((x * 4 + 3) % 4, c(ts.int32, 3)), ((x * 8 + y) % 4, y % 4),
    ((x / 2) / 4, x / 8), (x / 1, x), (x % 1, c(ts.int32, 0)),
    (x / 0, c(ts.int32, 0)), (x % 0, c(ts.int32, 0)),
    (x + 1 < x + 2, c(ts.bool_, True)), (x < x, c(ts.bool_, False)), (x <= x, c(ts.bool_, True)),
    (x + 1 < 5, x < 4), (x > y, y < x), (~(x < y), y <= x), (~~(x < y), x < y),
    (~(x == y), x != y),
    (ts.select(c(ts.bool_, True), x, y), x), (ts.select(x < y, z, z), z),
    (ts.select(x < x + 1, x, y), x),
    ((x < y) & c(ts.bool_, True), x < y), ((x < y) | c(ts.bool_, True), c(ts.bool_, True)),
]


@pytest.mark.parametrize("e, want", RULE_CASES)
def test_rules(e, want):
    assert simplify(e) is want, f"{e} -> {simplify(e)}, expected {want}"


@pytest.mark.parametrize("e, value", [
    (c(ts.int32, -7) / 2, -4), (c(ts.int32, -7) % 2, 1), (c(ts.int32, 7) / -2, -3),
    (c(ts.int32, 7) % -2, 1), (c(ts.int32, -7) / -2, 4), (c(ts.int32, 5) / 0, 0),
    (c(ts.uint8, 250) + 10, 4), (c(ts.uint8, 3) - 5, 254), (c(ts.int8, 127) + 1, -128),
    (ts.cast(ts.uint8, c(ts.int32, 300)), 44), (ts.cast(ts.int32, c(ts.float32, -2.7)), -2),
    (c(ts.int32, 2 ** 31 - 1) + 1, -2 ** 31),
])
def test_constant_folding_obeys_the_semantics(e, value):
    s = simplify(e)
    assert is_const(s) and s.value == value
    assert s.value == evaluate(e, {}).item()


def test_float_constants_fold_in_float32():
    s = simplify(c(ts.float32, 0.1) + c(ts.float32, 0.2))
    assert is_const(s) and s.type == ts.float32
    assert s.value == float(np.float32(0.1) + np.float32(0.2))
    assert is_const(simplify(ts.sqrt(c(ts.float32, 4.0))), 2.0)


def test_floats_are_not_reassociated():
    e = (pf + 1.0) + 2.0
    assert simplify(e) is e
    assert simplify(pf * 1.0) is pf and simplify(pf - 0.0) is pf
    assert simplify(pf + 0.0) is pf + 0.0          # -0.0 + 0.0 is +0.0: kept
    assert simplify(pf < pf) is (pf < pf)          # NaN < NaN is False


def test_wrapping_types_keep_their_wrap():
    # uint8: u + 1 may wrap to 0, so min(u + 1, u) is not u and u + 1 > u is not True
    for e in (ts.min(u + 1, u), u + 1 > u, (u * 4 + 3) / 4, (u * 4 + 3) % 4 == 3):
        s = simplify(e)
        for xv in (0, 63, 64, 100, 255):
            env = {"x": np.int32(xv)}
            assert evaluate(s, env).item() == evaluate(e, env).item(), (e, s, xv)
    assert simplify(ts.min(u + 1, u)) is not u
    # ring identities are fine in any integer type
    assert simplify((u + 1) - u) is c(ts.uint8, 1)
    assert simplify(u - 1) is u - c(ts.uint8, 1)


def test_casts():
    assert simplify(ts.cast(ts.int32, c(ts.uint8, 3))) is c(ts.int32, 3)
    assert simplify(ts.cast(ts.float32, ts.cast(ts.int32, u))) is ts.cast(ts.float32, u)
    assert simplify(ts.cast(ts.uint8, ts.cast(ts.uint16, x))) is u
    # int32 -> float32 is inexact, so float -> int of it is not the identity
    e = ts.cast(ts.int32, ts.cast(ts.float32, x))
    assert simplify(e) is e


def test_scope_decides_min_max_and_comparisons():
    scope = {"x": Interval(0, 3), "y": Interval(5, 9)}
    assert simplify(ts.min(x, y), scope) is x
    assert simplify(ts.max(x, y), scope) is y
    assert simplify(x < y, scope) is c(ts.bool_, True)
    assert simplify(ts.select(x >= y, x, z), scope) is z
    assert simplify(x % 8, scope) is x
    assert simplify(x / 4, scope) is c(ts.int32, 0)
    assert simplify(x + y, {"x": 2, "y": Interval(0, 1)}) is y + 2


def test_prove():
    scope = {"x": Interval(0, 3), "y": Interval(5, 9)}
    assert prove(x < y, scope) is True
    assert prove(y < x, scope) is False
    assert prove(x < 2, scope) is None
    assert prove(xo * 32 <= xo * 32 + 31) is True
    assert prove(x < y) is None


def test_helpers():
    assert const_int(c(ts.int32, -5)) == -5 and const_int(c(ts.bool_, True)) == 1
    assert const_int(x) is None and const_int(c(ts.float32, 1.0)) is None
    assert is_const(c(ts.int32, 2), 2) and not is_const(x)


def test_idempotent_and_shares_unchanged_nodes():
    for e in ((x - 1) / 2, (x + 3) / 2, ts.min(x * 2, y) + (x - y), (x * 8 + y * 3 + 5) % 4):
        s = simplify(e)
        assert simplify(s) is s
    e = ts.min(x, y) + 4          # already simple: the same node comes back
    assert simplify(e) is e


def test_memoized_on_shared_subexpressions():
    e = x
    for _ in range(40):           # a DAG whose tree has 2**40 leaves
        e = ts.min(e + 1, e * 2)
    s = simplify(e)
    assert s.type == ts.int32
    assert evaluate(s, {"x": np.int32(1)}) == evaluate(e, {"x": np.int32(1)})


def test_let():
    w = ts.Var("w")
    assert simplify(E.Let("w", c(ts.int32, 3), w + 1)) is c(ts.int32, 4)
    e = E.Let("w", x * y, w + w)
    s = simplify(e)
    assert isinstance(s, E.Let) and simplify(s) is s
    assert simplify(E.Let("w", x * y, y + 1)) is y + 1


def test_nan_and_inf_constants():
    s = simplify(c(ts.float32, math.inf) - c(ts.float32, math.inf))
    assert is_const(s) and math.isnan(s.value)


def test_index_constants_are_not_wrapped():
    # (x + 1) + MAX == x + MIN modulo 2**32, but min() of it must not be decided
    # as if x + MIN were the smaller: at x = -1 nothing overflows and min is x + 1
    big = 2 ** 31 - 1
    e = ts.min(x + 1 + big, x + 1)
    s = simplify(e)
    for xv in (-1, -100, -2 ** 31 + 5):
        env = {"x": np.int32(xv)}
        assert evaluate(s, env) == evaluate(e, env)
    assert simplify(s) is s


def test_a_let_shadows_the_name_a_substitution_replaces():
    """Found by the fuzz profile: ``let w = MIN in MIN + (let w = MAX in w)`` is -1, but
    substituting the outer w into the inner Let's body simplified it to 0."""
    w = ts.Var("w")
    lo, hi = E.Const(ts.int32, -2 ** 31), E.Const(ts.int32, 2 ** 31 - 1)
    e = E.Let("w", lo, lo + (E.Const(ts.int32, 0) + E.Let("w", hi, w)))
    assert simplify(e) is E.Const(ts.int32, -1)
    assert numeric_bounds(e, {}) == (-1, -1)


def test_every_rule_of_the_table_fires():
    """Each rule in the table rewrites at least one case here (a rule no case reaches
    is dead or untested), and every op of the op table has a folding rule."""
    from tilesolve.analysis import simplify as S
    from tilesolve.analysis.simplify_rules import RULES
    from tilesolve.model import ops
    fu = ts.Param(ts.float32, "fu")
    more = [
        (ts.sqrt(c(ts.float32, 4.0)), c(ts.float32, 2.0)),
        (ts.cast(ts.int32, c(ts.uint8, 7)), c(ts.int32, 7)),
        (~c(ts.bool_, False), c(ts.bool_, True)),
        (ts.min(fu, c(ts.float32, math.inf)), fu),
        (ts.max(fu, c(ts.float32, -math.inf)), fu),
        ((x % 8) % 4, x % 4),
        (E.Intrinsic("abs", (ts.cast(ts.int32, u),), ts.int32), ts.cast(ts.int32, u)),
        (ts.cast(ts.int32, ts.cast(ts.int16, u)), ts.cast(ts.int32, u)),
        (ts.select(x < y, c(ts.bool_, False), c(ts.bool_, True)), y <= x),
        (ts.cast(ts.uint8, x) < c(ts.uint8, 0), c(ts.bool_, False)),
        (E.Cast(ts.int32, x), x), (~~ts.cast(ts.bool_, x), ts.cast(ts.bool_, x)),
        (x >= y, y <= x), ((x < y) | (x < y), x < y),
        (ts.cast(ts.int32, u) / 256, c(ts.int32, 0)),
        (ts.min(ts.min(x, y), ts.min(z, x)), simplify(ts.min(ts.min(x, y), z))),
        (ts.max(ts.max(x, y + 1), x), simplify(ts.max(x, y + 1))),
    ]
    RULES.trace = fired = set()
    try:
        for e, want in RULE_CASES + more:
            S._CACHE.clear()
            assert simplify(e) is want, f"{e} -> {simplify(e)}, expected {want}"
        S._CACHE.clear()
        assert simplify(x % 5, {"x": (12, 13)}) is x - 10     # one period of % 5
        S._CACHE.clear()
        tile = {"y": (0, 1), "z": (0, 15)}                    # x + 16*y + z < x + 32
        assert simplify(x + y * 16 + z < x + 32, tile) is c(ts.bool_, True)
        assert simplify(x + y * 16 + z >= x + 32, tile) is c(ts.bool_, False)
    finally:
        RULES.trace = None
        S._CACHE.clear()
    assert RULES.names() - fired == set()
    keys = set(RULES.by_key)
    for name, o in ops.OPS.items():
        key = name if o.kind not in ("math", "reinterpret") else "call:" + name
        assert key in keys, f"the op {name} has no rule in the simplifier's table"


def test_every_rule_of_the_upper_mode_fires():
    """The upper-bound mode's own rules each rewrite a tile extent here, and the bound
    of the rewritten extent is the hand-checked constant (``const_upper``)."""
    from tilesolve.analysis import simplify as S
    from tilesolve.analysis.simplify_rules import UPPER
    W = ts.Var("W")
    base = ts.min(xo * 32, W - 32)
    cases = [
        (ts.min(xo * 32 + 31, W - 1) - xo * 32 + 1, 32),          # push_into_minmax
        ((base + 7) / 8 - base / 8 + 5, 6),                       # push_into_div, unfloor
        (ts.max(base / 4, (base + 3) / 4) - base / 4, 1),          # minmax_of_divs
        ((ts.min(xo * 32 + 31, W - 1) + 1) / 2 - xo * 16 + 2, 18),
    ]
    UPPER.trace = fired = set()
    try:
        for e, bound in cases:
            S._MEMOS[id(UPPER)].clear()
            assert S.const_upper(e) == bound, f"{e}: {S.const_upper(e)}, expected {bound}"
    finally:
        UPPER.trace = None
    assert {fn.__name__ for rules in UPPER.by_key.values() for _, fn in rules} == fired
    tail = ts.min(xo * 32 + 31, W - 1) - xo * 32                # ordinary: not distributed
    assert simplify(tail).op == "sub" and simplify(tail, rules=UPPER).op == "min"
    assert S.const_upper(W / 8) is None and S.const_upper(W - xo * 32) is None


def test_float_min_and_max_keep_their_operand_order():
    """min(0.0, -0.0) is 0.0 and min(-0.0, 0.0) is -0.0 (numpy's rule, and NaNs pick a
    side too), so a float min or max with a constant first is not reordered."""
    fu = ts.Param(ts.float32, "fu")
    zero = c(ts.float32, 0.0)
    for op in (ts.min, ts.max):
        e = op(zero, fu)
        assert simplify(e) is e
        for v in (-0.0, 0.0, float("nan")):
            got = evaluate(simplify(e), {"fu": np.float32(v)})
            want = evaluate(e, {"fu": np.float32(v)})
            assert np.signbit(got) == np.signbit(want) and np.isnan(got) == np.isnan(want)
    assert simplify(ts.min(c(ts.int32, 3), x)) is simplify(ts.min(x, c(ts.int32, 3)))
