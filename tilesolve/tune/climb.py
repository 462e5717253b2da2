"""Autotune's hill climb: neighbours of the fastest schedule measured, measured.

The gathered candidates are the solvers' answers and the neighbours of the
best-predicted and greedy ones: one step from where the cost model points.  When the
model is wrong about a tile size (blur's and hist_eq's wide tiles ran 10-50 % slower
than narrow ones the model priced higher), the fastest schedule may lie further than
one step.  So after the timing rounds, with what they leave of the budget (they stop
``CLIMB_SHARE`` of it early, once they have run ``CLIMB_AFTER_ROUNDS``: a tuning
whose rounds need the whole budget is not cut short for the climb):

1. the base is the fastest candidate measured that the model describes (one built
   from (group, tiling) columns: a solver's answer or a neighbour);
2. its neighbours (``Gatherer.neighbours``: one dimension of one group's tile doubled
   or halved, or a group unfused) not yet measured are prepared (compiled, checked
   against the reference) while the budget holds their rounds;
3. they and the base are timed in ``CLIMB_ROUNDS`` rounds, shuffled, side by side;
4. the fastest of them becomes the base if its fastest run in those rounds beats the
   base's in the same rounds by ``CLIMB_MARGIN``; else the climb stops.

Each neighbour measured becomes a record like any other (its source says which tile
changed, from which base; its note says it came from the climb) and a finalist of the
head-to-head confirmation if it is among the fastest.
"""
from __future__ import annotations

import random
import time

CLIMB_SHARE = 0.25     # of the budget, at most, for the climb (before the confirmation)
CLIMB_AFTER_ROUNDS = 7  # the rounds stop early for the climb only after this many
CLIMB_ROUNDS = 3       # rounds timing a step's neighbours beside their base
CLIMB_MARGIN = 0.01    # a neighbour replaces the base when this much faster
MAX_STEPS = 8

__all__ = ["climb", "CLIMB_SHARE", "CLIMB_AFTER_ROUNDS", "CLIMB_ROUNDS", "CLIMB_MARGIN"]


def climb(gatherer, live, bench, deadline, log, seed, record) -> tuple:
    """Climb from the fastest of ``live`` (see the module docstring) until ``deadline``.

    ``gatherer``: the ``candidates.Gatherer`` of the tuning (its ``found`` maps each
    live candidate's hash to its Candidate); ``live``: the timed candidates
    (``autotune._Live``); ``record(candidate, prep, error)`` records a prepared
    neighbour (its ``TuneRecord``, and a failure in the database) and returns its
    ``_Live``, added to ``live``, or None when it failed.  Returns ``(steps taken
    (times a neighbour became the base), neighbours prepared)``."""
    from .measure import _first_line
    found = gatherer.found

    def climbable(lv) -> bool:
        c = found.get(lv.hash)
        return lv.rec.error is None and lv.times and c is not None and c.columns is not None
    bases = [lv for lv in live if climbable(lv)]
    if not bases:
        return 0, 0
    base = min(bases, key=lambda lv: min(lv.times))
    rng = random.Random(seed + 2)
    prep_s, prepared, steps = 0.0, 0, 0
    while steps < MAX_STEPS and time.perf_counter() < deadline:
        before = set(found)
        gatherer.neighbours(found[base.hash], deadline)
        new = sorted((c for h, c in found.items() if h not in before),
                     key=lambda c: (c.order_cost, c.hash))
        batch = []
        round_s = 3 * min(base.times) / 1e3            # base's run, with a margin
        for c in new:
            need = (prep_s / prepared if prepared else 0.0) + CLIMB_ROUNDS * round_s
            if time.perf_counter() + need >= deadline:
                break
            t = time.perf_counter()
            prep, error = bench.prepare(c.schedule)
            prep_s += time.perf_counter() - t
            prepared += 1
            lv = record(c, prep, error)
            if lv is None:
                continue
            lv.rec.note = f"climb step {steps + 1}"
            batch.append(lv)
            round_s += 3 * prep.warm_ms / 1e3
        if not batch:
            break
        runs = {id(lv): [] for lv in batch + [base]}
        for _ in range(CLIMB_ROUNDS):
            order = batch + [base]
            rng.shuffle(order)
            for lv in order:
                if lv.rec.error is not None:
                    continue
                try:
                    ms = bench.run(lv.prep)
                except Exception as e:      # noqa: BLE001 - recorded, never chosen
                    lv.rec.error = f"run: {_first_line(e)}"
                    continue
                lv.times.append(ms)
                runs[id(lv)].append(ms)
        done = [lv for lv in batch if lv.rec.error is None and runs[id(lv)]]
        if not done or not runs[id(base)]:
            break
        win = min(done, key=lambda lv: min(runs[id(lv)]))
        if min(runs[id(win)]) >= (1.0 - CLIMB_MARGIN) * min(runs[id(base)]):
            log.log(f"autotune climb: no neighbour of {base.rec.source} faster "
                    f"({len(batch)} tried)")
            break
        steps += 1
        log.log(f"autotune climb step {steps}: {min(runs[id(win)]):.4g} ms ({win.rec.source}) "
                f"against {min(runs[id(base)]):.4g} ms, {len(batch)} tried")
        base = win
    return steps, prepared
