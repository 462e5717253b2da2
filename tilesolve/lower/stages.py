"""The loop nest of one stage of a Func, from its ``StageSchedule``.

A stage's original loops are its pure Vars (over the Func's region, held in
Vars ``f.<v>.min`` / ``f.<v>.extent`` that placement defines later) and, for
an update, its RVars (over the RDom).  The Splits and Fuses apply in order;
every loop gets a unique dotted name (Halide's): stage ``f.s1``, original
``f.s1.x``, ``split(x, xo, xi, 8)`` gives ``f.s1.x.xo`` and ``f.s1.x.xi``.
The original variables are rebuilt by LetStmts placed just inside the
innermost loop they depend on (so ``compute_at`` of a producer at a loop
sees them)::

    split(x, xo, xi, 8), tail shift_inward, extent e >= 8:
      for f.s0.x.xo in [0, (e + 7) / 8):
        let f.s0.x.base = min(f.s0.x.xo * 8 + m, m + e - 8)
        for f.s0.x.xi in [0, 8):
          let f.s0.x = f.s0.x.base + f.s0.x.xi
          f(f.s0.x) = ...

Tails (``schedule_types.resolve_tail`` resolves ``auto``): ``shift_inward``
moves the last tile back (pure stages only; needs ``e >= factor``: unless
that is provable the nest becomes ``if (e >= 8) <shifted> else <guarded>``);
``guard_with_if`` skips points past the end (``if (f.s0.x < m + e)``);
``round_up`` computes past the end (the buffer grows, see ``realize.py``).
A factor dividing a constant extent needs no tail.  RDom ``where``
predicates become IfThenElse guards at the innermost loop they depend on.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.simplify import prove, simplify
from ..errors import ScheduleError
from ..model import expr as E
from ..model.ops import EXACT_MATH, OPS
from ..model import types as T
from ..model.schedule_types import Fuse, Split, resolve_tail
from ..model.visit import walk
from . import ir as L


@dataclass
class _Loop:
    ir: str
    min: E.Expr
    extent: E.Expr
    is_rvar: bool


@dataclass(frozen=True)
class StageNest:
    """One stage's statement plus the IR names of its final loops (short -> IR)."""

    func: str
    stage: int
    stmt: L.Stmt
    loops: dict
    ranges: dict        # let-defined loop variable -> (lo, hi) over the whole nest


def _v(name: str) -> E.Var:
    return E.Var(name)


def _i(v) -> E.Expr:
    return E.as_expr(v, T.int32)


def region_names(fname: str, var: str, stage: int, has_updates: bool) -> tuple:
    """Names of the Vars holding the region a stage's pure loop ``var`` covers.

    ``f.<var>.min/extent`` is the region the consumers need; a Func with
    updates computes its pure stage over ``f.s0.<var>.min/extent``, which
    also covers every site its updates touch."""
    p = f"{fname}.s0.{var}" if (stage == 0 and has_updates) else f"{fname}.{var}"
    return f"{p}.min", f"{p}.extent"


