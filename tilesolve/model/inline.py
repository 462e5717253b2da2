"""Inlining: calls to Funcs scheduled inline become their pure values.

    g[x, y] = inp[x, y] * 2            (g inline)
    f[x, y] = g[x + 1, y] + g[x, y]
 -> f[x, y] = inp[x + 1, y] * 2 + inp[x, y] * 2

A call ``g[a0, a1]`` is replaced by ``g``'s pure value with ``g``'s pure Vars
replaced by the (already inlined) arguments, simultaneously, so a call
``g[y, x]`` swaps correctly.  Inlined Funcs may call other inlined Funcs; each
callee's own value is inlined once and cached, producers first, so a chain of
any length is inlined without recursion.  A Func with update definitions is
never inlined.  The solver (its facts) and lowering (the program) both use
this one Inliner.
"""
from __future__ import annotations

from . import expr as E
from .func import Func
from .visit import mutate, substitute, walk


class Inliner:
    """Substitutes the Funcs named in ``funcs`` (name -> Func) into Exprs."""

    def __init__(self, funcs: dict):
        for f in funcs.values():
            assert not f.updates, f"Func {f.name} has updates and cannot be inlined"
        self.funcs = dict(funcs)
        self._bodies: dict[str, E.Expr] = {}
        self._memo: dict = {}
        self._alive: list = []    # the memo is keyed by id: keep the keys alive

    def _callees(self, f: Func) -> list:
        return [n.target for n in walk(f.pure.value)
                if isinstance(n, E.Call) and isinstance(n.target, Func)
                and n.target.name in self.funcs and n.target.name not in self._bodies]

    def _body(self, f: Func) -> E.Expr:
        b = self._bodies.get(f.name)
        if b is not None:
            return b
        # Inline the callees first (an iterative post-order), so that inlining
        # f's value finds every callee's body ready and never recurses.
        order, seen, stack = [], {f.name}, [(f, False)]
        while stack:
            g, done = stack.pop()
            if done:
                order.append(g)
                continue
            stack.append((g, True))
            for c in self._callees(g):
                if c.name not in seen:
                    seen.add(c.name)
                    stack.append((c, False))
        for g in order:
            if g.name not in self._bodies:
                self._bodies[g.name] = self.expr(g.pure.value)
        return self._bodies[f.name]

    def _fn(self, n):
        if isinstance(n, E.Call) and isinstance(n.target, Func) and n.target.name in self.funcs:
            g = n.target
            args = tuple(self.expr(a) for a in n.args)
            return substitute(self._body(g), dict(zip(g.pure.args, args)))
        return None

    def expr(self, e: E.Expr) -> E.Expr:
        """``e`` with every call to an inlined Func substituted (recursively)."""
        if not self.funcs:
            return e
        self._alive.append(e)
        return mutate(e, self._fn, self._memo)
