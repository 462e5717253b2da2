"""The loop IR: what lowering produces and every backend consumes.

Statements are frozen dataclasses holding tuples.  Expressions are the
model's hash-consed Exprs plus one new node, ``Load``.  Variables in the IR
are ``Var`` nodes with unique dotted names (``blur_y.s0.y.yo``), so no
renaming is ever needed to avoid capture.

Buffers are flat, dense arrays of one scalar type, addressed by an int32
element index that lowering has already flattened:

* a buffer *argument* (an input or an output) named ``b`` has extents
  ``Var("b.extent.<d>")`` and element strides ``Var("b.stride.<d>")``
  (dimension 0 innermost), origin 0 in every dimension;
* an ``Allocate`` is dense with the given extents (innermost first, stride of
  dimension d = product of extents 0..d-1); lowering computes the flat index
  from the region's mins.

Scalar Params appear as the model's ``Param`` nodes.  After lowering no
``Call``, ``BufferExtent`` or ``RVar`` node remains.

Loop kinds: serial, parallel, vectorized (constant extent, lanes of one
vector), unrolled (constant extent), gpu_block, gpu_thread.
Memory spaces of an allocation: heap, stack, shared, register (``auto`` is
resolved by lowering).

``LoweredPipeline`` is the whole program: its arguments, in order, and one body.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model.types import Type
from ..model.visit import trampoline

FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "gpu_block", "gpu_thread")
MEMORY_SPACES = ("heap", "stack", "shared", "register")


class Load(E.Expr):
    """``buffer[index]`` where index is an int32 Expr (flat element index)."""

    __slots__ = ("buffer", "index", "type")
    _fields = ("buffer", "index", "type")

    def _print(self, expr_str) -> str:
        return f"{self.buffer}[{expr_str(self.index)}]"


def load(buffer: str, index: E.Expr, type: Type) -> Load:
    return Load(buffer, index, type)


class Stmt:
    """Base class of statements (frozen dataclasses below)."""

    __slots__ = ()

    def __str__(self) -> str:
        return stmt_str(self)


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    name: str          # the loop variable is Var(name)
    min: E.Expr
    extent: E.Expr
    kind: str
    body: Stmt

    def __post_init__(self):
        if self.kind not in FOR_KINDS:
            raise ValueError(f"For {self.name}: unknown loop kind {self.kind!r}")


@dataclass(frozen=True, slots=True, eq=False)
class Allocate(Stmt):
    name: str
    type: Type
    extents: tuple     # of int32 Exprs, innermost first
    memory: str
    body: Stmt

    def __post_init__(self):
        if self.memory not in MEMORY_SPACES:
            raise ValueError(f"Allocate {self.name}: unknown memory space {self.memory!r}")


@dataclass(frozen=True, slots=True, eq=False)
class Store(Stmt):
    buffer: str
    index: E.Expr
    value: E.Expr


@dataclass(frozen=True, slots=True, eq=False)
class Provide(Stmt):
    """``func[args] = value`` with one index Expr per dimension.

    Lowering-internal: what a stage nest stores before storage flattening
    turns it into a ``Store``; none remains in a ``LoweredPipeline``."""

    func: str
    args: tuple
    value: E.Expr


@dataclass(frozen=True, slots=True, eq=False)
class LetStmt(Stmt):
    name: str
    value: E.Expr
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    """``steady``: ``then_case`` is a copy of ``else_case`` specialized for when ``cond``
    holds (a steady state without tail guards, see ``lower/stages.py``); it touches a
    subset of what ``else_case`` does, so bounds inference reads ``else_case`` only."""
    cond: E.Expr
    then_case: Stmt
    else_case: Stmt | None = None
    steady: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Barrier(Stmt):
    """Synchronize the threads of a GPU block (no-op in serial emulation)."""


@dataclass(frozen=True, slots=True, eq=False)
class Free(Stmt):
    """Release allocation ``name`` before its scope ends: nothing after this statement
    in the enclosing Allocate's body touches it (placed by ``lower.free.free_early``).
    The Allocate's own release at the end of its scope then does nothing."""

    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Block(Stmt):
    stmts: tuple

    @staticmethod
    def make(stmts) -> Stmt:
        flat = []
        for s in stmts:
            if s is None:
                continue
            if isinstance(s, Block):
                flat.extend(s.stmts)
            else:
                flat.append(s)
        if len(flat) == 1:
            return flat[0]
        return Block(tuple(flat))