class _Builder:
    def __init__(self, func, k: int, ss, is_output: bool, where: str):
        self.f, self.k, self.ss, self.is_output, self.where = func, k, ss, is_output, where
        self.prefix = f"{func.name}.s{k}"
        self.used: set = set()
        self.ranges: dict = {}
        self.rounded: set = set()      # split variables computed past their extent

    def fresh(self, name: str) -> str:
        out, n = name, 2
        while out in self.used:
            out = f"{name}${n}"
            n += 1
        self.used.add(out)
        return out

    def original_loops(self, d) -> tuple:
        """(short -> _Loop dict, substitution of the definition's Vars/RVars)."""
        f, k, loops, sub = self.f, self.k, {}, {}
        has_updates = bool(f.updates)
        if k > 0 and d.rdom is not None:
            for i, rv in enumerate(d.rdom.rvars()):
                ir = self.fresh(f"{self.prefix}.{rv.name}")
                loops[rv.name] = _Loop(ir, d.rdom.mins[i], d.rdom.extents[i], True)
                sub[rv] = _v(ir)
        pure = f.pure.args if k == 0 else [a for a in d.args if isinstance(a, E.Var)]
        for a in pure:
            mn, ext = region_names(f.name, a.name, k, has_updates)
            ir = self.fresh(f"{self.prefix}.{a.name}")
            loops[a.name] = _Loop(ir, _v(mn), _v(ext), False)
            sub[a] = _v(ir)
        return loops, sub

    def apply(self, loops: dict, guard_shifts: bool):
        """Apply the transforms: final loops, let definitions, guards, shift conditions."""
        cur = dict(loops)
        defs, guards, conds = {}, [], []
        for t in self.ss.transforms:
            if isinstance(t, Split):
                self._split(t, cur, defs, guards, conds, guard_shifts)
            elif isinstance(t, Fuse):
                a, b = cur.pop(t.inner), cur.pop(t.outer)
                fz = self.fresh(f"{a.ir}.{t.fused}")
                ext = simplify(a.extent * b.extent)
                cur[t.fused] = _Loop(fz, _i(0), ext, a.is_rvar)
                defs[a.ir] = simplify(a.min + _v(fz) % a.extent)
                defs[b.ir] = simplify(b.min + _v(fz) / a.extent)
                for lp in (a, b):
                    self.ranges[lp.ir] = (lp.min, simplify(lp.min + lp.extent - 1))
            else:  # pragma: no cover - the schedule only makes Splits and Fuses
                raise AssertionError(t)
        return cur, defs, guards, conds

    def _split(self, t: Split, cur, defs, guards, conds, guard_shifts):
        lp = cur.pop(t.old)
        f_ = t.factor
        tail = resolve_tail(t.tail, is_update=self.k > 0, is_rvar=lp.is_rvar,
                            is_output=self.is_output)
        if tail == "shift_inward" and (self.k > 0 or lp.is_rvar):
            raise ScheduleError(f"{self.where}: split({t.old}, {t.outer}, {t.inner}, {f_}): "
                                "shift_inward would compute update points twice")
        if tail == "round_up" and (lp.is_rvar or self.is_output):
            raise ScheduleError(f"{self.where}: split({t.old}, {t.outer}, {t.inner}, {f_}): "
                                "round_up would compute past the end of "
                                f"{'the RDom' if lp.is_rvar else 'the output'}")
        ext, mn = simplify(lp.extent), lp.min
        ce = ext.value if isinstance(ext, E.Const) else None
        o_ir = self.fresh(f"{lp.ir}.{t.outer}")
        i_ir = self.fresh(f"{lp.ir}.{t.inner}")
        exact = f_ == 1 or (ce is not None and ce % f_ == 0)     # no tail
        o_ext = ext if f_ == 1 else _i(ce // f_) if exact else simplify((ext + (f_ - 1)) / f_)
        cur[t.outer] = _Loop(o_ir, _i(0), o_ext, lp.is_rvar)
        cur[t.inner] = _Loop(i_ir, _i(0), _i(f_), lp.is_rvar)
        base = _v(o_ir) * f_ + mn
        if not exact and tail == "shift_inward":
            ok = prove(ext >= f_)
            if ok is False or (ok is None and guard_shifts):
                tail = "guard_with_if"
                if ok is None:
                    self.converted.append(lp.ir)
            else:
                base = E.min_(base, mn + ext - f_)
                if ok is None:
                    conds.append(simplify(ext >= f_))
        if not exact and tail == "guard_with_if":
            g = _v(lp.ir) < mn + ext
            guards.append(g)
            # the guard holds for a whole block when the block ends by the extent:
            # (o + 1) * f <= ext, written as a bound on the loop variable so that
            # bounds inference narrows the loop to the full blocks in that version
            self.full[id(g)] = (o_ir, simplify(_v(o_ir) <= (ext - f_) / f_))
        b_ir = self.fresh(f"{lp.ir}.base")
        defs[b_ir] = simplify(base)
        defs[lp.ir] = _v(b_ir) + _v(i_ir)
        # what the rebuilt variable covers over the whole nest (guards skip the rest)
        last = o_ext * f_ if tail == "round_up" and not exact else ext
        self.ranges[lp.ir] = (mn, simplify(mn + last - 1))
        if tail == "round_up" and not exact:
            self.rounded.add(lp.ir)

    def _drop_grown_ranges(self, defs):
        """A variable rebuilt from one that ``round_up`` runs past its extent
        (``split(xi, ..., tail="round_up")`` after ``split(x, xo, xi)``) runs
        past its own range too: interval arithmetic bounds it instead."""
        memo: dict = {}

        def grown(v):
            if v not in memo:
                memo[v] = False
                parts = [n.name for n in walk(defs[v]) if isinstance(n, E.Var)
                         and n.name in defs] if v in defs else []
                memo[v] = any(p in self.rounded or grown(p) for p in parts)
            return memo[v]
        for v in list(self.ranges):
            if grown(v):
                del self.ranges[v]

    def build(self, d, inliner, guard_shifts: bool):
        self.used, self.ranges, self.rounded, self.full = set(), {}, set(), {}
        self.converted = []            # splits made guard_with_if for small extents
        loops, sub = self.original_loops(d)
        cur, defs, guards, conds = self.apply(loops, guard_shifts)
        self._drop_grown_ranges(defs)
        names = [dm.var for dm in self.ss.dims]
        if set(names) != set(cur) or len(names) != len(cur):
            raise ScheduleError(f"{self.where}: the schedule's loops ({', '.join(names)}) do not "
                                f"match the stage's ({', '.join(cur)})")
        from ..model.visit import substitute
        args = tuple(simplify(substitute(inliner.expr(a), sub)) for a in d.args)
        value = substitute(inliner.expr(d.value), sub)
        preds = []
        if d.rdom is not None and self.k > 0:
            preds = [substitute(inliner.expr(p), sub) for p in d.rdom.predicates]
        body = L.Provide(self.f.name, args, value)
        outer_first = list(reversed(self.ss.dims))
        order = [cur[dm.var] for dm in outer_first]
        kinds = [dm.kind for dm in outer_first]
        if guard_shifts and len(self.converted) == 1:
            # the nest taken when the one split whose factor may exceed its extent does:
            # that dimension is shorter than the factor, so its unrolled loops run plain,
            # and its vector loops too (no masked vectors to partition: less code) unless
            # the value has math whose vector code may round differently from scalar
            # code (a point's value must not depend on the size realized)
            pre = self.converted[0] + "."
            plain = ("unrolled",) if _approximate_math(value) else ("vectorized", "unrolled")
            kinds = ["serial" if k in plain and lp.ir.startswith(pre) else k
                     for k, lp in zip(kinds, order)]
        # no steady-state version on GPUs, nor in the nest for extents smaller than a
        # split's factor (``guard_shifts``: taken only for tiny images)
        full = {} if guard_shifts or any(k.startswith("gpu") for k in kinds) else self.full
        if preds:
            order, preds = trim_rdom_loops(order, kinds, defs, preds)
        stmt = _assemble(body, order, kinds, defs, guards + preds, full)
        return stmt, conds, {dm.var: cur[dm.var].ir for dm in self.ss.dims}


def _assemble(body, loops, kinds, defs: dict, guards: list, full: dict | None = None) -> L.Stmt:
    """Wrap ``body`` in the loops (outermost first), each let and guard just
    inside the innermost loop it depends on.

    ``full`` maps (the id of) a ``guard_with_if`` guard to the condition that it holds
    for every point of the current block (the block ends by the extent).  The nest
    below the loop those conditions depend on is then built twice, as Halide's loop
    partitioning would: a steady state without those guards, taken when every block
    is full, and the guarded nest for the last blocks.  The steady state's vector
    loops then run unmasked, with no per-point test."""
    # keep the guards whose block loop is one of these loops, or a let of them (a
    # block loop fused with another: ``xo = tile % n``)
    loop_names = {lp.ir for lp in loops} | set(defs)
    full = {id(g): (full or {})[id(g)][1] for g in guards
            if (full or {}).get(id(g), (None,))[0] in loop_names}
    lvl = _levels(loops, defs)

    names_in = _names_in
    at_level: dict[int, list] = {}
    for name in defs:
        at_level.setdefault(lvl(name), []).append(name)
    guard_at: dict[int, list] = {}
    for g in guards:
        g_lvl = max([lvl(n) for n in names_in(g)] + [-1])
        guard_at.setdefault(g_lvl, []).append(g)

    split_at = max((lvl(n) for c in full.values() for n in names_in(c)), default=None)

    def guarded(p, s, skip=()):
        gs = [g for g in guard_at.get(p, []) if id(g) not in skip]
        if gs:
            c = gs[0]
            for g in gs[1:]:
                c = c & g
            s = L.IfThenElse(simplify(c), s)
        return s

    def lets(p, s):
        for name in reversed(_dep_order(at_level.get(p, []), defs)):
            s = L.LetStmt(name, defs[name], s)
        return s

    def nest(s, lo, hi, skip=()):
        """``s`` wrapped in the loops ``lo..hi`` (outermost first) and their guards."""
        for p in range(hi, lo - 1, -1):
            s = lets(p, guarded(p, s, skip))
            lp = loops[p]
            s = L.For(lp.ir, simplify(lp.min), simplify(lp.extent), kinds[p], s)
        return s

    if split_at is None:
        return lets(-1, guarded(-1, nest(body, 0, len(loops) - 1)))
    steady = guarded(split_at, nest(body, split_at + 1, len(loops) - 1, full), full)
    tail = guarded(split_at, nest(body, split_at + 1, len(loops) - 1))
    conds = list(full.values())
    c = conds[0]
    for x in conds[1:]:
        c = c & x
    s = lets(split_at, L.IfThenElse(simplify(c), steady, tail, steady=True))
    if split_at < 0:
        return s
    lp = loops[split_at]
    s = L.For(lp.ir, simplify(lp.min), simplify(lp.extent), kinds[split_at], s)
    return lets(-1, guarded(-1, nest(s, 0, split_at - 1)))


def _approximate_math(e) -> bool:
    """Whether ``e`` has a math op outside ``ops.EXACT_MATH`` (exp, sin, ...)."""
    return any(isinstance(n, E.Intrinsic) and n.name in OPS and OPS[n.name].kind == "math"
               and n.name not in EXACT_MATH for n in walk(e))


def _names_in(e) -> set:
    return {n.name for n in walk(e) if isinstance(n, E.Var)}


def _levels(loops, defs: dict):
    """``lvl(name)``: the position (outermost first) of the innermost loop a name depends
    on, through the lets ``defs``; -1 for a name no loop defines (a Param, an extent)."""
    pos = {lp.ir: p for p, lp in enumerate(loops)}
    level: dict[str, int] = {}

    def lvl(name):
        if name in pos:
            return pos[name]
        if name not in defs:
            return -1
        if name not in level:
            level[name] = max([lvl(n) for n in _names_in(defs[name])] + [-1])
        return level[name]
    return lvl


# a comparison as (the side at least as large, the other, strict)
_AT_LEAST = {"lt": lambda c: (c.b, c.a, True), "le": lambda c: (c.b, c.a, False),
             "gt": lambda c: (c.a, c.b, True), "ge": lambda c: (c.a, c.b, False)}


def _conjuncts(e) -> list:
    if type(e) is E.BinOp and e.op == "and":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def trim_rdom_loops(loops: list, kinds: list, defs: dict, preds: list) -> tuple:
    """``(loops, preds)`` with each RDom ``where`` conjunct that is linear in one serial
    RVar loop with coefficient +-1 (``0 <= 2*x + r.x - 1``, ``r.x < w - 2*x``), and
    names nothing defined inside that loop, made a bound of the loop instead of a test
    in its body, as Halide trims an RDom's loops.  The loop then runs exactly over the
    points the conjunct admits, in the same order; the other conjuncts stay tests."""
    from .partition import _linear
    lvl = _levels(loops, defs)
    pos = {lp.ir: p for p, lp in enumerate(loops)}
    lows: dict = {}
    highs: dict = {}
    keep = []
    for c in (c for p in preds for c in _conjuncts(p)):
        trimmed = False
        if type(c) is E.BinOp and c.op in _AT_LEAST and c.a.type == T.int32:
            big, small, strict = _AT_LEAST[c.op](c)
            x = simplify(big - small - 1 if strict else big - small)      # x >= 0
            names = _names_in(x)
            for lp, kind in zip(loops, kinds):
                if not lp.is_rvar or kind != "serial" or lp.ir not in names:
                    continue
                lin = _linear(x, lp.ir)
                if lin is None or lin[0] not in (1, -1) or any(
                        lvl(n) >= pos[lp.ir] for n in names - {lp.ir}):
                    continue
                a, r = lin
                if a == 1:
                    lows.setdefault(lp.ir, []).append(simplify(E.as_expr(0) - r))
                else:
                    highs.setdefault(lp.ir, []).append(simplify(r))
                trimmed = True
                break
        if not trimmed:
            keep.append(c)
    out = []
    for lp in loops:
        if lp.ir in lows or lp.ir in highs:
            lo, hi = lp.min, simplify(lp.min + lp.extent - 1)
            for b in lows.get(lp.ir, ()):
                lo = E.max_(lo, b)
            for b in highs.get(lp.ir, ()):
                hi = E.min_(hi, b)
            lo = simplify(lo)
            # no clamp at 0: the loop ends by ``hi`` (``lo + extent - 1`` simplifies to it,
            # as bounds inference needs), and a negative extent runs no iteration
            lp = _Loop(lp.ir, lo, simplify(hi - lo + 1), True)
        out.append(lp)
    return out, keep


def _dep_order(names: list, defs: dict) -> list:
    """``names`` ordered so each let comes after the lets it uses."""
    out, seen = [], set()
    group = set(names)

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for m in walk(defs[n]):
            if isinstance(m, E.Var) and m.name in group:
                visit(m.name)
        out.append(n)
    for n in names:
        visit(n)
    return out


def build_stage(func, k: int, ss, *, is_output: bool, inliner) -> StageNest:
    """The loop nest of stage ``k`` of ``func`` (0 = pure, i + 1 = update i)."""
    d = func.definitions()[k]
    label = "pure stage" if k == 0 else f"update {k - 1}"
    b = _Builder(func, k, ss, is_output, f"Func {func.name} ({label})")
    stmt, conds, loops = b.build(d, inliner, guard_shifts=False)
    ranges = dict(b.ranges)
    if conds:
        guarded, _, _ = b.build(d, inliner, guard_shifts=True)
        ranges.update(b.ranges)
        c = conds[0]
        for x in conds[1:]:
            c = c & x
        stmt = L.IfThenElse(c, stmt, guarded)
    return StageNest(func.name, k, stmt, loops, ranges)


def nest_names(stmt: L.Stmt) -> set:
    """The loop variables and lets a stage nest binds."""
    return {s.name for s in L.walk_stmts(stmt) if isinstance(s, (L.For, L.LetStmt))}
