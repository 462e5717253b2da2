"""Placing realizations and bounds inference (Halide's schedule_functions +
bounds inference, in one pass from the outputs up).

The program starts as the outputs' stage nests.  Then every realized
non-output Func ``P``, consumers before producers, is inserted at its compute
level::

    let P.x.min = <lowest x any use of P inside `rest` reads>
    let P.x.extent = ...
    let P.buf.min.0 = ... ; let P.buf.extent.0 = ...       (store level)
    allocate P[P.buf.extent.0 x ...] in <memory>
      produce P: <P's stage nests>
      consume P: rest

``rest`` is what follows the insertion point: at root, the top-level
statements from the first one that uses ``P``; at ``compute_at(C, v)``, the
body of every loop ``C.s0...v`` after the lets (and guards) that open it.
The region is the box of ``P`` that ``rest`` reads (``bounds.box_of``),
symbolic in the names free there (outer loop variables, other Funcs' regions,
argument extents).  A Func with updates computes its pure stage over that
region grown by every site its updates read or write.  The buffer covers
every site written or read between its store and compute levels (so
``round_up`` tails and ``store_root`` get what they touch); its extents are
constants whenever an upper bound is provable, so tile buffers can live on
the stack.  Inside a GPU block (outside its thread loops) a ``Barrier``
separates a producer's threads from its consumer's.
"""
from __future__ import annotations

from ..analysis.simplify import numeric_bounds, simplify
from ..errors import BoundsError, LoweringError, ScheduleError
from ..model import expr as E
from ..model import types as T
from ..model.visit import trampoline, walk
from . import bounds as B
from . import ir as L
from .stages import nest_names, region_names

STACK_LIMIT_BYTES = 64 * 1024


def buffer_names(name: str, d: int) -> tuple:
    """The Vars holding an allocation's min and extent in dimension ``d``."""
    return f"{name}.buf.min.{d}", f"{name}.buf.extent.{d}"


# ---------------------------------------------------------------------------
# Statement surgery
# ---------------------------------------------------------------------------
def with_children(s: L.Stmt, kids: list) -> L.Stmt:
    """``s`` with its children replaced (``s`` itself when they are the same)."""
    old = L.stmt_children(s)
    if len(old) == len(kids) and all(a is b for a, b in zip(old, kids)):
        return s
    if isinstance(s, L.For):
        return L.For(s.name, s.min, s.extent, s.kind, kids[0])
    if isinstance(s, L.Allocate):
        return L.Allocate(s.name, s.type, s.extents, s.memory, kids[0])
    if isinstance(s, L.LetStmt):
        return L.LetStmt(s.name, s.value, kids[0])
    if isinstance(s, L.ProducerConsumer):
        return L.ProducerConsumer(s.name, s.is_producer, kids[0])
    if isinstance(s, L.IfThenElse):
        return L.IfThenElse(s.cond, kids[0], kids[1] if len(kids) > 1 else None)
    if isinstance(s, L.Block):
        return L.Block.make(kids)
    raise AssertionError(type(s))


def _descend(s: L.Stmt, make):
    """Apply ``make`` below the lets and guards that open a loop body."""
    opening = []
    while isinstance(s, L.LetStmt) or (isinstance(s, L.IfThenElse) and s.else_case is None):
        opening.append(s)
        s = s.body if isinstance(s, L.LetStmt) else s.then_case
    s = make(s)
    for o in reversed(opening):
        s = L.LetStmt(o.name, o.value, s) if isinstance(o, L.LetStmt) else L.IfThenElse(o.cond, s)
    return s


def insert_top(body: L.Stmt, name: str, make, names) -> L.Stmt:
    stmts = list(body.stmts) if isinstance(body, L.Block) else [body]
    for i, s in enumerate(stmts):
        if B.uses(s, name, names):
            return L.Block.make(stmts[:i] + [make(L.Block.make(stmts[i:]), ())])
    return body


def _rebuild(s: L.Stmt, kinds: tuple):
    """A ``trampoline`` step's generator: rebuild ``s`` from its children, each
    visited with the loop kinds around it."""
    k = kinds + (s.kind,) if isinstance(s, L.For) else kinds
    kids = []
    for c in L.stmt_children(s):
        kids.append((yield (c, k)))
    return with_children(s, kids)


def insert_in_loop(body: L.Stmt, loop: str, make) -> tuple:
    """Insert ``make(rest, kinds)`` inside every loop named ``loop``; (stmt, count)."""
    count = [0]

    def step(item):
        s, kinds = item
        if isinstance(s, L.For) and s.name == loop:
            count[0] += 1
            k = kinds + (s.kind,)
            return L.For(s.name, s.min, s.extent, s.kind, _descend(s.body, lambda r: make(r, k)))
        if not L.stmt_children(s):
            return s
        return _rebuild(s, kinds)
    return trampoline((body, ()), step), count[0]


