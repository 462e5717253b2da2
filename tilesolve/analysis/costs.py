"""Arithmetic cost of computing one point of a Func (Mullapudi 2016, §4.1).

Unit cost for most operations, more for division and transcendentals, as the
paper prescribes.  The table (``model/ops.py``) is the one place these numbers
live; they are relative costs, in units of one vectorized ``*`` (a lane of it):

* +, -, *, min, max, comparisons, boolean ops, select, casts: 1
* integer / and % (Euclidean, with the zero-divisor guard): 8; float / and %: 4
  (a float divided by a constant power of two: 1, a multiplication by the exact
  reciprocal, which is what LLVM emits)
* sqrt: 4; floor, ceil, round, abs: 1; exp, log, sin, cos, tan, atan2, pow: 16
* a Call (a load of a producer or input): counted separately as a load,
  not as arithmetic (the cost model charges loads with ``load_cost``)
* constants, variables, params: 0

These are the paper's relative costs, not what the operations take alone.
Measured on the development machine (the retired ``benchmarks/op_costs.py``:
independent ops on one core over an image in L2, vectorized by 16), float
``min``/``max`` cost 2-4 units (the compare and blend that propagate NaN), ``/`` by
a constant that is not a power of two 5-8 (by a power of two: nothing beyond the
multiply it becomes), ``%`` 10-14, ``sqrt`` 20, ``exp`` 44-47 and ``log`` 42 (our vector
polynomials), and ``pow`` about 650, ``sin`` 420 and ``atan2`` 1200 (one C
library call a lane).  Priced so, the solvers fused interpolate's
whole upsampling chain into 32 x 16 tiles, and it ran 1.97x (greedy) and 2.06x
(ILP) slower; unsharp ran 1.20-1.22x slower, lens_blur 1.08-1.23x; no app ran
faster.  The model adds arithmetic to memory traffic, while the machine
overlaps the two, so the table's lower costs stand in for that overlap; the
measured costs wait for a model that overlaps them.

Division or modulo by a power-of-two constant costs 1 (a shift or mask).
"""
from __future__ import annotations

import math

from ..model import expr as E
from ..model.ops import OPS
from ..model.visit import walk

# node kinds outside the op table (operators and math functions cost what ops.OPS says)
NODE_COST = {"select": 1, "cast": 1, "not": 1}


def _is_pow2_const(e) -> bool:
    """A constant power of two: an integer one (a shift or mask divides by it), or a
    float one, whose reciprocal is exact (LLVM divides by a multiplication)."""
    if not isinstance(e, E.Const) or e.value == 0:
        return False
    if e.type.is_integral():
        return e.value > 0 and (e.value & (e.value - 1)) == 0
    return e.type.is_float() and abs(math.frexp(float(e.value))[0]) == 0.5


def node_cost(n: E.Expr) -> int:
    """The arithmetic cost of one node, children excluded."""
    if isinstance(n, E.BinOp):
        return OPS[n.op].cost_of(n.a.type, _is_pow2_const(n.b))
    if isinstance(n, E.Select):
        return NODE_COST["select"]
    if isinstance(n, E.Cast):
        return NODE_COST["cast"]
    if isinstance(n, E.Not):
        return NODE_COST["not"]
    if isinstance(n, E.Intrinsic):
        return OPS[n.name].cost_of(n.type)
    return 0


def expr_cost(e: E.Expr) -> tuple[int, int]:
    """(arithmetic ops, loads) to evaluate ``e`` once, common subexpressions once."""
    ops = loads = 0
    for n in walk(e):
        ops += node_cost(n)
        if isinstance(n, E.Call):
            loads += 1
    return ops, loads
