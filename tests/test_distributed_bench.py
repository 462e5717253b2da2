"""``tilesolve bench --dask``: the benchmark runs on both kinds of cluster, checks the
chunked result against the in-memory one, and counts each process once.

A tiny image (blur at 1/2500 of the paper's area: 128 x 96) keeps it to seconds; the
figures themselves are not asserted (timings belong in benchmarks/).
"""
from __future__ import annotations

import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from tilesolve.distributed import bench  # noqa: E402

SCALE = 1 / 2500


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_dask_bench_runs_and_counts_each_process_once(processes):
    recs = bench.run_dask_bench(2, ["blur"], scale=SCALE, repeat=1, layout="rows",
                                processes=processes)
    assert [r["workers"] for r in recs] == [1, 2]
    assert recs[0]["sizes"] == [128, 96]
    kind = "processes" if processes else "threads"
    for r in recs:
        assert r["worker_kind"] == kind
        # each output chunk is one task, counted once however the workers share processes
        assert r["tasks"] == sum(len(c) for c in r["chunks"][:1]) * len(r["chunks"][1])
        assert r["seconds"] > 0 and r["task_realize_seconds"] > 0
        # one memory record per process: a threaded cluster is one process
        assert len(r["peak_rss_mb"]) == (r["workers"] if processes else 1)
        assert len(r["cpu_workers"]) == (r["workers"] if processes else 0)
        assert r["cpu_total"] > 0
    assert recs[0]["speedup"] == 1.0
    text = bench.format_records(recs)
    assert ("proc" if processes else "thr") in text.splitlines()[2]


def test_dask_bench_with_dasks_own_store():
    recs = bench.run_dask_bench(2, ["blur"], scale=SCALE, repeat=1, layout="rows",
                                processes=False, store="dask")
    assert [(r["workers"], r["store"]) for r in recs] == [(1, "dask"), (2, "dask")]
    assert all(r["seconds"] > 0 and r["task_realize_seconds"] > 0 for r in recs)


def test_dask_bench_cli_rejects_unknown_worker_kind(capsys):
    from tilesolve.cli import main
    assert main(["bench", "--dask", "2", "--dask-workers", "fibers"]) == 2
    assert "--dask-workers" in capsys.readouterr().err