@dataclass(frozen=True, slots=True, eq=False)
class ProducerConsumer(Stmt):
    """Marks where Func ``name`` is produced or consumed (printing only)."""

    name: str
    is_producer: bool
    body: Stmt


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of the lowered program, in calling order.

    kind "buffer": an input (``is_output`` False) or output array with
    ``dims`` dimensions of scalar ``type``; kind "scalar": a Param.
    """

    name: str
    kind: str
    type: Type
    dims: int = 0
    is_output: bool = False


@dataclass(frozen=True, slots=True)
class LoweredPipeline:
    name: str
    args: tuple            # of Argument
    body: Stmt
    target: str = "cpu"
    notes: tuple = field(default=())   # human-readable remarks from lowering
    # (input name, ((min, extent), ...) innermost first): the region of each
    # input the body may read, as Exprs of argument names (``b.extent.d``,
    # Params); evaluate them to check the arrays before running.
    input_regions: tuple = field(default=())
    # the same for every output that the body reads (other Funcs reading it, its own
    # updates): checked against the output's size, since ``round_up`` loops may read
    # more of it than the algorithm does
    output_read_regions: tuple = field(default=())

    def buffer_args(self):
        return tuple(a for a in self.args if a.kind == "buffer")

    def scalar_args(self):
        return tuple(a for a in self.args if a.kind == "scalar")

    def __str__(self) -> str:
        sig = ", ".join(f"{a.name}: {a.type}{'[' + str(a.dims) + 'D]' if a.kind == 'buffer' else ''}"
                        f"{' (out)' if a.is_output else ''}" for a in self.args)
        return f"func {self.name}({sig}):\n{stmt_str(self.body, 1)}"


# ---------------------------------------------------------------------------
# Traversal
# ---------------------------------------------------------------------------
def stmt_children(s: Stmt) -> tuple:
    if isinstance(s, (For, Allocate, LetStmt, ProducerConsumer)):
        return (s.body,)
    if isinstance(s, IfThenElse):
        return (s.then_case,) if s.else_case is None else (s.then_case, s.else_case)
    if isinstance(s, Block):
        return s.stmts
    return ()


def stmt_exprs(s: Stmt) -> tuple:
    """The Exprs a statement holds directly (not those of its children)."""
    if isinstance(s, For):
        return (s.min, s.extent)
    if isinstance(s, Allocate):
        return tuple(s.extents)
    if isinstance(s, Store):
        return (s.index, s.value)
    if isinstance(s, Provide):
        return tuple(s.args) + (s.value,)
    if isinstance(s, LetStmt):
        return (s.value,)
    if isinstance(s, IfThenElse):
        return (s.cond,)
    return ()


def walk_stmts(s: Stmt):
    """Every statement, parents first."""
    stack = [s]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(stmt_children(n)))


def map_stmt(s: Stmt, fn_stmt=None, fn_expr=None) -> Stmt:
    """Rebuild ``s`` bottom-up.  ``fn_expr(e)`` rewrites every Expr it holds;
    ``fn_stmt(s)`` may return a replacement (or None to keep recursing).
    Unchanged subtrees are returned as the same objects.  Iterative (see
    ``trampoline``): the depth of the program does not matter."""
    fe = fn_expr or (lambda e: e)

    def step(s):
        if fn_stmt is not None:
            r = fn_stmt(s)
            if r is not None:
                return r
        return map_children(s, fe)
    return trampoline(s, step)


def map_children(s: Stmt, fe=lambda e: e):
    """One statement of ``map_stmt`` as a ``trampoline`` step: a generator yielding
    its children (and rebuilding from their results), or the rebuilt statement
    itself when it has none.  Passes with their own step call it for the
    statements they leave alone."""
    if isinstance(s, Store):
        i, v = fe(s.index), fe(s.value)
        return s if (i is s.index and v is s.value) else Store(s.buffer, i, v)
    if isinstance(s, Provide):
        args, v = tuple(fe(a) for a in s.args), fe(s.value)
        if v is s.value and all(a is b for a, b in zip(args, s.args)):
            return s
        return Provide(s.func, args, v)
    if isinstance(s, (For, Allocate, LetStmt, IfThenElse, Block, ProducerConsumer)):
        return _map_compound(s, fe)
    return s


def _map_compound(s: Stmt, fe):
    if isinstance(s, For):
        mn, ext = fe(s.min), fe(s.extent)
        body = yield s.body
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return For(s.name, mn, ext, s.kind, body)
    if isinstance(s, Allocate):
        exts = tuple(fe(e) for e in s.extents)
        body = yield s.body
        if all(a is b for a, b in zip(exts, s.extents)) and body is s.body:
            return s
        return Allocate(s.name, s.type, exts, s.memory, body)
    if isinstance(s, LetStmt):
        v = fe(s.value)
        body = yield s.body
        return s if (v is s.value and body is s.body) else LetStmt(s.name, v, body)
    if isinstance(s, IfThenElse):
        c = fe(s.cond)
        t = yield s.then_case
        e = None if s.else_case is None else (yield s.else_case)
        if c is s.cond and t is s.then_case and e is s.else_case:
            return s
        return IfThenElse(c, t, e, s.steady)
    if isinstance(s, Block):
        parts = []
        for x in s.stmts:
            parts.append((yield x))
        return s if all(a is b for a, b in zip(parts, s.stmts)) else Block.make(parts)
    body = yield s.body                                   # ProducerConsumer
    return s if body is s.body else ProducerConsumer(s.name, s.is_producer, body)


# ---------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------
def _e(x) -> str:
    if isinstance(x, Load):
        return f"{x.buffer}[{_e(x.index)}]"
    from ..model.printer import expr_str
    return expr_str(x)


def stmt_str(s: Stmt, indent: int = 0) -> str:
    """The statement as indented text (iterative: any depth)."""
    lines: list[str] = []
    stack = [(s, indent)]
    while stack:
        n, ind = stack.pop()
        if isinstance(n, str):                      # a line queued between children
            lines.append(n)
            continue
        pad = "  " * ind
        if isinstance(n, For):
            kind = "" if n.kind == "serial" else f"{n.kind} "
            lines.append(f"{pad}{kind}for {n.name} in [{_e(n.min)}, {_e(n.min)} + {_e(n.extent)}):")
            stack.append((n.body, ind + 1))
        elif isinstance(n, Allocate):
            exts = " x ".join(_e(e) for e in n.extents)
            lines.append(f"{pad}allocate {n.name}[{n.type} * {exts}] in {n.memory}")
            stack.append((n.body, ind))
        elif isinstance(n, Store):
            lines.append(f"{pad}{n.buffer}[{_e(n.index)}] = {_e(n.value)}")
        elif isinstance(n, Provide):
            lines.append(f"{pad}{n.func}({', '.join(_e(a) for a in n.args)}) = {_e(n.value)}")
        elif isinstance(n, LetStmt):
            lines.append(f"{pad}let {n.name} = {_e(n.value)}")
            stack.append((n.body, ind))
        elif isinstance(n, IfThenElse):
            lines.append(f"{pad}if {_e(n.cond)}:")
            if n.else_case is not None:
                stack.append((n.else_case, ind + 1))
                stack.append((f"{pad}else:", ind))
            stack.append((n.then_case, ind + 1))
        elif isinstance(n, Barrier):
            lines.append(f"{pad}barrier()")
        elif isinstance(n, Free):
            lines.append(f"{pad}free {n.name}")
        elif isinstance(n, Block):
            stack.extend((x, ind) for x in reversed(n.stmts))
        elif isinstance(n, ProducerConsumer):
            word = "produce" if n.is_producer else "consume"
            lines.append(f"{pad}{word} {n.name}:")
            stack.append((n.body, ind + 1))
        else:
            lines.append(f"{pad}<{type(n).__name__}>")
    return "\n".join(lines)
