"""Export tuning databases' measurements to JSON (what rank.py offline reads).

    python benchmarks/export_tune_db.py OUT.json DB.sqlite [DB.sqlite ...]

Each tuning's pipeline is named by the app of ``tilesolve.apps`` whose build
(default parameters, or its ``SMALL_BUILD``) encodes to the same pipeline
hash; tunings of other pipelines are skipped (and listed).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import sys


def app_hashes() -> dict:
    from tilesolve.apps import APPS
    from tilesolve.tune.db import pipeline_json
    out = {}
    for name, mod in APPS.items():
        for sizes, params in ((None, {}), (getattr(mod, "SMALL_SIZE", None),
                                           getattr(mod, "SMALL_BUILD", None) or {})):
            pipe, _ = mod.build(sizes, **params)
            out.setdefault(hashlib.sha256(pipeline_json(pipe).encode()).hexdigest(),
                           (name, params))
    return out


def export(dbs, description: str = "") -> dict:
    known = app_hashes()
    tunings, rows = [], []
    for db in dbs:
        c = sqlite3.connect(db)
        for key, ph, est, spec_name, spec, threads, created in c.execute(
                "SELECT key, pipeline_hash, estimates_json, spec_name, spec_json, threads, "
                "created FROM tunings ORDER BY created"):
            if ph not in known:
                print(f"skipped tuning {key[:12]}: not a pipeline of tilesolve.apps",
                      file=sys.stderr)
                continue
            app, params = known[ph]
            tunings.append({"key": key, "app": app, "build_params": params,
                            "estimates": json.loads(est), "spec_name": spec_name,
                            "spec": json.loads(spec), "threads": threads, "created": created,
                            "pipeline_hash": ph})
            cols = {r[1] for r in c.execute("PRAGMA table_info(measurements)")}
            note = "note" if "note" in cols else "NULL"      # a version 1 file has none
            for sh, sj, src, pc, ms, err, at, nt in c.execute(
                    "SELECT schedule_hash, schedule_json, source, predicted_cost, measured_ms, "
                    f"error, measured_at, {note} FROM measurements WHERE key = ? "
                    "ORDER BY measured_at, rowid", (key,)):
                if pc is not None and pc == float("inf"):
                    pc = "inf"
                rows.append({"key": key, "app": app, "build_params": params,
                             "estimates": json.loads(est), "source": src, "schedule_hash": sh,
                             "schedule_json": sj, "predicted_cost": pc, "measured_ms": ms,
                             "error": err, "measured_at": at, "note": nt})
    return {"description": description, "tunings": tunings, "measurements": rows}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    doc = export(argv[1:])
    with open(argv[0], "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{len(doc['tunings'])} tunings, {len(doc['measurements'])} measurements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
