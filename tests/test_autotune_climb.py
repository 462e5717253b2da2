"""``ts.autotune``'s climb (``tune/climb.py``): from the fastest schedule measured, its
neighbours are measured beside it, and the fastest becomes the next base while one is
faster; so a best schedule several steps from the solvers' answers is found.

The timings are faked: a run takes a time that depends only on blur_y's tile, least at
4 x 16, growing with the distance in doublings.  Every schedule is still compiled and
checked against the reference (``Bench.prepare`` is the real one); the budgets leave
room for those on a slow machine (the fake runs take no time, so a call ends when the
climb stops, long before its budget)."""
import math
import re

import pytest

import tilesolve as ts
from tilesolve.errors import SolverError
from tilesolve.apps import blur
from tilesolve.tune import autotune as tat
from tilesolve.tune import measure as tmeasure
from tilesolve.solver.problem import Problem
from tilesolve.tune.candidates import Gatherer
from tilesolve.tune.climb import CLIMB_ROUNDS

from pinned import PINNED

SIZES = [64, 48]
BEST = (4, 16)


def _tile(schedule):
    """blur_y's tile (the output's extent where a dimension is not split)."""
    text = str(schedule)
    line = next(ln for ln in text.splitlines() if ln.startswith("s[blur_y]"))
    mx = re.search(r"split\(x, xo, xi, (\d+)\)", line)
    my = re.search(r"split\(y, yo, yi, (\d+)\)", line)
    return (int(mx.group(1)) if mx else SIZES[0], int(my.group(1)) if my else SIZES[1])


def _fake_ms(self, prepared):
    tx, ty = _tile(prepared.schedule)
    return 1.0 + 0.2 * ((math.log2(tx) - math.log2(BEST[0])) ** 2
                        + (math.log2(ty) - math.log2(BEST[1])) ** 2)


@pytest.fixture
def landscape(monkeypatch):
    calls = []
    real_prepare = tmeasure.Bench.prepare

    def prepare(self, schedule):
        calls.append("prepare")
        return real_prepare(self, schedule)

    def run(self, prepared):
        calls.append("run")
        return _fake_ms(self, prepared)
    monkeypatch.setattr(tmeasure.Bench, "prepare", prepare)
    monkeypatch.setattr(tmeasure.Bench, "run", run)
    monkeypatch.setattr(tmeasure.Bench, "run_warm", _fake_ms)
    return calls


def test_the_climb_finds_a_best_tile_several_steps_away(landscape):
    pipe, est = blur.build(SIZES)
    res = ts.autotune(pipe, "xeon-e5-2620v3", estimates=est, budget_s=12, db=False,
                      progress=False)
    gathered = [r for r in res.records if not (r.note or "").startswith("climb")]
    climbed = [r for r in res.records if (r.note or "").startswith("climb")]
    # the solvers and their neighbours miss it; the climb reaches it
    assert all(_tile(r.schedule) != BEST for r in gathered)
    assert _tile(res.schedule) == BEST and res.best_ms == pytest.approx(1.0)
    assert res.climbed >= 2 and f"climbed {res.climbed} steps" in res.summary()
    assert climbed and all(r.ok for r in climbed)
    assert "climb step" in res.table()
    # every climb record was timed beside its base, in the climb's own rounds
    assert all(r.rounds >= CLIMB_ROUNDS for r in climbed)


def test_the_climb_comes_after_the_rounds_and_before_the_head_to_head(landscape):
    pipe, est = blur.build(SIZES)
    res = ts.autotune(pipe, "xeon-e5-2620v3", estimates=est, budget_s=12, db=False, progress=False)
    calls = landscape
    first_run = calls.index("run")
    later_prepares = calls[first_run:].count("prepare")
    # the only preparations after the first timed run are the climb's neighbours
    assert later_prepares == sum((r.note or "").startswith("climb") for r in res.records)
    assert res.rounds >= tat.MIN_ROUNDS


def test_no_climb_without_its_share_of_the_budget(landscape):
    pipe, est = blur.build(SIZES)
    with pytest.raises(SolverError, match="climb_share must be a number in"):
        ts.autotune(pipe, "xeon-e5-2620v3", estimates=est, climb_share=1.0)
    res = ts.autotune(pipe, "xeon-e5-2620v3", estimates=est, budget_s=4, db=False,
                      progress=False, climb_share=0.0)
    assert res.climbed == 0
    assert not any((r.note or "").startswith("climb") for r in res.records)
    assert "climbed" not in res.summary()


def test_an_untiled_dimension_has_a_tiled_neighbour():
    pipe, est = blur.build(SIZES)
    g = Gatherer(Problem(pipe, PINNED, est))
    base = g.greedy()
    untiled = [d for d, s in enumerate(base.columns[0][1].sizes) if s is None]
    assert untiled, "greedy tiles every dimension of blur at 64 x 48: pick another case"
    g.neighbours(base)
    tiles = {c.columns[0][1].sizes for c in g.candidates() if c.columns and c is not base}
    d = untiled[0]
    assert any(t[d] == 32 for t in tiles)        # 64 (or 48) wide: cut at 32


def test_a_second_call_goes_on_from_the_stored_best(landscape, tmp_path):
    """Without the climb, a first call ends at the best of the solvers' answers and
    their neighbours; a second call with the same database gathers the stored best's
    neighbours too, and measures a faster one (nothing known is measured again)."""
    pipe, est = blur.build(SIZES)
    path = tmp_path / "tune.sqlite"
    first = ts.autotune(pipe, "xeon-e5-2620v3", estimates=est, budget_s=12, db=path,
                        progress=False, climb_share=0.0)
    best = min((r for r in first.records if r.ok), key=lambda r: r.measured_ms)
    again = ts.autotune(pipe, "xeon-e5-2620v3", estimates=est, budget_s=12, db=path,
                        progress=False, climb_share=0.0)
    new = [r for r in again.records if not r.reused]
    assert any(r.source.startswith(f"tile({best.source}: ") for r in new)
    assert again.best_ms < first.best_ms