def insert_innermost(body: L.Stmt, name: str, make, names) -> L.Stmt:
    """Wrap every innermost statement whose own Exprs use ``name``."""
    def step(item):
        s, kinds = item
        if not B.uses(s, name, names):
            return s
        if not isinstance(s, L.Block) and B.own_uses(s, name, names):
            return make(s, kinds)
        return _rebuild(s, kinds)
    return trampoline((body, ()), step)


def used_outside(body: L.Stmt, name: str, names) -> bool:
    """Whether some use of ``name`` lies outside its produce/consume statements."""
    stack = [body]
    while stack:
        s = stack.pop()
        if not B.uses(s, name, names):
            continue
        if isinstance(s, L.ProducerConsumer) and s.name == name:
            continue
        if B.own_uses(s, name, names) or (isinstance(s, L.Provide) and s.func == name):
            return True
        stack.extend(L.stmt_children(s))
    return False


def wrap_lets(lets: list, s: L.Stmt) -> L.Stmt:
    for n, v in reversed(lets):
        s = L.LetStmt(n, v, s)
    return s


# ---------------------------------------------------------------------------
# Constant upper bounds of extents
# ---------------------------------------------------------------------------
def _push(e: E.Expr, depth: int = 0) -> E.Expr:
    """Distribute + and - over min/max/select so that cancellations show."""
    if depth > 6 or not isinstance(e, E.BinOp) or e.op not in ("add", "sub"):
        return e
    a, b = _push(e.a, depth + 1), _push(e.b, depth + 1)
    op = e.op
    if isinstance(a, E.BinOp) and a.op in ("min", "max"):
        return E.BinOp(a.op, _push(simplify(E.binop(op, a.a, b)), depth + 1),
                       _push(simplify(E.binop(op, a.b, b)), depth + 1))
    if isinstance(b, E.BinOp) and b.op in ("min", "max"):
        m = b.op if op == "add" else ("max" if b.op == "min" else "min")
        return E.BinOp(m, _push(simplify(E.binop(op, a, b.a)), depth + 1),
                       _push(simplify(E.binop(op, a, b.b)), depth + 1))
    return simplify(E.binop(op, a, b))


def const_upper(e: E.Expr):
    """A provable constant upper bound of an int32 Expr, or None.

    The bound must not depend on the values of the free names: it is taken
    twice, with the names anywhere in int32 and within +-2**20, and kept only
    when both agree (``min(256, W - x)`` gives 256 both times; ``W / 8`` does
    not) and it is at most 2**20 (what is bigger would be a heap buffer anyway;
    that also rejects bounds that only come from a type's range)."""
    e = simplify(e)
    if isinstance(e, E.Const):
        return int(e.value)
    if sum(1 for _ in walk(e)) > 80:     # tile extents are small Exprs; skip the rest
        return None
    p = _push(e)
    free = {n.name for n in walk(p) if isinstance(n, (E.Var, E.Param, E.RVar))}
    free |= {f"{n.image}.extent.{n.dim}" for n in walk(p) if isinstance(n, E.BufferExtent)}
    hi = numeric_bounds(p)[1]
    small = numeric_bounds(p, {n: (-(1 << 20), 1 << 20) for n in free})[1]
    if hi is None or hi != small or hi > 1 << 20:   # a constant only worth it for tiles
        return None
    return int(hi)


