"""Which Funcs to inline before grouping (Mullapudi 2016 §4.3, simplified).

A Func is inlined into all of its consumers, or into none.  We inline a Func
``f`` when that adds no redundant work, or only a trivial amount:

* ``f`` is not an output, has no update definitions, and is read by pure
  definitions only (not as an update's data-dependent site); and
* either every consumer reads ``f`` at one site per consumer point through an
  *injective* index (each argument is ``v``, ``v + c`` or ``k*v + c`` of a
  distinct consumer Var, so no point of ``f`` is computed twice), or ``f`` is
  trivial: at most ``TRIVIAL_OPS`` arithmetic operations per point (boundary
  conditions, casts, small pointwise maps), where recomputing is cheaper than
  a store and a load.

A Func read through a data-dependent index (a lookup table) is never inlined:
it is usually small and read many times.
"""
from __future__ import annotations

from ..model import expr as E
from ..model.func import Func
from ..model.pipeline import Pipeline
from ..model.visit import walk

TRIVIAL_OPS = 4
# A Func whose value is one load plus index arithmetic (a boundary condition,
# a crop, a transpose) is inlined when its index math is at most this much.
DATA_MOVEMENT_OPS = 16


def _variant_ops(e) -> int:
    """Arithmetic of the parts of ``e`` that depend on a loop variable
    (loop-invariant parts, such as ``input.extent(0) - 1``, are hoisted)."""
    from ..analysis.costs import node_cost
    varying: dict = {}

    def dep(n) -> bool:
        hit = varying.get(id(n))
        if hit is None:
            hit = isinstance(n, (E.Var, E.RVar, E.Call)) or any(dep(c) for c in _kids(n))
            varying[id(n)] = hit
        return hit
    return sum(node_cost(n) for n in walk(e) if dep(n))


def _kids(n):
    from ..model.visit import children
    return children(n)


def _affine_var(a) -> E.Var | None:
    """The Var of ``v``, ``v + c``, ``v - c``, ``k*v (+ c)`` (k != 0), else None."""
    if isinstance(a, E.Var):
        return a
    if isinstance(a, E.BinOp) and a.op in ("add", "sub") and isinstance(a.b, E.Const):
        return _affine_var(a.a)
    if isinstance(a, E.BinOp) and a.op == "mul":
        if isinstance(a.b, E.Const) and a.b.value != 0:
            return _affine_var(a.a)
        if isinstance(a.a, E.Const) and a.a.value != 0:
            return _affine_var(a.b)
    return None


def _injective(args) -> bool:
    vs = [_affine_var(a) for a in args]
    if any(v is None for v in vs):
        return False
    return len({id(v) for v in vs}) == len(vs)


def _all_call_sites(pipeline: Pipeline) -> dict:
    """callee name -> [(consumer, definition index, call, in an update site)]."""
    out: dict = {}
    for cname, c in pipeline.funcs.items():
        for i, d in enumerate(c.definitions()):
            for e in (d.value,) + tuple(d.args):
                is_site = e is not d.value
                for n in walk(e):
                    if isinstance(n, E.Call) and n.target.name != cname:
                        out.setdefault(n.target.name, []).append((cname, i, n, is_site))
    return out


def choose_inlined(pipeline: Pipeline, regions: dict) -> frozenset:
    inlined = set()
    all_sites = _all_call_sites(pipeline)
    for name in pipeline.order():
        f: Func = pipeline.funcs[name]
        if pipeline.is_output(name) or f.updates:
            continue
        sites = all_sites.get(name, [])
        if not sites:
            continue
        if any(is_site for _, _, _, is_site in sites):
            continue
        ops = _variant_ops(f.pure.value)
        n_calls = sum(1 for n in walk(f.pure.value) if isinstance(n, E.Call))
        if n_calls == 1 and ops <= DATA_MOVEMENT_OPS:
            inlined.add(name)
            continue
        if any(not _injective(call.args) for _, _, call, _ in sites):
            # data-dependent or many-to-one reads: only trivial Funcs, and never LUTs
            data_dep = any(any(isinstance(n, E.Call) for a in call.args for n in walk(a))
                           for _, _, call, _ in sites)
            if data_dep or ops > TRIVIAL_OPS:
                continue
            inlined.add(name)
            continue
        per_consumer: dict = {}
        for cname, i, call, _ in sites:
            per_consumer.setdefault((cname, i), set()).add(call)
        if all(len(s) == 1 for s in per_consumer.values()) or ops <= TRIVIAL_OPS:
            inlined.add(name)
    return frozenset(inlined)
