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

import contextlib
from collections import Counter

from ..analysis.simplify import numeric_bounds, simplify
from ..model import expr as E
from ..model.visit import substitute_names, trampoline, walk
from . import ir as L

DECIDE_NODES = 100    # largest condition _decide simplifies once its lets are written out

_GPU = ("gpu_block", "gpu_thread")


class _Simp:
    def __init__(self):
        self.env: dict[str, E.Expr] = {}      # let substitutions
        self.ranges: dict[str, tuple] = {}    # numeric (lo, hi) of loop vars and lets
        self.values: dict[str, E.Expr] = {}   # integer lets in scope: name -> value

    def expr(self, x: E.Expr) -> E.Expr:
        if self.env:
            x = substitute_names(x, self.env)
        return simplify(x, self.scope_of(x))

    def scope_of(self, x: E.Expr) -> dict:
        """The ranges of the names ``x`` uses (not of every enclosing let: a long
        pipeline has thousands, and converting them per Expr would be quadratic)."""
        if not self.ranges:
            return {}
        return {v.name: self.ranges[v.name] for v in walk(x)
                if isinstance(v, E.Var) and v.name in self.ranges}

    @contextlib.contextmanager
    def _binding(self, name, *, env=None, rng=None):
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
            yield
        finally:
            for d, old in ((self.env, old_env), (self.ranges, old_rng)):
                if old is None:
                    d.pop(name, None)
                else:
                    d[name] = old

    def step(self, s: L.Stmt):
        """One statement for ``trampoline``: the simplified statement (None when it
        does nothing), or a generator that yields the children to simplify."""
        if isinstance(s, L.Store):
            i, v = self.expr(s.index), self.expr(s.value)
            return s if (i is s.index and v is s.value) else L.Store(s.buffer, i, v)
        if isinstance(s, L.Provide):
            args = tuple(self.expr(a) for a in s.args)
            v = self.expr(s.value)
            if v is s.value and all(a is b for a, b in zip(args, s.args)):
                return s
            return L.Provide(s.func, args, v)
        handler = self._compound.get(type(s))
        return s if handler is None else handler(self, s)

    def _let(self, s: L.LetStmt):
        v = self.expr(s.value)
        if isinstance(v, (E.Const, E.Var)):
            with self._binding(s.name, env=v):
                return (yield s.body)
        rng = numeric_bounds(v, self.scope_of(v)) if not v.type.is_float() else None
        old = self.values.get(s.name)
        if rng is not None:
            self.values[s.name] = v
        try:
            with self._binding(s.name, rng=rng):
                body = yield s.body
        finally:
            if old is None:
                self.values.pop(s.name, None)
            else:
                self.values[s.name] = old
        if body is None:
            return None
        if v is s.value and body is s.body:
            return s
        return L.LetStmt(s.name, v, body)

    def _for(self, s: L.For):
        mn, ext = self.expr(s.min), self.expr(s.extent)
        if isinstance(ext, E.Const) and ext.value <= 0:
            return None
        if isinstance(ext, E.Const) and ext.value == 1 and s.kind not in _GPU:
            return (yield L.LetStmt(s.name, mn, s.body))
        rng = None
        lo, hi = numeric_bounds(mn, self.scope_of(mn)), numeric_bounds(ext, self.scope_of(ext))
        if hi[1] != float("inf") and lo[0] != float("-inf"):
            rng = (lo[0], lo[1] + hi[1] - 1)
        with self._binding(s.name, rng=rng):
            body = yield s.body
        if body is None:
            return None
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return L.For(s.name, mn, ext, s.kind, body)

    def _if(self, s: L.IfThenElse):
        c = self.expr(s.cond)
        if not isinstance(c, E.Const):
            c = self._decide(c)
        if isinstance(c, E.Const):
            if c.value:
                return (yield s.then_case)
            return None if s.else_case is None else (yield s.else_case)
        t = yield s.then_case
        f = None if s.else_case is None else (yield s.else_case)
        if t is None and f is None:
            return None
        if t is None:
            return L.IfThenElse(simplify(E.Not(c)), f)
        if c is s.cond and t is s.then_case and f is s.else_case:
            return s
        return L.IfThenElse(c, t, f, s.steady and f is not None)

    def _decide(self, c: E.Expr) -> E.Expr:
        """``c``, or its value when the lets it uses, written out, prove it: a tail
        guard ``x < base + 32`` where ``x = base + 16*i + j`` with ``i`` in [0, 1] and
        ``j`` in [0, 15] is always true (Halide proves such guards away too; left in,
        a vector loop would run masked code).  The condition itself stays as written.
        Gives up once the written-out condition exceeds ``DECIDE_NODES`` nodes (the
        conditions it decides in the apps have about 20): the lets of deep pipelines
        nest region arithmetic many levels deep, and writing them out cost lens_blur's
        lowering 8-10 of its 12 s without deciding anything."""
        x = c
        for _ in range(8):
            names, size = set(), 0
            for v in walk(x):
                size += 1
                if isinstance(v, E.Var) and v.name in self.values:
                    names.add(v.name)
            if size > DECIDE_NODES:
                return c
            if not names:
                break
            x = substitute_names(x, {n: self.values[n] for n in names})
        if x is c:
            return c
        r = simplify(x, self.scope_of(x))
        return r if isinstance(r, E.Const) else c

    def _block(self, s: L.Block):
        parts = []
        for x in s.stmts:
            p = yield x
            if p is not None:
                parts.append(p)
        if not parts:
            return None
        if len(parts) == len(s.stmts) and all(a is b for a, b in zip(parts, s.stmts)):
            return s
        return L.Block.make(parts)

    def _allocate(self, s: L.Allocate):
        exts = tuple(self.expr(x) for x in s.extents)
        body = yield s.body
        if body is None:
            return None
        if body is s.body and all(a is b for a, b in zip(exts, s.extents)):
            return s
        return L.Allocate(s.name, s.type, exts, s.memory, body)

    def _producer_consumer(self, s: L.ProducerConsumer):
        body = yield s.body
        if body is None:
            return None
        return s if body is s.body else L.ProducerConsumer(s.name, s.is_producer, body)

    _compound = {L.LetStmt: _let, L.For: _for, L.IfThenElse: _if, L.Block: _block,
                 L.Allocate: _allocate, L.ProducerConsumer: _producer_consumer}


def _var_uses(s: L.Stmt) -> Counter:
    """How many times each name is used (Vars in every Expr, Allocate names), one walk."""
    uses: Counter = Counter()
    for n in L.walk_stmts(s):
        if isinstance(n, L.Allocate):
            uses[n.name] += 1
        for e in L.stmt_exprs(n):
            for v in walk(e):
                if isinstance(v, E.Var):
                    uses[v.name] += 1
    return uses


def _drop_unused_lets(s: L.Stmt) -> L.Stmt:
    """Remove lets whose name is never read (counted by name over the whole program,
    so a name used anywhere keeps every let of that name: conservative).  Dropping a
    let can make another one dead, so repeat until nothing changes (linear passes)."""
    def skip(n):
        return (yield n.body)

    while True:
        uses = _var_uses(s)
        dropped = []

        def step(n):
            if isinstance(n, L.LetStmt) and uses[n.name] == 0:
                dropped.append(n.name)
                return skip(n)
            return L.map_children(n)
        s = trampoline(s, step)
        if not dropped:
            return s


def simplify_stmt(s: L.Stmt) -> L.Stmt:
    """``s`` simplified (see the module docstring); never None."""
    simp = _Simp()
    r = trampoline(s, simp.step)
    return L.Block(()) if r is None else _drop_unused_lets(r)
