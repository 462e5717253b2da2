"""Statement simplification: keep the lowered program small.

* every Expr goes through ``analysis.simplify.simplify`` with the numeric
  ranges of the enclosing loops and lets (so guards like ``x < 256`` inside
  ``for x in [0, 16)`` fold away);
* a let whose value is a constant or a single Var is substituted; a let that
  is never used is dropped;
* a loop of extent 1 (not a GPU loop) becomes its body with the variable
  replaced by the min; a loop of extent <= 0 disappears;
* an ``if`` whose condition is provably true or false keeps only that branch;
* statements left empty disappear (an empty program is ``Block(())``).

Unchanged subtrees come back as the same objects.
"""
from __future__ import annotations

from ..analysis.simplify import numeric_bounds, simplify
from ..model import expr as E
from ..model.visit import substitute_names, walk
from . import ir as L

_GPU = ("gpu_block", "gpu_thread")


def _uses_name(s: L.Stmt, name: str) -> bool:
    for n in L.walk_stmts(s):
        for e in L.stmt_exprs(n):
            if any(isinstance(v, E.Var) and v.name == name for v in walk(e)):
                return True
        if isinstance(n, L.Allocate) and n.name == name:
            return True
    return False


class _Simp:
    def __init__(self):
        self.env: dict[str, E.Expr] = {}      # let substitutions
        self.ranges: dict[str, tuple] = {}    # numeric (lo, hi) of loop vars and lets

    def e(self, x: E.Expr) -> E.Expr:
        if self.env:
            x = substitute_names(x, self.env)
        return simplify(x, self.ranges)

    def _with(self, name, *, env=None, rng=None, fn):
        old_env, old_rng = self.env.get(name), self.ranges.get(name)
        if env is not None:
            self.env[name] = env
        else:
            self.env.pop(name, None)
        if rng is not None:
            self.ranges[name] = rng
        else:
            self.ranges.pop(name, None)
        try:
            return fn()
        finally:
            for d, old in ((self.env, old_env), (self.ranges, old_rng)):
                if old is None:
                    d.pop(name, None)
                else:
                    d[name] = old

    def s(self, s: L.Stmt):
        """The simplified statement, or None when it does nothing."""
        if isinstance(s, L.LetStmt):
            v = self.e(s.value)
            if isinstance(v, (E.Const, E.Var)):
                return self._with(s.name, env=v, fn=lambda: self.s(s.body))
            rng = numeric_bounds(v, self.ranges) if not v.type.is_float() else None
            body = self._with(s.name, rng=rng, fn=lambda: self.s(s.body))
            if body is None or not _uses_name(body, s.name):
                return body
            if v is s.value and body is s.body:
                return s
            return L.LetStmt(s.name, v, body)
        if isinstance(s, L.For):
            mn, ext = self.e(s.min), self.e(s.extent)
            if isinstance(ext, E.Const) and ext.value <= 0:
                return None
            if isinstance(ext, E.Const) and ext.value == 1 and s.kind not in _GPU:
                return self.s(L.LetStmt(s.name, mn, s.body))
            rng = None
            lo, hi = numeric_bounds(mn, self.ranges), numeric_bounds(ext, self.ranges)
            if hi[1] != float("inf") and lo[0] != float("-inf"):
                rng = (lo[0], lo[1] + hi[1] - 1)
            body = self._with(s.name, rng=rng, fn=lambda: self.s(s.body))
            if body is None:
                return None
            if mn is s.min and ext is s.extent and body is s.body:
                return s
            return L.For(s.name, mn, ext, s.kind, body)
        if isinstance(s, L.IfThenElse):
            c = self.e(s.cond)
            if isinstance(c, E.Const):
                return self.s(s.then_case) if c.value else (
                    None if s.else_case is None else self.s(s.else_case))
            t = self.s(s.then_case)
            f = None if s.else_case is None else self.s(s.else_case)
            if t is None and f is None:
                return None
            if t is None:
                return L.IfThenElse(simplify(E.Not(c)), f)
            if c is s.cond and t is s.then_case and f is s.else_case:
                return s
            return L.IfThenElse(c, t, f)
        if isinstance(s, L.Block):
            parts = [self.s(x) for x in s.stmts]
            parts = [p for p in parts if p is not None]
            if not parts:
                return None
            if len(parts) == len(s.stmts) and all(a is b for a, b in zip(parts, s.stmts)):
                return s
            return L.Block.make(parts)
        if isinstance(s, L.Allocate):
            exts = tuple(self.e(x) for x in s.extents)
            body = self.s(s.body)
            if body is None:
                return None
            if body is s.body and all(a is b for a, b in zip(exts, s.extents)):
                return s
            return L.Allocate(s.name, s.type, exts, s.memory, body)
        if isinstance(s, L.ProducerConsumer):
            body = self.s(s.body)
            if body is None:
                return None
            return s if body is s.body else L.ProducerConsumer(s.name, s.is_producer, body)
        if isinstance(s, L.Store):
            i, v = self.e(s.index), self.e(s.value)
            return s if (i is s.index and v is s.value) else L.Store(s.buffer, i, v)
        if isinstance(s, L.Provide):
            args = tuple(self.e(a) for a in s.args)
            v = self.e(s.value)
            if v is s.value and all(a is b for a, b in zip(args, s.args)):
                return s
            return L.Provide(s.func, args, v)
        return s


def simplify_stmt(s: L.Stmt) -> L.Stmt:
    """``s`` simplified (see the module docstring); never None."""
    r = _Simp().s(s)
    return L.Block(()) if r is None else r
