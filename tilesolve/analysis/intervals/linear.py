"""Linear forms of integer expressions: ``sum(k_i * atom_i) + c``.

Integer ``+ - *`` (by constants) are exact modulo 2**bits in every integer
type, so a linear form with coefficients reduced modulo 2**bits means the same
value as the expression it came from, wrap-around included.  The simplifier
normalizes with these; the symbolic interval endpoints check with them that no
constant wrapped.  A form is ``(terms, const)`` where ``terms`` maps
``id(atom) -> [atom, coeff]`` in order of first appearance.  ``var_form`` is the
narrower form of one index argument, ``k * v + c`` over a single Var.
"""
from __future__ import annotations

from ...model import expr as E

__all__ = ["signed", "lin_add", "lin_scale", "build_linear", "var_form"]


def signed(t, v: int) -> int:
    """The representative of ``v`` modulo 2**bits nearest zero (two's complement)."""
    v = t.wrap(v)
    if t.is_uint() and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return v


def lin_add(la, lb, sign):
    """``la + sign * lb``."""
    terms = {i: [x, k] for i, (x, k) in la[0].items()}
    for i, (x, k) in lb[0].items():
        if i in terms:
            terms[i][1] += sign * k
        else:
            terms[i] = [x, sign * k]
    return terms, la[1] + sign * lb[1]


def lin_scale(la, k):
    """``la * k``."""
    return {i: [x, c * k] for i, (x, c) in la[0].items()}, la[1] * k


def build_linear(t, terms, c) -> E.Expr:
    """Rebuild ``sum(k * atom) + c``: positive terms, then negative ones, then c."""
    pos, neg = [], []
    for atom, k in terms.values():
        k = signed(t, k)
        if k > 0:
            pos.append((atom, k))
        elif k < 0:
            neg.append((atom, -k))
    acc = None
    for atom, k in pos:
        term = atom if k == 1 else E.BinOp("mul", atom, E.Const(t, k))
        acc = term if acc is None else E.BinOp("add", acc, term)
    for atom, k in neg:
        term = atom if k == 1 else E.BinOp("mul", atom, E.Const(t, k))
        acc = E.BinOp("sub", E.Const(t, 0) if acc is None else acc, term)
    c = signed(t, c)
    if acc is None:
        return E.Const(t, c)
    if c > 0:
        return E.BinOp("add", acc, E.Const(t, c))
    if c < 0:
        if t.can_represent(-c):
            return E.BinOp("sub", acc, E.Const(t, -c))
        return E.BinOp("add", acc, E.Const(t, c))
    return acc


def var_form(a):
    """``(var name, k, c)`` when ``a`` is ``k * v + c`` with integer constants (a Var or
    RVar ``v``, as written: ``v + c``, ``c + v``, ``v - c``, ``v * k``); ``(None, 0, c)``
    for an integer constant; else None."""
    if isinstance(a, (E.Var, E.RVar)):
        return (a.name, 1, 0)
    if isinstance(a, E.Const) and a.type.is_integral():
        return (None, 0, int(a.value))
    if isinstance(a, E.BinOp) and a.type.is_integral():
        if a.op in ("add", "sub") and isinstance(a.b, E.Const):
            inner = var_form(a.a)
            if inner is not None:
                c = int(a.b.value)
                return (inner[0], inner[1], inner[2] + (c if a.op == "add" else -c))
        if a.op == "add" and isinstance(a.a, E.Const):
            inner = var_form(a.b)
            if inner is not None:
                return (inner[0], inner[1], inner[2] + int(a.a.value))
        if a.op == "mul" and isinstance(a.b, E.Const):
            inner = var_form(a.a)
            if inner is not None and inner[0] is not None:
                k = int(a.b.value)
                return (inner[0], inner[1] * k, inner[2] * k)
    return None
