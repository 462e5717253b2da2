"""Every app's schedule from each solver, as a hash, with its solve time: a check that a
refactoring of the solvers or the analysis changes no schedule.

    python benchmarks/solve_hashes.py > before.txt     # on the old tree
    python benchmarks/solve_hashes.py > after.txt      # on the new one
    diff <(cut -d' ' -f1,2,4 before.txt) <(cut -d' ' -f1,2,4 after.txt)

A line: ``app method seconds hash predicted_cost``; the hash covers the schedule's code (not its
header, which holds the solve time) and its predicted cost.  Each solve runs twice
and the faster time is printed; the last line is the total.  Spec: ``--spec``
(default host), the papers' estimates; ``--set COST_PARAM=VALUE`` changes a cost parameter.  ``--time-limit`` goes to each solve: a solve
that reaches it (the ILP of local_laplacian on h100 at the default 10 s) returns the
best answer found by then, which differs from run to run; a longer limit lets it finish.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS  # noqa: E402
from cost_sets import spec_with  # noqa: E402


def schedule_hash(s) -> str:
    code = "\n".join(ln for ln in str(s).splitlines() if not ln.startswith("#"))
    cost = getattr(s.provenance, "predicted_cost", "")
    return hashlib.md5((code + repr(cost)).encode()).hexdigest()[:10]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", default="host")
    p.add_argument("--methods", default="greedy,beam,ilp")
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--time-limit", type=float, default=10.0)
    p.add_argument("--set", action="append", default=[], metavar="COST_PARAM=VALUE",
                   help="solve with this cost parameter changed (docs/cost_params.md)")
    a = p.parse_args(argv)
    spec = spec_with(a.spec, a.set)
    total = 0.0
    for name in a.apps.split(","):
        app = APPS[name]
        pipe, est = app.build(app.PAPER_SIZE)
        for m in a.methods.split(","):
            best, s = float("inf"), None
            for _ in range(2):
                t0 = time.perf_counter()
                s = ts.solve_schedule(pipe, spec, estimates=est, method=m,
                                      time_limit=a.time_limit)
                best = min(best, time.perf_counter() - t0)
            total += best
            cost = getattr(s.provenance, "predicted_cost", "")
            print(f"{name} {m} {best:.3f} {schedule_hash(s)} {cost}", flush=True)
    print(f"total {total:.2f}")


if __name__ == "__main__":
    main()
