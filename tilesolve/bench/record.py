"""One bench result: a row of the table, a JSON record, a CSV line.

The fields are documented in ``tilesolve/bench/__init__.py``; ``FIELDS`` is
their order (CSV columns, JSON keys).
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import sys
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Record", "FIELDS", "environment"]


@dataclass
class Record:
    app: str
    method: str
    suite: str = "apps"
    funcs: int | None = None
    backend: str = "tilesolve-cpu"
    schedule_from: str | None = None
    status: str = "ok"
    check: str | None = None
    detail: str = ""
    solve_s: float | None = None
    compile_s: float | None = None
    compile_cache_hit: bool | None = None
    compile_cached_s: float | None = None
    run_ms_min: float | None = None
    run_ms_median: float | None = None
    run_ms: list = field(default_factory=list)
    repeat: int | None = None
    speedup: float | None = None
    predicted_cost: float | None = None
    max_error: float | None = None
    tolerance: str = ""
    size: str = ""
    sizes: list = field(default_factory=list)
    check_sizes: list = field(default_factory=list)
    schedule: str = ""
    # environment (the same in every record of one run)
    spec: str = ""
    cores: int | None = None
    threads: int | None = None
    date: str = ""
    host: str = ""
    python: str = ""
    numpy: str = ""
    tilesolve: str = ""
    halide: str | None = None

    def fail(self, message: str) -> None:
        """Mark a failed check (loud in the table, nonzero exit)."""
        self.status, self.check = "FAIL", "FAIL"
        self.detail = "; ".join(d for d in (self.detail, message) if d)

    def error(self, where: str, exc: BaseException) -> None:
        msg = str(exc).strip().splitlines()
        msg = msg[0] if msg else ""
        self.status = "error"
        self.detail = "; ".join(d for d in (self.detail, f"{where}: {type(exc).__name__}: {msg}") if d)

    def unavailable(self, reason: str) -> None:
        self.status, self.detail = "unavailable", reason

    def note(self, message: str) -> None:
        self.detail = "; ".join(d for d in (self.detail, message) if d)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


FIELDS = tuple(f.name for f in dataclasses.fields(Record))


def environment(spec) -> dict:
    """The environment fields: spec name, cores, date (UTC, ISO 8601), versions."""
    from .. import __version__
    try:
        import halide  # noqa: F401
        from importlib.metadata import version
        hv = version("halide")
    except Exception:
        hv = None
    return {
        "spec": getattr(spec, "name", str(spec)),
        "cores": getattr(spec, "cores", None) or os.cpu_count(),
        "threads": getattr(spec, "threads", None),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "tilesolve": __version__,
        "halide": hv,
    }