# ---------------------------------------------------------------------------
# The placer
# ---------------------------------------------------------------------------
class Placer:
    def __init__(self, plan, nests: dict):
        self.plan, self.nests = plan, nests
        self.known, loop_names = {}, set()
        for ns in nests.values():
            for n in ns:
                self.known.update(n.ranges)
                loop_names |= nest_names(n.stmt)
        self.loop_names = frozenset(loop_names)
        self.names = B.Names()
        self.func_bounds = func_value_bounds_for(plan.pipeline)
        # Lets of realizations outside every loop go to the top of the program, in
        # the order made (consumers first), so a producer's region refers to its
        # consumers' region Vars instead of repeating their Exprs.
        self.top_lets: list = []

    def run(self) -> L.Stmt:
        plan = self.plan
        outs = [n for n in plan.order if n in plan.outputs]
        body = L.Block.make([L.ProducerConsumer(o, True, self._produce(o)) for o in outs])
        for name in reversed(plan.order):
            if name in plan.outputs or name in plan.inlined:
                continue
            body = self.realize(name, body)
        lets = []
        for o in plan.outputs:
            f = plan.func(o)
            for d, a in enumerate(f.args):
                mn, ext = region_names(o, a.name, 1, True)
                lets += [(mn, E.Const(T.int32, 0)), (ext, E.Var(f"{o}.extent.{d}"))]
                if f.updates:
                    mn0, ext0 = region_names(o, a.name, 0, True)
                    lets += [(mn0, E.Var(mn)), (ext0, E.Var(ext))]
        return wrap_lets(lets + self.top_lets, body)

    def _lets(self, lets, kinds, s):
        if kinds:
            return wrap_lets(lets, s)
        self.top_lets.extend(lets)
        return s

    def box(self, s, name, reads=True, writes=True):
        return B.box_of(s, name, reads=reads, writes=writes, known=self.known,
                        func_bounds=self.func_bounds, names=self.names,
                        loop_names=self.loop_names)

    def _produce(self, name) -> L.Stmt:
        return L.Block.make([n.stmt for n in self.nests[name]])

    # -- one Func ----------------------------------------------------------------------
    def realize(self, name: str, body: L.Stmt) -> L.Stmt:
        plan = self.plan
        if not B.uses(body, name, self.names):
            plan.notes.append(f"{name} is never used: not computed")
            return body
        comp, store = plan.compute[name], plan.store[name]
        same = store == comp or comp == ("innermost",)

        def make(rest, kinds):
            return self.make(name, rest, kinds, with_alloc=same)
        if comp == ("root",):
            body = insert_top(body, name, make, self.names)
        elif comp == ("innermost",):
            body = insert_innermost(body, name, make, self.names)
        else:
            body = self._at(body, name, comp, make, "computed")
        if not same:
            def alloc(rest, kinds):
                return self.allocate(name, rest, kinds, [])
            if store == ("root",):
                body = insert_top(body, name, alloc, self.names)
            else:
                body = self._at(body, name, store, alloc, "stored")
        if used_outside(body, name, self.names):
            raise ScheduleError(f"Func {name} is computed at {self._level_str(comp)}, but some "
                                "statement outside that loop uses it; compute it at a loop that "
                                "encloses every use (or compute_root)")
        return body

    @staticmethod
    def _level_str(lvl) -> str:
        return f"{lvl[1]}.{lvl[2]}" if lvl[0] == "at" else lvl[0]

    def _at(self, body, name, lvl, make, what):
        _, c, var = lvl
        nests = self.nests.get(c)
        if not nests or var not in nests[0].loops:
            raise ScheduleError(f"Func {name} is {what} at {c}.{var}, but {c} has no such loop in "
                                "its pure stage (is it inlined?)")
        body, n = insert_in_loop(body, nests[0].loops[var], make)
        if n == 0:
            raise ScheduleError(f"Func {name} is {what} at {c}.{var}, but that loop is not in "
                                f"the program yet: {c} must be a consumer of {name}")
        return body

    def make(self, name: str, rest: L.Stmt, kinds: tuple, with_alloc: bool) -> L.Stmt:
        plan = self.plan
        f = plan.func(name)
        demand = self.box(rest, name, writes=False)
        if demand is None:
            return rest
        lets = []
        fixed = plan.bounds.get(name, {})
        for d, a in enumerate(f.args):
            mn, ext = region_names(name, a.name, 1, True)
            if a.name in fixed:
                lo, e = fixed[a.name]
                lets += [(mn, E.Const(T.int32, lo)), (ext, E.Const(T.int32, e))]
                continue
            lo, hi = self._finite(name, demand[d], d, a.name, "its consumers read")
            lets += [(mn, lo), (ext, simplify(hi - lo + 1))]
        if f.updates:
            upd = L.Block.make([n.stmt for n in self.nests[name][1:]])
            touched = self.box(upd, name)
            for d, a in enumerate(f.args):
                mn, ext = (E.Var(n) for n in region_names(name, a.name, 1, True))
                mn0, ext0 = region_names(name, a.name, 0, True)
                if touched is None or a.name in fixed:
                    lets += [(mn0, mn), (ext0, ext)]
                    continue
                lo, hi = self._finite(name, touched[d], d, a.name, "its updates touch")
                lo = simplify(E.min_(mn, lo))
                hi = simplify(E.max_(mn + ext - 1, hi))
                lets += [(mn0, lo), (ext0, simplify(hi - E.Var(mn0) + 1))]
        parts = [L.ProducerConsumer(name, True, self._produce(name))]
        barrier = "gpu_block" in kinds and "gpu_thread" not in kinds
        if barrier:
            parts.append(L.Barrier())
        parts.append(L.ProducerConsumer(name, False, rest))
        if barrier and kinds[-1] != "gpu_block":
            parts.append(L.Barrier())    # the next iteration overwrites the buffer
        stmt = L.Block.make(parts)
        if not kinds:                       # hoisted: region lets before buffer lets
            self.top_lets.extend(lets)
            return self.allocate(name, stmt, kinds, lets) if with_alloc else stmt
        if with_alloc:
            stmt = self.allocate(name, stmt, kinds, lets)
        return wrap_lets(lets, stmt)

    @staticmethod
    def _finite(name, iv, d, var, what):
        lo, hi = iv
        if lo is None or hi is None:
            raise BoundsError(f"Func {name}: the region {what} is unbounded in dimension {d} "
                              f"({var}); clamp the index expressions that read it")
        return lo, hi

    def allocate(self, name: str, stmt: L.Stmt, kinds: tuple, lets: list) -> L.Stmt:
        """Allocate ``name`` around ``stmt`` (inside ``lets``), sized by what it touches."""
        f = self.plan.func(name)
        # Writes suffice: every read is of a point some stage wrote (the
        # interpreter checks that); reads would only clutter the Exprs.
        box = self.box(stmt, name, reads=False)
        if box is None:
            return stmt
        values = {}
        for n, v in lets:
            values[n] = simplify(_subst(v, values))
        alets, extents, const = [], [], True
        for d, a in enumerate(f.args):
            lo, hi = self._finite(name, box[d], d, a.name, "the buffer holds")
            ext = simplify(hi - lo + 1)
            cu = const_upper(_subst(ext, values))
            if cu is not None:
                ext = E.Const(T.int32, max(cu, 1))
            else:
                const = False
            mn_n, ext_n = buffer_names(name, d)
            alets += [(mn_n, lo), (ext_n, ext)]
            extents.append(E.Var(ext_n))
        memory = self._memory(name, kinds, const, alets)
        return self._lets(alets, kinds, L.Allocate(name, f.type, tuple(extents), memory, stmt))

    def _memory(self, name, kinds, const, alets) -> str:
        asked = self.plan.memory.get(name, "auto")
        size = None
        if const:
            size = self.plan.func(name).type.bytes
            for n, v in alets[1::2]:
                size *= v.value
        if asked != "auto":
            if asked in ("stack", "register", "shared") and not const:
                raise ScheduleError(f"Func {name}: store_in({asked!r}) needs a buffer of constant "
                                    "size, but its extents depend on run-time values")
            return asked
        if not kinds:
            return "heap"
        if "gpu_thread" in kinds and const:
            return "register"
        if "gpu_block" in kinds and const:
            return "shared"
        if const and size <= STACK_LIMIT_BYTES:
            return "stack"
        return "heap"


