"""The scheduling methods the bench compares, and whether each one can run here.

* ``naive``: every Func ``compute_root``, loops serial in their natural order,
  no vectors, no threads (the schedule a first version has; Halide's
  default of inlining everything can recompute without bound).  Falls back to
  the compiler's default schedule where the Schedule builder lacks
  ``compute_root``.
* ``greedy``, ``ilp``, ``beam``, ``auto``: ``ts.solve_schedule(..., method=name)``
  (``auto`` runs ILP and beam and keeps the cheaper answer in model cost).
* ``autotune`` (only when asked for: ``--methods autotune``): ``ts.autotune`` with
  ``--tune-budget`` seconds on the app's inputs; the row is the fastest schedule
  it measured (its "solve" time is the whole tuning).
* ``hand`` (only when asked for: ``--methods hand``): the app's ``hand_schedule(pipe)``,
  Halide's own schedule of the app (apps without one report the row unavailable).

``method_status(name)`` is ``(True, "")`` or ``(False, reason)``; an
unavailable method is reported in the table with its reason, never dropped.
"""
from __future__ import annotations

import time

from ..tune.autotune import autotune

__all__ = ["ALL_METHODS", "SOLVER_METHODS", "TUNE_METHODS", "VALID_METHODS", "method_status",
           "naive_schedule", "solve"]

SOLVER_METHODS = ("greedy", "ilp", "beam", "auto")
ALL_METHODS = ("naive",) + SOLVER_METHODS          # the default set
TUNE_METHODS = ("autotune",)                       # run only when named: they take a budget
VALID_METHODS = ALL_METHODS + TUNE_METHODS + ("hand",)
DEFAULT_TUNE_BUDGET = 30.0


def compile_status() -> tuple[bool, str]:
    """Whether ``ts.compile`` (the CPU backend) imports here."""
    try:
        from ..backend.compile import compile  # noqa: F401
    except Exception as exc:
        return False, (f"CPU backend unavailable: tilesolve.backend.compile does not import "
                       f"({type(exc).__name__}: {exc})")
    return True, ""


def method_status(name: str) -> tuple[bool, str]:
    """``(available, reason)`` for method ``name``."""
    if name not in VALID_METHODS:
        raise ValueError(f"unknown method {name!r}; valid methods: {', '.join(VALID_METHODS)}")
    ok, why = compile_status()
    if not ok or name in ("naive", "hand", "autotune"):
        return ok, why
    from ..solver import available_methods
    names = available_methods()
    if name not in names:
        return False, f"the solver does not offer {name!r} here (it offers: {', '.join(names)})"
    return True, ""


def naive_schedule(pipe):
    """Every non-output Func ``compute_root`` (outputs are root already); None when
    the Schedule builder is not there (``ts.compile`` then uses its default)."""
    try:
        from ..model.schedule import Schedule
        s = Schedule(pipe, "cpu")
        for name, f in pipe.funcs.items():
            if not pipe.is_output(name):
                s[f].compute_root()
    except Exception:
        return None
    s.provenance = dict(s.provenance, method="naive")
    return s


def solve(pipe, method: str, spec, estimates: dict, time_limit: float | None = None,
          seed: int = 0, tune_budget: float | None = None, inputs: dict | None = None,
          tune_progress=False, app=None):
    """``(schedule, wall seconds, predicted cost or None)`` for ``method`` (``hand``:
    ``app.hand_schedule(pipe)``).

    ``autotune`` only: ``tune_budget`` seconds (default ``DEFAULT_TUNE_BUDGET``),
    timed on ``inputs`` (default: random ones), its progress bar logged when
    ``tune_progress`` (True, or the bench's ``Progress``); the schedule's provenance
    holds ``tune_summary``."""
    t0 = time.perf_counter()
    if method in ("naive", "hand"):
        sched = naive_schedule(pipe) if method == "naive" else app.hand_schedule(pipe)
        return sched, time.perf_counter() - t0, None
    if method == "autotune":
        res = autotune(pipe, spec, estimates, budget_s=tune_budget or DEFAULT_TUNE_BUDGET,
                       progress=tune_progress, inputs=inputs, seed=seed)
        sched = res.schedule
        sched.provenance = sched.provenance.replace(
            extra={**sched.provenance.extra, "tune_summary": res.summary()}) if hasattr(
            sched.provenance, "extra") else dict(sched.provenance, tune_summary=res.summary())
        return sched, time.perf_counter() - t0, res.best.predicted_cost
    from ..driver import solve_schedule
    kwargs = {"estimates": estimates, "method": method, "seed": seed}
    if time_limit is not None:
        kwargs["time_limit"] = time_limit
    sched = solve_schedule(pipe, spec, **kwargs)
    seconds = time.perf_counter() - t0
    prov = getattr(sched, "provenance", None) or {}
    return sched, seconds, prov.get("predicted_cost")
