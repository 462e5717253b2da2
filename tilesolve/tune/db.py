"""The tuning database: every measured schedule, in one SQLite file.

``autotune`` records what it measures here so that a later call with the same
key starts from what is known, and ``refit`` reads the measurements back as
samples for the cost model's fit.  Only the standard library's ``sqlite3``.

Tables (schema version ``SCHEMA_VERSION``, in ``meta``):

* ``tunings``: one row per key: the pipeline as JSON (``pipeline_json``, so the
  samples can be rebuilt without the user's code), the estimates, the spec and
  the thread count the measurements were taken with;
* ``measurements``: one row per (key, schedule): the schedule's canonical hash,
  its JSON (``Schedule.to_json``), which generator found it, the predicted cost
  (NULL when the model does not describe the change), the fastest run in
  milliseconds, or the error that disqualified it; since version 2 also how it
  was timed: ``rounds`` (timed runs, one per round), ``median_ms``, ``spread``
  ((slowest - fastest) / fastest over the rounds) and ``note`` (e.g. that it was
  dropped from the later rounds as hopeless).  NULL in rows older than that.

Older databases are upgraded in place when opened (version 1: the four timing
columns are added, NULL in its rows); a newer version is refused.

The **key** hashes the pipeline (its encoding from
``tilesolve.distributed.serialize``, the plain-data form Dask workers receive:
every Func, definition, type and constant), the effective estimates (outputs
and every input's size), the spec's fields and the thread count.  A different
spec, estimate or thread count is a different key: measurements taken under
one say nothing certain about another.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import TilesolveError

__all__ = ["SCHEMA_VERSION", "TuneDB", "StoredMeasurement", "default_db_path", "open_db",
           "pipeline_json", "pipeline_from_json", "tuning_key", "schedule_hash"]

SCHEMA_VERSION = 2
DB_NAME = "tune.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tunings (
    key TEXT PRIMARY KEY,
    pipeline_hash TEXT NOT NULL,
    pipeline_json TEXT NOT NULL,
    estimates_json TEXT NOT NULL,
    spec_name TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    threads INTEGER NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    key TEXT NOT NULL REFERENCES tunings(key),
    schedule_hash TEXT NOT NULL,
    schedule_json TEXT NOT NULL,
    source TEXT NOT NULL,
    predicted_cost REAL,
    measured_ms REAL,
    error TEXT,
    measured_at TEXT NOT NULL,
    rounds INTEGER,
    median_ms REAL,
    spread REAL,
    note TEXT,
    PRIMARY KEY (key, schedule_hash)
);
"""

# columns added to ``measurements`` by each version (ALTER TABLE ... ADD COLUMN)
_ADDED = {2: (("rounds", "INTEGER"), ("median_ms", "REAL"), ("spread", "REAL"),
              ("note", "TEXT"))}
_COLUMNS = ("key, schedule_hash, schedule_json, source, predicted_cost, measured_ms, error, "
            "measured_at, rounds, median_ms, spread, note")


def default_db_path() -> Path:
    """``tune.sqlite`` in the compile cache's directory (``TILESOLVE_CACHE_DIR``)."""
    from ..backend.cpu.jit import default_cache_dir
    return default_cache_dir(os.environ) / DB_NAME


# ---------------------------------------------------------------------------
# Stable texts and hashes
# ---------------------------------------------------------------------------
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _tag(v):
    """Plain JSON for the pipeline encoding: tuples as lists, types by name."""
    from ..model.types import Type
    if isinstance(v, Type):
        return {"type": str(v)}
    if isinstance(v, (tuple, list)):
        return [_tag(x) for x in v]
    return v


def _untag(v):
    from ..model.types import type_named
    if isinstance(v, dict):
        return type_named(v["type"])
    if isinstance(v, list):
        return tuple(_untag(x) for x in v)
    return v


def pipeline_json(pipeline) -> str:
    """The pipeline as JSON text: stable across processes (its hash is the key's)."""
    from ..distributed.serialize import encode
    return json.dumps(_tag(encode(pipeline)), separators=(",", ":"))


def pipeline_from_json(text: str):
    """A new Pipeline equal to the one ``pipeline_json`` wrote."""
    from ..distributed.serialize import decode
    return decode(_untag(json.loads(text)))


def schedule_hash(schedule) -> str:
    """A hash of the schedule's canonical text: the target and every Func's frozen
    schedule (compute and store levels, splits, loop kinds), not the order of the
    directive calls nor the provenance) and its code-generation options, if any.  Equal
    hashes compile to the same code."""
    from ..model.schedule_io import func_schedule_to_dict
    doc = {"target": schedule.target,
           "funcs": {n: func_schedule_to_dict(fs)
                     for n, fs in sorted(schedule.func_schedules().items())}}
    if schedule.codegen:
        doc["codegen"] = dict(schedule.codegen)
    return _sha(json.dumps(doc, sort_keys=True))


def spec_json(spec) -> str:
    d = spec.to_dict()
    d.pop("source", None)
    return json.dumps(d, sort_keys=True)


def tuning_key(pipeline_text: str, estimates: dict, spec, threads: int) -> str:
    """The key of one tuning: hash of pipeline, effective estimates, spec and threads."""
    doc = {"pipeline": _sha(pipeline_text),
           "estimates": {k: list(v) for k, v in sorted(estimates.items())},
           "spec": spec_json(spec), "threads": int(threads)}
    return _sha(json.dumps(doc, sort_keys=True))


