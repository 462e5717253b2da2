"""Readable text for expressions (used by repr, error messages and schedules)."""
from __future__ import annotations

from . import expr as E
from .dispatch import NodeTable

# Python's precedence: comparisons bind looser than | and & (the boolean ops)
# Python's precedences: comparisons < | < ^ < & < shifts < + - < * / %
_PREC = {"eq": 1, "ne": 1, "lt": 1, "le": 1, "gt": 1, "ge": 1, "or": 2, "bitor": 2,
         "bitxor": 2.5, "and": 3, "bitand": 3, "shl": 3.5, "shr": 3.5,
         "add": 4, "sub": 4, "mul": 5, "div": 5, "mod": 5}


def _other(e, parent_prec: int = 0) -> str:
    if hasattr(e, "_print"):   # nodes defined by later phases (e.g. lower.ir.Load)
        return e._print(expr_str)
    fields = ", ".join(f"{f}={getattr(e, f)!s}" for f in e._fields)
    return f"{type(e).__name__}({fields})"


_PRINT = NodeTable("print", E.NODE_KINDS, fallback=_other)


def expr_str(e, parent_prec: int = 0) -> str:
    """Print ``e`` in the syntax a user writes (``ts.`` prefixes omitted)."""
    return _PRINT(e, parent_prec)


@_PRINT.on(E.Const)
def _const(e, parent_prec=0):
    if e.type.is_bool():
        return "True" if e.value else "False"
    if e.type.is_float():
        s = repr(e.value)
        return s if e.type.bits == 32 else f"f{e.type.bits}({s})"
    return str(e.value) if e.type.code == "int" and e.type.bits == 32 else f"{e.type}({e.value})"


@_PRINT.on(E.Var, E.RVar, E.Param)
def _name(e, parent_prec=0):
    return e.name


@_PRINT.on(E.BufferExtent)
def _extent(e, parent_prec=0):
    return f"{e.image}.extent({e.dim})"


@_PRINT.on(E.Cast)
def _cast(e, parent_prec=0):
    return f"{e.type}({expr_str(e.value)})"


@_PRINT.on(E.BinOp)
def _binop(e, parent_prec=0):
    if e.op in ("min", "max"):
        return f"{e.op}({expr_str(e.a)}, {expr_str(e.b)})"
    p = _PREC[e.op]
    left = p + 1 if e.op in E.CMP_OPS else p   # no chained comparisons
    s = f"{expr_str(e.a, left)} {E.OP_SYMBOL[e.op]} {expr_str(e.b, p + 1)}"
    return f"({s})" if p < parent_prec else s


@_PRINT.on(E.Not)
def _not(e, parent_prec=0):
    return f"~{expr_str(e.a, 9)}"


@_PRINT.on(E.Select)
def _select(e, parent_prec=0):
    return (f"select({expr_str(e.cond)}, {expr_str(e.true_value)}, "
            f"{expr_str(e.false_value)})")


@_PRINT.on(E.Call)
def _call(e, parent_prec=0):
    return f"{e.target.name}[{', '.join(expr_str(a) for a in e.args)}]"


@_PRINT.on(E.Intrinsic)
def _intrinsic(e, parent_prec=0):
    return f"{e.name}({', '.join(expr_str(a) for a in e.args)})"


@_PRINT.on(E.Let)
def _let(e, parent_prec=0):
    return f"(let {e.name} = {expr_str(e.value)} in {expr_str(e.body)})"
