"""``ts.autotune``'s timing protocol (the climb left out: ``test_autotune_climb.py``):
every candidate prepared (compiled, warmed up, checked) before any is timed, then timed in rounds, each in a freshly shuffled order;
the minimum, median and spread per candidate; hopeless candidates dropped; the budget;
the database's timing columns (schema version 2) and the upgrade of a version 1 file.

No assertion compares speeds: the timings that matter are faked."""
import math
import sqlite3
import statistics
import time

import pytest

import tilesolve as ts
from tilesolve.apps import blur
from tilesolve.tune import autotune as tat
from tilesolve.tune import db as tdb
from tilesolve.tune import measure as tmeasure
from tilesolve.tune.autotune import db_samples

SIZES = [64, 48]


# the rounds' protocol alone: every tuning here passes climb_share=0 (the climb, after the
# rounds, is tested on its own in test_autotune_climb.py)
NO_CLIMB = 0.0


@pytest.fixture(scope="module")
def rounds_run(tmp_path_factory):
    """One tuning of blur at 64 x 48 into a database of its own, with every timed run
    (``Bench.run``) and every preparation logged in call order; none dropped."""
    path = tmp_path_factory.mktemp("rounds") / "tune.sqlite"
    pipe, est = blur.build(SIZES)
    calls = []
    real_run, real_prepare = tmeasure.Bench.run, tmeasure.Bench.prepare
    real_warm = tmeasure.Bench.run_warm

    def run(self, prepared):
        calls.append(("run", tdb.schedule_hash(prepared.schedule)))
        return real_run(self, prepared)

    def run_warm(self, prepared):
        calls.append(("warm", tdb.schedule_hash(prepared.schedule)))
        return real_warm(self, prepared)

    def prepare(self, schedule):
        calls.append(("prepare", tdb.schedule_hash(schedule)))
        return real_prepare(self, schedule)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tmeasure.Bench, "run", run)
        mp.setattr(tmeasure.Bench, "run_warm", run_warm)
        mp.setattr(tmeasure.Bench, "prepare", prepare)
        mp.setattr(tat, "HOPELESS", math.inf)
        res = ts.autotune(pipe, "host", estimates=est, budget_s=5, db=path, progress=False,
                          climb_share=NO_CLIMB, seed=7)
    return pipe, est, path, res, calls


def _by_round(runs, n):
    return [runs[i:i + n] for i in range(0, len(runs), n)]


def test_every_candidate_is_prepared_before_any_is_timed(rounds_run):
    *_, calls = rounds_run
    kinds = [k for k, _ in calls]
    first_run = kinds.index("run")
    assert "prepare" not in kinds[first_run:]


def test_finalists_are_timed_again_head_to_head_after_the_rounds(rounds_run):
    """The rounds' three fastest and greedy's answer run again, warm, in shuffled
    rounds after every round is done; the answer is the fastest of those runs."""
    _, _, _, res, calls = rounds_run
    kinds = [k for k, _ in calls]
    first_warm = kinds.index("warm")
    assert "run" not in kinds[first_warm:] and "prepare" not in kinds[first_warm:]
    warm = [h for k, h in calls if k == "warm"]
    ok = sorted((r for r in res.records if r.ok), key=lambda r: r.measured_ms)
    greedy = next(r for r in ok if r.source == "greedy")
    finalists = {tdb.schedule_hash(r.schedule) for r in ok[:tat.CONFIRM_K] + [greedy]}
    assert set(warm) == finalists
    assert len(warm) == len(finalists) * res.confirm_rounds
    assert all(sorted(o) == sorted(finalists) for o in _by_round(warm, len(finalists)))
    assert res.best_ms == min(r.confirmed_ms for r in ok if r.confirmed_ms is not None)
    assert res.schedule.provenance["tune_source"] == res.best.source


def test_rounds_are_interleaved_and_shuffled(rounds_run):
    _, _, _, res, calls = rounds_run
    runs = [h for k, h in calls if k == "run"]
    timed = {tdb.schedule_hash(r.schedule) for r in res.records if r.ok}
    n = len(timed)
    assert n >= 3 and res.rounds >= tat.MIN_ROUNDS and res.rounds <= tat.MAX_ROUNDS
    assert len(runs) == n * res.rounds
    rounds = _by_round(runs, n)
    for order in rounds:                     # each round: every candidate once
        assert sorted(order) == sorted(timed)
    # not grouped by candidate: no candidate runs twice in a row across the whole log
    # more often than chance allows, and the orders differ between rounds
    assert len({tuple(r) for r in rounds}) > 1
    assert sum(a == b for a, b in zip(runs, runs[1:])) < res.rounds
    assert res.shuffle_seed == 7


