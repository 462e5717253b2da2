"""``tilesolve explain``: what a solver chose for an app, and what the compilers make of it.

    tilesolve explain APP [--method M] [--spec S] [--size small|paper]
                          [--ir] [--ir-out DIR] [--profile] [--runs N] [--html FILE]

* always: the schedule (as code) and its explanation (``Schedule.explain()``: groups,
  tilings, the predicted cost split);
* ``--ir``: our loop IR for that schedule (the lowered program, what the CPU backend
  compiles), then Halide's lowered statement for the same schedule replayed through the
  Halide bridge (``interop/halide_stmt.py``), each under its own header; without the
  ``halide`` package, ours and a line saying why Halide's is unavailable;
* ``--ir-out DIR``: both written to ``DIR/<app>.<method>.loop_ir.txt`` and
  ``DIR/<app>.<method>.halide.stmt`` (printed too only with ``--ir``);
* ``--profile``: the schedule compiled with ``profile=True``, run ``--runs`` times on the
  app's seeded inputs, and the profile table (time per Func, parallel utilization);
* ``--html FILE``: a picture of the schedule written to FILE (``tilesolve.viz``: the DAG
  with the groups as clusters, each group's tile, the predicted cost split), with the
  measured time per Func beside the prediction when ``--profile`` is given too.

The app is built at its small size (with its ``SMALL_BUILD`` parameters) unless
``--size paper``. ``main_explain(argv)`` returns the exit status: 0, 1 when a step
fails (solving, lowering, compiling), 2 for bad options.
"""
from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main_explain", "explain_parser"]


def _known_apps() -> dict:
    """The apps ``explain`` takes: the app suite's and the validation suite's."""
    from .apps import suite
    return {**suite("apps"), **suite("validation")}


def explain_parser() -> argparse.ArgumentParser:
    names = list(_known_apps())
    from .bench.methods import ALL_METHODS
    p = argparse.ArgumentParser(
        prog="tilesolve explain",
        description="Solve a schedule for an app and explain it; --ir shows our loop IR "
                    "beside Halide's lowered statement for the same schedule, --profile "
                    "times each Func of the compiled code.")
    p.add_argument("app", choices=names, metavar="APP",
                   help=f"an app of the app suite or the validation suite ({', '.join(names)})")
    p.add_argument("--method", default="greedy", choices=ALL_METHODS,
                   help=f"scheduling method ({', '.join(ALL_METHODS)}; default greedy)")
    p.add_argument("--spec", default="host", help="hardware spec name or YAML path "
                                                   "(default host)")
    p.add_argument("--size", default="small", choices=("small", "paper"),
                   help="the app's small (default) or paper size")
    p.add_argument("--ir", action="store_true",
                   help="print our loop IR and Halide's lowered statement")
    p.add_argument("--ir-out", metavar="DIR", help="write both IRs to files in DIR")
    p.add_argument("--profile", action="store_true",
                   help="compile with profile=True, run, print the time per Func")
    p.add_argument("--runs", type=int, default=3, help="runs to profile (default 3)")
    p.add_argument("--html", metavar="FILE",
                   help="write a picture of the schedule (HTML: the DAG and its groups, the "
                        "tiles, the cost split; with --profile, the measured times) to FILE")
    return p


def main_explain(argv, out=None) -> int:
    """Run ``tilesolve explain``; returns the exit status."""
    from .errors import TilesolveError
    out = sys.stdout if out is None else out
    parser = explain_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.runs < 1:
        sys.stderr.write("tilesolve explain: error: --runs must be at least 1\n")
        return 2
    if args.html is not None:
        folder = os.path.dirname(os.path.abspath(args.html))
        if os.path.isdir(args.html) or not os.path.isdir(folder):
            sys.stderr.write(f"tilesolve explain: error: --html {args.html}: not a file name in "
                             "an existing folder\n")
            return 2
    try:
        return _explain(args, out)
    except TilesolveError as exc:
        sys.stderr.write(f"tilesolve explain: error: {type(exc).__name__}: {exc}\n")
        return 1


def _explain(args, out) -> int:
    from .bench.methods import solve
    from .bench.runner import Case
    from .specs import load_spec
    app = _known_apps()[args.app]
    if args.size == "small":
        case = Case(app, app.SMALL_SIZE, dict(getattr(app, "SMALL_BUILD", {}) or {}), 0)
    else:
        case = Case(app, app.PAPER_SIZE, {}, 0)
    spec = load_spec(args.spec)
    sched, seconds, _ = solve(case.pipeline, args.method, spec, case.estimates)
    out.write(f"== {args.app} at {case.sizes}, method {args.method} on {spec.name} "
              f"(solved in {seconds:.2f} s) ==\n")
    if sched is None:
        out.write("(no schedule: the compiler's default)\n")
    else:
        out.write(f"{sched}\n\n")
        explain = getattr(sched, "explain", None)
        if callable(explain):
            out.write(f"{explain()}\n")
    if args.ir or args.ir_out:
        _irs(args, case.pipeline, sched, out)
    profile = None
    if args.profile:
        import tilesolve as ts
        fast = ts.compile(case.pipeline, sched, profile=True)
        for _ in range(args.runs):
            fast.realize(case.sizes, **case.inputs)
        out.write(f"\n== profile ({args.runs} runs at {case.sizes}) ==\n"
                  f"{fast.profile_report()}\n")
        profile = fast.profile()
    if args.html:
        if sched is None:
            sys.stderr.write("tilesolve explain: error: --html: method "
                             f"{args.method} gives no schedule to draw\n")
            return 1
        from .viz import schedule_html
        page = schedule_html(sched, estimates=case.estimates, profile=profile,
                             title=f"{args.app}: {args.method} schedule on {spec.name}")
        with open(args.html, "w") as f:
            f.write(page)
        out.write(f"wrote {args.html}\n")
    return 0


def _irs(args, pipeline, sched, out) -> None:
    from .errors import TilesolveError
    from .lower import lower
    ours = str(lower(pipeline, sched, target="cpu"))
    theirs, why = None, ""
    from .interop.halide import available
    ok, reason = available()
    if not ok:
        why = reason
    else:
        from .interop.halide_stmt import halide_lowered_stmt
        try:
            theirs = halide_lowered_stmt(pipeline, sched)
        except TilesolveError as exc:
            why = str(exc)
    if args.ir:
        out.write(f"\n== tilesolve loop IR ({args.app}, {args.method}) ==\n{ours}\n")
        if theirs is not None:
            out.write(f"\n== Halide lowered statement ({args.app}, {args.method} schedule "
                      f"replayed in Halide) ==\n{theirs}\n")
        else:
            out.write(f"\n== Halide lowered statement: unavailable ==\n{why}\n")
    if args.ir_out:
        os.makedirs(args.ir_out, exist_ok=True)
        stem = os.path.join(args.ir_out, f"{args.app}.{args.method}")
        with open(stem + ".loop_ir.txt", "w") as f:
            f.write(ours + "\n")
        out.write(f"wrote {stem}.loop_ir.txt\n")
        if theirs is not None:
            with open(stem + ".halide.stmt", "w") as f:
                f.write(theirs)
            out.write(f"wrote {stem}.halide.stmt\n")
        else:
            out.write(f"Halide's lowered statement not written: {why}\n")
