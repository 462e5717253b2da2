"""The GPU cost model's ranking against a real GPU: Spearman's rho per app.

``autotune`` measures on this machine's CPU only; on a GPU the model's ranking is
checked here, in gpu_bench.py's two phases (this machine has nvcc and no GPU):

    # 1. here: every app's candidates (greedy, beam, the ILP on each tile menu, their
    #    neighbours: autotune's Gatherer, for the GPU spec), up to --per-app of them
    #    spread over the predicted costs, lowered and compiled to cubins
    python benchmarks/gpu_rank.py build --out build/gpu_rank --spec h100 [--also-spec FILE]
    # 2. on the GPU machine: gpu_bench.py's run phase (checks every output, times it)
    python3 benchmarks/gpu_bench.py run --builds build/gpu_rank --json rank.json
    # 3. anywhere: rho between predicted cost and measured time, per app
    python benchmarks/gpu_rank.py rank rank.json
    # ... with the current model's prediction of the same schedules (no GPU, no nvcc);
    # --launch-us: what a launch cost the runtime that measured them (its host plan was
    # interpreted on every realize then: 0.15-0.76 ms a launch, docs/gpu.md)
    python benchmarks/gpu_rank.py rank results/gpu_h100_rank_2026-11-27.json \
        --schedules results/gpu_h100_rank_schedules_2026-11-28.json --launch-us 200
    # 4. the interpreted host plan of those schedules, timed here on the no-op device
    python benchmarks/gpu_rank.py host results/gpu_h100_rank_schedules_2026-11-28.json --out F

``--also-spec FILE`` also builds each app's ``solve_schedule`` under that spec (a
calibrated one, say) as ``solver@<stem>`` where its schedule differs from the base
spec's (``solver``): the A/B of what calibration changes.  No timing is asserted.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS  # noqa: E402
from tilesolve.backend import cuda as C  # noqa: E402
from tilesolve.tune.stats import spearman  # noqa: E402

import gpu_bench as GB  # noqa: E402
from _gather import spread_candidates  # noqa: E402


def candidates(pipe, est, spec, per_app: int, seconds: float):
    """``_gather.spread_candidates`` on ``spec``: (Candidate, its schedule as
    ``ts.solve_schedule`` would give it: each producer whose per-block buffer has no
    constant size computed at root)."""
    from tilesolve.driver import lowerable_schedule
    from tilesolve.solver import Solution
    problem, ranked = spread_candidates(pipe, est, spec, per_app, seconds)
    return [(c, lowerable_schedule(pipe, Solution(problem, list(c.columns),
                                                  c.schedule.provenance))
             if c.columns else c.schedule)
            for c in ranked]


def _same(a, b) -> bool:
    """The same directives (the header lines carry the solver's costs and times)."""
    body = lambda s: [ln for ln in str(s).splitlines() if not ln.startswith("#")]  # noqa: E731
    return body(a) == body(b)


def _save(outdir, name, sname, sizes, sched, spec, extra):
    t0 = time.perf_counter()
    b = C.build_cuda(*sched, spec)
    serial = sum("single GPU thread" in n for n in b.program.notes)
    rec = {"app": name, "schedule": sname, "sizes": list(sizes), "build_kw": {},
           "schedule_text": str(sched[1]), "build": b, "serial_kernels": serial, **extra}
    (outdir / f"{name}__{sname}.pkl").write_bytes(GB._deep(GB.pickle.dumps, rec))
    print(f"  {name}/{sname}: predicted {extra.get('predicted_cost')}, "
          f"{len(b.program.kernels)} kernels, built in {time.perf_counter() - t0:.1f} s",
          flush=True)


def build(args):
    spec = ts.load_spec(args.spec)
    also = ts.load_spec(args.also_spec) if args.also_spec else None
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, GB._alarm)
    for name in args.apps.split(","):
        app = APPS[name]
        pipe, est = app.build(app.PAPER_SIZE)
        jobs = []
        try:
            for i, (c, sched) in enumerate(candidates(pipe, est, spec, args.per_app,
                                                      args.gather_s)):
                jobs.append((f"cand{i:02d}", sched,
                             {"predicted_cost": c.predicted_cost, "source": c.source}))
        except Exception as e:                   # reported; the other apps still built
            print(f"  {name}: gathering failed: {type(e).__name__}: {str(e)[:200]}")
        if also is not None:
            base = ts.solve_schedule(pipe, spec, estimates=est)
            other = ts.solve_schedule(pipe, also, estimates=est)
            if not _same(base, other):
                jobs.append(("solver", base, {"spec": spec.name}))
                jobs.append((f"solver@{Path(args.also_spec).stem}", other,
                             {"spec": str(args.also_spec)}))
        for sname, sched, extra in jobs:
            signal.alarm(args.timeout)
            try:
                _save(outdir, name, sname, app.PAPER_SIZE, (pipe, sched), spec, extra)
            except GB._Timeout:
                print(f"  {name}/{sname}: lowering + compiling took over {args.timeout} s")
            except Exception as e:
                print(f"  {name}/{sname}: FAILED {type(e).__name__}: {str(e)[:300]}")
            finally:
                signal.alarm(0)