def test_records_keep_min_median_spread_and_rounds(rounds_run):
    _, _, _, res, calls = rounds_run
    runs = [h for k, h in calls if k == "run"]
    for r in res.records:
        if not r.ok:
            continue
        h = tdb.schedule_hash(r.schedule)
        assert r.rounds == runs.count(h) == len(r.run_ms) == res.rounds
        assert r.measured_ms == min(r.run_ms)
        assert r.median_ms == statistics.median(r.run_ms)
        assert r.spread == pytest.approx((max(r.run_ms) - min(r.run_ms)) / min(r.run_ms))
        assert r.note is None
    assert res.winner.confirmed_ms == res.best_ms            # the head-to-head rounds decide
    noises = [(r.median_ms - r.measured_ms) / r.measured_ms for r in res.records if r.ok]
    assert res.noise == pytest.approx(statistics.median(noises))
    assert "noise" in res.summary() and "rounds" in res.summary()
    assert res.schedule.provenance["tune_rounds"] == res.rounds


def test_database_round_trips_the_timing_columns(rounds_run):
    _, _, path, res, _ = rounds_run
    store = tdb.TuneDB(path)
    try:
        stored = {m.schedule_hash: m for m in store.measurements(res.key)}
    finally:
        store.close()
    for r in res.records:
        m = stored[tdb.schedule_hash(r.schedule)]
        assert (m.measured_ms, m.error, m.rounds, m.median_ms, m.note) == \
            (r.measured_ms, r.error, r.rounds, r.median_ms, r.note)
        assert m.spread == pytest.approx(r.spread) if r.ok else m.spread is None


def test_a_second_call_returns_the_stored_timing(rounds_run, tmp_path):
    pipe, est, path, first, _ = rounds_run
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    again = ts.autotune(pipe, "host", estimates=est, budget_s=2, db=copy, progress=False,
                        climb_share=NO_CLIMB)
    by_hash = {tdb.schedule_hash(r.schedule): r for r in again.records}
    for r in first.records:
        back = by_hash[tdb.schedule_hash(r.schedule)]
        assert back.reused
        assert (back.measured_ms, back.rounds, back.median_ms) == \
            (r.measured_ms, r.rounds, r.median_ms)


# ---------------------------------------------------------------------------
# A version 1 database (before the timing columns) is upgraded in place
# ---------------------------------------------------------------------------
V1_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tunings (
    key TEXT PRIMARY KEY, pipeline_hash TEXT NOT NULL, pipeline_json TEXT NOT NULL,
    estimates_json TEXT NOT NULL, spec_name TEXT NOT NULL, spec_json TEXT NOT NULL,
    threads INTEGER NOT NULL, created TEXT NOT NULL);
CREATE TABLE measurements (
    key TEXT NOT NULL REFERENCES tunings(key), schedule_hash TEXT NOT NULL,
    schedule_json TEXT NOT NULL, source TEXT NOT NULL, predicted_cost REAL,
    measured_ms REAL, error TEXT, measured_at TEXT NOT NULL,
    PRIMARY KEY (key, schedule_hash));
INSERT INTO meta VALUES ('schema_version', '1');
"""


def _v1_copy(path, dest):
    """A version 1 database holding ``path``'s tunings and measurements."""
    new = sqlite3.connect(path)
    old = sqlite3.connect(dest)
    with old:
        old.executescript(V1_SCHEMA)
        old.executemany("INSERT INTO tunings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        new.execute("SELECT * FROM tunings").fetchall())
        old.executemany("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        new.execute("SELECT key, schedule_hash, schedule_json, source, "
                                    "predicted_cost, measured_ms, error, measured_at "
                                    "FROM measurements").fetchall())
    new.close()
    old.close()


def test_a_version_1_database_is_upgraded_and_still_loads(rounds_run, tmp_path, monkeypatch):
    pipe, est, path, first, _ = rounds_run
    v1 = tmp_path / "v1.sqlite"
    _v1_copy(path, v1)
    samples = db_samples(v1)                     # refit reads it (and upgrades it)
    assert len(samples) == len(first.samples())
    con = sqlite3.connect(v1)
    assert con.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone() == (
        str(tdb.SCHEMA_VERSION),)
    cols = [r[1] for r in con.execute("PRAGMA table_info(measurements)")]
    assert cols[-4:] == ["rounds", "median_ms", "spread", "note"]
    con.close()
    store = tdb.TuneDB(v1)                       # opening an upgraded file again: no change
    old = {m.schedule_hash: m for m in store.measurements(first.key)}
    store.close()
    assert all(m.rounds is None and m.median_ms is None for m in old.values())
    # autotune starts from the old rows (reused, their timing unknown) and adds new ones
    monkeypatch.setattr(tat, "HOPELESS", math.inf)
    again = ts.autotune(pipe, "host", estimates=est, budget_s=2, db=v1, progress=False,
                        climb_share=NO_CLIMB)
    for r in again.records:
        if r.reused:
            assert r.rounds is None and r.noise is None
            assert r.measured_ms == old[tdb.schedule_hash(r.schedule)].measured_ms
        elif r.ok:
            assert r.rounds == again.rounds
    assert "-" in again.table()


def test_two_connections_upgrade_a_version_1_file_once(tmp_path):
    v1 = tmp_path / "v1.sqlite"
    con = sqlite3.connect(v1)
    con.executescript(V1_SCHEMA)
    con.close()
    a = tdb.TuneDB(v1)
    b = tdb.TuneDB(v1)                           # the columns exist already: nothing added
    a.close()
    b.close()


