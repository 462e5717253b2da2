"""The simplifier's rewrite rules: one table, each rule a pattern and a function.

``simplify.py`` visits an expression bottom-up; at each node, with its operands
already simplified, it tries the rules filed under the node's key (``"add"``,
``"min"``, ``"Not"``, ``"call:abs"``...) in the order below and takes the first
replacement.  A rule function gets the simplifier ``s`` (``s.b(e)``: the numeric
bounds of an operand; ``s.linear(e)``: its linear form) and the pattern's bindings,
and returns:

* an Expr, which is simplified again (so a rule may leave work to other rules);
* ``Done(expr, bounds)``, a final result with bounds the rule computed itself;
* None, to decline.

When no rule fires, the node is kept and its bounds come from the op table's interval
rule (``intervals.numeric.node_bounds``).  See ``simplify.py`` for what the rules
assume about overflow and floats.

``UPPER`` is a mode: ``RULES`` with rules of its own in front, which distribute
``+``/``-`` over ``min``/``max`` and into floor divisions by constants, so that the
names of a tile extent cancel and its constant upper bound shows
(``simplify.const_upper``).  Distributing can grow an expression, so ordinary
simplification does not use them.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..model import expr as E
from ..model import ops
from ..model import types as T
from ..model.evaluate import eval_scalar
from ..model.visit import walk
from .intervals import linear as _L
from .intervals import numeric as N
from .pattern import K, Pat, RuleTable, W, cast, intrinsic, not_, op, select

INF = math.inf
RULES = RuleTable()
COMMUTATIVE = ("add", "mul", "min", "max", "eq", "ne", "and", "or", "bitand", "bitor", "bitxor")
CMP = ("lt", "le", "eq", "ne")
PY_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
          "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


class Done(NamedTuple):
    """A rule's final result: not simplified again; ``bounds`` replace the op table's."""
    expr: E.Expr
    bounds: tuple


def rule(pattern: Pat, keys=None, table: RuleTable = RULES):
    def deco(fn):
        table.add(pattern, fn, keys)
        return fn
    return deco


def const_int(e):
    """The Python int of an integer or bool Const, else None."""
    if type(e) is E.Const and not e.type.is_float():
        return int(e.value)
    return None


def index_type(t) -> bool:
    """int32/int64: index arithmetic, assumed (as in Halide) never to overflow."""
    return t.code == "int" and t.bits in (32, 64)


def _int(e) -> bool:
    return not e.type.is_float()


def _ct(t, v) -> E.Const:
    return E.Const(t, v)


def _bool(v) -> E.Const:
    return E.Const(T.bool_, v)


def _decided(bounds):
    """The value an integer interval pins down, else None."""
    return bounds[0] if bounds[0] == bounds[1] else None


def B(a: Pat, b: Pat, bind: str) -> Pat:
    """Any binary operator (the rule reads ``op`` off the bound node)."""
    return Pat(None, (a, b), bind, lambda e: type(e) is E.BinOp)


def above(name: str, n: int) -> Pat:
    """An integer constant greater than ``n``, bound to ``name``."""
    return K(name, lambda e: int(e.value) > n)


x, y = W("x"), W("y")
xi, yi = W("x", _int), W("y", _int)
c, k = K("c"), K("k")
BINOPS = ops.of_kind("arith", "bits", "cmp", "logic")
MATH = tuple("call:" + n for n in ops.of_kind("math", "reinterpret"))


# -- constant folding and canonical order ------------------------------------------------
@rule(Pat(None, (K("a"), K("b")), "e"), keys=BINOPS)
def fold_binop(s, a, b, e):
    t = a.type
    if not t.is_float() and e.op in ("add", "sub", "mul", "min", "max"):
        p, q = int(a.value), int(b.value)
        v = {"add": p + q, "sub": p - q, "mul": p * q, "min": min(p, q), "max": max(p, q)}[e.op]
        return _ct(t, v)
    if not t.is_float() and e.op in PY_CMP:
        return _bool(PY_CMP[e.op](int(a.value), int(b.value)))
    if e.op in ("and", "or"):
        return _bool((a.value and b.value) if e.op == "and" else (a.value or b.value))
    return _ct(e.type, eval_scalar(e))


@rule(Pat(None, (c, x), "e"), keys=COMMUTATIVE)
def constant_to_the_right(s, c, x, e):
    if e.op in ("min", "max") and e.type.is_float():
        return None        # min(0.0, -0.0) is 0.0 and min(-0.0, 0.0) is -0.0 (and NaNs)
    return E.BinOp(e.op, x, c)


@rule(Pat(None, None, "e", lambda e: all(type(a) is E.Const for a in e.args)), keys=MATH)
def fold_call(s, e):
    return _ct(e.type, eval_scalar(e))


@rule(cast(K("c"), "e"))
def fold_cast(s, c, e):
    return _ct(e.type, eval_scalar(e))


@rule(not_(c))
def fold_not(s, c):
    return _bool(not c.value)


# -- identities (exact in every type, floats included) ---------------------------------------
@rule(op("mul", x, K("c", lambda e: e.value == 1)))
@rule(op("div", x, K("c", lambda e: e.value == 1)))
@rule(op("sub", x, K("c", lambda e: e.value == 0)))
def right_identity(s, x, c):
    return x


@rule(Pat(None, (x, x)), keys=("min", "max", "and", "or"))
def idempotent(s, x):
    return x


@rule(op("min", x, K("c", lambda e: e.value == INF)))
@rule(op("max", x, K("c", lambda e: e.value == -INF)))
def min_with_infinity(s, x, c):
    return x                     # min(x, inf) is x, NaN included


# -- logic ---------------------------------------------------------------------------------
@rule(Pat(None, (x, c), "e"), keys=("and", "or"))
def logic_constant(s, x, c, e):
    absorbing = e.op == "or"     # x | true == true; x & false == false
    return c if bool(c.value) == absorbing else x


@rule(not_(not_(x)))
def double_not(s, x):
    return x


@rule(not_(B(x, y, "e")))
def not_comparison(s, x, y, e):
    if e.op in ("eq", "ne"):
        return E.BinOp("ne" if e.op == "eq" else "eq", x, y)
    if e.op in ("lt", "le") and _int(x):
        return E.BinOp("le" if e.op == "lt" else "lt", y, x)
    return None


# -- comparisons ------------------------------------------------------------------------------
@rule(op("gt", x, y))
def gt_to_lt(s, x, y):
    return E.BinOp("lt", y, x)


@rule(op("ge", x, y))
def ge_to_le(s, x, y):
    return E.BinOp("le", y, x)


@rule(Pat(None, (xi, xi), "e"), keys=CMP)
def compare_same(s, x, e):
    return _bool(e.op in ("eq", "le"))


@rule(Pat(None, (xi, yi), "e"), keys=CMP)
def compare_by_bounds(s, x, y, e):
    v = _decided(N.op_rule(e.op)(x.type, s.b(x), s.b(y)))
    return None if v is None else _bool(v)


@rule(Pat(None, (xi, yi), "e"), keys=CMP)
def compare_by_difference(s, x, y, e):
    if not index_type(x.type):
        return None
    d = s.diff_const(x, y)
    return None if d is None else _bool(PY_CMP[e.op](d, 0))


@rule(Pat(None, (xi, yi), "e"), keys=CMP)
def compare_by_difference_bounds(s, x, y, e):
    """``b + 16*i + j < b + 32`` with i in [0, 1], j in [0, 15]: the bounds of the
    difference decide (index arithmetic), as Halide's ``can_prove(a - b < 0)``."""
    t = x.type
    if not index_type(t) or type(x) is E.Const and type(y) is E.Const:
        return None
    form = _L.lin_add(s.linear(x), s.linear(y), -1)
    if not form[0]:
        return None                 # a constant difference: compare_by_difference
    lo, hi = s.linear_bounds(t, form)
    v = _decided(N.op_rule(e.op)(t, (lo, hi), (0, 0)))
    return None if v is None else _bool(v)


