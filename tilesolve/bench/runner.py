"""The bench loop: for each app and method, solve, compile, verify, time.

    from tilesolve.bench.runner import BenchOptions, run_bench
    result = run_bench(BenchOptions(apps=["blur"], size="small", repeat=3))
    result.records, result.ok

Per app (inputs are made once per app and size, and reused by every method):

1. build the pipeline and its estimates at the run size (``--size``);
2. the reference output at the app's SMALL size (``ts.reference.realize``);
3. per method: solve (timed) -> compile (timed; a second compile shows the
   cached cost) -> verify at the SMALL size against the reference -> one run
   at the run size; at the paper size its output is compared with the naive
   schedule's output at that size, which checks the very code that is timed;
4. then all of the app's rows (the methods and, with ``--compare-halide``, the
   Halide rows) are timed together in ``repeat`` rounds (``time_rounds``): each
   round runs every row twice and times the second run, each writing into the
   first run's output (Halide's rows reuse their buffers too).  Drift of the
   machine's speed then costs every row alike, and the ratios between rows are
   taken within one run.

``suites`` picks the registries (``tilesolve.apps.SUITES``): the app suite (the
default), the validation suite, random pipelines; every record names its suite.

An app whose small case needs other build parameters (``SMALL_BUILD``, e.g.
fewer pyramid levels) is verified on that small pipeline, solved and
compiled with the same method; the note in the table says so.
"""
from __future__ import annotations

import contextlib
import inspect
import statistics
import time
from dataclasses import dataclass, field

from ..errors import TilesolveError
from ..tune.check import compare, transcendentals
from ..tune.progress import Progress
from . import methods as M
from .record import Record, environment

__all__ = ["BenchOptions", "BenchResult", "run_bench", "app_names", "get_app", "time_rounds",
           "reusing_output", "suite_names", "select_apps"]

SIZES = ("small", "paper")


@dataclass
class BenchOptions:
    apps: list | None = None          # names; None: every app
    methods: list | None = None       # None: naive + every solver (unavailable ones reported)
    spec: object = "host"
    size: str = "small"
    repeat: int = 7
    time_limit: float | None = None
    compare_halide: bool = False
    halide_autoschedulers: list | None = None   # None: all of them
    seed: int = 0
    tune_budget: float | None = None  # seconds per autotune row (None: methods' default)
    suites: list | None = None        # tilesolve.apps.SUITES names; None: the app suite
    random_count: int = 5             # the random suite: how many pipelines,
    random_seed: int = 0              # and the first one's seed


@dataclass
class BenchResult:
    records: list = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    options: BenchOptions | None = None
    interrupted: bool = False         # Ctrl-C / SIGTERM: the records so far

    @property
    def ok(self) -> bool:
        """Not interrupted, no FAIL anywhere, no error in a tilesolve row.

        An error inside Halide (its autoscheduler, JIT or run) is reported but
        does not count: it is not tilesolve's; a Halide output that differs
        from the reference (FAIL) counts, since the translation may be at fault.
        """
        return not self.interrupted and all(
            r.status in ("ok", "unavailable") or (r.status == "error" and r.backend == "halide")
            for r in self.records)


# ---------------------------------------------------------------------------
# Apps
# ---------------------------------------------------------------------------
def app_names() -> list:
    """The names of the apps in ``tilesolve.apps`` (``APPS``)."""
    from ..apps import APPS
    return list(APPS)


def get_app(name: str):
    """The app module called ``name``; the error lists the valid names."""
    from ..apps import APPS
    if name not in APPS:
        raise TilesolveError(f"unknown app {name!r}; valid apps: {', '.join(APPS)}")
    return APPS[name]


def suite_names(suite: str, opts: BenchOptions) -> list:
    """The names of the pipelines of ``suite`` (``app_names()`` for the app suite)."""
    if suite == "apps":
        return app_names()
    return list(_suite(suite, opts))


def _suite(suite: str, opts: BenchOptions) -> dict:
    from ..apps import SUITES
    from ..apps import suite as registry
    if suite not in SUITES:
        raise TilesolveError(f"unknown suite {suite!r}; valid suites: {', '.join(SUITES)}")
    return registry(suite, opts.random_count, opts.random_seed)


def select_apps(opts: BenchOptions) -> dict:
    """name -> (suite, app) for the suites of ``opts`` (``opts.apps`` filters the names,
    which must each be in one of them)."""
    chosen = {}
    for suite in opts.suites or ["apps"]:
        names = suite_names(suite, opts)
        pick = [n for n in names if opts.apps is None or n in opts.apps]
        if suite == "apps":
            chosen.update((n, (suite, get_app(n))) for n in pick)
        else:
            members = _suite(suite, opts)
            chosen.update((n, (suite, members[n])) for n in pick)
    missing = [n for n in opts.apps or () if n not in chosen]
    if missing:
        raise TilesolveError(f"unknown app {missing[0]!r} in the suites "
                             f"{', '.join(opts.suites or ['apps'])}")
    return chosen


