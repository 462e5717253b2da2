"""Vectorized numpy evaluation of one Expr: the executable form of types.py.

``evaluate(e, env, call)`` evaluates ``e`` where ``env`` maps Var/RVar/Param
names (and ``"<image>.extent.<d>"``) to numpy arrays or scalars that broadcast
together, and ``call(target, args)`` evaluates a Func or input at index
arrays.  The reference evaluator and the tests use it; the backends must
agree with it bit for bit on integers.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import PipelineError
from . import expr as E
from .dispatch import NodeTable
from .ops import OPS


def extent_key(image: str, dim: int) -> str:
    return f"{image}.extent.{dim}"


def cast_array(v, t):
    """Convert with tilesolve's rules (int->int wraps, float->int truncates)."""
    v = np.asarray(v)
    if t.is_bool():
        return v != 0
    return v.astype(t.dtype, copy=False)


def evaluate(e: E.Expr, env: dict, call: Callable | None = None, memo: dict | None = None):
    """Evaluate ``e`` with numpy; returns an array (or numpy scalar) of ``e.type``."""
    if memo is None:
        memo = {}
    with np.errstate(all="ignore"):
        return _eval(e, env, call, memo)


def _eval(e, env, call, memo):
    hit = memo.get(id(e))
    if hit is not None:
        return hit[1]
    r = _EVAL(e, env, call, memo)
    if not isinstance(e, E.Let):
        memo[id(e)] = (e, r)   # keep e alive so its id is not reused
    return r


_EVAL = NodeTable("evaluate", E.NODE_KINDS)


@_EVAL.on(E.Const)
def _const(e, env, call, memo):
    return np.asarray(e.value, dtype=e.type.dtype)


@_EVAL.on(E.Var, E.RVar, E.Param)
def _name(e, env, call, memo):
    try:
        return env[e.name]
    except KeyError:
        raise PipelineError(f"no value for {type(e).__name__} {e.name}") from None


@_EVAL.on(E.BufferExtent)
def _extent(e, env, call, memo):
    k = extent_key(e.image, e.dim)
    if k not in env:
        raise PipelineError(f"the extent of input {e.image} (dimension {e.dim}) is not known")
    return np.asarray(env[k], dtype=np.int32)


@_EVAL.on(E.Cast)
def _cast(e, env, call, memo):
    return cast_array(_eval(e.value, env, call, memo), e.type)


@_EVAL.on(E.BinOp)
def _binop(e, env, call, memo):
    a = np.asarray(_eval(e.a, env, call, memo))
    b = np.asarray(_eval(e.b, env, call, memo))
    r = OPS[e.op].numpy(e.a.type, a, b)
    return np.asarray(r).astype(e.type.dtype, copy=False)


@_EVAL.on(E.Not)
def _not(e, env, call, memo):
    return np.logical_not(_eval(e.a, env, call, memo))


@_EVAL.on(E.Select)
def _select(e, env, call, memo):
    c = _eval(e.cond, env, call, memo)
    tv = _eval(e.true_value, env, call, memo)
    fv = _eval(e.false_value, env, call, memo)
    return np.where(c, tv, fv).astype(e.type.dtype, copy=False)


@_EVAL.on(E.Intrinsic)
def _intrinsic(e, env, call, memo):
    args = [np.asarray(_eval(a, env, call, memo)) for a in e.args]
    return np.asarray(OPS[e.name].numpy(e.type, *args)).astype(e.type.dtype, copy=False)


@_EVAL.on(E.Call)
def _call(e, env, call, memo):
    if call is None:
        raise PipelineError(f"cannot evaluate the call {e} here")
    args = [np.asarray(_eval(a, env, call, memo)) for a in e.args]
    return call(e.target, args)


@_EVAL.on(E.Let)
def _let(e, env, call, memo):
    # a chain of Lets (regions of long pipelines) is bound in a loop, not recursively
    inner = dict(env)
    while isinstance(e, E.Let):
        inner[e.name] = _eval(e.value, inner, call, {})
        e = e.body
    return _eval(e, inner, call, {})


def eval_scalar(e: E.Expr, env: dict | None = None):
    """Evaluate an Expr with no calls to a Python number."""
    v = evaluate(e, env or {}, None)
    return np.asarray(v).item()
