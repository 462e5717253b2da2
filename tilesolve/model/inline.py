"""Inlining: calls to Funcs scheduled inline become their pure values.

    g[x, y] = inp[x, y] * 2            (g inline)
    f[x, y] = g[x + 1, y] + g[x, y]
 -> f[x, y] = inp[x + 1, y] * 2 + inp[x, y] * 2

A call ``g[a0, a1]`` is replaced by ``g``'s pure value with ``g``'s pure Vars
replaced by the (already inlined) arguments, simultaneously, so a call
``g[y, x]`` swaps correctly.  Inlined Funcs may call other inlined Funcs: the
calls in the substituted value are inlined in turn.  Every node is inlined once
(memoized on identity: Exprs are hash-consed), and a call is expanded from its
callee's own definition, not from a copy of the callee with everything below it
already inlined, so the work is proportional to the distinct nodes of the
result, not to the number of paths through the call graph: a chain of stencils
``f_k[x] = (f_{k-1}[x - 1] + f_{k-1}[x + 1]) / 2`` inlines into one value per
distinct point ``f_j[x + c]``.  For that, integer offsets composed by the
substitution are folded (``x - 1 + 1`` is ``x``), so equal points are equal
nodes.  Iterative (an explicit stack): a chain of any length is inlined without
recursion.  A Func with update definitions is never inlined.  The solver (its
facts) and lowering (the program) both use this one Inliner.
"""
from __future__ import annotations

from . import expr as E
from .func import Func
from .visit import rebuild_from, rewritten_children, substitute


def fold_offset(n: E.Expr) -> E.Expr:
    """``(a + c1) + c2`` (and the ``-`` forms) of one integer type as ``a + (c1 + c2)``
    (``a`` alone for 0; ``a - c`` for a negative sum); ``n`` itself otherwise, or when
    the sum leaves the type's range.  Wrapping arithmetic makes this exact."""
    if not (isinstance(n, E.BinOp) and n.op in ("add", "sub") and isinstance(n.b, E.Const)
            and n.type.is_integral()):
        return n
    a = n.a
    if not (isinstance(a, E.BinOp) and a.op in ("add", "sub") and isinstance(a.b, E.Const)
            and a.type == n.type):
        return n
    c = (a.b.value if a.op == "add" else -a.b.value) + (n.b.value if n.op == "add" else -n.b.value)
    if c == 0:
        return a.a
    if abs(c) > n.type.max_value():
        return n
    return E.BinOp("add", a.a, E.Const(n.type, c)) if c > 0 else E.BinOp("sub", a.a, E.Const(n.type, -c))


class Inliner:
    """Substitutes the Funcs named in ``funcs`` (name -> Func) into Exprs."""

    def __init__(self, funcs: dict):
        for f in funcs.values():
            assert not f.updates, f"Func {f.name} has updates and cannot be inlined"
        self.funcs = dict(funcs)
        # id(node) -> the node inlined; every result maps to itself.  Keyed by id:
        # ``_alive`` keeps every key's node alive.
        self._memo: dict = {}
        self._alive: list = []

    def _inlinable(self, n) -> bool:
        return isinstance(n, E.Call) and isinstance(n.target, Func) and n.target.name in self.funcs

    def expr(self, e: E.Expr) -> E.Expr:
        """``e`` with every call to an inlined Func substituted (recursively)."""
        if not self.funcs:
            return e
        memo, alive = self._memo, self._alive
        alive.append(e)
        # (node, None): rewrite its children, then the node; (node, other): the node's
        # result is ``other``'s, computed by then.
        stack = [(e, None)]
        while stack:
            n, same_as = stack.pop()
            if id(n) in memo:
                continue
            if same_as is not None:
                memo[id(n)] = memo[id(same_as)]
                continue
            kids = [c for c in rewritten_children(n) if id(c) not in memo]
            if kids:
                stack.append((n, None))
                stack.extend((c, None) for c in kids)
                continue
            r = rebuild_from(n, memo)
            if r is not n:
                # a node equal to another's result once its children are inlined
                alive.append(r)
                stack.append((n, r))
                stack.append((r, None))
                continue
            if self._inlinable(n):
                g = n.target
                body = substitute(g.pure.value, dict(zip(g.pure.args, n.args)), post=fold_offset)
                alive.append(body)
                stack.append((n, body))
                stack.append((body, None))
                continue
            memo[id(n)] = n
        return memo[id(e)]
