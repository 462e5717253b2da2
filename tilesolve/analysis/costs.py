"""Arithmetic cost of computing one point of a Func (Mullapudi 2016, §4.1).

Unit cost for most operations, more for division and transcendentals, as the
paper prescribes.  The table (``OP_COST``) is the one place these numbers
live; they are relative costs, not cycles:

* +, -, *, min, max, comparisons, boolean ops, select, casts: 1
* integer / and % (Euclidean, with the zero-divisor guard): 8; float / and %: 4
* sqrt: 4; floor, ceil, round, abs: 1; exp, log, sin, cos, tan, atan2, pow: 16
* a Call (a load of a producer or input): counted separately as a load,
  not as arithmetic (the cost model charges loads with ``load_cost``)
* constants, variables, params: 0

Division or modulo by a power-of-two constant costs 1 (a shift or mask).
"""
from __future__ import annotations

from functools import lru_cache

from ..model import expr as E
from ..model.func import Func
from ..model.visit import walk

OP_COST = {
    "add": 1, "sub": 1, "mul": 1, "min": 1, "max": 1,
    "eq": 1, "ne": 1, "lt": 1, "le": 1, "gt": 1, "ge": 1, "and": 1, "or": 1,
    "div_int": 8, "mod_int": 8, "div_float": 4, "mod_float": 4, "div_pow2": 1,
    "select": 1, "cast": 1, "not": 1,
    "sqrt": 4, "floor": 1, "ceil": 1, "round": 1, "abs": 1,
    "exp": 16, "log": 16, "sin": 16, "cos": 16, "tan": 16, "atan2": 16, "pow": 16,
}


def _is_pow2_const(e) -> bool:
    return (isinstance(e, E.Const) and e.type.is_integral() and e.value > 0
            and (e.value & (e.value - 1)) == 0)


def node_cost(n: E.Expr) -> int:
    """The arithmetic cost of one node, children excluded."""
    if isinstance(n, E.BinOp):
        if n.op in ("div", "mod"):
            if n.a.type.is_float():
                return OP_COST[f"{n.op}_float"]
            return OP_COST["div_pow2"] if _is_pow2_const(n.b) else OP_COST[f"{n.op}_int"]
        return OP_COST[n.op]
    if isinstance(n, E.Select):
        return OP_COST["select"]
    if isinstance(n, E.Cast):
        return OP_COST["cast"]
    if isinstance(n, E.Not):
        return OP_COST["not"]
    if isinstance(n, E.Intrinsic):
        return OP_COST.get(n.name, 4)
    return 0


def expr_cost(e: E.Expr) -> tuple[int, int]:
    """(arithmetic ops, loads) to evaluate ``e`` once, common subexpressions once."""
    ops = loads = 0
    for n in walk(e):
        ops += node_cost(n)
        if isinstance(n, E.Call):
            loads += 1
    return ops, loads


@lru_cache(maxsize=4096)
def _definition_cost(d) -> tuple[int, int]:
    ops, loads = expr_cost(d.value)
    for a in d.args:
        if not isinstance(a, E.Var):
            o, l_ = expr_cost(a)
            ops, loads = ops + o, loads + l_
    return ops, loads


def func_point_cost(f: Func) -> tuple[int, int]:
    """(ops, loads) of the pure definition for one point of ``f``."""
    return _definition_cost(f.pure)


def update_costs(f: Func) -> list[tuple[int, int]]:
    """(ops, loads) of each update definition for one point of its domain."""
    return [_definition_cost(u) for u in f.updates]