def func_value_bounds_for(pipeline) -> dict:
    """The value range of every Func, valid for all Param values, to bound
    data-dependent indices (``lut[f[x]]``), as Halide and the reference do.

    The numeric ranges of ``analysis.intervals.func_value_bounds`` (Params
    unbounded), except where those are unbounded and a symbolic range in the
    Params and input extents exists (``clamp(f(x), -r, r)`` gives ``[-r, r]``)."""
    from ..analysis.intervals import Interval, func_value_bounds
    params = {n: Interval(None, None) for n in pipeline.params}
    try:
        numeric = func_value_bounds(pipeline, params=params)
    except Exception:  # noqa: BLE001 - the value ranges only tighten bounds
        numeric = {}
    out = dict(numeric)
    for name in pipeline.order():
        f = pipeline.func(name)
        iv = numeric.get(name)
        if iv is not None and iv.is_bounded() and -(1 << 31) < iv.lo and iv.hi < (1 << 31) - 1:
            continue
        if f.updates:
            continue
        scope = {a.name: Interval(None, None) for a in f.args}
        sym = B.LowerBounder(scope, func_bounds=out, symbolic=True).bounds(f.value)
        if sym.is_bounded():
            out[name] = sym
    return out


def _subst(e, values: dict):
    if not values:
        return e
    from ..model.visit import substitute_names
    return substitute_names(e, values)


def place_realizations(plan, nests: dict) -> L.Stmt:
    """The whole program before flattening (see the module docstring)."""
    try:
        return Placer(plan, nests).run()
    except RecursionError as exc:  # pragma: no cover - pathological nesting
        raise LoweringError("the loop nest is too deep to lower") from exc
