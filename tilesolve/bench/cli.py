"""``tilesolve bench``: the command-line face of the bench runner.

    tilesolve bench                                  # every app, every method, small size
    tilesolve bench --apps blur,harris --methods naive,greedy --size paper --repeat 10
    tilesolve bench --compare-halide --json out.json --csv out.csv
    tilesolve bench --suite validation --size paper --methods greedy,auto --compare-halide
    tilesolve bench --suite random --random-count 10 --random-seed 100
    tilesolve bench --compare-halide --plot ratios.svg     # and draw the ratios to Halide
    tilesolve bench --plot ratios.svg --from out.json      # draw a run written before

Exit status: 0 when every row is ok (or unavailable), 1 when a check FAILs or
a tilesolve step errors (an error inside Halide is listed, not counted), 2 for bad options (unknown app/method names list the valid ones),
130 when interrupted (Ctrl-C or SIGTERM: the rows finished so far are still
printed and written to --json/--csv).
"""
from __future__ import annotations

import argparse
import sys

from ..errors import TilesolveError
from ..tune.progress import Progress
from . import methods as M
from .runner import SIZES, BenchOptions, app_names, run_bench, suite_names

__all__ = ["add_bench_arguments", "main_bench", "positive_int"]


def _list(text: str) -> list:
    return [s.strip() for s in text.split(",") if s.strip()]


def _number(kind, what: str, ok):
    """An argparse type: ``kind(text)``, refused unless ``ok`` of it (``what`` says what)."""
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {what}, got {v}")
        return v
    return parse


positive_int = _number(int, "a positive integer", lambda v: v >= 1)
_nonneg_int = _number(int, "a non-negative integer", lambda v: v >= 0)
_positive_float = _number(float, "a positive number of seconds", lambda v: v > 0)


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", dest="suites", type=_list, default=None, metavar="S1,S2",
                   help="comma-separated suites among apps (Halide's app suite), validation "
                        "(pipelines nobody tuned for) and random (random pipelines); each "
                        "record, the table and the JSON name the suite (default: apps)")
    p.add_argument("--random-count", type=positive_int, default=5, metavar="N",
                   help="with --suite random: how many random pipelines (default: 5)")
    p.add_argument("--random-seed", type=_nonneg_int, default=0, metavar="S",
                   help="with --suite random: the first pipeline's seed; the others follow "
                        "(default: 0)")
    p.add_argument("--apps", type=_list, default=None, metavar="A,B",
                   help="comma-separated app names of the suites (default: all)")
    p.add_argument("--methods", type=_list, default=None, metavar="M1,M2",
                   help=f"comma-separated methods among {', '.join(M.VALID_METHODS)} (default: "
                        f"{', '.join(M.ALL_METHODS)}; unavailable ones are reported as such)")
    p.add_argument("--spec", default="host",
                   help="hardware spec name or YAML path (default: host)")
    p.add_argument("--size", choices=SIZES, default="small",
                   help="run size: the app's SMALL_SIZE or PAPER_SIZE (default: small); "
                        "verification is always at the small size")
    p.add_argument("--repeat", type=positive_int, default=7, metavar="N",
                   help="timing rounds: each runs every row of an app twice and times the second (default: 7)")
    p.add_argument("--time-limit", type=_positive_float, default=None, metavar="S",
                   help="time limit in seconds for each solver call")
    p.add_argument("--tune-budget", type=_positive_float, default=M.DEFAULT_TUNE_BUDGET,
                   metavar="SECONDS",
                   help="seconds per app for --methods autotune: solving, compiling and timing "
                        f"candidate schedules (default: {M.DEFAULT_TUNE_BUDGET:g})")
    p.add_argument("--seed", type=_nonneg_int, default=0,
                   help="seed for inputs and solvers (a non-negative integer; default: 0)")
    p.add_argument("--compare-halide", action="store_true",
                   help="also run Halide's autoschedulers and tilesolve's schedules compiled by "
                        "Halide (needs `pip install halide`)")
    p.add_argument("--halide-autoschedulers", type=_list, default=None, metavar="A,B",
                   help="with --compare-halide: which of Halide's autoschedulers to run "
                        "(mullapudi2016, adams2019, li2018; default: all)")
    p.add_argument("--json", metavar="FILE", help="write the records as JSON")
    p.add_argument("--csv", metavar="FILE", help="write the records as CSV")
    p.add_argument("--plot", metavar="FILE",
                   help="draw tilesolve's run time over each Halide autoscheduler's, per app, "
                        "on a log scale (.svg or .html; .png or .pdf need matplotlib): of this "
                        "run (with --compare-halide), or of --from's")
    p.add_argument("--from", dest="from_json", metavar="JSON",
                   help="with --plot: draw a bench JSON written before (--json) instead of "
                        "running the bench")
    p.add_argument("--plot-method", metavar="M", default=None,
                   help="with --plot: the tilesolve method compared (default: the first solver "
                        "method of the run)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--dask", type=positive_int, default=None, metavar="N",
                   help="instead: scaling of chunked runs on a Dask LocalCluster of 1..N "
                        "one-thread workers at 4x the paper's image area (default app: blur; "
                        "needs `pip install tilesolve[dask]`)")
    p.add_argument("--dask-workers", choices=("processes", "threads", "both"),
                   default="processes",
                   help="with --dask: worker processes (Dask's default), workers as threads "
                        "of one process (compiled pipelines release the GIL), or both")
    p.add_argument("--dask-store", choices=("tilesolve", "dask"), default="tilesolve",
                   help="with --dask: write the chunks with tilesolve.distributed.store (one "
                        "task a chunk computes and writes it) or with dask.array.store (a "
                        "write task a chunk, and a final task)")