@rule(Pat(None, (xi, K("k")), "e"), keys=CMP)
def compare_move_constant(s, x, k, e):
    """``x + c < k  ->  x < k - c`` (index arithmetic: no overflow)."""
    t = x.type
    terms, cx = s.linear(x)
    if not index_type(t) or cx == 0 or not t.can_represent(int(k.value) - cx):
        return None
    return E.BinOp(e.op, _L.build_linear(t, terms, 0), _ct(t, int(k.value) - cx))


# -- integer + - * : linear forms ---------------------------------------------------------------
@rule(Pat(None, (xi, y), "e"), keys=("add", "sub"))
def linear_sum(s, x, y, e):
    return s.linear_result(x.type, _L.lin_add(s.linear(x), s.linear(y),
                                              -1 if e.op == "sub" else 1))


@rule(op("mul", xi, c))
def linear_scale(s, x, c):
    return s.linear_result(x.type, _L.lin_scale(s.linear(x), int(c.value)))


# -- integer div and mod ------------------------------------------------------------------------
@rule(op("div", xi, y))
@rule(op("mod", xi, y))
def div_mod_trivial(s, x, y):
    kk = const_int(y)
    if kk == 0 or const_int(x) == 0:
        return _ct(x.type, 0)
    return None


@rule(op("mod", xi, K("k", lambda e: int(e.value) in (1, -1))))
def mod_by_one(s, x, k):
    return _ct(x.type, 0)


