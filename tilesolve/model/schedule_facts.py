"""Facts about the algorithm that schedule legality depends on.

For each stage (the pure definition or one update of a Func): its original
loops, which of them are RVars, and two conservative facts about updates:

* ``assoc_safe``: the update is ``f[lhs] op e`` with ``op`` in ``+ * min max``
  (either operand order) and ``e`` not reading ``f``; only then may its RVar
  loops be reordered among themselves (the reduction's order does not matter;
  for floats ``+``/``*`` the result may change by rounding, as in Halide's
  associativity-based transformations).
* ``dependent``: the pure Vars ``v`` at whose position some read of ``f`` in
  the update uses another coordinate (``f[x, y] = f[x - 1, y] + 1`` makes
  ``x`` dependent); loops over them keep their order and may not run in
  parallel or as vectors.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from . import expr as E
from .pipeline import definition_exprs
from .visit import walk


@dataclass(frozen=True, slots=True)
class StageFacts:
    """What legality needs to know about stage ``stage`` of Func ``func``."""

    func: str
    stage: int              # 0: pure definition, i + 1: update i
    is_output: bool
    loops: tuple            # the original loop names, innermost first
    rvars: frozenset        # the original loops that are RVars
    assoc_safe: bool
    dependent: frozenset

    @property
    def is_update(self) -> bool:
        return self.stage > 0

    @property
    def label(self) -> str:
        return "pure stage" if self.stage == 0 else f"update {self.stage - 1}"

    @property
    def where(self) -> str:
        """The prefix of error messages: ``Func f (update 0)``."""
        return f"Func {self.func} ({self.label})"


def _self_calls(func, d) -> list:
    out = []
    for e in definition_exprs(d):
        out.extend(n for n in walk(e) if isinstance(n, E.Call) and n.target is func)
    return out


def _reads_self(func, e) -> bool:
    return any(isinstance(n, E.Call) and n.target is func for n in walk(e))


def is_assoc_safe(func, d) -> bool:
    """``f[lhs] op e`` with op in + * min max and ``e`` not reading ``f``."""
    v = d.value
    if not (isinstance(v, E.BinOp) and v.op in ("add", "mul", "min", "max")):
        return False
    lhs_call = E.Call(func, d.args)
    for acc, other in ((v.a, v.b), (v.b, v.a)):
        if acc is lhs_call and not _reads_self(func, other):
            return not any(_reads_self(func, a) for a in d.args)
    return False


def dependent_vars(func, d) -> frozenset:
    """Pure Vars of update ``d`` at whose position ``f`` is read elsewhere."""
    dep = set()
    for call in _self_calls(func, d):
        for a, b in zip(d.args, call.args):
            if isinstance(a, E.Var) and b is not a:
                dep.add(a.name)
    return frozenset(dep)


def stage_facts(pipeline, name: str) -> tuple:
    """``StageFacts`` for every stage of Func ``name``."""
    func = pipeline.func(name)
    out = pipeline.is_output(name)
    facts = [StageFacts(name, 0, out, tuple(a.name for a in func.pure.args),
                        frozenset(), True, frozenset())]
    for i, u in enumerate(func.updates):
        rvars = tuple(rv.name for rv in u.rdom.rvars()) if u.rdom is not None else ()
        pure = tuple(a.name for a in u.args if isinstance(a, E.Var))
        facts.append(StageFacts(name, i + 1, out, rvars + pure, frozenset(rvars),
                                is_assoc_safe(func, u), dependent_vars(func, u)))
    return tuple(facts)


def reads_transitively(pipeline, producer: str, consumer: str) -> bool:
    """Whether ``consumer`` reads ``producer``, directly or through other Funcs."""
    return producer != consumer and nx.has_path(pipeline.graph, producer, consumer)


def use_sites(pipeline, funcs: dict, producer: str) -> list:
    """The stages ``(func, stage)`` that read ``producer`` once inlined Funcs
    are substituted: a read by an inlined Func counts as reads by the stages
    that read that Func.  ``funcs`` maps names to ``FuncSchedule``."""
    sites, seen = [], set()
    stack = [producer]
    while stack:
        p = stack.pop()
        for c in pipeline.consumers(p):
            if c not in funcs:
                continue
            cf = pipeline.func(c)
            for k, d in enumerate(cf.definitions()):
                reads = any(isinstance(n, E.Call) and n.target.name == p
                            for e in definition_exprs(d) for n in walk(e))
                if not reads:
                    continue
                if funcs[c].compute.kind == "inline":
                    if c not in seen:
                        seen.add(c)
                        stack.append(c)
                elif (c, k) not in sites:
                    sites.append((c, k))
    return sorted(sites)