def _validate(p: argparse.ArgumentParser, args) -> None:
    import os
    for opt in ("apps", "methods", "halide_autoschedulers", "suites"):
        names = getattr(args, opt)
        twice = sorted({n for n in names or () if names.count(n) > 1})
        if twice:
            p.error(f"--{opt.replace('_', '-')} lists {twice[0]!r} more than once")
    if getattr(args, "from_json", None) and not getattr(args, "plot", None):
        p.error("--from draws a bench JSON: give --plot FILE too")
    if getattr(args, "plot", None) and not getattr(args, "from_json", None) and not getattr(
            args, "compare_halide", False):
        p.error("--plot draws the ratios to Halide's autoschedulers: give --compare-halide "
                "too, or --from a bench JSON that has them")
    if getattr(args, "plot", None):
        from ..viz.bench_plot import check_plot_path
        try:
            check_plot_path(args.plot)
        except TilesolveError as exc:
            p.error(f"--plot: {exc}")
    for opt in ("json", "csv", "plot"):
        path = getattr(args, opt, None)
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if os.path.isdir(path):
                p.error(f"--{opt} {path}: is a folder; give a file name")
            if not os.path.isdir(folder):
                p.error(f"--{opt} {path}: no such folder {folder!r} (the results could not "
                        "be written)")
    if args.methods is not None:
        bad = [m for m in args.methods if m not in M.VALID_METHODS]
        if bad:
            p.error(f"unknown method {bad[0]!r}; valid methods: {', '.join(M.VALID_METHODS)}")
        if not args.methods:
            p.error("--methods is empty")
    if args.halide_autoschedulers is not None:
        from ..interop.halide_auto import AUTOSCHEDULERS
        bad = [a for a in args.halide_autoschedulers if a not in AUTOSCHEDULERS]
        if bad or not args.halide_autoschedulers:
            p.error(f"unknown Halide autoscheduler {(bad or [''])[0]!r}; valid: "
                    f"{', '.join(AUTOSCHEDULERS)}")
    suites = getattr(args, "suites", None) or ["apps"]
    from ..apps import SUITES
    bad = [s for s in suites if s not in SUITES]
    if bad:
        p.error(f"unknown suite {bad[0]!r}; valid suites: {', '.join(SUITES)}")
    if args.apps is not None:
        try:
            valid = [n for s in suites for n in (app_names() if s == "apps" else suite_names(
                s, BenchOptions(random_count=getattr(args, "random_count", 5),
                                random_seed=getattr(args, "random_seed", 0))))]
        except TilesolveError as exc:
            p.error(str(exc))
        bad = [a for a in args.apps if a not in valid]
        if bad:
            p.error(f"unknown app {bad[0]!r}; valid apps: {', '.join(valid)}")
        if not args.apps:
            p.error("--apps is empty")


