"""``tilesolve calibrate``: measure this machine, fit the cost model, write a host spec.

    tilesolve calibrate                    # install it: load_spec("host") returns it
    tilesolve calibrate --out mine.yaml    # write it there instead
    tilesolve calibrate --quick            # a few seconds, fewer samples (for tests)
    tilesolve calibrate --base mine.yaml   # start from another spec than the detected one

Steps: the microbenchmarks (``microbench.py``), the training set (``training.py``:
random pipelines, several schedules each, compiled, checked against the
reference and timed), the fit (``fit.py``), the streams weight (``streams.py``: a
stencil over an image larger than the caches at tiles of several heights), then a
YAML spec in which every
measured or fitted value carries a comment saying how it was obtained, and whose
``# machine:`` line names this machine.  Without ``--out`` the file goes to the
spec cache directory (``TILESOLVE_CACHE_DIR``, where host detection caches
``host.json``) as ``host.yaml``, which ``load_spec("host")`` then returns on this
machine (``load_spec("host", calibrated=False)`` still detects).

Why comments and not fields: the schema has no place for provenance, and a
comment keeps the file a plain spec that any tilesolve loads.  The fitted scale
(ms per cost unit) has no spec field either; it is written as a comment.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, List, Optional, Sequence, TextIO


from ..errors import SpecError, TilesolveError

__all__ = ["calibrate", "CalibrationResult", "main_calibrate", "check_writable"]

# Why the fitted load_cost is not applied by default: on each machine it was tried, the
# balance that explains the training pipelines best made the solvers' schedules of the
# benchmark apps slower (``benchmarks/ab.py --set spec=SPEC.yaml``, greedy, geomean over the
# apps whose schedule changed): an Intel Xeon, load_cost 15.4, 1.28x; an AMD EPYC, 4.28
# (training at 384 x 384, in cache), 1.27x, max_filter 3.5x and nl_means 3.2x; the same
# machine trained at 2560 x 2048, 19.3, 1.00x, but nl_means 1.45x and lens_blur 1.23x.
# In the solver, load_cost is Mullapudi's balance: it also stands in for what the model
# does not price (cache reuse between tiles, prefetching), and a value fitted to run
# times does not make its tile and fusion choices better.
LOAD_COST_NOT_APPLIED = ("the value that best explains the training pipelines made the "
                         "solvers' schedules slower on every machine it was tried on")

FULL = dict(cases=16, size=(384, 384), variants=2, repeat=5, budget_s=40.0)
QUICK = dict(cases=4, size=(192, 192), variants=1, repeat=3, budget_s=8.0)


@dataclass
class CalibrationResult:
    """What ``calibrate`` produced: the spec, its YAML text, the fit and the measurements."""

    spec: object
    yaml: str
    fit: Optional[object]
    micro: object
    samples: int
    pipelines: int
    written: List[Path] = field(default_factory=list)
    seconds: float = 0.0


def check_writable(path, argument: str = "--out") -> Path:
    """``path`` as a Path if a file can be written there, else ``TilesolveError``
    naming ``argument`` (checked before anything is measured)."""
    p = Path(path).expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    why = None
    if p.is_dir():
        why = "it is a directory"
    elif not parent.is_dir():
        why = f"its directory {parent} does not exist"
    elif p.exists() and not os.access(p, os.W_OK):
        why = "the file is not writable"
    elif not p.exists() and not os.access(parent, os.W_OK | os.X_OK):
        why = f"its directory {parent} is not writable"
    if why:
        raise TilesolveError(f"calibrate: argument {argument}: cannot write {str(p)!r}: {why}")
    return p


def _load_base(base):
    from ..specs import HardwareSpec, load_spec
    from ..specs.loader import HOST
    if isinstance(base, HardwareSpec):
        return base, False
    is_host = isinstance(base, str) and base.strip().lower() == HOST
    try:
        if is_host:
            return load_spec(HOST, calibrated=False, measure_bandwidth=False), True
        return load_spec(base), False
    except SpecError as exc:
        raise SpecError(f"calibrate: argument --base: {exc}") from None


def _write(path: Path, text: str, argument: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise TilesolveError(f"calibrate: argument {argument}: cannot write {str(path)!r}: "
                             f"{exc.strerror or exc}") from None


def calibrate(base="host", *, out=None, quick: bool = False, install: Optional[bool] = None,
              cache_dir=None, seed: int = 0, fit_load_cost: bool = False,
              progress: Optional[Callable[[str], None]] = None) -> CalibrationResult:
    """Run the microbenchmarks, the training set and the fit; write the spec.

    ``base``: the spec to start from (default: this machine, detected; a name, a
    path or a HardwareSpec).  ``out``: a file to write.  ``install``: also write
    ``host.yaml`` into ``cache_dir`` (default: the spec cache directory); by
    default only when ``out`` is not given.  A GPU base is not this machine, so
    it needs ``out`` and is never installed.  ``fit_load_cost``: write the
    ``load_cost`` fitted to the training set (by default it is reported in the
    spec's comment and the base's is kept: ``LOAD_COST_NOT_APPLIED``).  Raises ``SpecError`` for a bad base
    and ``TilesolveError`` naming ``--out`` for a path that cannot be written.
    """
    from ..specs.host import CALIBRATED_FILE, host_fingerprint
    from ..specs.loader import default_cache_dir, spec_from_yaml
    from .fit import fit_spec
    from .microbench import run_microbenchmarks
    from .streams import measure_streams
    from .training import build_cases, measure_cases
    from .yaml_out import spec_yaml

    t0 = time.perf_counter()
    say = progress or (lambda _s: None)
    out_path = check_writable(out) if out is not None else None
    spec, detected = _load_base(base)
    if install is None:
        install = out is None
    if spec.is_gpu and (out is None or install):
        raise TilesolveError(f"calibrate: argument --out: the base spec {spec.name!r} is a GPU, "
                             "not this machine's host spec: give --out FILE (it is not "
                             "installed as the host spec)")
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if install:
        directory.mkdir(parents=True, exist_ok=True)
        check_writable(directory / CALIBRATED_FILE, "--out (the spec cache directory)")
    mode = QUICK if quick else FULL
    say(f"calibrating from {'the detected host' if detected else spec.name} "
        f"({'quick' if quick else 'full'} mode)")
    micro = run_microbenchmarks(spec, quick=quick, progress=lambda s: say("  " + s))
    report, n_samples, n_pipes = None, 0, 0
    new = spec
    if spec.is_gpu:                       # what a driven GPU measured; the rest is kept
        from .gpu_micro import GPU_FIELDS
        measured = {f: micro.get(m) for f, m in GPU_FIELDS}
        new = spec.replace(**{f: round(v, 3) for f, v in measured.items() if v is not None})
    if spec.is_cpu:
        new = spec.replace(memory_bandwidth_gbs=micro.get("memory_bandwidth_gbs"))
        deadline = time.perf_counter() + mode["budget_s"]
        cases = build_cases(new, mode["cases"], seed=seed, size=mode["size"],
                            variants=mode["variants"])
        overhead = micro.get("call_overhead_ms") or 0.0
        samples = measure_cases(cases, repeat=mode["repeat"], overhead_ms=overhead,
                                deadline=deadline, progress=lambda s: say("  " + s))
        n_samples = len(samples)
        n_pipes = len({id(s[0]) for s in samples})
        new, report = fit_spec(new, samples, overhead_ms=overhead,
                               apply_load_cost=fit_load_cost)
        say(f"fit: {report.summary()}")
        if not report.applied:
            say(f"  load_cost kept at {new.load_cost:g}: {LOAD_COST_NOT_APPLIED} "
                "(--fit-load-cost applies the fitted value)")
        for note in report.notes:
            say(f"  {note}")
        streams, m = measure_streams(new, quick=quick, repeat=mode["repeat"],
                                     overhead_ms=overhead, progress=lambda s: say("  " + s))
        micro.add(m)
        say(f"stream_miss_loads: {m.how}")
        if streams.fitted:
            new = new.with_cost_params(stream_miss_loads=round(streams.value, 3))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text, new = spec_yaml(spec, new, detected=detected, micro=micro, fit=report,
                          pipelines=n_pipes, quick=quick, stamp=stamp,
                          machine=host_fingerprint())
    if spec_from_yaml(text, "<calibrated spec>") != new:     # the file must say what we mean
        raise TilesolveError("calibrate: the written spec does not read back equal; a bug")
    written = []
    if out_path is not None:
        _write(out_path, text, "--out")
        written.append(out_path)
    if install:
        target = directory / CALIBRATED_FILE
        _write(target, text, "--out (the spec cache directory)")
        written.append(target)
    for p in written:
        say(f"wrote {p}")
    return CalibrationResult(new, text, report, micro, n_samples, n_pipes, written,
                             time.perf_counter() - t0)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Measure this machine (cache and memory bandwidth, vector and scalar op "
                    "cost, parallel task overhead), time random training pipelines under "
                    "several schedules (each checked against the reference), fit the cost "
                    "model's load_cost (reported; applied with --fit-load-cost) and "
                    "ms-per-cost-unit scale to them, fit its streams "
                    "weight (cost_params.stream_miss_loads) to a stencil timed at tiles of several "
                    "heights over an image larger than the caches, and write a host "
                    "spec YAML whose measured and fitted values carry comments saying how "
                    "they were obtained.",
        epilog="Without --out the spec is installed as host.yaml in the spec cache directory "
               "(TILESOLVE_CACHE_DIR), and load_spec('host') returns it on this machine; "
               "delete that file to go back to the detected host. Takes about a minute "
               "(--quick: seconds). Other load on the machine inflates the measurements.")
    p.add_argument("--out", metavar="FILE",
                   help="write the spec to FILE (and do not install it as the host spec)")
    p.add_argument("--quick", action="store_true",
                   help="a few seconds: small microbenchmarks and 4 training pipelines "
                        "(enough to test the machinery, too few for a trustworthy fit)")
    p.add_argument("--base", metavar="SPEC", default="host",
                   help="the spec to start from: a spec name, 'host' (default: this machine, "
                        "detected) or a YAML path; a GPU spec needs --out, and its launch "
                        "overhead and memory bandwidth are measured where pycuda drives a "
                        "GPU (else kept)")
    p.add_argument("--fit-load-cost", action="store_true",
                   help="write the load_cost fitted to the training pipelines into the spec "
                        "(by default it is only reported, in a comment: applied, it made the "
                        "solvers' schedules slower on the machines it was tried on)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random training pipelines (default 0)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    return p


def main_calibrate(argv: Optional[Sequence[str]] = None, *, prog: str = "tilesolve calibrate",
                   out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> int:
    """Run ``tilesolve calibrate``; returns the exit status (0; 1 a failed step; 2 bad
    arguments)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    args = _parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    progress = None if args.quiet else (lambda s: (err.write(s + "\n"), err.flush()))
    try:
        res = calibrate(args.base, out=args.out, quick=args.quick, seed=args.seed,
                        fit_load_cost=args.fit_load_cost, progress=progress)
    except SpecError as exc:
        err.write(f"{prog}: error: {exc}\n")
        return 2
    except TilesolveError as exc:
        err.write(f"{prog}: error: {exc}\n")
        return 2 if "argument --" in str(exc) else 1
    out.write(res.yaml)
    return 0