def _accepted(fn, params: dict) -> dict:
    """The entries of ``params`` that ``fn`` takes as keyword arguments."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return dict(params)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(params)
    return {k: v for k, v in params.items() if k in sig.parameters}


class Case:
    """One app at one size: the pipeline, its estimates, the inputs (made once)."""

    def __init__(self, app, sizes, build_params: dict, seed: int, pipeline=None, estimates=None):
        self.app = app
        self.sizes = list(sizes)
        self.params = dict(build_params)
        self.seed = seed
        if pipeline is None:
            kwargs = _accepted(app.build, self.params)
            if "sizes" in inspect.signature(app.build).parameters:
                kwargs["sizes"] = self.sizes
            pipeline, estimates = app.build(**kwargs)
        self.pipeline, self.estimates = pipeline, estimates
        self._inputs = None

    @property
    def inputs(self) -> dict:
        if self._inputs is None:
            mk = self.app.make_inputs
            self._inputs = mk(self.sizes, self.seed, **_accepted(mk, self.params))
        return self._inputs


# ---------------------------------------------------------------------------
# Checking and timing
# ---------------------------------------------------------------------------
def _tolerance(app) -> tuple:
    tol = getattr(app, "TOLERANCE", None)
    if tol is None:
        return 1e-4, 1e-4
    return (tol, tol) if isinstance(tol, (int, float)) else tuple(tol)


def reusing_output(fast, sizes, inputs):
    """A call of ``fast.realize`` that writes into the output of its first call, as the
    Halide rows realize into reused buffers: the timed runs compare the code, not the
    page faults of a fresh output (tens of MB at the paper sizes) on every call."""
    held = []
    if "out" not in inspect.signature(fast.realize).parameters:
        return lambda: fast.realize(sizes, **inputs)     # e.g. the CUDA runtime

    def call():
        r = fast.realize(sizes, out=held[0] if held else None, **inputs)
        if not held:
            held.append(r)
        return r
    return call


def time_rounds(timers: list, repeat: int, progress=None, label: str = "") -> None:
    """Time every ``(record, fn)`` of ``timers`` in ``repeat`` rounds.  A round runs
    each ``fn`` twice and times the second run, in the same order every round: a
    slow spell of the machine, or another runtime's threads still spinning after
    the previous row, then costs every row alike instead of the rows timed during
    it.  Each record gets its ``repeat`` timed runs (``set_times``); a row that
    fails while timed is marked as an error and leaves the rounds."""
    live = [(rec, fn) for rec, fn in timers if rec.status not in ("error", "unavailable")]
    if not live:
        return
    times = {id(rec): [] for rec, _ in live}
    rounds = max(1, repeat)
    step = (progress.step(f"{label}timing {len(live)} rows in {rounds} rounds")
            if progress is not None else contextlib.nullcontext())
    with step:
        for _ in range(rounds):
            for rec, fn in list(live):
                try:
                    fn()
                    t0 = time.perf_counter()
                    fn()
                    times[id(rec)].append((time.perf_counter() - t0) * 1e3)
                except Exception as exc:   # reported in the table; the others go on
                    rec.error("run", exc)
                    live.remove((rec, fn))
    for rec, _ in live:
        set_times(rec, times[id(rec)])


def set_times(rec: Record, times: list) -> None:
    rec.run_ms = [round(t, 4) for t in times]
    rec.run_ms_min = min(times)
    rec.run_ms_median = statistics.median(times)
    rec.repeat = len(times)


# ---------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------
class AppRun:
    """Everything about one app that the methods (and the Halide rows) share."""

    def __init__(self, name, app, opts: BenchOptions, suite: str = "apps"):
        self.name, self.app, self.opts, self.suite = name, app, opts, suite
        small_params = dict(getattr(app, "SMALL_BUILD", {}) or {})
        if opts.size == "small":
            self.run = Case(app, app.SMALL_SIZE, small_params, opts.seed)
            self.check = self.run
        else:
            self.run = Case(app, app.PAPER_SIZE, {}, opts.seed)
            if small_params:
                self.check = Case(app, app.SMALL_SIZE, small_params, opts.seed)
            else:   # the same pipeline object: the timed code itself is verified
                self.check = Case(app, app.SMALL_SIZE, {}, opts.seed,
                                  pipeline=self.run.pipeline, estimates=self.run.estimates)
        self.rtol, self.atol = _tolerance(app)
        math = transcendentals(self.check.pipeline)
        self.int_slack = 1 if math else 0
        self.slack_reason = f"integers within 1: the pipeline calls {', '.join(math)}" if math else ""
        self.reference = None
        self.naive_out = None          # naive's output at the run size (paper runs)
        self.schedules: dict = {}      # method -> schedule of the run pipeline
        self.check_schedules: dict = {}
        self.timers: list = []         # (Record, run once): timed together, in rounds

    def defer_timing(self, rec: Record, fn) -> None:
        """Time ``fn`` later, in rounds with this app's other rows (``time_rounds``)."""
        self.timers.append((rec, fn))

    def small_case(self) -> Case:
        """The app built at the small size (estimates for it), on the check inputs."""
        if self.check.estimates is not self.run.estimates or self.opts.size == "small":
            return self.check
        if getattr(self, "_small", None) is None:
            small_params = dict(getattr(self.app, "SMALL_BUILD", {}) or {})
            self._small = Case(self.app, self.app.SMALL_SIZE, small_params, self.opts.seed)
            self._small._inputs = self.check.inputs
        return self._small

    @property
    def separate_check(self) -> bool:
        return self.check.pipeline is not self.run.pipeline

    def record(self, method: str, env: dict, **kw) -> Record:
        r = Record(app=self.name, suite=self.suite, method=method,
                   funcs=len(self.run.pipeline.funcs),
                   size=self.opts.size, sizes=list(self.run.sizes),
                   check_sizes=list(self.check.sizes), **kw)
        for k, v in env.items():
            setattr(r, k, v)
        return r

    def verify(self, rec: Record, out) -> None:
        ok, err, tol = compare(out, self.reference, self.rtol, self.atol, self.int_slack)
        rec.max_error, rec.tolerance = err, (self.slack_reason if tol.startswith("integers") else tol)
        if ok:
            rec.check = "ok"
        else:
            rec.fail(f"differs from the reference at the small size {self.check.sizes} "
                     f"(max error {err:g}, tolerance {tol})")

    def cross_check(self, rec: Record, out) -> None:
        """At the paper size: the timed output against naive's output."""
        if self.opts.size == "small" or self.naive_out is None or rec.method == "naive":
            return
        ok, err, tol = compare(out, self.naive_out, self.rtol, self.atol, self.int_slack)
        if not ok:
            rec.fail(f"at the run size its output differs from naive's (max error {err:g})")


