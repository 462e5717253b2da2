"""Generic traversal and rewriting of expressions (memoized on node identity)."""
from __future__ import annotations

from typing import Callable, Iterator

from . import expr as E


def rebuild(e: E.Expr, fields: tuple) -> E.Expr:
    """A node of ``e``'s class with new field values (the node itself if unchanged)."""
    old = tuple(getattr(e, f) for f in e._fields)
    if all(a is b for a, b in zip(old, fields)):
        return e
    return type(e)(*fields)


def mutate(e: E.Expr, fn: Callable[[E.Expr], E.Expr | None], memo: dict | None = None) -> E.Expr:
    """Bottom-up rewrite: ``fn(node)`` returns a replacement or None to recurse.

    ``fn`` is tried on each node before its children; when it returns None the
    children are rewritten and the node rebuilt (shared if nothing changed).
    """
    if memo is None:
        memo = {}
    key = id(e)
    hit = memo.get(key)
    if hit is not None:
        return hit
    r = fn(e)
    if r is None:
        new_fields = []
        for f in e._fields:
            v = getattr(e, f)
            if isinstance(v, E.Expr):
                v = mutate(v, fn, memo)
            elif isinstance(v, tuple) and v and isinstance(v[0], E.Expr):
                v = tuple(mutate(x, fn, memo) for x in v)
            new_fields.append(v)
        r = rebuild(e, tuple(new_fields))
    memo[key] = r
    return r


def children(e: E.Expr) -> Iterator[E.Expr]:
    for f in e._fields:
        v = getattr(e, f)
        if isinstance(v, E.Expr):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, E.Expr):
                    yield x


def walk(e: E.Expr) -> Iterator[E.Expr]:
    """Every distinct node of ``e`` once, parents before children."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(children(n))


def find(e: E.Expr, cls) -> list:
    """Distinct nodes of class ``cls`` in ``e`` (in a deterministic order)."""
    out, seen = [], set()
    for n in walk(e):
        if isinstance(n, cls) and id(n) not in seen:
            seen.add(id(n))
            out.append(n)
    return out


def substitute(e: E.Expr, mapping: dict) -> E.Expr:
    """Replace nodes (keys, compared by identity) with Exprs or numbers."""
    if not mapping:
        return e
    m = {id(k): (v if isinstance(v, E.Expr) else E.as_expr(v, k.type)) for k, v in mapping.items()}
    return mutate(e, lambda n: m.get(id(n)))


def substitute_names(e: E.Expr, mapping: dict[str, E.Expr]) -> E.Expr:
    """Replace Vars (and RVars, Params) by name."""
    if not mapping:
        return e

    def fn(n):
        if isinstance(n, (E.Var, E.RVar, E.Param)) and n.name in mapping:
            v = mapping[n.name]
            return v if isinstance(v, E.Expr) else E.as_expr(v, n.type)
        return None
    return mutate(e, fn)


def uses_var(e: E.Expr, name: str) -> bool:
    return any(isinstance(n, (E.Var, E.RVar)) and n.name == name for n in walk(e))


def calls(e: E.Expr) -> list[E.Call]:
    return find(e, E.Call)