@rule(Pat(None, (xi, y), "e"), keys=("div", "mod"))
def decided_by_bounds(s, x, y, e):
    v = _decided(N.op_rule(e.op)(x.type, s.b(x), s.b(y)))
    return None if v is None else _ct(x.type, v)


@rule(op("div", op("div", xi, above("c", 0)), above("k", 1)))
def div_of_div(s, x, c, k):
    t, q = x.type, int(c.value) * int(k.value)
    return E.BinOp("div", x, _ct(t, q)) if q <= t.max_value() else None


@rule(op("div", xi, above("k", 1)))
def div_linear(s, x, k):
    """``(x*4 + y + 9) / 4  ->  x + 2 + (y + 1) / 4`` (index arithmetic)."""
    if not index_type(x.type):
        return None
    t, kk, (terms, cx) = x.type, int(k.value), s.linear(x)
    q_terms = {i: [a, m // kk] for i, (a, m) in terms.items() if m % kk == 0 and m != 0}
    if not (q_terms or cx >= kk or cx < 0):
        return None
    r_terms = {i: [a, m] for i, (a, m) in terms.items() if m % kk != 0}
    quot = _L.build_linear(t, q_terms, cx // kk)
    if r_terms or cx % kk:
        quot = E.BinOp("add", quot, E.BinOp("div", _L.build_linear(t, r_terms, cx % kk), k))
    return quot


@rule(op("mod", xi, K("k")))
def mod_in_one_period(s, x, k):
    kk = abs(int(k.value))
    lo, hi = s.b(x)
    if lo > -INF and hi < INF and lo // kk == hi // kk:
        q = lo // kk
        return x if q == 0 else E.BinOp("sub", x, _ct(x.type, q * kk))
    return None


@rule(op("mod", op("mod", xi, above("c", 0)), above("k", 0)))
def mod_of_mod(s, x, c, k):
    return E.BinOp("mod", x, k) if int(c.value) % int(k.value) == 0 else None


@rule(op("mod", xi, above("k", 0)))
def mod_linear(s, x, k):
    """``(x*8 + y + 9) % 4  ->  (y + 1) % 4`` (index arithmetic)."""
    if not index_type(x.type):
        return None
    t, kk, (terms, cx) = x.type, int(k.value), s.linear(x)
    keep = {i: [a, m] for i, (a, m) in terms.items() if m % kk != 0}
    if len(keep) == len(terms) and 0 <= cx < kk:
        return None
    return E.BinOp("mod", _L.build_linear(t, keep, cx % kk), k)


# -- integer min and max ---------------------------------------------------------------------
@rule(Pat(None, (xi, yi), "e"), keys=("min", "max"))
def minmax_repeated(s, x, y, e):
    """``min(min(a, b), min(b, c))  ->  min(min(a, b), c)``: an operand already in the
    chain of integer mins (maxes) is dropped (region unions repeat their call sites'
    bounds; Exprs are hash-consed, so a repeat is the same object)."""
    leaves, seen, stack, count = [], set(), [y, x], 0
    while stack:
        n = stack.pop()
        if type(n) is E.BinOp and n.op == e.op:
            stack += (n.b, n.a)
            continue
        count += 1
        if id(n) not in seen:
            seen.add(id(n))
            leaves.append(n)
    if count == len(leaves):
        return None
    out = leaves[0]
    for n in leaves[1:]:
        out = E.BinOp(e.op, out, n)
    return out


@rule(Pat(None, (xi, yi), "e"), keys=("min", "max"))
def minmax_ordered(s, x, y, e):
    (xlo, xhi), (ylo, yhi) = s.b(x), s.b(y)
    x_le, y_le = xhi <= ylo, yhi <= xlo
    if not (x_le or y_le) and index_type(x.type):
        d = s.diff_const(x, y)
        if d is not None:
            x_le, y_le = d <= 0, d >= 0
    if not (x_le or y_le):
        return None
    return x if (x_le if e.op == "min" else y_le) else y


@rule(Pat(None, (B(xi, K("c"), "inner"), K("k")), "e"), keys=("min", "max"))
def minmax_constants(s, x, c, inner, k, e):
    """``min(min(x, 3), 1)  ->  min(x, 1)``."""
    if inner.op != e.op:
        return None
    pick = min if e.op == "min" else max
    return E.BinOp(e.op, x, _ct(x.type, pick(int(c.value), int(k.value))))


# -- select ------------------------------------------------------------------------------------
@rule(select(W("cond"), x, y))
def select_decided(s, cond, x, y):
    v = _decided(s.b(cond))
    return None if v is None else (x if v else y)


@rule(select(W("cond"), x, x))
def select_same(s, cond, x):
    return x


@rule(select(W("cond"), K("t", lambda e: e.type.is_bool()), K("f")))
def select_of_bools(s, cond, t, f):
    return cond if t.value else E.Not(cond)


# -- casts and intrinsics -----------------------------------------------------------------------
@rule(cast(x, "e"))
def cast_to_own_type(s, x, e):
    return x if x.type == e.type else None


@rule(cast(cast(x, "inner"), "e"))
def cast_of_cast(s, x, inner, e):
    return E.cast(e.type, x) if _cast_pair_collapses(x.type, inner.type, e.type) else None


@rule(intrinsic("abs", x))
def abs_of_nonnegative(s, x):
    return x if x.type.is_uint() or s.b(x)[0] >= 0 else None


def _cast_pair_collapses(t0, t1, t2) -> bool:
    """``cast(t2, cast(t1, x: t0)) == cast(t2, x)`` for every x."""
    if t0.is_integral() and t1.is_integral() and t2.is_integral() and t2.bits <= t1.bits:
        return True                      # truncations compose
    if not _exact(t0, t1):
        return False
    if t1.is_float() and t2.is_integral():
        return _exact(t0, t2)            # an in-range integer value truncates exactly
    return True


def _exact(src, dst) -> bool:
    """Every value of ``src`` is represented exactly in ``dst``."""
    if src.is_bool():
        return True
    if src.is_float():
        return dst.is_float() and dst.bits >= src.bits
    if dst.is_float():
        return (src.bits if src.is_uint() else src.bits - 1) <= dst.significand_bits()
    if dst.is_bool():
        return False
    return dst.min_value() <= src.min_value() and src.max_value() <= dst.max_value()


# -- the upper-bound mode (index arithmetic only; every rewrite is exact) --------------------
UPPER = RuleTable(base=RULES)
UPPER_PUSH_NODES = 200          # no distribution over min/max of a bigger sum
xn, yn = W("x", lambda e: index_type(e.type)), W("y", lambda e: index_type(e.type))


def _pos_div(e):
    """``k`` when ``e`` is ``X / k`` with a constant ``0 < k <= 2**16`` (a tile's
    divisor: multiplying by it keeps index arithmetic far from overflow), else None."""
    if type(e) is E.BinOp and e.op == "div" and type(e.b) is E.Const and 0 < e.b.value <= 1 << 16:
        return e.b
    return None


def node_count(e, cap: int) -> int:
    """The number of distinct nodes of ``e``, counted up to ``cap + 1``."""
    n = 0
    for _ in walk(e):
        n += 1
        if n > cap:
            break
    return n


def _atoms(s, e) -> set:
    """The ids of the atoms of ``e``'s linear form, those of min/max atoms' operands
    in their place."""
    out = set()
    for i, (a, _) in s.linear(e)[0].items():
        if type(a) is E.BinOp and a.op in ("min", "max"):
            out |= _atoms(s, a.a) | _atoms(s, a.b)
        else:
            out.add(i)
    return out


@rule(op("mul", op("div", xn, above("k", 0)), K("m")), table=UPPER)
def unfloor(s, x, k, m):
    """``(X / k) * m  ->  (X - X % k) * (m / k)`` when ``k`` divides ``m``: a rounded-down
    tile start becomes something the tile's loop variable cancels against."""
    if int(m.value) % int(k.value):
        return None
    r = E.BinOp("sub", x, E.BinOp("mod", x, k))
    q = int(m.value) // int(k.value)
    return r if q == 1 else E.BinOp("mul", r, _ct(x.type, q))


@rule(Pat(None, (xn, yn), "e"), keys=("add", "sub"), table=UPPER)
def push_into_minmax(s, x, y, e):
    """``R + k*min(a, b)  ->  min(R + k*a, R + k*b)`` (``max`` for ``k < 0``; the other
    way round for ``max``) when ``R`` and ``min(a, b)`` have an atom in common, which
    may cancel: ``min(xo*32 + 31, W - 1) - xo*32 + 1  ->  min(32, W - xo*32)``."""
    t = e.type
    terms, c0 = _L.lin_add(s.linear(x), s.linear(y), -1 if e.op == "sub" else 1)
    for i, (m, k) in terms.items():
        if type(m) is not E.BinOp or m.op not in ("min", "max") or k == 0:
            continue
        if node_count(e, UPPER_PUSH_NODES) > UPPER_PUSH_NODES:
            return None
        rest = {j: v for j, v in terms.items() if j != i and v[1] != 0}
        if _atoms(s, m).isdisjoint(n for a, _ in rest.values() for n in _atoms(s, a)):
            continue
        sides = [_L.build_linear(t, *_L.lin_add((rest, c0), _L.lin_scale(s.linear(v), k), 1))
                 for v in (m.a, m.b)]
        return E.BinOp(m.op if k > 0 else ("max" if m.op == "min" else "min"), *sides)
    return None


@rule(Pat(None, (xn, yn), "e"), keys=("add", "sub"), table=UPPER)
def push_into_div(s, x, y, e):
    """``X / k + L  ->  (X + L*k) / k`` and ``L - X / k  ->  (L*k - X + k - 1) / k``
    (floor division, ``k > 0``, any integer ``L``).  The division is final: ordinary
    rules would take the sum apart again."""
    t, k = e.type, _pos_div(x)
    if k is not None:
        num = E.BinOp(e.op, x.a, E.BinOp("mul", y, k))
    else:
        k = _pos_div(y)
        if k is None:
            return None
        lk = E.BinOp("mul", x, k)
        num = (E.BinOp("add", y.a, lk) if e.op == "add" else
               E.BinOp("add", E.BinOp("sub", lk, y.a), _ct(t, int(k.value) - 1)))
    num, nb = s.visit(num)
    d = E.BinOp("div", num, k)
    if type(num) is E.Const:
        return d
    return Done(d, N.node_bounds(d, (nb, s.b(k))))


@rule(Pat(None, (op("div", xn, K("k")), op("div", yn, K("k"))), "e"), keys=("min", "max"),
      table=UPPER)
def minmax_of_divs(s, x, y, k, e):
    """``min(X / k, Y / k)  ->  min(X, Y) / k`` (floor division by ``k > 0`` is monotone)."""
    return E.BinOp("div", E.BinOp(e.op, x, y), k) if int(k.value) > 0 else None