def _schedule_text(sched) -> str:
    if sched is None:
        return "(compiler default)"
    try:
        return str(sched)
    except Exception as exc:
        return f"(schedule does not print: {exc})"


def bench_method(ar: AppRun, method: str, spec, env: dict, progress) -> Record:
    """Solve, compile, verify and time one method on one app."""
    rec = ar.record(method, env)
    ok, why = M.method_status(method)
    if method == "hand" and not hasattr(ar.app, "hand_schedule"):
        ok, why = False, f"{ar.name} has no hand schedule"
    if not ok:
        rec.unavailable(why)
        progress.log(f"{ar.name} / {method}: unavailable ({why})")
        return rec
    import tilesolve as ts
    opts, tag = ar.opts, f"{ar.name} / {method}"
    stage = "solve"
    try:
        limit = (f" (time limit {opts.time_limit:g}s)"
                 if opts.time_limit and method in M.SOLVER_METHODS else "")
        with progress.step(f"{tag}: solving{limit}"):
            sched, rec.solve_s, rec.predicted_cost = M.solve(
                ar.run.pipeline, method, spec, ar.run.estimates, opts.time_limit, opts.seed,
                app=ar.app, **_tune_options(method, opts, ar.run.inputs, progress))
        summary = (getattr(sched, "provenance", None) or {}).get("tune_summary")
        if summary:
            rec.note(summary)
        ar.schedules[method] = sched
        rec.schedule = _schedule_text(sched)
        stage = "compile"
        with progress.step(f"{tag}: compiling"):
            t0 = time.perf_counter()
            fast = ts.compile(ar.run.pipeline, sched)
            rec.compile_s = getattr(fast, "compile_seconds", None) or (time.perf_counter() - t0)
            rec.compile_cache_hit = getattr(fast, "cache_hit", None)
            t0 = time.perf_counter()
            again = ts.compile(ar.run.pipeline, sched)
            rec.compile_cached_s = getattr(again, "compile_seconds", None) or (time.perf_counter() - t0)
        stage = "verify"
        check_fast = fast
        if ar.separate_check:
            with progress.step(f"{tag}: solving + compiling the small build for the check"):
                csched, _, _ = M.solve(ar.check.pipeline, method, spec, ar.check.estimates,
                                       opts.time_limit, opts.seed, app=ar.app,
                                       **_tune_options(method, opts, ar.check.inputs, progress))
                ar.check_schedules[method] = csched
                check_fast = ts.compile(ar.check.pipeline, csched)
            rec.note(f"verified on the small build {getattr(ar.app, 'SMALL_BUILD', {})}")
        else:
            ar.check_schedules[method] = sched
        with progress.step(f"{tag}: verifying at {ar.check.sizes}"):
            ar.verify(rec, check_fast.realize(ar.check.sizes, **ar.check.inputs))
        stage = "run"
        call = reusing_output(fast, ar.run.sizes, ar.run.inputs)
        with progress.step(f"{tag}: running once at {ar.run.sizes}"):
            out = call()
        if method == "naive" and opts.size != "small":
            ar.naive_out = out
        ar.cross_check(rec, out)
        ar.defer_timing(rec, call)
    except Exception as exc:   # reported in the table; the bench goes on
        rec.error(stage, exc)
        progress.log(f"{tag}: ERROR in {stage}: {type(exc).__name__}: {exc}")
    return rec


