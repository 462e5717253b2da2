"""Passes over Exprs as tables of rules by node kind, each checked to cover every kind.

A pass that treats each kind of node its own way keeps its rules in a ``NodeTable``:
``@TABLE.on(E.Cast)`` files a rule, ``TABLE(e, ...)`` runs the rule for ``type(e)``.  A
table names the kinds it must cover (``E.NODE_KINDS``, plus ``lower.ir.Load`` for passes
over loop IR); ``tests/test_node_tables.py`` fails when a table misses one, so a new
kind of node cannot fall through a pass unnoticed, and a kind reaching a table that
has no rule for it raises an error naming the pass and the kind.
"""
from __future__ import annotations

from ..errors import TilesolveError

__all__ = ["NodeTable"]


class NodeTable:
    """One pass's rules by node kind.  ``kinds``: the node classes it must cover;
    ``fallback(e, *args)``: what a node of any other class gets (None: an error)."""

    tables: list = []           # every table made, for the coverage test

    def __init__(self, name: str, kinds, fallback=None):
        self.name, self.kinds, self.fallback = name, tuple(kinds), fallback
        self.rules: dict = {}
        NodeTable.tables.append(self)

    def on(self, *kinds):
        """Decorator: the function is the rule for nodes of ``kinds``."""
        def deco(fn):
            for k in kinds:
                self.rules[k] = fn
            return fn
        return deco

    def __call__(self, e, *args, **kw):
        rule = self.rules.get(type(e))
        if rule is None:
            if self.fallback is None:
                raise TilesolveError(f"{self.name}: no rule for a {type(e).__name__} node "
                                     f"({e!r}); every pass must treat every kind of node")
            return self.fallback(e, *args, **kw)
        return rule(e, *args, **kw)

    def uncovered(self) -> list:
        """The kinds this table must cover and has no rule for."""
        return [k.__name__ for k in self.kinds if k not in self.rules]

    def __repr__(self) -> str:
        return f"NodeTable({self.name!r}, {len(self.rules)} rules)"
