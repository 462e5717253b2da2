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
the stack.  GPU buffers (and an explicit ``store_in`` of stack, register or
shared) must have one: as in Halide, the extent is bounded through the lets
and loops that enclose the allocation (``ExtentBounder``), so a tail tile's
``min(tile, W - base)`` gets the constant size of a full tile; only the
allocation's size (and so its strides) uses the bound, the region computed
and the buffer's min stay exact.  Inside a GPU block (outside its thread
loops) a ``Barrier`` separates a producer's threads from its consumer's.
"""
from __future__ import annotations

from ..analysis.intervals import Bounder
from ..analysis.simplify import simplify
from ..errors import BoundsError, LoweringError, ScheduleError
from ..model import expr as E
from ..model import types as T
from ..model.visit import substitute_names, trampoline
from . import bounds as B
from . import ir as L
from . import sliding as SL
from .extent_bound import ExtentBounder, _culprits, const_upper  # noqa: F401 (re-exported)
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
        return L.IfThenElse(s.cond, kids[0], kids[1] if len(kids) > 1 else None, s.steady)
    if isinstance(s, L.Block):
        return L.Block.make(kids)
    raise AssertionError(type(s))


def _descend(s: L.Stmt, make):
    """Apply ``make(body, env)`` below the lets and guards that open a loop body
    (``env``: those lets and guards, as ``("let", name, value)`` and ``("if", cond)``
    entries, outermost first)."""
    opening = []
    while isinstance(s, L.LetStmt) or (isinstance(s, L.IfThenElse) and s.else_case is None):
        opening.append(s)
        s = s.body if isinstance(s, L.LetStmt) else s.then_case
    s = make(s, tuple(("let", o.name, o.value) if isinstance(o, L.LetStmt) else ("if", o.cond)
                      for o in opening))
    for o in reversed(opening):
        s = L.LetStmt(o.name, o.value, s) if isinstance(o, L.LetStmt) else L.IfThenElse(o.cond, s)
    return s


# The insertion helpers call ``make(rest, kinds, env)``: ``kinds`` the kinds of
# the loops around ``rest`` (outermost first), ``env`` what encloses it, outermost
# first: ``("let", name, value)`` for a LetStmt, ``("for", name, min, extent)``
# for a loop, and ``("if", cond)`` for a guard that opens a loop body.  ``env`` lets allocations bound their extents by constants.
def _enclosing(s: L.Stmt) -> tuple:
    """The ``env`` entry ``s`` adds for its children (none for most statements)."""
    if isinstance(s, L.LetStmt):
        return (("let", s.name, s.value),)
    if isinstance(s, L.For):
        return (("for", s.name, s.min, s.extent),)
    return ()


def insert_top(body: L.Stmt, name: str, make, names) -> L.Stmt:
    stmts = list(body.stmts) if isinstance(body, L.Block) else [body]
    for i, s in enumerate(stmts):
        if B.uses(s, name, names):
            return L.Block.make(stmts[:i] + [make(L.Block.make(stmts[i:]), (), ())])
    return body


def _rebuild(s: L.Stmt, kinds: tuple, env: tuple = ()):
    """A ``trampoline`` step's generator: rebuild ``s`` from its children, each
    visited with the loop kinds and the ``env`` around it."""
    k = kinds + (s.kind,) if isinstance(s, L.For) else kinds
    e = env + _enclosing(s)
    kids = []
    for c in L.stmt_children(s):
        kids.append((yield (c, k, e)))
    return with_children(s, kids)


def insert_in_loop(body: L.Stmt, loop: str, make) -> tuple:
    """Insert ``make(rest, kinds, env)`` inside every loop named ``loop``; (stmt, count)."""
    count = [0]

    def step(item):
        s, kinds, env = item
        if isinstance(s, L.For) and s.name == loop:
            count[0] += 1
            k, e = kinds + (s.kind,), env + _enclosing(s)
            return L.For(s.name, s.min, s.extent, s.kind,
                         _descend(s.body, lambda r, opening: make(r, k, e + opening)))
        if not L.stmt_children(s):
            return s
        return _rebuild(s, kinds, env)
    return trampoline((body, (), ()), step), count[0]


def insert_innermost(body: L.Stmt, name: str, make, names) -> L.Stmt:
    """Wrap every innermost statement whose own Exprs use ``name``."""
    def step(item):
        s, kinds, env = item
        if not B.uses(s, name, names):
            return s
        if not isinstance(s, L.Block) and B.own_uses(s, name, names):
            return make(s, kinds, env)
        return _rebuild(s, kinds, env)
    return trampoline((body, (), ()), step)


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
        self.output_lets = self._output_lets()
        self._consts: dict = {}         # top lets whose value folds to a constant
        self._consts_seen = 0

    def run(self) -> L.Stmt:
        plan = self.plan
        outs = [n for n in plan.order if n in plan.outputs]
        body = L.Block.make([L.ProducerConsumer(o, True, self._produce(o)) for o in outs])
        for name in reversed(plan.order):
            if name in plan.outputs or name in plan.inlined:
                continue
            body = self.realize(name, body)
        return wrap_lets(self.output_lets + self.top_lets, body)

    def _output_lets(self) -> list:
        """The outputs' region lets (min 0, or the buffer's with ``buffer_mins``; extent
        the output buffer's), outermost."""
        lets = []
        shifted = getattr(self.plan, "buffer_mins", False)
        for o in self.plan.outputs:
            f = self.plan.func(o)
            for d, a in enumerate(f.args):
                mn, ext = region_names(o, a.name, 1, True)
                lo = E.Var(f"{o}.min.{d}") if shifted else E.Const(T.int32, 0)
                lets += [(mn, lo), (ext, E.Var(f"{o}.extent.{d}"))]
                if f.updates:
                    mn0, ext0 = region_names(o, a.name, 0, True)
                    lets += [(mn0, E.Var(mn)), (ext0, E.Var(ext))]
        return lets

    def _lets(self, lets, kinds, s):
        if kinds:
            return wrap_lets(lets, s)
        self.top_lets.extend(lets)
        return s

    def box(self, s, name, reads=True, writes=True):
        return B.box_of(s, name, reads=reads, writes=writes, known=self.known,
                        func_bounds=self.func_bounds, names=self.names,
                        loop_names=self.loop_names, constants=self._constant_lets())

    def _constant_lets(self) -> dict:
        """The top lets made so far whose value folds to a constant, name -> Const.
        A producer's region is bounded with them: a loop over ``[f.t.min, ...)`` whose
        ends are such lets is then bounded by numbers, which keeps a float index
        (``floor(log(2 t + 1))``) tight, as the solver's facts are."""
        lets = self.output_lets + self.top_lets
        for name, value in lets[self._consts_seen:]:
            v = simplify(substitute_names(value, self._consts))
            if isinstance(v, E.Const):
                self._consts[name] = v
        self._consts_seen = len(lets)
        return self._consts

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

        def make(rest, kinds, env):
            return self.make(name, rest, kinds, env, with_alloc=same)
        if comp == ("root",):
            body = insert_top(body, name, make, self.names)
        elif comp == ("innermost",):
            body = insert_innermost(body, name, make, self.names)
        else:
            body = self._at(body, name, comp, make, "computed")
        if not same:
            def alloc(rest, kinds, env):
                return self.allocate(name, rest, kinds, [], env)
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
        if lvl[0] != "at":
            return lvl[0]
        return f"{lvl[1]}.{lvl[2]}" if not lvl[3] else f"{lvl[1]}.update({lvl[3] - 1}).{lvl[2]}"

    def _at(self, body, name, lvl, make, what):
        _, c, var, k = lvl
        nests = self.nests.get(c)
        if not nests or k >= len(nests) or var not in nests[k].loops:
            label = "its pure stage" if k == 0 else f"its update {k - 1}"
            raise ScheduleError(f"Func {name} is {what} at {self._level_str(lvl)}, but {c} has "
                                f"no such loop in {label} (is it inlined?)")
        body, n = insert_in_loop(body, nests[k].loops[var], make)
        if n == 0:
            raise ScheduleError(f"Func {name} is {what} at {self._level_str(lvl)}, but that loop "
                                f"is not in the program yet: {c} must be a consumer of {name}")
        return body

    def make(self, name: str, rest: L.Stmt, kinds: tuple, env: tuple,
             with_alloc: bool) -> L.Stmt:
        plan = self.plan
        f = plan.func(name)
        self._check_gpu_nesting(name, kinds)
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
        window = None
        if not with_alloc and kinds and plan.target == "cpu" and not f.updates:
            window = self._slide(name, demand, lets, kinds, env, fixed)
        parts = [L.ProducerConsumer(name, True, self._produce(name))]
        barrier = "gpu_block" in kinds and "gpu_thread" not in kinds
        if barrier:
            parts.append(L.Barrier())
        parts.append(L.ProducerConsumer(name, False, rest))
        if barrier and kinds[-1] != "gpu_block":
            parts.append(L.Barrier())    # the next iteration overwrites the buffer
        stmt = L.Block.make(parts)
        if window is not None:
            stmt = self._fold(name, window, stmt, env, lets, demand)
        if not kinds:                       # hoisted: region lets before buffer lets
            self.top_lets.extend(lets)
            return self.allocate(name, stmt, kinds, lets, env) if with_alloc else stmt
        if with_alloc:
            stmt = self.allocate(name, stmt, kinds, lets, env)
        return wrap_lets(lets, stmt)

    def _slide(self, name, demand, lets, kinds, env, fixed):
        """Make ``lets`` compute only the new part of a sliding window (``sliding.py``);
        the Window, or None when the region does not slide."""
        f = self.plan.func(name)
        store = self.plan.store[name]
        store_loop = None if store == ("root",) else self.nests[store[1]][store[3]].loops[store[2]]
        fixed_dims = {d for d, a in enumerate(f.args) if a.name in fixed}
        w = SL.find_window(demand, env, kinds, store_loop, fixed_dims)
        if w is None:
            return None
        mn, ext = region_names(name, f.args[w.dim].name, 1, True)
        lo, hi = demand[w.dim]
        new_lo = SL.slid_min(w, lo)
        k = next(i for i, (n, _) in enumerate(lets) if n == mn)
        lets[k:k + 2] = [(mn, new_lo), (ext, simplify(hi - E.Var(mn) + 1))]
        self.plan.notes.append(f"{name}: sliding window over {w.loop} in dimension {w.dim} "
                               f"({f.args[w.dim].name})")
        return w

    def _fold(self, name, window, stmt, env, lets, demand) -> L.Stmt:
        """Fold ``name``'s storage in the window's dimension when the region one
        iteration reads has a constant size (``sliding.py``)."""
        f = self.plan.func(name)
        d = window.dim
        written = self.box(self._produce(name), name, reads=False)
        if written is None:
            return stmt
        mn, ext = (E.Var(n) for n in region_names(name, f.args[d].name, 1, True))
        bound = ExtentBounder.at(self.output_lets + self.top_lets, env, lets)
        factor = SL.fold_factor(demand[d], written[d], mn, ext, bound)
        if factor is None:
            return stmt
        self.plan.notes.append(f"{name}: storage folded by {factor} in dimension {d}")
        return SL.fold_accesses(stmt, name, d, factor)

    def _check_gpu_nesting(self, name, kinds) -> None:
        """A Func computed inside a GPU thread loop runs on that thread: its own loops
        must be serial; inside a block loop it may use threads but not blocks."""
        outer = "gpu_thread" if "gpu_thread" in kinds else ("gpu_block" if "gpu_block" in kinds
                                                            else None)
        if outer is None:
            return
        banned = ("gpu_block", "gpu_thread") if outer == "gpu_thread" else ("gpu_block",)
        for n in self.nests[name]:
            for s in L.walk_stmts(n.stmt):
                if isinstance(s, L.For) and s.kind in banned:
                    raise ScheduleError(
                        f"Func {name} is computed inside a {outer} loop of its consumer, so "
                        f"its {s.kind} loop {s.name} would run inside that {outer} loop; "
                        f"compute {name} at root (or at a block loop) to give it GPU "
                        f"{'blocks' if s.kind == 'gpu_block' else 'threads'}", func=name)

    @staticmethod
    def _finite(name, iv, d, var, what):
        lo, hi = iv
        if lo is None or hi is None:
            raise BoundsError(f"Func {name}: the region {what} is unbounded in dimension {d} "
                              f"({var}); clamp the index expressions that read it")
        return lo, hi

    def allocate(self, name: str, stmt: L.Stmt, kinds: tuple, lets: list,
                 env: tuple = ()) -> L.Stmt:
        """Allocate ``name`` around ``stmt`` (inside ``lets``, inside ``env``), sized
        by what it touches: each extent is a constant when one bounds it."""
        f = self.plan.func(name)
        # Writes suffice: every read is of a point some stage wrote (the
        # interpreter checks that); reads would only clutter the Exprs.
        box = self.box(stmt, name, reads=False)
        if box is None:
            return stmt
        asked = self.plan.memory.get(name, "auto")
        if "gpu_block" in kinds or "gpu_thread" in kinds or asked in ("stack", "register",
                                                                      "shared"):
            # Constant size needed (GPU arrays, an explicit store_in): bound through
            # every enclosing let and loop.
            bound = ExtentBounder.at(self.output_lets + self.top_lets, env, lets)
            alets, extents, exact = self._extents(name, f, box, bound)
            memory = self._memory(name, kinds, exact, alets)
        else:
            # A constant size only chooses stack over heap.  The Func's own lets first
            # (a heap buffer keeps its exact run-time size); inside a loop (a tile),
            # where that leaves it on the heap, the enclosing lets and loops too: a small
            # buffer then goes on the stack, not to the allocator once a tile.
            bound = ExtentBounder.at([], (), lets, try_nodes=80)
            alets, extents, exact = self._extents(name, f, box, bound)
            memory = self._memory(name, kinds, exact, alets)
            if memory == "heap" and kinds and asked == "auto":
                wide = self._extents(name, f, box, ExtentBounder.at(
                    self.output_lets + self.top_lets, env, lets, try_nodes=80))
                if self._memory(name, kinds, wide[2], wide[0]) == "stack":
                    (alets, extents, exact), memory = wide, "stack"
        return self._lets(alets, kinds, L.Allocate(name, f.type, tuple(extents), memory, stmt))

    def _extents(self, name, f, box, bound) -> tuple:
        """(lets of each dimension's min and extent, the extents' Vars, (arg, the
        extent: a constant where ``bound`` finds one)) of ``name``'s buffer."""
        alets, extents, exact = [], [], []
        for d, a in enumerate(f.args):
            lo, hi = self._finite(name, box[d], d, a.name, "the buffer holds")
            ext = simplify(hi - lo + 1)
            cu = bound(ext)
            if cu is not None:
                ext = E.Const(T.int32, max(cu, 1))
            mn_n, ext_n = buffer_names(name, d)
            alets += [(mn_n, lo), (ext_n, ext)]
            extents.append(E.Var(ext_n))
            exact.append((a.name, ext if cu is not None else bound.shown(ext)))
        return alets, extents, exact

    def _memory(self, name, kinds, exact, alets) -> str:
        const = all(isinstance(x, E.Const) for _, x in exact)
        asked = self.plan.memory.get(name, "auto")
        size = None
        if const:
            size = self.plan.func(name).type.bytes
            for n, v in alets[1::2]:
                size *= v.value
        if asked != "auto":
            if asked in ("stack", "register", "shared") and not const:
                d, (var, x) = next((d, p) for d, p in enumerate(exact)
                                   if not isinstance(p[1], E.Const))
                runtime = _culprits(x)
                why = (f"it depends on the run-time value of {', '.join(runtime)}" if runtime
                       else "it depends on run-time values")
                raise ScheduleError(
                    f"Func {name}: store_in({asked!r}) needs a buffer of constant size, but its "
                    f"extent in dimension {d} ({var}) has no constant upper bound ({why}): "
                    f"{x}; compute it where the region it covers has a constant size (inside a "
                    "tile of constant size), or store it in memory that may be sized at run time",
                    func=name)
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
        sym = Bounder(scope, func_bounds=out, symbolic=True, loop_ir=True).bounds(f.value)
        if sym.is_bounded():
            out[name] = sym
    return out


def place_realizations(plan, nests: dict) -> L.Stmt:
    """The whole program before flattening (see the module docstring)."""
    try:
        return Placer(plan, nests).run()
    except RecursionError as exc:  # pragma: no cover - pathological nesting
        raise LoweringError("the loop nest is too deep to lower") from exc
