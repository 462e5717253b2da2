"""The bench: solve, compile, verify and time the app suite (or the validation suite,
or random pipelines: ``--suite``); one table.

Entry points: ``tilesolve bench`` (``bench/cli.py``) and
``runner.run_bench(BenchOptions(...))``.  ``--json FILE`` writes

    {"tilesolve_bench": 1,
     "environment": {spec, cores, threads, date, host, python, numpy, tilesolve, halide},
     "options": {apps, methods, spec, size, repeat, time_limit, compare_halide,
                 halide_autoschedulers, seed, tune_budget, suites, random_count,
                 random_seed},
     "suites": {suite: {apps, rows, failed, vs_halide, geomean_vs_halide}},
     "records": [record, ...]}

(``suites``: ``summary.suite_summaries``; ``vs_halide`` maps each app to its fastest
tilesolve solver row, its fastest Halide autoscheduler row and their ratio.)

and ``--csv FILE`` one line per record with the same fields (lists
space-separated, missing values empty).  One record per (app, method), plus
the Halide rows with ``--compare-halide``:

==================  ==========================================================
field               meaning
==================  ==========================================================
app                 app name (``tilesolve.apps``, or a pipeline of another suite)
suite               the app's suite: ``apps``, ``validation`` or ``random``
                    (``tilesolve.apps.SUITES``; ``--suite``)
method              ``naive``, ``greedy``, ``ilp``, ``beam``,
                    ``halide-mullapudi2016``, ``halide-adams2019``,
                    ``halide-li2018`` or ``ts-schedule@halide``
funcs               number of Funcs in the pipeline (the run size's build)
backend             ``tilesolve-cpu`` or ``halide``
schedule_from       ``ts-schedule@halide`` rows: the tilesolve method whose
                    schedule Halide compiled; else null
status              ``ok``; ``FAIL`` (a check failed); ``error`` (a step
                    raised; ``detail`` says which and why); ``unavailable``
                    (the method cannot run here; ``detail`` says why)
check               ``ok`` / ``FAIL`` / null (not reached)
detail              reasons, notes and error messages ("" if none)
solve_s             wall seconds to produce the schedule (solver or Halide
                    autoscheduler; naive: building it)
compile_s           seconds of the first compile (tilesolve: ``compile_seconds``
                    of ``ts.compile``; Halide: ``compile_jit``)
compile_cache_hit   the first compile came from the on-disk cache (tilesolve)
compile_cached_s    seconds of a second, cached compile (tilesolve)
run_ms_min          fastest timed run, milliseconds (one per round; see runner.time_rounds)
run_ms_median       median timed run, milliseconds
run_ms              every timed run, milliseconds
repeat              number of timed runs
speedup             naive's run_ms_min / this run_ms_min (same app, same run)
predicted_cost      the solver's predicted cost (``provenance``), else null
max_error           largest |output - reference| at the check size
tolerance           "exact" (integers) or the float tolerance used
size                ``small`` or ``paper``
sizes               output sizes of the timed runs (innermost first)
check_sizes         output sizes of the verification (the app's SMALL_SIZE)
schedule            the schedule as text (tilesolve's printed Schedule, or the
                    Halide schedule source)
spec ... halide     the environment fields, repeated in every record: spec
                    name, cores, threads, date (UTC ISO 8601), host, python,
                    numpy, tilesolve and halide versions (halide: null when
                    it does not import)
==================  ==========================================================
"""
