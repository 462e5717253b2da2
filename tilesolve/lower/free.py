"""Release each allocation right after its last reader (Halide's ``Free`` placement).

Lowering nests realizations: the buffer of a Func computed at root encloses every
later stage, so without this pass each root buffer lives until the pipeline ends.  A
chain of root stages then holds all of them at once (stencil_chain: six buffers of
17 MB where two are ever live), and their release at the end, together, hands the
memory back to the operating system, whose pages fault in again at the next run.

Here each Allocate follows its body's *spine*, the statements that run exactly once
per entry (LetStmts, nested Allocates, ProducerConsumers and the statements of a
Block), to the last Block statement that touches the buffer.  When a statement
follows it in that Block, a ``Free`` goes right after it; the next allocation can then
reuse the memory while it is still in cache.  Loops and conditionals end a spine: a
buffer read inside one is released at its scope's end, as before.

One pass over the tree collects each statement's buffer names (memoized by node, with
an explicit stack: no recursion per statement); each Allocate then walks its spine.
"""
from __future__ import annotations

from ..model.visit import trampoline, walk
from . import ir as L

__all__ = ["free_early"]


class _Uses:
    """``uses(stmt)``: the names of the buffers ``stmt`` loads, stores or frees."""

    def __init__(self):
        self.memo: dict[int, frozenset] = {}
        self.keep: list = []            # the memo is keyed by id: keep the nodes alive

    def __call__(self, root: L.Stmt) -> frozenset:
        stack = [(root, False)]
        while stack:
            s, done = stack.pop()
            if id(s) in self.memo:
                continue
            kids = L.stmt_children(s)
            if not done and kids:
                stack.append((s, True))
                stack.extend((k, False) for k in kids if id(k) not in self.memo)
                continue
            names = {n.buffer for e in L.stmt_exprs(s) for n in walk(e)
                     if isinstance(n, L.Load)}
            if isinstance(s, L.Store):
                names.add(s.buffer)
            elif isinstance(s, L.Free):
                names.add(s.name)
            for k in kids:
                names |= self.memo[id(k)]
            self.memo[id(s)] = frozenset(names)
            self.keep.append(s)
        return self.memo[id(root)]


def _spine_free(alloc: L.Allocate, uses: _Uses) -> L.Stmt:
    """``alloc`` with a Free after the last statement of its spine that touches it (or
    ``alloc`` itself when no statement follows that one)."""
    name = alloc.name
    path = []                       # (wrapper, index in its Block or None), outermost first
    node = alloc.body
    while True:
        if isinstance(node, (L.LetStmt, L.Allocate, L.ProducerConsumer)):
            if isinstance(node, L.Allocate) and node.name == name:
                return alloc        # shadowed (the verifier refuses it anyway)
            path.append((node, None))
            node = node.body
            continue
        if not isinstance(node, L.Block):
            return alloc
        last = max((i for i, x in enumerate(node.stmts) if name in uses(x)), default=None)
        if last is None:
            return alloc
        if last < len(node.stmts) - 1:
            stmts = node.stmts[:last + 1] + (L.Free(name),) + node.stmts[last + 1:]
            new = L.Block(stmts)
            break
        path.append((node, last))
        node = node.stmts[last]
    for wrapper, idx in reversed(path):
        if idx is not None:
            new = L.Block(wrapper.stmts[:idx] + (new,) + wrapper.stmts[idx + 1:])
        elif isinstance(wrapper, L.LetStmt):
            new = L.LetStmt(wrapper.name, wrapper.value, new)
        elif isinstance(wrapper, L.Allocate):
            new = L.Allocate(wrapper.name, wrapper.type, wrapper.extents, wrapper.memory, new)
        else:
            new = L.ProducerConsumer(wrapper.name, wrapper.is_producer, new)
    return L.Allocate(alloc.name, alloc.type, alloc.extents, alloc.memory, new)


def free_early(body: L.Stmt) -> L.Stmt:
    """``body`` with a ``Free`` after the last use of each allocation, where that use is
    on the allocation's spine and a statement follows it (see the module docstring).
    Allocations are rewritten innermost first, so an outer one sees the Frees of the
    inner ones (they are uses of the inner buffers only)."""
    uses = _Uses()

    def allocate(s):
        body = yield s.body
        inner = s if body is s.body else L.Allocate(s.name, s.type, s.extents, s.memory, body)
        return _spine_free(inner, uses)

    def step(s):
        return allocate(s) if isinstance(s, L.Allocate) else L.map_children(s)
    return trampoline(body, step)
