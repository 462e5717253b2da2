"""``ts.autotune``: solve for many schedules, measure them here, keep the fastest.

    res = ts.autotune(pipe, "host", estimates={"blur_y": [640, 480]}, budget_s=30)
    res.schedule          # the fastest schedule measured (checked against the reference;
                          # the finalists timed again head to head)
    res.records           # every schedule measured: source, predicted cost, ms or error
    res.spearman          # how well the cost model ranked them (rank correlation)
    res.noise             # how noisy the timing was (median over candidates of
                          # (median - min) / min): a low spearman with a high noise
                          # is the machine's doing, not the model's

Why: the cost model ranks schedules well but not perfectly; the best-predicted
schedule is often not the fastest on a given machine.  Steps, within ``budget_s``:

1. gather candidates (``candidates.Gatherer``): greedy, beam's final beams and
   the ILP always, then (within ``GATHER_SHARE`` of the budget) the ILP on other
   tiling menus; neighbours of the best-predicted and greedy answers (and, within
   that share, of the other best ones); deduplicated by canonical schedule text;
2. prepare them in order (greedy and the best-predicted first, always; then the
   solvers' own answers, then by predicted cost) while the budget still holds one
   more preparation of the average length and ``MIN_ROUNDS`` rounds of all the
   prepared ones: each is compiled, run once on random inputs of the estimated
   sizes (or ``inputs=``) as the warm-up, and checked once against
   ``ts.reference`` (at the tuned size when that is cheap, else at a small size);
   a schedule that fails to compile, raises or differs is recorded as failed and
   never chosen (``measure.Bench.prepare``);
3. time them in rounds: in each round every live candidate runs once, in an order
   shuffled afresh each round by a seeded RNG (``seed``; ``TuneResult.shuffle_seed``),
   so that a drift of the machine's speed over the tuning spreads over all
   candidates instead of following the predicted cost.  Rounds go on while one
   more of the last one's length fits in the budget, at least ``MIN_ROUNDS`` and
   at most ``MAX_ROUNDS``; after ``DROP_AFTER`` rounds a candidate whose fastest
   run is over ``HOPELESS`` times the fastest candidate's is dropped from the
   later rounds (said in its record's ``note``).  A candidate's figure
   (``measured_ms``) is its fastest run; its median and spread are kept.  The
   rounds stop ``CONFIRM_SHARE`` of the budget early;
4. the climb (``climb.py``), within what the rounds leave, at most ``CLIMB_SHARE`` of
   the budget (the rounds stop that much earlier, but only after
   ``CLIMB_AFTER_ROUNDS`` rounds: a tuning whose rounds fill the budget climbs
   little or not at all, and measures as many candidates as without): the
   neighbours of the fastest schedule measured are measured beside it, and the
   fastest of them becomes the next base while one is faster, so that a best
   schedule two or more steps from the solvers' answers is found;
5. the ``CONFIRM_K`` fastest, and greedy's answer, are timed again head to head
   (``_confirm``: each runs twice a round, the second run timed), and the fastest
   there is the answer (``TuneResult.winner``; each finalist's ``confirmed_ms``):
   among candidates within the machine's noise of each other, the fastest figure
   of the rounds is as often the luckiest draw as the fastest schedule;
6. every measurement goes to the tuning database (``db.py``); a later call with
   the same key reuses them: known schedules are not measured again, and the
   stored ones (the best among them) are candidates too, and so are the stored
   best's neighbours (so that a later call goes on from where a climb ended).

The measurements also serve to refit the cost model: ``TuneResult.samples()``
and :func:`refit` hand them to ``tilesolve.tune.fit.fit_spec``.
"""
from __future__ import annotations

import json
import math
import random
import statistics
import time
from dataclasses import dataclass, field


from ..errors import SolverError, TilesolveError
from .climb import CLIMB_AFTER_ROUNDS, CLIMB_SHARE, climb
from .measure import Bench, Timing
from .progress import Progress
from .stats import spearman

__all__ = ["autotune", "refit", "TuneResult", "TuneRecord", "spearman"]

