"""The CPU cost model's ranking on this machine, over a spread of candidates per app.

``autotune``'s own rho covers what its time budget let it measure: 2-5 schedules for
the large apps (local_laplacian, interpolate, lens_blur, stencil_chain), where rho
says nothing.  Here every app gets the same treatment, as ``gpu_rank.py`` gives the
GPU: autotune's Gatherer on the spec (greedy, beam, the ILP on each tile menu, the
neighbours of the two best), up to ``--per-app`` candidates spread evenly over the
predicted costs, each compiled, checked against the best predicted one's output and
timed in ``--rounds`` rounds (``rank_ceiling._time_rounds``: each round in a new random
order, the second of two runs timed, into one output buffer as ``ts.autotune`` times).
Per app it prints the model's rho (against the fastest time over all rounds) and the
retest rho (even rounds against odd rounds: the agreement of the measurement with
itself, the most any model can show).

    python benchmarks/cpu_rank.py --spec FILE_OR_NAME [--apps a,b] [--per-app 10]
                                  [--rounds 8] [--json OUT]

``--json`` writes the measurements in the shape ``export_tune_db.py`` writes
(``tunings`` and ``measurements``, each measurement with its ``schedule_json``), so
``rank_offline.py`` re-prices them with a changed model without timing anything, plus
``records``: the per-app summary.  Wall-clock times need a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _gather import spread_candidates  # noqa: E402
from rank_ceiling import _time_rounds  # noqa: E402


def study(name: str, spec, per_app: int, rounds: int, gather_s: float, log) -> tuple:
    import tilesolve as ts
    from tilesolve.apps import get_app
    from tilesolve.bench.runner import Case, _tolerance
    from tilesolve.tune.check import compare
    from tilesolve.tune.stats import spearman
    app = get_app(name)
    case = Case(app, app.PAPER_SIZE, {}, 0)
    pipe, est = case.pipeline, case.estimates
    t0 = time.perf_counter()
    _, cands = spread_candidates(pipe, est, spec, per_app, gather_s)
    log(f"{name}: {len(cands)} candidates gathered in {time.perf_counter() - t0:.0f} s")
    rtol, atol = _tolerance(app)
    inputs, sizes = case.inputs, list(case.sizes)
    builds, first = [], None
    for c in cands:
        b = ts.compile(pipe, c.schedule)
        got = b.realize(sizes, **inputs)
        if first is None:
            first = got
        else:
            ok, err, tol = compare(got, first, rtol, atol, 1)
            if not ok:
                raise AssertionError(f"{name}: {c.source} differs from {cands[0].source} "
                                     f"by {err} ({tol})")
        builds.append(b)
    log(f"{name}: compiled and checked, timing {rounds} rounds")
    t = _time_rounds(builds, inputs, sizes, rounds, seed=len(builds), out=first)
    best, even, odd = t.min(axis=0), t[0::2].min(axis=0), t[1::2].min(axis=0)
    costs = [c.predicted_cost for c in cands]
    key = f"cpu_rank:{name}"
    tuning = {"key": key, "app": name, "build_params": {},
              "estimates": {k: list(v) for k, v in est.items()}, "spec_name": spec.name,
              "spec": spec.to_dict(), "threads": builds[0].num_threads}
    rows = [{"key": key, "schedule_json": c.schedule.to_json(), "source": c.source,
             "predicted_cost": c.predicted_cost, "measured_ms": float(best[i] * 1e3),
             "ms_even": float(even[i] * 1e3), "ms_odd": float(odd[i] * 1e3),
             "error": None, "note": None} for i, c in enumerate(cands)]
    rec = {"app": name, "schedules": len(cands),
           "rho_model": spearman(costs, list(best)),
           "rho_retest": spearman(list(even), list(odd)),
           "spread": float(best.max() / best.min()), "fastest_ms": float(best.min() * 1e3),
           "best_predicted_ms": float(best[0] * 1e3)}
    return tuning, rows, rec


def main(argv=None) -> int:
    from tilesolve.apps import APPS
    from tilesolve.specs import load_spec
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="host")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--per-app", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--gather-s", type=float, default=20.0)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    spec = load_spec(a.spec)
    doc = {"description": f"cpu_rank.py --spec {a.spec} --per-app {a.per_app} "
                          f"--rounds {a.rounds}", "tunings": [], "measurements": [],
           "records": []}
    fmt = (lambda v: "   n/a" if v is None else f"{v:6.2f}")
    print(f"{'app':<16} {'n':>3} {'rho model':>9} {'rho retest':>10} {'spread':>7} "
          f"{'fastest ms':>10} {'best pred ms':>12}", flush=True)
    for name in a.apps.split(","):
        try:
            tuning, rows, rec = study(name, spec, a.per_app, a.rounds, a.gather_s,
                                      lambda s: print(f"  [{s}]", file=sys.stderr, flush=True))
        except AssertionError:             # a schedule computed something else: a bug
            raise
        except Exception as e:             # reported; the other apps still run
            print(f"{name:<16} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        doc["tunings"].append(tuning)
        doc["measurements"] += rows
        doc["records"].append(rec)
        print(f"{name:<16} {rec['schedules']:>3} {fmt(rec['rho_model']):>9} "
              f"{fmt(rec['rho_retest']):>10} {rec['spread']:6.2f}x {rec['fastest_ms']:10.2f} "
              f"{rec['best_predicted_ms']:12.2f}", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