def rank(args):
    rows = json.loads(Path(args.json).read_text())["results"]
    now = None
    if args.schedules:
        from _gpu_reprice import reprice
        stored = json.loads(Path(args.schedules).read_text())["rows"]
        spec = ts.load_spec(args.spec)
        if args.launch_us is not None:
            spec = spec.replace(launch_overhead_us=args.launch_us)
        now = reprice(stored, spec, columns=args.columns)
    by_app: dict = {}
    for r in rows:
        if r.get("predicted_cost") is not None and r.get("ok") and r.get("gpu_ms"):
            if now is not None:
                if (r["app"], r["schedule"]) not in now:
                    continue
                r = {**r, "stored_cost": r["predicted_cost"],
                     "predicted_cost": now[(r["app"], r["schedule"])]}
            by_app.setdefault(r["app"], []).append(r)
    table = {}
    head = " stored" if now is not None else ""
    print(f"{'app':16s} {'n':>3s} {'rho':>6s}{head} {'spread':>7s}  fastest / best predicted")
    for app, rs in sorted(by_app.items()):
        rho = spearman([r["predicted_cost"] for r in rs], [r["gpu_ms"] for r in rs])
        fast = min(r["gpu_ms"] for r in rs)
        best = min(rs, key=lambda r: r["predicted_cost"])["gpu_ms"]
        spread = max(r["gpu_ms"] for r in rs) / fast
        table[app] = {"n": len(rs), "rho": rho, "spread": spread, "best_predicted_ms": best,
                      "fastest_ms": fast}
        old = ""
        if now is not None:
            was = spearman([r["stored_cost"] for r in rs], [r["gpu_ms"] for r in rs])
            table[app]["stored_rho"] = was
            old = f" {'-' if was is None else format(was, '6.2f'):>6s}"
        print(f"{app:16s} {len(rs):3d} {'-' if rho is None else format(rho, '6.2f'):>6s}{old} "
              f"{spread:6.2f}x  {fast:.3f} / {best:.3f} ms")
        if args.detail:
            for r in sorted(rs, key=lambda r: r["gpu_ms"]):
                print(f"    {r['schedule']:8s} {r['gpu_ms']:9.3f} ms  predicted "
                      f"{r['predicted_cost']:12.2f}  {r.get('source', '')}")
    good = [a for a, t in table.items() if t["rho"] is not None and t["rho"] >= 0.8]
    print(f"rho >= 0.8 on {len(good)} of {len(table)} apps")
    ab = [r for r in rows if r["schedule"].startswith("solver") and r.get("gpu_ms")]
    for r in sorted(ab, key=lambda r: (r["app"], r["schedule"])):
        print(f"A/B {r['app']:16s} {r['schedule']:24s} {r['gpu_ms']:9.3f} ms  "
              f"{'ok' if r.get('ok') else 'WRONG'}")
    if args.out:
        Path(args.out).write_text(json.dumps({"rho": table, "ab": ab}, indent=1))


def host(args):
    """Time the interpreted host plan of every stored schedule (see _gpu_reprice)."""
    from _gpu_reprice import interpreted_host_ms
    rows = json.loads(Path(args.schedules).read_text())["rows"]
    if args.apps:
        rows = [r for r in rows if r["app"] in args.apps.split(",")]
    got = interpreted_host_ms(rows, args.repeats)
    Path(args.out).write_text(json.dumps(
        {"what": "interpreted host plan per realize on the no-op device (ms, median)",
         "rows": [{"app": a, "schedule": s, "host_ms": ms, "launches": n}
                  for (a, s), (ms, n) in got.items()]}, indent=1))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default="build/gpu_rank")
    b.add_argument("--apps", default=",".join(GB.DEFAULT_APPS))
    b.add_argument("--spec", default="h100")
    b.add_argument("--also-spec", default=None, help="a second spec for the solver's A/B")
    b.add_argument("--per-app", type=int, default=8, help="candidates built per app")
    b.add_argument("--gather-s", type=float, default=20.0, help="seconds of gathering per app")
    b.add_argument("--timeout", type=int, default=300, help="seconds per build")
    r = sub.add_parser("rank")
    r.add_argument("json", help="gpu_bench.py run's --json output over these builds")
    r.add_argument("--out", default=None, help="write the table as JSON")
    r.add_argument("--schedules", default=None,
                   help="the measured schedules (results/gpu_h100_rank_schedules_*.json): price "
                        "them with the current model instead of the stored predictions")
    r.add_argument("--columns", action="store_true",
                   help="with --schedules: price the solver's columns, not the groups that ran")
    r.add_argument("--spec", default="h100", help="with --schedules: the spec to price for")
    r.add_argument("--launch-us", type=float, default=None,
                   help="with --schedules: the cost of a launch in the runtime the measurements "
                        "were taken with (default: the spec's launch_overhead_us)")
    r.add_argument("--detail", action="store_true", help="each schedule's time and prediction")
    h = sub.add_parser("host", help="time the interpreted host plan of stored schedules")
    h.add_argument("schedules", help="results/gpu_h100_rank_schedules_*.json")
    h.add_argument("--out", required=True)
    h.add_argument("--apps", default="")
    h.add_argument("--repeats", type=int, default=10)
    args = p.parse_args(argv)
    {"build": build, "rank": rank, "host": host}[args.cmd](args)


if __name__ == "__main__":
    main()
