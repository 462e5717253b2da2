"""``--compare-halide``: Halide rows in the same run, on the same inputs.

For each app, the pipeline is translated to Halide (``tilesolve.interop``)
and run with:

* ``halide-mullapudi2016``, ``halide-adams2019``, ``halide-li2018``: Halide's
  own autoschedulers (parallelism = the spec's cores, estimates = the run
  size and the actual input shapes); ``solve s`` is the autoscheduler's time.
* ``ts-schedule@halide``: each tilesolve schedule of this run (one row per
  solver method, ``schedule_from`` names it) replayed by Halide's code
  generator: same schedule, other compiler.  Halide's ShiftInwards tails read
  outside the image when a tile is wider than the image, so a paper-size
  schedule may fail at the small size in Halide (ours clamps the shift): then
  the check uses the same method's schedule for the small size (noted).

Every Halide output is checked against our reference at the small size.  An
autoscheduler's paper-size schedule may read outside the small inputs (a tile
shifted inward past the image): then the check uses a schedule the same
autoscheduler makes for the small size, and the note says so.  At the paper
size the timed output is also compared with naive's.  A pipeline Halide cannot
express is reported as unavailable with the reason.
"""
from __future__ import annotations

from ..interop import halide as th
from ..interop.halide_auto import AUTOSCHEDULERS, autoschedule, set_estimates
from .methods import solve
from .record import Record
from ..tune.check import compare
from .runner import AppRun

__all__ = ["halide_records", "HALIDE_METHODS"]

HALIDE_METHODS = tuple(f"halide-{n}" for n in AUTOSCHEDULERS) + ("ts-schedule@halide",)


def _short(exc) -> str:
    return str(exc).replace("Halide failed to realize the pipeline: ", "").replace("Error: ", "")


def _rec(ar: AppRun, method: str, env: dict, **kw) -> Record:
    r = ar.record(method, env, backend="halide", **kw)
    r.halide = r.halide or "unavailable"
    return r


def _time(ar: AppRun, rec: Record, hp) -> None:
    """Run once at the run size (checked against naive's output), then leave the
    timing to the app's rounds (``runner.time_rounds``)."""
    hp.bind(**ar.run.inputs)
    bufs = hp.run(ar.run.sizes)
    import numpy as np
    out = tuple(np.asarray(b) for b in bufs)
    ar.cross_check(rec, out[0] if len(out) == 1 else out)
    ar.defer_timing(rec, lambda: hp.run(ar.run.sizes))


def _autoscheduler_row(ar: AppRun, name: str, cores: int, env, progress) -> Record:
    rec = _rec(ar, f"halide-{name}", env)
    tag, stage = f"{ar.name} / halide-{name}", "translate"
    try:
        hp = th.translate(ar.run.pipeline)
        stage = "autoschedule"
        with progress.step(f"{tag}: autoscheduling"):
            set_estimates(hp, ar.run.sizes, ar.run.inputs)
            rec.solve_s, rec.schedule = autoschedule(hp, name, cores)
        stage = "compile"
        with progress.step(f"{tag}: compiling (Halide JIT)"):
            rec.compile_s = hp.compile()
        stage = "verify"
        with progress.step(f"{tag}: verifying at {ar.check.sizes}"):
            check_hp = hp if not ar.separate_check else None
            out = None
            if check_hp is not None:
                try:
                    out = check_hp.realize(ar.check.sizes, **ar.check.inputs)
                except Exception as exc:
                    if ar.opts.size == "small":
                        raise
                    rec.note(f"its paper-size schedule fails at the small size in Halide "
                             f"({_short(exc)}); checked with its small-size schedule")
            if out is None:
                check_hp = th.translate(ar.check.pipeline)
                set_estimates(check_hp, ar.check.sizes, ar.check.inputs)
                autoschedule(check_hp, name, cores)
                out = check_hp.realize(ar.check.sizes, **ar.check.inputs)
            ar.verify(rec, out)
            if rec.status == "FAIL":
                _blame(ar, rec)
        stage = "run"
        with progress.step(f"{tag}: running once at {ar.run.sizes}"):
            _time(ar, rec, hp)
    except Exception as exc:
        if stage == "translate":
            rec.unavailable(f"Halide translation: {exc}")
        else:
            rec.error(stage, exc)
        progress.log(f"{tag}: {rec.status}: {rec.detail}")
    return rec


