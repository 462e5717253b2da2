"""The loop IR verifier: ``verify(lowered)`` raises ``LoweringError`` or returns.

Checks:

* scoping: every Var is bound by an enclosing For, LetStmt or Let, or is an
  argument-derived name (``b.extent.d`` / ``b.stride.d`` of a buffer
  argument); every Param is a scalar argument of that type; no name is bound
  twice on one path;
* what lowering must have removed: no Call, RVar, BufferExtent or Provide;
* buffers: every Load/Store names a buffer argument or an enclosing
  Allocate; Store value type and Load type equal the buffer's type; indices,
  loop bounds and extents are int32; conditions are bool; inputs are never
  stored to;
* loops: vectorized and unrolled loops have constant extents; gpu_thread
  loops are not outside gpu_block loops.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..model import expr as E
from ..model import types as T
from ..model.visit import children
from . import ir as L


class _Verifier:
    def __init__(self, lowered: L.LoweredPipeline):
        self.buffers: dict[str, T.Type] = {}
        self.inputs: set = set()
        self.arg_vars: set = set()
        self.params: dict[str, T.Type] = {}
        for a in lowered.args:
            if a.kind == "buffer":
                self.buffers[a.name] = a.type
                if not a.is_output:
                    self.inputs.add(a.name)
                for d in range(a.dims):
                    self.arg_vars.update((f"{a.name}.extent.{d}", f"{a.name}.stride.{d}"))
            else:
                self.params[a.name] = a.type
                if "." in a.name:        # a buffer's run-time min (buffer_mins), read as a Var
                    self.arg_vars.add(a.name)

    def fail(self, msg, where=None):
        ctx = f" (in: {str(where).splitlines()[0].strip()})" if where is not None else ""
        raise LoweringError(f"invalid loop IR: {msg}{ctx}")

    # -- expressions -----------------------------------------------------------------
    def expr(self, e: E.Expr, bound: set, buffers: dict, where):
        stack, seen = [(e, bound)], set()
        while stack:
            n, b = stack.pop()
            if (id(n), id(b)) in seen:      # a DAG: each shared node once per scope
                continue
            seen.add((id(n), id(b)))
            if isinstance(n, E.Var):
                if n.name not in b and n.name not in self.arg_vars:
                    self.fail(f"Var {n.name} is used outside its scope", where)
            elif isinstance(n, E.Param):
                t = self.params.get(n.name)
                if t is None or t != n.type:
                    self.fail(f"Param {n.name} ({n.type}) is not a scalar argument", where)
            elif isinstance(n, (E.Call, E.RVar, E.BufferExtent)):
                self.fail(f"{type(n).__name__} {n} remains after lowering", where)
            elif isinstance(n, L.Load):
                t = buffers.get(n.buffer)
                if t is None:
                    self.fail(f"Load from {n.buffer}, which is neither an argument nor an "
                              "enclosing allocation", where)
                if t != n.type:
                    self.fail(f"Load from {n.buffer} has type {n.type}, the buffer is {t}", where)
                if n.index.type != T.int32:
                    self.fail(f"index {n.index} of {n.buffer} is {n.index.type}, not int32", where)
            elif isinstance(n, E.Let):
                stack.append((n.value, b))
                stack.append((n.body, b | {n.name}))
                continue
            for c in children(n):
                stack.append((c, b))

    def int_expr(self, e, bound, buffers, where, what):
        if e.type != T.int32:
            self.fail(f"{what} {e} is {e.type}, not int32", where)
        self.expr(e, bound, buffers, where)

    # -- statements ------------------------------------------------------------------
    def stmt(self, root: L.Stmt, bound: frozenset, buffers: dict, kinds: tuple):
        """Check every statement (a worklist: any depth)."""
        work = [(root, bound, buffers, kinds)]
        while work:
            self._check(work, *work.pop())

    def _check(self, work, s: L.Stmt, bound: frozenset, buffers: dict, kinds: tuple):
        """Check ``s`` itself; queue its children on ``work``."""
        if isinstance(s, L.For):
            self.int_expr(s.min, bound, buffers, s, "loop min")
            self.int_expr(s.extent, bound, buffers, s, "loop extent")
            if s.kind in ("vectorized", "unrolled") and not isinstance(s.extent, E.Const):
                self.fail(f"{s.kind} loop {s.name} has a non-constant extent {s.extent}", s)
            if s.kind == "gpu_block" and "gpu_thread" in kinds:
                self.fail(f"gpu_block loop {s.name} is inside a gpu_thread loop", s)
            self._bind(s.name, bound, s)
            work.append((s.body, bound | {s.name}, buffers, kinds + (s.kind,)))
        elif isinstance(s, L.LetStmt):
            self.expr(s.value, bound, buffers, s)
            self._bind(s.name, bound, s)
            work.append((s.body, bound | {s.name}, buffers, kinds))
        elif isinstance(s, L.Allocate):
            if s.name in buffers:
                self.fail(f"allocation {s.name} shadows a buffer of the same name", s)
            for x in s.extents:
                self.int_expr(x, bound, buffers, s, "allocation extent")
            work.append((s.body, bound, {**buffers, s.name: s.type}, kinds))
        elif isinstance(s, L.Store):
            t = buffers.get(s.buffer)
            if t is None:
                self.fail(f"Store to {s.buffer}, which is neither an argument nor an enclosing "
                          "allocation", s)
            if s.buffer in self.inputs:
                self.fail(f"Store to input {s.buffer}", s)
            if s.value.type != t:
                self.fail(f"Store of a {s.value.type} value to {s.buffer} ({t})", s)
            self.int_expr(s.index, bound, buffers, s, "store index")
            self.expr(s.value, bound, buffers, s)
        elif isinstance(s, L.IfThenElse):
            if not s.cond.type.is_bool():
                self.fail(f"condition {s.cond} is {s.cond.type}, not bool", s)
            self.expr(s.cond, bound, buffers, s)
            if s.else_case is not None:
                work.append((s.else_case, bound, buffers, kinds))
            work.append((s.then_case, bound, buffers, kinds))
        elif isinstance(s, L.Block):
            work.extend((x, bound, buffers, kinds) for x in reversed(s.stmts))
        elif isinstance(s, L.ProducerConsumer):
            work.append((s.body, bound, buffers, kinds))
        elif isinstance(s, L.Barrier):
            pass
        elif isinstance(s, L.Free):
            if s.name not in buffers or s.name in self.buffers:
                self.fail(f"free {s.name}, which is not an enclosing allocation", s)
        elif isinstance(s, L.Provide):
            self.fail(f"Provide to {s.func} remains after lowering", s)
        else:
            self.fail(f"unknown statement {type(s).__name__}")

    def _bind(self, name, bound, where):
        if name in bound or name in self.arg_vars:
            self.fail(f"{name} is bound twice on one path", where)


def verify(lowered: L.LoweredPipeline) -> L.LoweredPipeline:
    """Check ``lowered`` (see the module docstring); returns it unchanged."""
    v = _Verifier(lowered)
    v.stmt(lowered.body, frozenset(), dict(v.buffers), ())
    return lowered
