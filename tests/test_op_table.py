"""The op table (tilesolve/model/ops.py) is complete, and its entries agree.

Every operator and math function is declared once; each phase registers its rule
against the table.  These tests fail when an op lacks an entry in any layer, and
check that the interval rule of every op contains what the numpy rule computes.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
import tilesolve.analysis.intervals.numeric  # noqa: F401  (registers "interval")
import tilesolve.backend.cpu.codegen_expr  # noqa: F401  (registers "llvm")
import tilesolve.backend.cuda.cexpr  # noqa: F401  (registers "cuda")
import tilesolve.interop.halide  # noqa: F401  (registers "halide")
from tilesolve.model import expr as E
from tilesolve.model import ops

INT_TYPES = (ts.int32, ts.int16, ts.uint8)


@pytest.mark.parametrize("layer", ops.LAYERS)
def test_every_op_has_a_rule_in_every_layer(layer):
    assert ops.missing(layer) == []


def test_the_language_builds_exactly_the_ops_of_the_table():
    assert set(E.ARITH_OPS + E.BIT_OPS + E.CMP_OPS + E.BOOL_OPS + E.MATH_FUNCS
               + ("reinterpret",)) == set(ops.OPS)
    x = ts.Var("x")
    assert ts.reinterpret(ts.uint32, ts.cast(ts.float32, x)).name == "reinterpret"
    built = {(x + 1).op, (x - 1).op, (x * 2).op, (x / 2).op, (x % 2).op,
             ts.min(x, 1).op, ts.max(x, 1).op, (x < 1).op, (x <= 1).op, (x > 1).op,
             (x >= 1).op, E.binop("eq", x, 1).op, E.binop("ne", x, 1).op,
             ((x < 1) & (x > 0)).op, ((x < 1) | (x > 0)).op,
             (x & 3).op, (x | 3).op, (x ^ 3).op, (x << 1).op, (x >> 1).op}
    assert built == set(ops.of_kind("arith", "bits", "cmp", "logic"))


def test_registering_an_unknown_op_or_layer_is_refused():
    with pytest.raises(ValueError, match="no op named"):
        ops.register("cuda", "fma")
    with pytest.raises(ValueError, match="unknown op-table layer"):
        ops.register("metal", "add")
    with pytest.raises(NotImplementedError, match="no cuda rule for the op 'fma'"):
        ops.impl("cuda", "fma")


def test_result_types_and_costs_come_from_the_table():
    x = ts.Var("x")
    assert (x < 1).type == ts.bool_ and (x + 1).type == ts.int32
    f = ts.cast(ts.float32, x)
    assert ops.OPS["div"].cost_of(ts.int32) == 8
    assert ops.OPS["div"].cost_of(ts.float32) == 4
    assert ops.OPS["div"].cost_of(ts.int32, pow2_divisor=True) == 1
    from tilesolve.analysis.costs import node_cost
    assert node_cost(x / 4) == 1 and node_cost(x / 3) == 8 and node_cost(f / 3) == 4
    # a float divided by a constant power of two is multiplied by its exact reciprocal
    assert node_cost(f / 2.0) == node_cost(f / 0.25) == 1 and node_cost(f / 6.0) == 4
    assert node_cost(f / -0.5) == 1 and node_cost(f % 2.0) == ops.OPS["mod"].float_cost
    assert node_cost(ts.exp(f)) == ops.OPS["exp"].cost
    # latencies (the cost model's accumulation chains): every op has one, >= 1 cycle
    for o in ops.OPS.values():
        for t in (ts.int32, ts.float32):
            assert o.latency_of(t) >= 1, (o.name, t)
    assert ops.OPS["add"].latency_of(ts.float32) == 4 and ops.OPS["add"].latency_of(ts.int32) == 1
    assert ops.OPS["max"].latency_of(ts.float32) == 5       # max, then NaN compare and blend


def _sample(t, draw):
    if t.is_float():
        return np.float32(draw(st.floats(-1e3, 1e3, width=32)))
    return np.asarray(draw(st.integers(int(t.min_value()), int(t.max_value()))), t.dtype)


@settings(max_examples=300)
@given(data=st.data())
def test_each_ops_interval_rule_contains_its_numpy_result(data):
    """For a random op, type and operand intervals, the numpy value at a point drawn
    inside the operands' intervals lies in the interval the op's rule gives."""
    name = data.draw(st.sampled_from(sorted(ops.OPS)))
    op = ops.OPS[name]
    if op.kind == "math" and name != "abs":
        t = ts.float32
    elif op.kind == "logic":
        t = ts.bool_
    elif op.kind == "bits":
        t = data.draw(st.sampled_from(INT_TYPES + (ts.int8, ts.uint16, ts.uint32)))
    else:
        t = data.draw(st.sampled_from(INT_TYPES + (ts.float32,)))
    points, intervals = [], []
    for _ in range(op.arity):
        if t.is_bool():
            a, b = sorted(data.draw(st.lists(st.booleans(), min_size=2, max_size=2)))
            v = data.draw(st.sampled_from([a, b]))
            points.append(np.asarray(v))
            intervals.append((int(a), int(b)))
            continue
        a, b = sorted([_sample(t, data.draw), _sample(t, data.draw)])
        if t.is_float() and a == b:           # also 0.0 and -0.0
            v = data.draw(st.sampled_from([a, b]))
        elif t.is_float():
            v = np.float32(data.draw(st.floats(float(a), float(b), width=32)))
        else:
            v = data.draw(st.integers(int(a), int(b)))
        points.append(np.asarray(v, t.dtype))
        intervals.append((a.item(), b.item()))
    with np.errstate(all="ignore"):
        got = np.asarray(op.numpy(t, *points))
    lo, hi = ops.impl("interval", name)(t, *intervals)
    v = got.item()
    if isinstance(v, float) and math.isnan(v):
        return                              # NaN lies in no interval, by the rules
    assert lo <= v <= hi, (name, t, intervals, v, (lo, hi))