GATHER_SHARE = 0.4         # of the budget, at most, for the solvers
MIN_ROUNDS = 3             # timing rounds, at least (the budget permitting, planned for)
MAX_ROUNDS = 20            # and at most
DROP_AFTER = 2             # rounds after which a hopeless candidate is dropped
HOPELESS = 3.0             # ... its fastest run over this many times the fastest's
CONFIRM_K = 3              # finalists timed again head to head (greedy's answer too)
CONFIRM_ROUNDS = (2, 7)    # their rounds, at least and at most
CONFIRM_SHARE = 0.1        # of the budget, kept for them


@dataclass
class TuneRecord:
    """One schedule tried: where it came from, what the model said, what it measured."""

    schedule: object                  # a Schedule of the tuned pipeline
    source: str                       # the first generator that produced it
    predicted_cost: float | None      # cost-model units (inf: the model deems it infeasible);
                                      # None: a change the model ignores
    measured_ms: float | None         # fastest run over the rounds, ms; None when it failed
    error: str | None = None          # why it failed (compile, run or reference check)
    sources: tuple = ()               # every generator that produced it
    reused: bool = False              # from the database: not measured in this call
    run_ms: tuple = ()                # every timed run of this call, one per round
    rounds: int | None = None         # timed runs (None: a stored row that does not say)
    median_ms: float | None = None    # median run over the rounds
    spread: float | None = None       # (slowest - fastest) / fastest over the rounds
    note: str | None = None           # e.g. dropped from the later rounds as hopeless
    confirmed_ms: float | None = None  # a finalist's fastest warm run head to head

    @property
    def ok(self) -> bool:
        return self.error is None and self.measured_ms is not None

    @property
    def noise(self) -> float | None:
        """(median - fastest) / fastest over the rounds; None with fewer than 2."""
        if not self.ok or self.median_ms is None or (self.rounds or 0) < 2:
            return None
        return (self.median_ms - self.measured_ms) / self.measured_ms


