"""Tuning on this machine: measure schedules, keep the fastest, refit the model.

``autotune`` (``autotune.py``) gathers candidate schedules from every solver
(``candidates.py``), measures them (``measure.py``) and records the
measurements in an SQLite database (``db.py``); ``refit`` hands those
measurements to the cost model's fit.  Names are re-exported lazily, so each
module of the package imports only what it uses.
"""
from __future__ import annotations

_LAZY = {
    "autotune": ("tilesolve.tune.autotune", "autotune"),
    "refit": ("tilesolve.tune.autotune", "refit"),
    "db_samples": ("tilesolve.tune.autotune", "db_samples"),
    "spearman": ("tilesolve.tune.stats", "spearman"),
    "TuneResult": ("tilesolve.tune.autotune", "TuneResult"),
    "TuneRecord": ("tilesolve.tune.autotune", "TuneRecord"),
    "default_db_path": ("tilesolve.tune.db", "default_db_path"),
}


def __getattr__(name):
    import importlib
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'tilesolve.tune' has no attribute {name!r}")