def _small_schedule_output(ar: AppRun, method: str, spec):
    """Halide's output at the small size under ``method``'s schedule for that size."""
    case = ar.small_case()
    sched, _, _ = solve(case.pipeline, method, spec, case.estimates, ar.opts.time_limit,
                        ar.opts.seed)
    hp = th.translate(case.pipeline)
    hp.apply_schedule(sched)
    return hp.realize(case.sizes, **case.inputs)


def _blame(ar: AppRun, rec: Record) -> None:
    """A Halide autoscheduler's output differs from the reference: if Halide's own
    output under a plain schedule (every Func compute_root) matches, the
    translation is right and the autoscheduler's schedule changed Halide's
    result, which is Halide's issue: an error row (listed, not counted)."""
    plain = th.translate(ar.check.pipeline)
    plain.compute_root_all()
    out = plain.realize(ar.check.sizes, **ar.check.inputs)
    ok, _, _ = compare(out, ar.reference, ar.rtol, ar.atol, ar.int_slack)
    if ok:
        rec.status = "error"
        rec.note("Halide's output with every Func compute_root matches the reference, so this "
                 "schedule changed Halide's own result (a Halide issue, not the translation)")


def _replay_row(ar: AppRun, method: str, env, progress, source: Record | None,
                spec=None) -> Record:
    rec = _rec(ar, "ts-schedule@halide", env, schedule_from=method)
    if source is not None:      # the schedule is the one that row solved for
        rec.solve_s, rec.predicted_cost = source.solve_s, source.predicted_cost
    tag, stage = f"{ar.name} / ts-schedule@halide ({method})", "translate"
    sched = ar.schedules.get(method)
    if sched is None:
        rec.unavailable(f"no {method} schedule in this run")
        return rec
    try:
        hp = th.translate(ar.run.pipeline)
        stage = "schedule"
        hp.apply_schedule(sched)
        rec.schedule = hp.schedule_source
        stage = "compile"
        with progress.step(f"{tag}: compiling (Halide JIT)"):
            rec.compile_s = hp.compile()
        stage = "verify"
        with progress.step(f"{tag}: verifying at {ar.check.sizes}"):
            if ar.separate_check:
                check_hp = th.translate(ar.check.pipeline)
                check_hp.apply_schedule(ar.check_schedules[method])
                out = check_hp.realize(ar.check.sizes, **ar.check.inputs)
            else:
                try:
                    out = hp.realize(ar.check.sizes, **ar.check.inputs)
                except Exception as exc:
                    if ar.opts.size == "small":
                        raise
                    rec.note(f"its paper-size schedule fails at the small size in Halide "
                             f"({_short(exc)}); checked with the {method} schedule for the "
                             "small size")
                    out = _small_schedule_output(ar, method, spec)
            ar.verify(rec, out)
        stage = "run"
        with progress.step(f"{tag}: running once at {ar.run.sizes}"):
            _time(ar, rec, hp)
    except Exception as exc:
        if stage == "translate":
            rec.unavailable(f"Halide translation: {exc}")
        elif stage == "schedule":
            rec.unavailable(f"schedule translation: {exc}")
        else:
            rec.error(stage, exc)
        progress.log(f"{tag}: {rec.status}: {rec.detail}")
    return rec


def halide_records(ar: AppRun, methods, spec, env: dict, progress, records=()) -> list:
    """The Halide rows of one app; ``records``: this app's tilesolve rows."""
    by_method = {r.method: r for r in records if r.app == ar.name}
    ok, why = th.available()
    solver_methods = [m for m in methods if m != "naive" and m in ar.schedules]
    if not ok:
        names = ar.opts.halide_autoschedulers
        out = [_rec(ar, f"halide-{n}", env) for n in (AUTOSCHEDULERS if names is None else names)]
        out += [_rec(ar, "ts-schedule@halide", env, schedule_from=m) for m in solver_methods]
        for r in out:
            r.unavailable(why)
        progress.log(f"{ar.name} / halide: unavailable ({why})")
        return out
    cores = env.get("cores") or 1
    names = ar.opts.halide_autoschedulers
    names = list(AUTOSCHEDULERS) if names is None else list(names)
    rows = [_autoscheduler_row(ar, n, cores, env, progress) for n in names]
    rows += [_replay_row(ar, m, env, progress, by_method.get(m), spec) for m in solver_methods]
    return rows