def main_bench(args, parser: argparse.ArgumentParser, out=None, err=None) -> int:
    """Run ``tilesolve bench`` with parsed ``args``; the exit status."""
    from .table import bench_doc, format_table, write_csv, write_json
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    _validate(parser, args)
    if getattr(args, "from_json", None):
        return _plot(args, _read_json_doc(args.from_json, err), err)
    if getattr(args, "dask", None):
        from ..distributed.bench import main_dask
        return main_dask(args, out, err)
    opts = BenchOptions(apps=args.apps, methods=args.methods, spec=args.spec, size=args.size,
                        repeat=args.repeat, time_limit=args.time_limit,
                        compare_halide=args.compare_halide,
                        halide_autoschedulers=args.halide_autoschedulers, seed=args.seed,
                        tune_budget=getattr(args, "tune_budget", None),
                        suites=getattr(args, "suites", None),
                        random_count=getattr(args, "random_count", 5),
                        random_seed=getattr(args, "random_seed", 0))
    reason = _no_gpu_for(opts.spec)
    if reason is not None:
        err.write(f"tilesolve bench: error: spec {opts.spec} is a GPU: timing its CUDA code "
                  f"needs pycuda and an NVIDIA GPU, and here {reason}. Without a GPU, "
                  "`bash benchmarks/gpu_run.sh check` builds the same kernels with nvcc and "
                  "runs them on the CPU shim (docs/gpu.md)\n")
        return 2
    progress = Progress(stream=err, enabled=not args.quiet)
    old = _interrupt_on_sigterm()
    try:
        result = run_bench(opts, progress)
    except TilesolveError as exc:
        err.write(f"tilesolve bench: error: {exc}\n")
        return 2
    finally:
        _restore_sigterm(old)
    out.write(format_table(result.records, result.environment))
    if result.interrupted:
        out.write("INTERRUPTED: the table holds the rows finished before the interruption\n")
    options = {k: getattr(opts, k) for k in ("apps", "methods", "size", "repeat", "time_limit",
                                             "compare_halide", "halide_autoschedulers", "seed",
                                             "tune_budget", "suites", "random_count",
                                             "random_seed")}
    options["spec"] = str(opts.spec)
    if args.json:
        write_json(args.json, result.records, result.environment, options)
        progress.log(f"wrote {args.json}")
    if args.csv:
        write_csv(args.csv, result.records)
        progress.log(f"wrote {args.csv}")
    if getattr(args, "plot", None) and _plot(
            args, bench_doc(result.records, result.environment, options), err) != 0:
        return 1
    return 130 if result.interrupted else (0 if result.ok else 1)


def _read_json_doc(path: str, err):
    """The bench JSON at ``path``, or None after saying on ``err`` why it cannot be read."""
    from .table import read_json
    try:
        return read_json(path)
    except TilesolveError as exc:
        err.write(f"tilesolve bench: error: --from: {exc}\n")
        return None


def _plot(args, doc, err) -> int:
    """Draw the ratios of ``doc`` to ``--plot``; the exit status (2: nothing to draw)."""
    if doc is None:
        return 2
    from ..viz.bench_plot import write_plot
    from .ratios import bench_ratios
    try:
        br = bench_ratios(doc.get("records", []), getattr(args, "plot_method", None))
        write_plot(args.plot, br)
    except TilesolveError as exc:
        err.write(f"tilesolve bench: error: --plot: {exc}\n")
        return 2
    err.write(f"wrote {args.plot}: {len(br.ratio)} ratios of {br.ours} to "
              f"{', '.join(br.series)} over {len(br.apps)} apps\n")
    return 0


def _no_gpu_for(spec) -> str | None:
    """Why CUDA code cannot run here, when ``spec`` names a GPU; else None."""
    from ..specs import load_spec
    try:
        is_gpu = bool(getattr(load_spec(spec), "is_gpu", False))
    except TilesolveError:
        return None                      # run_bench reports a bad spec itself
    if not is_gpu:
        return None
    from ..backend.cuda.runtime import availability
    return availability()


def _interrupt_on_sigterm():
    """SIGTERM (e.g. ``timeout``) interrupts like Ctrl-C, so the rows done so far
    are still printed and written; returns the old handler (None off the main thread)."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, handler)


def _restore_sigterm(old) -> None:
    if old is not None:
        import signal
        signal.signal(signal.SIGTERM, old)