def _tune_options(method: str, opts: BenchOptions, inputs: dict, progress) -> dict:
    """``M.solve``'s autotune options: the budget, the app's inputs, the bench's log."""
    if method not in M.TUNE_METHODS:
        return {}
    return {"tune_budget": opts.tune_budget, "inputs": inputs, "tune_progress": progress}


def _bare_record(name, suite, method, opts, env) -> Record:
    r = Record(app=name, suite=suite, method=method, size=opts.size)
    for k, v in env.items():
        setattr(r, k, v)
    return r


def _speedups(records: list) -> None:
    by_app = {}
    for r in records:
        if r.method == "naive" and r.run_ms_min:
            by_app[r.app] = r.run_ms_min
    for r in records:
        base = by_app.get(r.app)
        if base and r.run_ms_min:
            r.speedup = base / r.run_ms_min


def run_bench(opts: BenchOptions, progress=None, apps: dict | None = None) -> BenchResult:
    """Run the bench; ``apps`` maps names to app objects (default: the suites of
    ``opts``, ``select_apps``), taken as the first of ``opts.suites``."""
    from ..specs import load_spec
    progress = progress or Progress(enabled=False)
    if opts.size not in SIZES:
        raise TilesolveError(f"unknown size {opts.size!r}; valid sizes: {', '.join(SIZES)}")
    if apps is None:
        apps = select_apps(opts)
    else:
        suite = (opts.suites or ["apps"])[0]
        apps = {n: (suite, a) for n, a in apps.items()}
    methods = list(opts.methods or M.ALL_METHODS)
    for m in methods:
        if m not in M.VALID_METHODS:
            raise TilesolveError(f"unknown method {m!r}; valid methods: "
                                 f"{', '.join(M.VALID_METHODS)}")
    if "naive" not in methods:
        progress.log("note: 'naive' is not among the methods, so there is no speedup column")
    with progress.step(f"loading spec {opts.spec}"):
        spec = load_spec(opts.spec)
    env = environment(spec)
    result = BenchResult(environment=env, options=opts)
    try:
        _run_apps(result, apps, methods, spec, env, opts, progress)
    except KeyboardInterrupt:
        result.interrupted = True
        progress.log("interrupted: reporting the rows finished so far")
    _speedups(result.records)
    return result


def _run_apps(result, apps, methods, spec, env, opts, progress) -> None:
    from ..reference import realize
    for name, (suite, app) in apps.items():
        stage, ar = "build", None
        try:
            with progress.step(f"{name}: building the pipeline and inputs ({opts.size})"):
                ar = AppRun(name, app, opts, suite)
                stage = "inputs"
                ar.run.inputs, ar.check.inputs
            stage = "reference"
            with progress.step(f"{name}: reference at {ar.check.sizes}"):
                ar.reference = realize(ar.check.pipeline, ar.check.sizes, **ar.check.inputs)
        except Exception as exc:      # every method of this app is reported as an error
            progress.log(f"{name}: ERROR in {stage}: {type(exc).__name__}: {exc}")
            for m in methods:
                rec = ar.record(m, env) if ar is not None else _bare_record(name, suite, m, opts,
                                                                            env)
                rec.error(stage, exc)
                result.records.append(rec)
            continue
        # naive first: the others' speedups and paper-size cross-checks need it
        for m in sorted(methods, key=lambda m: m != "naive"):
            result.records.append(bench_method(ar, m, spec, env, progress))
        if opts.compare_halide:
            from .halide_rows import halide_records
            result.records.extend(halide_records(ar, methods, spec, env, progress, result.records))
        time_rounds(ar.timers, opts.repeat, progress, f"{name}: ")
        ar.timers.clear()
