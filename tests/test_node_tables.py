"""Every pass kept as a table of rules by node kind covers every kind of node
(``model/dispatch.py``): a new kind of Expr that some pass does not treat fails here
instead of falling through that pass."""
from __future__ import annotations

import pytest

import tilesolve  # noqa: F401  (imports the modules that make tables)
import tilesolve.backend.cpu.codegen_expr  # noqa: F401
import tilesolve.backend.cuda.cexpr  # noqa: F401
import tilesolve.interop.halide  # noqa: F401
import tilesolve.model.printer  # noqa: F401  (imported on first print)
from tilesolve.errors import TilesolveError
from tilesolve.model import expr as E
from tilesolve.model.dispatch import NodeTable


def test_node_kinds_lists_every_kind_of_the_language():
    defined = {c for c in vars(E).values()
               if isinstance(c, type) and issubclass(c, E.Expr) and c is not E.Expr}
    assert defined == set(E.NODE_KINDS)


def test_every_table_covers_every_kind_it_names():
    assert {t.name for t in NodeTable.tables} >= {"evaluate", "print", "CUDA C", "LLVM IR",
                                              "Halide translation", "simplify",
                                              "interval bounds"}
    for t in NodeTable.tables:
        assert set(E.NODE_KINDS) <= set(t.kinds), t.name
        assert t.uncovered() == [], f"{t.name} has no rule for {t.uncovered()}"


def test_a_kind_without_a_rule_is_an_error_naming_the_pass():
    table = NodeTable("a pass under test", E.NODE_KINDS)
    try:
        table.on(E.Const)(lambda e: e.value)
        assert table(E.as_expr(3)) == 3
        with pytest.raises(TilesolveError, match="a pass under test: no rule for a Var"):
            table(E.Var("x"))
        assert table.uncovered() and "Var" in table.uncovered()
    finally:
        NodeTable.tables.remove(table)