# ---------------------------------------------------------------------------
# Rounds with faked timings: drops and the budget
# ---------------------------------------------------------------------------
def test_a_hopeless_candidate_is_dropped_after_two_rounds(monkeypatch):
    pipe, est = blur.build(SIZES)

    def fake_run(self, prepared):                 # greedy's schedule 10x slower than any
        slow = prepared.schedule.provenance.get("tune_source") == "greedy"
        return 10.0 if slow else 1.0
    monkeypatch.setattr(tmeasure.Bench, "run", fake_run)
    res = ts.autotune(pipe, "host", estimates=est, budget_s=3, db=False, progress=False,
                      climb_share=NO_CLIMB)
    g = next(r for r in res.records if r.source == "greedy")
    assert g.ok and g.rounds == tat.DROP_AFTER and g.measured_ms == 10.0
    assert "dropped after 2 rounds" in g.note and "10.0x" in g.note
    assert res.dropped == 1 and "1 dropped" in res.summary()
    others = [r for r in res.records if r.ok and r is not g]
    assert others and all(r.rounds == res.rounds >= tat.MIN_ROUNDS for r in others)
    assert "dropped" in res.table()


def test_preparation_stops_when_the_rounds_would_not_fit(monkeypatch):
    """Each warm-up says a run takes 10 s: three rounds of the two mandatory candidates
    are already over the budget, so nothing else is prepared (all left unmeasured)."""
    pipe, est = blur.build(SIZES)
    real = tmeasure.Bench.prepare

    def slow_warm_up(self, schedule):
        prep, error = real(self, schedule)
        if prep is not None:
            prep.warm_ms = 10_000.0
        return prep, error
    monkeypatch.setattr(tmeasure.Bench, "prepare", slow_warm_up)
    res = ts.autotune(pipe, "host", estimates=est, budget_s=3, db=False, progress=False,
                      climb_share=NO_CLIMB)
    assert 1 <= res.measured_now <= 2 and res.skipped > 0
    assert len(res.records) == res.measured_now
    assert res.rounds >= tat.MIN_ROUNDS          # the minimum even past the budget


class _FakeBench:
    def __init__(self, ms):
        self.ms = ms

    def run(self, prepared):
        time.sleep(self.ms / 1e3)
        return self.ms


class _Log:
    def __init__(self):
        self.lines = []

    def log(self, line):
        self.lines.append(line)


def _live(n):
    return [tat._Live(tat.TuneRecord(None, f"c{i}", 1.0, None), None, f"h{i}")
            for i in range(n)]


def test_rounds_stop_when_the_budget_is_spent():
    live = _live(4)
    t0 = time.perf_counter()
    rounds, dropped = tat._rounds(live, _FakeBench(10.0), t0 + 0.4, _Log(), 0)
    took = time.perf_counter() - t0
    assert tat.MIN_ROUNDS <= rounds < tat.MAX_ROUNDS and dropped == 0
    # a round takes about 40 ms: one is started only while one more fits
    assert took < 0.4 + 0.2
    assert all(len(lv.times) == rounds for lv in live)


def test_rounds_keep_their_minimum_past_the_deadline_and_their_maximum():
    live = _live(3)
    rounds, _ = tat._rounds(live, _FakeBench(0.0), time.perf_counter() - 1.0, _Log(), 0)
    assert rounds == tat.MIN_ROUNDS
    live = _live(3)
    rounds, _ = tat._rounds(live, _FakeBench(0.0), time.perf_counter() + 60.0, _Log(), 0)
    assert rounds == tat.MAX_ROUNDS


def test_the_shuffles_follow_the_seed():
    def orders(seed):
        seen = []

        class Recording(_FakeBench):
            def run(self, prepared):
                seen.append(prepared)
                return 1.0
        live = [tat._Live(tat.TuneRecord(None, f"c{i}", 1.0, None), i, f"h{i}") for i in range(6)]
        tat._rounds(live, Recording(0.0), time.perf_counter() - 1.0, _Log(), seed)
        return seen
    assert orders(3) == orders(3)
    assert orders(3) != orders(4)
    assert len(orders(3)) == 6 * tat.MIN_ROUNDS


def test_rounds_leave_the_climb_its_share_only_after_enough_rounds():
    """``early=(time, n)``: past ``time``, the rounds stop, but not before ``n`` rounds
    (a tuning whose rounds need the whole budget is not cut short for the climb)."""
    live = _live(2)
    now = time.perf_counter()
    rounds, _ = tat._rounds(live, _FakeBench(0.0), now + 60.0, _Log(), 0, early=(now, 5))
    assert rounds == 5
    rounds, _ = tat._rounds(_live(2), _FakeBench(0.0), now + 60.0, _Log(), 0,
                            early=(now + 60.0, 5))
    assert rounds == tat.MAX_ROUNDS                 # the early stop not reached