# ---------------------------------------------------------------------------
# The database
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredMeasurement:
    schedule_hash: str
    schedule_json: str
    source: str
    predicted_cost: float | None
    measured_ms: float | None
    error: str | None
    rounds: int | None = None          # None: not recorded (a version 1 row)
    median_ms: float | None = None
    spread: float | None = None
    note: str | None = None


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class TuneDB:
    """One open tuning database (see the module docstring)."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=30.0)
            with self.conn:
                self.conn.executescript(_SCHEMA)
            version = self._upgrade()
        except sqlite3.Error as e:
            raise TilesolveError(f"autotune: db {str(self.path)!r} cannot be opened for writing "
                                 f"({e}); pass another path as db=, or db=False for no "
                                 "database") from None
        if version != SCHEMA_VERSION:
            self.conn.close()
            raise TilesolveError(f"autotune: db {str(self.path)!r} has schema version {version}; "
                                 f"this tilesolve reads versions up to {SCHEMA_VERSION} "
                                 "(delete the file or pass another path as db=)")

    def _upgrade(self) -> int:
        """The schema version after upgrading an older database in place (one
        transaction, taken before reading the version: two processes opening the
        same old file upgrade it once)."""
        conn = self.conn
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        if row is not None and int(row[0]) >= SCHEMA_VERSION:
            return int(row[0])                     # nothing to write (a read-only file opens)
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
                version = SCHEMA_VERSION
            else:
                version = int(row[0])
            if version < SCHEMA_VERSION:
                have = {r[1] for r in conn.execute("PRAGMA table_info(measurements)")}
                for v in range(version + 1, SCHEMA_VERSION + 1):
                    for name, decl in _ADDED.get(v, ()):
                        if name not in have:
                            conn.execute(f"ALTER TABLE measurements ADD COLUMN {name} {decl}")
                conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'",
                             (str(SCHEMA_VERSION),))
                version = SCHEMA_VERSION
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return version

    def close(self) -> None:
        self.conn.close()

    def add_tuning(self, key: str, pipeline_text: str, estimates: dict, spec,
                   threads: int) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT OR IGNORE INTO tunings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, _sha(pipeline_text), pipeline_text,
                 json.dumps({k: list(v) for k, v in sorted(estimates.items())}),
                 spec.name, spec_json(spec), int(threads), _now()))

    def measurements(self, key: str) -> list:
        """Every stored measurement of ``key`` (a list of ``StoredMeasurement``)."""
        rows = self.conn.execute(
            "SELECT schedule_hash, schedule_json, source, predicted_cost, measured_ms, error, "
            "rounds, median_ms, spread, note "
            "FROM measurements WHERE key = ? ORDER BY measured_at, rowid", (key,)).fetchall()
        return [StoredMeasurement(*r) for r in rows]

    def put(self, key: str, sched_hash: str, schedule_json: str, source: str,
            predicted_cost, measured_ms, error, *, rounds=None, median_ms=None, spread=None,
            note=None) -> None:
        """Record one measurement (replacing an earlier one of the same schedule)."""
        self.put_many(key, [(sched_hash, schedule_json, source, predicted_cost, measured_ms,
                             error, rounds, median_ms, spread, note)])

    def put_many(self, key: str, rows) -> None:
        """Record several measurements in one transaction: each row is ``(schedule_hash,
        schedule_json, source, predicted_cost, measured_ms, error, rounds, median_ms,
        spread, note)``."""
        now = _now()
        with self.conn:
            self.conn.executemany(
                f"INSERT OR REPLACE INTO measurements ({_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(key, *r[:6], now, *r[6:]) for r in rows])

    def sample_rows(self) -> list:
        """``(pipeline_json, estimates_json, schedule_json, measured_ms, key)`` of every
        successful measurement with a predicted cost (one the model describes),
        grouped by tuning."""
        return self.conn.execute(
            "SELECT t.pipeline_json, t.estimates_json, m.schedule_json, m.measured_ms, t.key "
            "FROM measurements m JOIN tunings t ON t.key = m.key "
            "WHERE m.measured_ms IS NOT NULL AND m.error IS NULL "
            "AND m.predicted_cost IS NOT NULL "
            "ORDER BY t.key, m.measured_at, m.rowid").fetchall()


def open_db(db):
    """``db`` as ``autotune`` takes it -> an open TuneDB, or None for ``False``."""
    if db is False:
        return None
    if db is None:
        path = default_db_path()
    elif isinstance(db, (str, os.PathLike)):
        path = Path(db).expanduser()
    else:
        raise TilesolveError(f"autotune: db must be None (the default file), False (no "
                             f"database) or a path, got {type(db).__name__} {db!r}")
    if path.is_dir():
        raise TilesolveError(f"autotune: db {str(path)!r} is a folder; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TilesolveError(f"autotune: db {str(path)!r}: its folder cannot be created ({e})"
                             ) from None
    if path.exists() and not os.access(path, os.W_OK):
        raise TilesolveError(f"autotune: db {str(path)!r} is not writable")
    return TuneDB(path)
