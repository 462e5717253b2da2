"""Inlining: calls to Funcs scheduled inline become their pure values.

    g[x, y] = inp[x, y] * 2            (g inline)
    f[x, y] = g[x + 1, y] + g[x, y]
 -> f[x, y] = inp[x + 1, y] * 2 + inp[x, y] * 2

A call ``g[a0, a1]`` is replaced by ``g``'s pure value with ``g``'s pure Vars
replaced by the (already inlined) arguments, simultaneously, so a call
``g[y, x]`` swaps correctly.  Inlined Funcs may call other inlined Funcs; the
callee's own value is inlined once and cached.  A Func with update
definitions is never inlined (lowering computes it at the innermost loop of
its users instead, see ``plan.py``).
"""
from __future__ import annotations

from ..model import expr as E
from ..model.func import Func
from ..model.visit import mutate, substitute
from . import ir as L


class Inliner:
    """Substitutes the Funcs named in ``funcs`` (name -> Func) into Exprs and Stmts."""

    def __init__(self, funcs: dict):
        for f in funcs.values():
            assert not f.updates, f"Func {f.name} has updates and cannot be inlined"
        self.funcs = dict(funcs)
        self._bodies: dict[str, E.Expr] = {}
        self._memo: dict = {}
        self._alive: list = []    # the memo is keyed by id: keep the keys alive

    def _body(self, f: Func) -> E.Expr:
        b = self._bodies.get(f.name)
        if b is None:
            b = self._bodies[f.name] = self.expr(f.pure.value)
        return b

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

    def stmt(self, s: L.Stmt) -> L.Stmt:
        """The same for every Expr of a statement (unchanged subtrees are shared)."""
        if not self.funcs:
            return s
        return L.map_stmt(s, fn_expr=self.expr)
