"""The ``tilesolve`` command.

    tilesolve bench [--apps a,b] [--methods m1,m2] [--spec host] [--size small|paper]
                    [--repeat N] [--time-limit S] [--seed N] [--compare-halide]
                    [--halide-autoschedulers a,b] [--json F] [--csv F] [-q]
                    [--plot F [--from JSON] [--plot-method M]]   # ratios to Halide, drawn
    tilesolve specs [NAME]          # list the hardware specs, or print one as YAML
    tilesolve calibrate [--out F] [--quick] [--base SPEC]   # measure, fit, write a host spec
    tilesolve explain APP [--method M] [--ir] [--ir-out DIR] [--profile] [--html F]
    tilesolve demo [--size W H]     # the blur of DESIGN.md: schedule, compile, check

``bench`` is documented in ``tilesolve.bench`` (the table, the JSON fields),
``specs`` in ``tilesolve.specs.cli``, ``calibrate`` in ``tilesolve.tune.calibrate``,
``explain`` (a solved schedule explained; our loop IR beside Halide's lowered statement;
a per-Func profile) in ``tilesolve.cli_explain``.
``main(argv)`` returns the exit status (0 ok, 1 a failed check or step, 2 bad
options) instead of exiting, so it can be called in-process.
"""
from __future__ import annotations

import argparse
import sys
import time

__all__ = ["main"]

DEMO_MAX_POINTS = 8192 * 8192


def _parser():
    """The top-level parser and the ``bench`` subparser (for its usage errors)."""
    from .bench.cli import add_bench_arguments
    p = argparse.ArgumentParser(
        prog="tilesolve", description="A Halide-style compiler whose autoscheduler solves for "
                                      "the schedule.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    b = sub.add_parser("bench", help="solve, compile, verify and time the app suite",
                       description="For each app and method: solve (timed), compile (timed), "
                                   "verify against the reference at the small size, time the "
                                   "runs; print one table.")
    add_bench_arguments(b)
    sub.add_parser("specs", help="list the hardware specs, or print one as YAML",
                   add_help=False)
    sub.add_parser("calibrate", help="measure this machine, fit the cost model to timed "
                                     "random pipelines, write a host spec",
                   add_help=False)
    sub.add_parser("explain", help="explain an app's solved schedule; --ir: our loop IR "
                                   "beside Halide's; --profile: time per Func",
                   add_help=False)
    from .bench.cli import positive_int
    from .solver import METHODS
    d = sub.add_parser("demo", help="schedule, compile and check the blur of DESIGN.md")
    d.add_argument("--size", type=positive_int, nargs=2, default=[640, 480], metavar=("W", "H"),
                   help="image width and height (positive integers; default 640 480)")
    d.add_argument("--method", default="auto", choices=METHODS,
                   help=f"solver method ({', '.join(METHODS)}; default auto)")
    d.add_argument("--spec", default="host",
                   help="hardware spec name or YAML path (default: host; `tilesolve specs` "
                        "lists them)")
    return p, b, d


def _demo_spec(parser, name: str):
    """The demo's spec, loaded up front: an unknown one is a usage error (exit 2)."""
    from .errors import SpecError
    from .specs import load_spec
    try:
        return load_spec(name)
    except SpecError as exc:
        parser.error(f"argument --spec: {exc}")


def main(argv=None) -> int:
    """Run the ``tilesolve`` command; returns the exit status."""
    from .errors import TilesolveError
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "specs":   # its own parser, its own options
            from .specs.cli import main_specs
            return main_specs(argv[1:])
        if argv and argv[0] == "calibrate":   # its own parser too
            from .tune.calibrate import main_calibrate
            return main_calibrate(argv[1:])
        if argv and argv[0] == "explain":     # and this one
            from .cli_explain import main_explain
            return main_explain(argv[1:])
        parser, bench_parser, demo_parser = _parser()
        args = parser.parse_args(argv)
        if args.command == "bench":
            from .bench.cli import main_bench
            return main_bench(args, bench_parser)
        if args.command == "demo":
            w, h = args.size
            if w * h > DEMO_MAX_POINTS:
                demo_parser.error(f"argument --size: {w} x {h} is too large for the demo: at "
                                  f"most {DEMO_MAX_POINTS} points (e.g. 8192 x 8192); the "
                                  "numpy reference holds several images of that size")
            spec = _demo_spec(demo_parser, args.spec)
            try:
                return demo(args.size, args.method, spec)
            except TilesolveError as exc:
                sys.stderr.write(f"tilesolve demo: error: {type(exc).__name__}: {exc}\n")
                return 1
    except SystemExit as exc:        # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    parser.print_help()
    return 2


def demo(size, method: str = "auto", spec_name="host", out=None) -> int:
    """Define the two-pass blur, schedule it, compile it, compare with the reference.

    ``spec_name``: a spec name, path or HardwareSpec.  A failed step (the solver, the
    compiler) is reported on stderr with exit status 1; nothing falls back silently."""
    import numpy as np

    import tilesolve as ts
    from .bench.methods import compile_status
    out = sys.stdout if out is None else out
    w, h = size
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    blur_x, blur_y = ts.Func("blur_x"), ts.Func("blur_y")
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    pipe = ts.Pipeline(blur_y)
    out.write(f"algorithm:\n{pipe}\n\n")
    arr = np.random.default_rng(0).random((h, w), dtype=np.float32)
    t0 = time.perf_counter()
    ref = ts.reference.realize(pipe, [w, h], input=arr)
    out.write(f"reference (numpy): {(time.perf_counter() - t0) * 1e3:.1f} ms\n")
    ok, why = compile_status()
    if not ok:
        sys.stderr.write(f"tilesolve demo: cannot compile: {why}\n")
        return 1
    spec = ts.load_spec(spec_name)
    t0 = time.perf_counter()
    sched = ts.solve_schedule(pipe, spec, estimates={"blur_y": [w, h], "input": [w, h]},
                              method=method)
    out.write(f"solved ({method}) on {spec.name} in {time.perf_counter() - t0:.2f} s\n")
    out.write(f"schedule:\n{sched}\n\n")
    fast = ts.compile(pipe, sched)
    out.write(f"compiled in {getattr(fast, 'compile_seconds', float('nan')):.2f} s"
              f"{' (cache hit)' if getattr(fast, 'cache_hit', False) else ''}\n")
    fast.realize([w, h], input=arr)
    t0 = time.perf_counter()
    got = fast.realize([w, h], input=arr)
    out.write(f"compiled run: {(time.perf_counter() - t0) * 1e3:.2f} ms\n")
    err = float(np.max(np.abs(got.astype(np.float64) - ref)))
    out.write(f"max error vs the reference: {err:.3g}\n")
    return 0 if err <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