@dataclass
class TuneResult:
    """What ``autotune`` found (see the module docstring)."""

    schedule: object                  # the fastest schedule measured
    records: list                     # of TuneRecord, in preparing order
    spearman: float | None            # rank correlation, predicted cost vs measured ms
    best_ms: float                    # its time
    measured_now: int = 0             # schedules compiled and timed by this call
    skipped: int = 0                  # candidates left unmeasured when the budget ran out
    noise: float | None = None        # median over the records of (median - min) / min
    rounds: int = 0                   # timing rounds run by this call
    dropped: int = 0                  # candidates dropped from later rounds as hopeless
    shuffle_seed: int | None = None   # the seed of the rounds' shuffled orders
    key: str | None = None            # the database key (None without a database)
    db_path: str | None = None
    elapsed_s: float = 0.0
    pipeline: object = None
    estimates: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    winner: TuneRecord | None = None  # the finalist the head-to-head rounds chose
    confirm_rounds: int = 0
    climbed: int = 0                  # steps of the climb (a neighbour became the base)

    @property
    def best(self) -> TuneRecord:
        if self.winner is not None:
            return self.winner
        return min((r for r in self.records if r.ok), key=lambda r: r.measured_ms)

    def samples(self) -> list:
        """``(pipeline, schedule, estimates, measured_ms)`` per successful record the
        cost model describes (``predicted_cost`` not None: the serial and wider-vector
        variants are left out, their recorded groups are their base's): what
        ``tilesolve.tune.fit.fit_spec`` takes."""
        return [(self.pipeline, r.schedule, dict(self.estimates), r.measured_ms)
                for r in self.records if r.ok and r.predicted_cost is not None]

    def summary(self) -> str:
        """One line: how many were measured, the winner, the rank correlation."""
        rho = "n/a" if self.spearman is None else f"{self.spearman:.2f}"
        noise = "n/a" if self.noise is None else f"{100 * self.noise:.1f}%"
        ok = sum(r.ok for r in self.records)
        dropped = f", {self.dropped} dropped as hopeless" if self.dropped else ""
        confirmed = (f" (of {sum(r.confirmed_ms is not None for r in self.records)} finalists "
                     f"timed head to head in {self.confirm_rounds} rounds)"
                     if self.winner is not None else "")
        climb = (f", climbed {self.climbed} step{'s' if self.climbed != 1 else ''}"
                 if self.climbed else "")
        return (f"autotune: {ok} schedules measured ({self.measured_now} now in "
                f"{self.rounds} rounds{dropped}{climb}, {len(self.records) - ok} failed, "
                f"{self.skipped} left unmeasured), fastest {self.best_ms:.4g} ms from "
                f"{self.best.source}{confirmed}; spearman {rho}, noise {noise}")

    def table(self) -> str:
        """The records, fastest first, as text."""
        rows = sorted(self.records, key=lambda r: (not r.ok, r.measured_ms or 0.0))
        out = [f"{'ms':>10} {'median':>10} {'rounds':>6} {'predicted':>12}  source"]
        for r in rows:
            ms = f"{r.measured_ms:10.4g}" if r.ok else f"{'failed':>10}"
            med = f"{r.median_ms:10.4g}" if r.ok and r.median_ms is not None else f"{'-':>10}"
            n = f"{r.rounds:6d}" if r.rounds is not None else f"{'-':>6}"
            pc = "-" if r.predicted_cost is None else f"{r.predicted_cost:.6g}"
            tail = f"  ({r.error})" if r.error else (" (stored)" if r.reused else "")
            if r.note:
                tail += f"  [{r.note}]"
            if r.confirmed_ms is not None:
                chosen = ", chosen" if r is self.winner else ""
                tail += f"  [head to head: {r.confirmed_ms:.4g} ms{chosen}]"
            out.append(f"{ms} {med} {n} {pc:>12}  {r.source}{tail}")
        return "\n".join(out)


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
def _check_arguments(pipeline, estimates, budget_s, progress, k, inputs) -> None:
    from ..model.func import Func
    from ..model.pipeline import Pipeline
    if not isinstance(pipeline, Pipeline):
        hint = " (wrap it: ts.Pipeline(f))" if isinstance(pipeline, Func) else ""
        raise SolverError(f"autotune: pipeline must be a Pipeline, got "
                          f"{type(pipeline).__name__}{hint}")
    if (isinstance(budget_s, bool) or not isinstance(budget_s, (int, float))
            or not math.isfinite(budget_s) or budget_s <= 0):
        raise SolverError(f"autotune: budget_s must be a positive number of seconds, got "
                          f"{budget_s!r}")
    if not isinstance(estimates, dict):
        raise SolverError(f"autotune: estimates must be a dict mapping output (and input) names "
                          f"to sizes, innermost first, e.g. {{'out': [640, 480]}}; got "
                          f"{type(estimates).__name__} {estimates!r}")
    for name in estimates:
        if name not in pipeline.output_names and name not in pipeline.images:
            what = ("an intermediate Func, not an output" if name in pipeline.funcs
                    else "not a name in the pipeline")
            raise SolverError(f"autotune: estimates names {name!r}, {what}; outputs: "
                              f"{', '.join(pipeline.output_names)}; inputs: "
                              f"{', '.join(pipeline.images) or '(none)'}")
    missing = [o for o in pipeline.output_names if o not in estimates]
    if missing:
        raise SolverError(f"autotune: estimates lacks the output {missing[0]!r} (every output "
                          "needs sizes)")
    if not isinstance(progress, bool) and not callable(getattr(progress, "log", None)):
        raise SolverError(f"autotune: progress must be True or False (or a "
                          f"tilesolve.tune.progress.Progress), got {progress!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SolverError(f"autotune: k must be a positive int, got {k!r}")
    if inputs is not None and not isinstance(inputs, dict):
        raise SolverError(f"autotune: inputs must be a dict of arrays and Param values by "
                          f"name, got {type(inputs).__name__}")


def _spec(spec):
    from ..specs import load_spec
    s = load_spec(spec)
    if s.is_gpu:
        raise SolverError(f"autotune: spec {s.name!r} is a GPU; autotune measures schedules on "
                          "this machine's CPU, so it takes a CPU spec (e.g. 'host')")
    return s


# ---------------------------------------------------------------------------
# autotune
# ---------------------------------------------------------------------------
def autotune(pipeline, spec, estimates=None, budget_s: float = 60, db=None,
             progress: bool = True, *, inputs: dict | None = None, k: int = 4,
             seed: int = 0, climb_share: float = CLIMB_SHARE) -> TuneResult:
    """Measure schedules from every solver (and their neighbours) within ``budget_s``
    seconds and return the fastest (a :class:`TuneResult`).

    ``spec``: a CPU spec (name, path or HardwareSpec) the solvers plan for.
    ``estimates``: output (and input) sizes, innermost first; the schedules are timed
    at these sizes.  ``db``: None (``tune.sqlite`` in the compile cache directory),
    False (no database) or a file path.  ``progress``: a bar on stderr (or a
    ``tune.progress.Progress`` to log into).  ``inputs``:
    arrays and Param values to time with (default: random arrays of the estimated
    sizes, Params at their defaults).  ``k``: answers kept per solver and neighbour
    bases.  ``seed``: solvers', random inputs' and the timing rounds' shuffles' seed.
    ``climb_share``: the most of the budget the climb may take (0: no climb, the rounds
    use its share).
    """
    from ..solver.inline_refine import refine_inlining
    from ..solver.problem import Problem
    from .db import open_db, pipeline_json, tuning_key
    estimates = {} if estimates is None else estimates
    _check_arguments(pipeline, estimates, budget_s, progress, k, inputs)
    if isinstance(climb_share, bool) or not (isinstance(climb_share, (int, float))
                                             and 0 <= climb_share < 1):
        raise SolverError(f"autotune: climb_share must be a number in [0, 1), got "
                          f"{climb_share!r}")
    spec = _spec(spec)            # (detecting the host spec the first time is not budgeted)
    t0 = time.perf_counter()
    deadline = t0 + float(budget_s)
    log = progress if not isinstance(progress, bool) else Progress(enabled=progress)
    try:
        problem = refine_inlining(Problem(pipeline, spec, estimates))[0]
    except SolverError as e:
        raise SolverError(f"autotune: estimates: {e}") from None
    store = open_db(db)
    key, stored = None, {}
    try:
        bench = Bench(pipeline, problem, inputs, seed, budget_s)
        if store is not None:
            text = pipeline_json(pipeline)
            key = tuning_key(text, bench.sizes_key(), spec, bench.threads)
            store.add_tuning(key, text, bench.sizes_key(), spec, bench.threads)
            stored = {m.schedule_hash: m for m in store.measurements(key)}
        cands, notes, gatherer = _gather(problem, k, seed, t0, budget_s, stored, pipeline,
                                         log)
        result = _measure_all(cands, stored, bench, store, key, deadline, log, seed,
                              reserve_s=CONFIRM_SHARE * float(budget_s), gatherer=gatherer,
                              climb_s=climb_share * float(budget_s))
    finally:
        if store is not None:
            store.close()
    result.notes = notes
    result.key, result.db_path = key, (str(store.path) if store is not None else None)
    result.pipeline, result.estimates = pipeline, bench.sizes_key()
    result.elapsed_s = time.perf_counter() - t0
    log.log(result.summary())
    return result


def _gather(problem, k, seed, t0, budget_s, stored, pipeline, log):
    """Candidates in measuring order: ``(list of (Candidate, mandatory), notes,
    the Gatherer)``."""
    from ..model.schedule import Schedule
    from .candidates import MENUS, Gatherer
    g = Gatherer(problem, k=k, seed=seed)
    stop = t0 + GATHER_SHARE * budget_s

    def left() -> float:
        return stop - time.perf_counter()

    log.log("autotune: gathering candidates (greedy, beam, ILP menus, neighbours)")
    # each solver's own answer, always (with a short time limit when the budget is short)
    greedy = g.greedy()
    g.beam(max(0.05, min(left() / 4, 5.0)))
    g.ilp(None, max(0.2, min(left() / 2, 10.0)))
    for menu in MENUS:
        if left() <= 0:
            break
        g.ilp(menu, min(left() / 2, 10.0))
    # neighbours: of the best-predicted answer and of greedy's within the whole budget,
    # of the other bases within the gathering share; variants (two replays each) always
    bases = g.bases()
    for i, base in enumerate(bases):
        limit = t0 + budget_s if i == 0 or base is greedy else stop
        if time.perf_counter() < limit:
            g.neighbours(base, limit)
    for base in bases[:2]:
        g.variants(base)
    # the stored schedules, the best one first
    known = sorted(stored.values(), key=lambda m: (m.measured_ms is None or m.error is not None,
                                                   m.measured_ms or 0.0))
    for m in known:
        if m.schedule_hash in g.found:
            continue
        try:
            s = Schedule.from_json(m.schedule_json, pipeline)
        except TilesolveError as e:
            g.notes.append(f"stored schedule {m.schedule_hash[:10]} no longer builds: {e}")
            continue
        g.add_stored(s, m.source, m.predicted_cost)
    # the stored best's neighbours: a later call goes on from where the last one ended
    best_known = g.found.get(known[0].schedule_hash) if known and known[0].measured_ms \
        is not None and known[0].error is None else None
    if best_known is not None and best_known.columns is not None \
            and time.perf_counter() < t0 + budget_s:
        g.neighbours(best_known, t0 + budget_s)
    cands = g.candidates()
    modelled = [c for c in cands if c.predicted_cost is not None]
    best_pred = min(modelled, key=lambda c: (c.predicted_cost, c.hash)) if modelled else None
    first = [c for c in (greedy, best_pred) if c is not None]
    heads = [c for c in (g.by_source("beam"), g.by_source("ilp")) if c is not None]
    order, seen = [], set()
    for c in first + heads + sorted(cands, key=lambda c: (c.order_cost, c.predicted_cost is None)):
        if c.hash not in seen:
            seen.add(c.hash)
            order.append((c, any(c is f for f in first)))
    log.log(f"autotune: {len(order)} distinct candidates in "
            f"{time.perf_counter() - t0:.1f}s ({len(stored)} known from the database)")
    return order, list(g.notes), g


class _Live:
    """A prepared candidate in the timing rounds."""

    __slots__ = ("rec", "prep", "hash", "times")

    def __init__(self, rec, prep, h):
        self.rec, self.prep, self.hash, self.times = rec, prep, h, []


def _measure_all(order, stored, bench, store, key, deadline, log, seed=0,
                 reserve_s: float = 0.0, gatherer=None, climb_s: float = 0.0) -> TuneResult:
    records, live, skipped = [], [], 0
    total = len(order)

    def record(c, prep, error):
        """``c``'s TuneRecord, added to ``records``; its ``_Live``, added to ``live``,
        when it was prepared, else None (the failure stored)."""
        rec = TuneRecord(c.schedule, c.source, c.predicted_cost, None, error, tuple(c.sources))
        records.append(rec)
        if prep is None:
            if store is not None:
                store.put(key, c.hash, c.schedule.to_json(), c.source, c.predicted_cost, None,
                          error)
            return None
        lv = _Live(rec, prep, c.hash)
        live.append(lv)
        return lv

    # 1. prepare (compile, warm up, check) while the budget holds one more preparation
    #    and MIN_ROUNDS rounds of everything prepared
    prepared, prep_s, round_s = 0, 0.0, 0.0
    for i, (c, mandatory) in enumerate(order):
        known = stored.get(c.hash)
        if known is not None:
            records.append(TuneRecord(c.schedule, c.source, c.predicted_cost, known.measured_ms,
                                      known.error, tuple(c.sources), reused=True,
                                      rounds=known.rounds, median_ms=known.median_ms,
                                      spread=known.spread, note=known.note))
            continue
        one_run = round_s / len(live) if live else 0.0
        need = (prep_s / prepared if prepared else 0.0) + MIN_ROUNDS * (round_s + one_run)
        if not mandatory and time.perf_counter() + need >= deadline:
            skipped += 1
            continue
        t = time.perf_counter()
        prep, error = bench.prepare(c.schedule)
        prep_s += time.perf_counter() - t
        prepared += 1
        if record(c, prep, error) is not None:
            round_s += prep.warm_ms / 1e3
        _bar(log, i + 1, total, f"prepared ({len(live)} to time)")
    # 2. time in rounds, each in a freshly shuffled order
    rounds, dropped = _rounds(live, bench, deadline - reserve_s, log, seed,
                              early=(deadline - reserve_s - climb_s, CLIMB_AFTER_ROUNDS))
    # 3. climb from the fastest: its neighbours, timed beside it (``climb.py``)
    climbed = climb_prepared = 0
    if gatherer is not None and climb_s > 0 and time.perf_counter() < deadline - reserve_s:
        climbed, climb_prepared = climb(gatherer, live, bench, deadline - reserve_s, log, seed,
                                        record)
    rows = []
    for lv in live:
        r = lv.rec
        if r.error is None:
            tm = Timing.of(lv.times)
            r.measured_ms, r.median_ms, r.spread = tm.min_ms, tm.median_ms, tm.spread
        r.rounds, r.run_ms = len(lv.times), tuple(lv.times)
        rows.append((lv.hash, r.schedule.to_json(), r.source, r.predicted_cost, r.measured_ms,
                     r.error, r.rounds, r.median_ms, r.spread, r.note))
    if store is not None and rows:
        store.put_many(key, rows)
    ok = [r for r in records if r.ok]
    if not ok:
        errors = "; ".join(f"{r.source}: {r.error}" for r in records[:3])
        raise TilesolveError(f"autotune: no schedule compiled and matched the reference "
                             f"({errors})")
    best = min(ok, key=lambda r: r.measured_ms)
    winner, n_confirm = _confirm(live, best, bench, deadline, log, seed)
    best_ms = best.measured_ms if winner is None else winner.confirmed_ms
    best = winner or best
    pairs = [(r.predicted_cost, r.measured_ms) for r in ok
             if r.predicted_cost is not None and math.isfinite(r.predicted_cost)]
    rho = spearman([p for p, _ in pairs], [m for _, m in pairs])
    noises = [r.noise for r in ok if r.noise is not None]
    noise = statistics.median(noises) if noises else None
    return TuneResult(_tuned(best), records, rho, best_ms, prepared + climb_prepared,
                      skipped, noise=noise, rounds=rounds, dropped=dropped,
                      shuffle_seed=seed, winner=winner, confirm_rounds=n_confirm,
                      climbed=climbed)


def _confirm(live, best, bench, deadline, log, seed) -> tuple:
    """Time the ``CONFIRM_K`` fastest candidates of the rounds, and greedy's answer,
    again head to head: ``(winner record, rounds)``, or ``(None, 0)`` when there is
    nothing to confirm (fewer than two, or the fastest is a stored measurement).

    The rounds' figure is each candidate's fastest of a few single runs: among many
    candidates within the machine's noise of each other, the fastest figure is the
    luckiest draw as often as the fastest schedule (unsharp's autotune chose a
    schedule measured 5.02 ms that ran 5.62 ms, against greedy's 5.33).  Here each
    finalist runs twice a round, the second run timed (what a caller realizing
    again and again gets), in a shuffled order, for ``CONFIRM_ROUNDS`` rounds within
    the budget's reserve; the winner is the fastest of those runs."""
    from .measure import _first_line
    done = sorted((lv for lv in live if lv.rec.ok), key=lambda lv: lv.rec.measured_ms)
    if len(done) < 2 or done[0].rec is not best:
        return None, 0
    finalists = done[:CONFIRM_K]
    greedy = next((lv for lv in done if lv.rec.source == "greedy"), None)
    if greedy is not None and greedy not in finalists:
        finalists.append(greedy)
    rng = random.Random(seed + 1)
    fastest = {id(lv): math.inf for lv in finalists}
    per_round = 2e-3 * sum(lv.rec.measured_ms for lv in finalists)
    n = 0
    while n < CONFIRM_ROUNDS[1] and finalists:
        if n >= CONFIRM_ROUNDS[0] and time.perf_counter() + per_round >= deadline:
            break
        order = list(finalists)
        rng.shuffle(order)
        for lv in order:
            try:
                fastest[id(lv)] = min(fastest[id(lv)], bench.run_warm(lv.prep))
            except Exception as e:      # noqa: BLE001 - recorded, never chosen
                lv.rec.error = f"run: {_first_line(e)}"
        finalists = [lv for lv in finalists if lv.rec.error is None]
        n += 1
    if not finalists:
        return None, 0
    for lv in finalists:
        lv.rec.confirmed_ms = fastest[id(lv)]
    win = min(finalists, key=lambda lv: fastest[id(lv)])
    log.log(f"autotune: {len(finalists)} finalists timed head to head in {n} rounds, "
            f"fastest {win.rec.confirmed_ms:.4g} ms ({win.rec.source})")
    return win.rec, n


def _rounds(live, bench, deadline, log, seed, early=None) -> tuple:
    """Time ``live`` in rounds (see the module docstring): ``(rounds, dropped)``.
    Appends each run's ms to its ``_Live.times``; a run that raises fails its record.
    ``early``: ``(time, n)``: after ``n`` rounds, stop at ``time`` (the climb's share)."""
    from .measure import _first_line
    rng = random.Random(seed)
    active = list(live)
    rounds, dropped, last_s = 0, 0, 0.0
    while active and rounds < MAX_ROUNDS:
        if rounds >= MIN_ROUNDS and time.perf_counter() + last_s >= deadline:
            break
        if early and rounds >= early[1] and time.perf_counter() + last_s >= early[0]:
            break
        this = list(active)
        rng.shuffle(this)
        t = time.perf_counter()
        for lv in this:
            try:
                lv.times.append(bench.run(lv.prep))
            except Exception as e:      # noqa: BLE001 - recorded, never chosen
                lv.rec.error = f"run: {_first_line(e)}"
        last_s = time.perf_counter() - t
        rounds += 1
        active = [lv for lv in active if lv.rec.error is None]
        if not active:
            break
        fastest = min(active, key=lambda lv: min(lv.times))
        best = min(fastest.times)
        if rounds == DROP_AFTER:
            keep = []
            for lv in active:
                mine = min(lv.times)
                if mine > HOPELESS * best:
                    lv.rec.note = (f"dropped after {rounds} rounds: fastest run "
                                   f"{mine / best:.1f}x the fastest candidate's")
                    dropped += 1
                else:
                    keep.append(lv)
            active = keep
        if rounds == 1 or last_s > 1.0 or (rounds == DROP_AFTER and dropped):
            gone = f", {dropped} dropped as hopeless" if rounds == DROP_AFTER and dropped else ""
            log.log(f"autotune round {rounds}: {len(this)} timed in {last_s:.2f}s{gone}, "
                    f"fastest {best:.4g} ms ({fastest.rec.source})")
    if live:
        ok = [lv for lv in live if lv.rec.error is None]
        tail = (f", fastest {min(min(lv.times) for lv in ok):.4g} ms "
                f"({min(ok, key=lambda lv: min(lv.times)).rec.source})" if ok else "")
        log.log(f"autotune: {len(live)} timed in {rounds} rounds (shuffle seed {seed}){tail}")
    return rounds, dropped


def _bar(log, done: int, total: int, what: str) -> None:
    width = 24
    fill = round(width * done / max(total, 1))
    log.log(f"autotune [{'#' * fill}{'.' * (width - fill)}] {done}/{total} {what}")


def _tuned(rec: TuneRecord):
    """A copy of the winner whose provenance says it was tuned, and from what."""
    from ..solver.provenance import Provenance
    s = rec.schedule.copy()
    extra = {"tune_source": rec.source, "measured_ms": round(rec.measured_ms, 6)}
    if rec.rounds is not None:
        extra["tune_rounds"] = rec.rounds
    prov = s.provenance
    if isinstance(prov, Provenance):
        s.provenance = prov.replace(method="autotune", extra={**prov.extra, **extra})
    else:
        s.provenance = dict(prov or {}, method="autotune", **extra)
    return s


# ---------------------------------------------------------------------------
# Refitting the cost model
# ---------------------------------------------------------------------------
def db_samples(db_path) -> list:
    """Every successful measurement of a schedule the cost model describes, in the
    database at ``db_path``, as ``(pipeline, schedule, estimates, measured_ms)``
    (pipelines rebuilt from the database, one object per tuned pipeline)."""
    from pathlib import Path

    from ..model.schedule import Schedule
    from .db import TuneDB, pipeline_from_json
    if not isinstance(db_path, (str, bytes)) and not hasattr(db_path, "__fspath__"):
        raise TilesolveError(f"refit: db_path must be a path, got {db_path!r}")
    if not Path(db_path).is_file():
        raise TilesolveError(f"refit: db_path {str(db_path)!r} is not a file (autotune writes "
                             "the database; see TuneResult.db_path)")
    store = TuneDB(db_path)
    try:
        rows = store.sample_rows()
    finally:
        store.close()
    pipes, out = {}, []
    for ptext, etext, stext, ms, _key in rows:
        pipe = pipes.get(ptext)
        if pipe is None:
            pipe = pipes[ptext] = pipeline_from_json(ptext)
        try:
            sched = Schedule.from_json(stext, pipe)
        except TilesolveError:
            continue                       # written by a version whose schedules differ
        out.append((pipe, sched, json.loads(etext), float(ms)))
    return out


def refit(db_path, spec):
    """Refit ``spec``'s cost-model parameters to the measurements in the database at
    ``db_path``: ``tilesolve.tune.fit.fit_spec(spec, samples)`` -> ``(new_spec, report)``."""
    from ..specs import load_spec
    from .fit import fit_spec
    return fit_spec(load_spec(spec), db_samples(db_path))
