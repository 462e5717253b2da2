"""Inlining in statements: ``model.inline.Inliner`` applied to every Expr."""
from __future__ import annotations

from ..model.inline import Inliner as _ExprInliner
from . import ir as L


class Inliner(_ExprInliner):
    """The model's Inliner, plus statements."""

    def stmt(self, s: L.Stmt) -> L.Stmt:
        """Every Expr of a statement inlined (unchanged subtrees are shared)."""
        if not self.funcs:
            return s
        return L.map_stmt(s, fn_expr=self.expr)
