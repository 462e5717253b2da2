"""Candidate schedules for ``autotune``: several answers of every solver, and their neighbours.

The cost model ranks schedules; ``autotune`` measures the best-ranked ones on the
machine, so it needs more than each solver's single answer.  ``Gatherer`` collects,
on one ``Problem`` (the preprocessing every solver shares):

* ``greedy``: Mullapudi 2016's answer (always first, always measured);
* ``beam``: the best answer of beam search and the other exact answers of its
  final beams (``solve_beam(answers=...)``), labelled ``beam``, ``beam#2``, ...;
* ``ilp``: the exact model's ``k`` best distinct answers on the full tiling menu
  (``ilp``, ``ilp#2``, ...: no-good cuts), then ``ilp:<menu>``
  on restricted menus (``MENUS``: small, medium or large tiles, whole rows), each
  the best schedule under the model *among tiles of that kind*: where the model
  misjudges tile sizes, the machine can tell;
* neighbours of the best answers: one group's tile doubled or halved in one
  dimension, a group split back into singletons (``tile(...)``, ``unfuse(...)``);
* variants the model does not describe (``predicted_cost`` None): every loop
  serial (small images on few cores), vectors twice as wide (``serial(...)``,
  ``vec2x(...)``), and other register blocks of each blocked update: one vector
  by 8, 12 or 16 points of another pure dimension (``reblock(...)``: conv_layer's
  update blocked over 16 output channels, which the model ranks below its own
  2-vector x 8-row block, ran 0.83x greedy's time in ``tilesolve bench --apps
  conv_layer --methods greedy,autotune``, see benchmarks/results).

Every candidate's predicted cost is the sum of its columns' costs in the full
model (the same unit for all, so ranks compare).  Candidates are deduplicated by
``db.schedule_hash`` (the canonical text of the schedule); a schedule found by
several generators keeps them all in ``sources``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

from ..errors import ScheduleError, TilesolveError
from ..solver.cost import CostModel
from ..solver.provenance import Provenance
from ..solver.schedule_gen import schedule_from_columns
from ..solver.space import Group, Tiling
from .db import schedule_hash

__all__ = ["Candidate", "Gatherer", "MENUS"]


def _area(problem, output, tiling) -> int:
    """Points per tile (an untiled dimension counts its whole extent)."""
    n = 1
    for (lo, hi), s in zip(problem.regions[output], tiling.sizes):
        n *= (hi - lo + 1) if s is None else s
    return n


def _inner_untiled(problem, output, tiling) -> bool:
    dims = [i for i, (lo, hi) in enumerate(problem.regions[output]) if hi > lo]
    return bool(dims) and tiling.sizes[dims[0]] is None and not tiling.is_untiled()


# name -> menu filter (``CostModel(menu_filter=...)``): which tilings the ILP may choose
MENUS = {
    "small": lambda p, o, t: _area(p, o, t) <= 1024,
    "medium": lambda p, o, t: 1024 < _area(p, o, t) <= 8192,
    "large": lambda p, o, t: _area(p, o, t) > 8192,
    "rows": _inner_untiled,
}


@dataclass(eq=False)
class Candidate:
    schedule: object                 # a Schedule
    source: str                      # the first generator that found it
    predicted_cost: float | None     # full-model cost (inf: infeasible in the model);
                                     # None: a change the model ignores
    hash: str                        # db.schedule_hash
    sources: list = field(default_factory=list)
    columns: tuple | None = None     # (Group, Tiling, Cost) per group, when built from columns
    order_cost: float = math.inf     # sort key for measuring (variants: their base's cost)


class Gatherer:
    """Collects distinct candidates of one Problem (see the module docstring)."""

    def __init__(self, problem, k: int = 4, seed: int = 0):
        self.problem = problem
        self.spec = problem.spec
        self.k = k
        self.seed = seed
        self.model = CostModel(problem)          # the full menu: every prediction
        self.found: dict = {}                    # hash -> Candidate, in the order found
        self.notes: list = []                    # generators that failed, and why

    # -- bookkeeping --------------------------------------------------------------
    def priced(self, columns) -> tuple:
        """``columns`` with the full model's Cost of each, in pipeline order."""
        cols = sorted(columns, key=lambda c: self.problem.funcs.index(c[0].output))
        return tuple((g, t, self.model.cost(g, t)) for g, t, _ in cols)

    def predicted(self, columns) -> float:
        """The full model's cost of ``columns`` (inf when a column is infeasible)."""
        costs = [c for _, _, c in self.priced(columns)]
        return math.inf if not all(c.feasible for c in costs) else sum(c.total for c in costs)

    def add_schedule(self, schedule, source: str, predicted, columns=None,
                     order_cost=None, merge: bool = True) -> Candidate | None:
        """Record ``schedule`` unless an equal one is known (then add ``source`` to
        its sources, when ``merge``)."""
        h = schedule_hash(schedule)
        hit = self.found.get(h)
        if hit is not None:
            if merge and source not in hit.sources:
                hit.sources.append(source)
            return None
        cost = order_cost if order_cost is not None else (
            predicted if predicted is not None else math.inf)
        cand = Candidate(schedule, source, predicted, h, [source], columns, cost)
        self.found[h] = cand
        return cand

    def add_stored(self, schedule, source: str, predicted) -> Candidate | None:
        """Record a schedule from the tuning database, with the (group, tiling) columns
        it records priced again (its neighbours need them); without them for a variant
        (``predicted`` None: its recorded groups are its base's) or one the model can
        no longer price."""
        from ..solver.predict import schedule_columns
        columns = None
        if predicted is not None:
            try:
                columns = self.priced([(g, t, None) for g, t in schedule_columns(schedule)])
            except (TilesolveError, KeyError, ValueError):
                columns = None
        return self.add_schedule(schedule, source, predicted, columns)

    def add_columns(self, columns, source: str, method: str, prov=None,
                    merge: bool = True, feasible_only: bool = True) -> Candidate | None:
        """Record the schedule of ``columns``; one the model deems infeasible (cost inf)
        only when not ``feasible_only`` (a solver's own answer is always kept)."""
        columns = self.priced(columns)
        cost = self.predicted(columns)
        if feasible_only and not math.isfinite(cost):
            return None
        prov = prov or Provenance(method, cost)
        prov = prov.replace(predicted_cost=cost, spec=self.spec.name,
                            extra={**prov.extra, "tune_source": source})
        sched = schedule_from_columns(self.problem, list(columns), prov)
        return self.add_schedule(sched, source, cost, columns, merge=merge)

    def candidates(self) -> list:
        return list(self.found.values())

    # -- the solvers ----------------------------------------------------------------
    def greedy(self) -> Candidate | None:
        from ..solver.greedy import greedy_groups
        res = greedy_groups(self.model)
        prov = Provenance("greedy", res.total, greedy_cost=res.total, merges=res.merges)
        self.add_columns(res.columns, "greedy", "greedy", prov, feasible_only=False)
        return self.by_source("greedy")

    def beam(self, time_limit: float) -> None:
        from ..solver.beam import solve_beam
        answers: list = []
        cols, prov = solve_beam(self.model, time_limit=max(0.05, time_limit), seed=self.seed,
                                fine_top=max(self.k, 4), answers=answers)
        self.add_columns(cols, "beam", "beam", prov, feasible_only=False)
        ranked = sorted(answers, key=self.predicted)
        n = 1
        for a in ranked:
            if n >= self.k:
                break
            if self.add_columns(a, f"beam#{n + 1}", "beam", merge=False) is not None:
                n += 1

    def ilp(self, menu: str | None, time_limit: float) -> None:
        """The ILP's ``k`` best distinct answers on the full menu (``menu=None``:
        ``ilp``, ``ilp#2``, ...), or its best on a ``MENUS`` one."""
        from ..solver.ilp import solve_ilp_k_best
        model = self.model if menu is None else CostModel(self.problem, MENUS[menu])
        label = "ilp" if menu is None else f"ilp:{menu}"
        try:
            answers = solve_ilp_k_best(model, self.k if menu is None else 1,
                                       time_limit=max(0.1, time_limit), seed=self.seed)
        except ImportError as e:                 # OR-tools missing: no ILP candidates
            self.notes.append(f"{label}: {e}")
            return
        for i, (cols, prov) in enumerate(answers):
            self.add_columns(cols, label if i == 0 else f"{label}#{i + 1}", "ilp", prov,
                             feasible_only=menu is not None, merge=i == 0)

    # -- neighbours -------------------------------------------------------------------
    def by_source(self, source: str) -> Candidate | None:
        return next((c for c in self.found.values() if source in c.sources), None)

    def bases(self) -> list:
        """The candidates whose neighbours are tried: greedy and the ``k`` cheapest."""
        modelled = sorted((c for c in self.found.values() if c.columns is not None),
                          key=lambda c: (c.predicted_cost, c.hash))
        out = modelled[:self.k]
        g = self.by_source("greedy")
        if g is not None and g not in out:
            out.append(g)
        return out

    def neighbours(self, base: Candidate, deadline: float | None = None) -> None:
        """Tile changes (one dimension of one group doubled or halved; an untiled one
        cut at the largest power of two below its extent) and unfusions."""
        cols = list(base.columns)
        for i, (g, t, _) in enumerate(cols):
            region = self.problem.regions[g.output]
            for d, s in enumerate(t.sizes):
                if deadline is not None and time.perf_counter() > deadline:
                    return
                ext = region[d][1] - region[d][0] + 1
                if s is None:             # untiled: cut it, at the power of two below
                    s = 1 << max(0, ext - 1).bit_length()
                for new, word in ((s * 2, "*2"), (s // 2, "/2")):
                    if new < 1:
                        continue
                    sizes = list(t.sizes)
                    sizes[d] = None if new >= ext else new
                    nt = Tiling(tuple(sizes))
                    if nt == t:
                        continue
                    changed = cols[:i] + [(g, nt, None)] + cols[i + 1:]
                    self.add_columns(changed, f"tile({base.source}: {g.output} d{d}{word})",
                                     "autotune")
            if g.producers():
                split = cols[:i] + [(Group.singleton(g.output), t, None)]
                for m in sorted(g.producers()):
                    best = self.model.best(Group.singleton(m))
                    tm = best[0] if best is not None else Tiling.untiled(
                        len(self.problem.regions[m]))
                    split.append((Group.singleton(m), tm, None))
                self.add_columns(split + cols[i + 1:], f"unfuse({base.source}: {g.output})",
                                 "autotune")

    def variants(self, base: Candidate) -> None:
        """Changes the cost model does not describe: no parallel loops; wider vectors;
        LLVM's unroll threshold at ``UNROLL_VARIANT``; the other order of a K-blocked
        update's block loops (``_k_order_swapped``; ``register_block.x_inside`` picks
        one by the L2); other register blocks of the blocked updates (``_reblocked``)."""
        def serial(d):
            return None if d.method == "parallel" else d

        def wider(d):
            if d.method != "vectorize" or len(d.args) < 2 or d.args[1][0] != "int":
                return d
            return replace(d, args=(d.args[0], ("int", 2 * d.args[1][1])) + tuple(d.args[2:]))

        made = [(f"{word}({base.source})", _rewritten(base.schedule, change))
                for word, change in (("serial", serial), ("vec2x", wider))]
        if "unroll_threshold" not in base.schedule.codegen:
            made.append((f"unroll{UNROLL_VARIANT}({base.source})",
                         base.schedule.copy().set_codegen(unroll_threshold=UNROLL_VARIANT)))
        made.append((f"korder({base.source})", _rewritten(base.schedule, _k_order_swapped(
            base.schedule))))
        for func, stage in _blocked_stages(base.schedule):
            blk = self.problem.stage_info[func][1][stage - 1].block
            if blk is None:
                continue
            args = [a.name for a in self.problem.func(func).updates[stage - 1].args]
            region = self.problem.regions[func]
            pure = [v.name for v in self.problem.func(func).pure.args]
            for row in args:
                if row == blk.x or row not in pure:
                    continue
                lo, hi = region[pure.index(row)]
                for rows in (r for r in REBLOCK_ROWS if r <= hi - lo + 1):
                    made.append((f"reblock({base.source}: {func} {row}x{rows})",
                                 _reblocked(self.problem, base.schedule, func, stage, row, rows)))
        for label, s in made:
            if s is None:
                continue
            prov = s.provenance
            s.provenance = prov.replace(method="autotune", extra={
                **prov.extra, "tune_source": label}) if isinstance(
                prov, Provenance) else dict(prov, tune_source=label)
            self.add_schedule(s, label, None, order_cost=base.order_cost)


REBLOCK_ROWS = (8, 12, 16)
UNROLL_VARIANT = 100
"""LLVM's unroll threshold of the ``unroll100`` variant (LLVM's own: 300): across the
solvers' schedules of the 15 apps it ran from 0.87x to 1.07x of the default's time
(``benchmarks/ab.py --set unroll_threshold=100``), so it is measured, not predicted."""


def _k_order_swapped(schedule):
    """A ``_rewritten`` change: in each K-blocked update (a split into ``*_ko`` and
    ``*_ki``), the two block loops ``x_b`` and ``y_b`` trade places in the reorder,
    and its parallel loop moves with the outer one."""
    swaps = {}
    for d in schedule.directives:
        if d.method == "reorder" and d.stage > 0:
            names = [a[1] for a in d.args]
            blocks = [n for n in names if str(n).endswith("_b")]
            if any(str(n).endswith("_ko") for n in names) and len(blocks) == 2:
                swaps[(d.func, d.stage)] = dict(zip(blocks, reversed(blocks)))

    def change(d):
        table = swaps.get((d.func, d.stage))
        if table is None or d.method not in ("reorder", "parallel"):
            return d
        return replace(d, args=tuple((k, table.get(v, v)) if k == "var" else (k, v)
                                     for k, v in d.args))
    return change


def _blocked_stages(schedule) -> list:
    """(func, stage) of the update stages ``register_block.emit`` blocked: a split of
    some Var ``v`` into ``v_b`` and ``v_r`` (K-blocked ones excluded)."""
    out = []
    for d in schedule.directives:
        if d.stage > 0 and d.method == "split" and len(d.args) >= 3:
            v, o, i = (a[1] for a in d.args[:3])
            if o == f"{v}_b" and i == f"{v}_r" and (d.func, d.stage) not in out:
                out.append((d.func, d.stage))
    ko = {(d.func, d.stage) for d in schedule.directives
          if d.method == "split" and str(d.args[1][1]).endswith("_ko")}
    return [fs for fs in out if fs not in ko]


def _reblocked(problem, schedule, func, stage, row, rows):
    """``schedule`` with update ``stage`` of ``func`` blocked as one vector by ``rows``
    points of pure Var ``row`` (the RDom loops outside the block, the block's loops
    outside those in argument order); None when not legal or not applicable."""
    from ..model.schedule import Schedule
    from ..model.schedule_io import replay
    blk = problem.stage_info[func][1][stage - 1].block
    upd = problem.func(func).updates[stage - 1]
    pure = [a.name for a in upd.args]
    lanes = problem.spec.vector_lanes(problem.bytes_per_point(func))
    old = [d for d in schedule.directives if (d.func, d.stage) == (func, stage)]
    rest = [d for d in schedule.directives if (d.func, d.stage) != (func, stage)]
    unroll_r = next((d.args[1][1] for d in old if d.method == "unroll" and len(d.args) > 1
                     and d.args[0][1] == blk.rvars[0]), None)
    par = next((d.args[0][1] for d in old if d.method == "parallel"), None)
    x = blk.x
    s = Schedule(schedule.pipeline, schedule.target)
    try:
        replay(s, rest)
        h = s[func].update(stage - 1)
        xb, xr, rb, rr = f"{x}_b", f"{x}_r", f"{row}_b", f"{row}_r"
        h.split(x, xb, xr, lanes).split(row, rb, rr, rows)
        outer = [rb if v == row else v for v in pure if v != x]
        h.reorder(xr, rr, *blk.rvars, xb, *outer)
        h.vectorize(xr, lanes).unroll(rr)
        if unroll_r:
            h.unroll(blk.rvars[0], unroll_r)
        if par is not None and par in outer + [rb]:
            h.parallel(par if par != row else rb)
        s.validate()
    except ScheduleError:
        return None
    s.provenance = schedule.provenance
    return s


def _rewritten(schedule, change):
    """``schedule`` rebuilt from its directives, each passed through ``change``
    (which may return None to drop it); None when nothing changed or the result
    is not a legal schedule."""
    from ..model.schedule import Schedule
    from ..model.schedule_io import replay
    old = list(schedule.directives)
    new = [d2 for d2 in (change(d) for d in old) if d2 is not None]
    if new == old:
        return None
    s = Schedule(schedule.pipeline, schedule.target)
    try:
        replay(s, new)
        s.validate()
    except ScheduleError:
        return None
    s.provenance = schedule.provenance
    return s
