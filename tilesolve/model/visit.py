"""Generic traversal and rewriting of expressions (memoized on node identity)."""
from __future__ import annotations

from types import GeneratorType
from typing import Callable, Iterator

from . import expr as E


def rebuild(e: E.Expr, fields: tuple) -> E.Expr:
    """A node of ``e``'s class with new field values (the node itself if unchanged)."""
    old = tuple(getattr(e, f) for f in e._fields)
    if all(a is b for a, b in zip(old, fields)):
        return e
    return type(e)(*fields)


def mutate(e: E.Expr, fn: Callable[[E.Expr], E.Expr | None], memo: dict | None = None,
           post: Callable[[E.Expr], E.Expr] | None = None) -> E.Expr:
    """Bottom-up rewrite: ``fn(node)`` returns a replacement or None to recurse.

    ``fn`` is tried on each node before its children; when it returns None the
    children are rewritten and the node rebuilt (shared if nothing changed);
    ``post``, if given, is applied to each node rebuilt with new children (its
    children already final: a local canonicalization).  Iterative (an explicit
    stack), so the depth of ``e`` is not limited by Python's recursion limit.
    """
    if memo is None:
        memo = {}
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    # (node, expanded): a node is expanded once fn declined it; it is rebuilt
    # when popped again, after all its children are in memo.  In a DAG a node
    # popped unexpanded is either already in memo or not yet started.
    stack = [(e, False)]
    while stack:
        n, expanded = stack.pop()
        key = id(n)
        if key in memo:
            continue
        if not expanded:
            r = fn(n)
            if r is not None:
                memo[key] = r
                continue
            stack.append((n, True))
            stack.extend((c, False) for c in rewritten_children(n) if id(c) not in memo)
            continue
        r = rebuild_from(n, memo)
        memo[key] = r if post is None or r is n else post(r)
    return memo[id(e)]


def rebuild_from(n: E.Expr, memo: dict) -> E.Expr:
    """``n`` rebuilt with each child ``mutate`` rewrites replaced by ``memo[id(child)]``."""
    new_fields = []
    for f in n._fields:
        v = getattr(n, f)
        if isinstance(v, E.Expr):
            v = memo[id(v)]
        elif isinstance(v, tuple) and v and isinstance(v[0], E.Expr):
            v = tuple(memo[id(x)] for x in v)
        new_fields.append(v)
    return rebuild(n, tuple(new_fields))


def rewritten_children(e: E.Expr) -> Iterator[E.Expr]:
    """The children ``mutate`` rewrites: Expr fields and tuples of Exprs."""
    for f in e._fields:
        v = getattr(e, f)
        if isinstance(v, E.Expr):
            yield v
        elif isinstance(v, tuple) and v and isinstance(v[0], E.Expr):
            yield from v


def trampoline(root, step: Callable):
    """Run a recursive computation over a tree without Python recursion.

    ``step(node)`` returns either the node's result, or a generator that yields
    child nodes and receives each child's result back (``r = yield child``);
    the generator's return value is the node's result.  An exception raised in
    a child is thrown into its parent's generator, so ``with``/``finally``
    blocks around a ``yield`` unwind as they would in recursive code.  Every
    pass over deep statements (let chains, nested realizations) uses this, so
    no pass meets the recursion limit however deep the program is.
    """
    first = step(root)
    if not isinstance(first, GeneratorType):
        return first
    stack, send, exc = [first], None, None
    while True:
        gen = stack[-1]
        try:
            child = gen.send(send) if exc is None else gen.throw(exc)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            send, exc = stop.value, None
            continue
        except BaseException as err:  # noqa: BLE001 - re-raised into the parent
            stack.pop()
            if not stack:
                raise
            send, exc = None, err
            continue
        exc = None
        r = step(child)
        if isinstance(r, GeneratorType):
            stack.append(r)
            send = None
        else:
            send = r


def children(e: E.Expr) -> Iterator[E.Expr]:
    for f in e._fields:
        v = getattr(e, f)
        if isinstance(v, E.Expr):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, E.Expr):
                    yield x


def post_order(root: E.Expr, operands=None, leave_whole=None) -> list:
    """Every distinct node under ``root`` once, operands before their users, by an
    explicit stack (any depth).  ``operands(n)``: what to visit below ``n`` (its
    children); nothing is visited below a node for which ``leave_whole(n)`` is true."""
    operands = operands or children
    out, seen, stack = [], set(), [(root, False)]
    while stack:
        n, ready = stack.pop()
        if ready:
            out.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        if leave_whole is None or not leave_whole(n):
            stack.extend((c, False) for c in operands(n))
    return out


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


def substitute(e: E.Expr, mapping: dict, post: Callable[[E.Expr], E.Expr] | None = None) -> E.Expr:
    """Replace nodes (keys, compared by identity) with Exprs or numbers (``post``: as
    in ``mutate``, for the nodes the replacement rebuilds)."""
    if not mapping:
        return e
    m = {id(k): (v if isinstance(v, E.Expr) else E.as_expr(v, k.type)) for k, v in mapping.items()}
    return mutate(e, lambda n: m.get(id(n)), post=post)


def substitute_names(e: E.Expr, mapping: dict[str, E.Expr]) -> E.Expr:
    """Replace Vars (and RVars, Params) by name.  A ``Let`` that binds one of the names
    shadows it in its body: there the name is the Let's, not replaced."""
    if not mapping:
        return e

    def fn(n):
        if isinstance(n, (E.Var, E.RVar, E.Param)) and n.name in mapping:
            v = mapping[n.name]
            return v if isinstance(v, E.Expr) else E.as_expr(v, n.type)
        if isinstance(n, E.Let) and n.name in mapping:
            inner = {k: v for k, v in mapping.items() if k != n.name}
            return E.Let(n.name, substitute_names(n.value, mapping),
                         substitute_names(n.body, inner))
        return None
    return mutate(e, fn)


def calls(e: E.Expr) -> list[E.Call]:
    return find(e, E.Call)
