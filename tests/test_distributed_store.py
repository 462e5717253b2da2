"""tilesolve.distributed.store: chunks computed and written by one task each.

Every result is compared with ``ts.reference.realize``.  Without a cluster the graph runs
on Dask's threaded scheduler; one LocalCluster of two worker processes serves the rest.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilesolve as ts

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import distributed.diagnostics.plugin  # noqa: E402
zarr = pytest.importorskip("zarr")
import tilesolve.distributed as tsd  # noqa: E402
from tilesolve.distributed.store import _run_and_write, _runs, _store_graph  # noqa: E402
from tilesolve.distributed.worker import pieces_used, run_box  # noqa: E402
from test_distributed import _blur3, _same, client  # noqa: E402,F401


def _case(w=83, h=61, seed=0):
    pipe = _blur3(ts.float32)
    c = ts.compile(pipe)
    img = np.random.default_rng(seed).random((h, w)).astype(np.float32)
    return pipe, c, img, ts.reference.realize(pipe, [w, h], input=img)


def _two_outputs():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int32, 2, "input")
    m = ts.boundary.repeat_edge(inp)
    a, b = ts.Func("a"), ts.Func("b")
    b[x, y] = m[x, y - 1] + m[x, y + 1] * 3
    a[x, y] = b[ts.min(x + 1, 44), y] - m[x - 1, y + 2]
    return ts.Pipeline([a, b])


def test_store_without_a_cluster_matches_reference_and_respects_regions():
    pipe, c, img, want = _case()
    out = tsd.to_dask(c, [83, 61], chunks=(13, 17), input=da.from_array(img, chunks=(20, 31)))
    got = np.zeros(want.shape, np.float32)
    tsd.store(out, got, client=False)
    _same(got, want)
    big = np.full((70, 90), -1, np.float32)
    tsd.store([out], [big], regions=[(slice(4, 65), slice(7, 90))], client=False)
    _same(big[4:65, 7:90], want)
    assert (big[:4] == -1).all() and (big[:, :7] == -1).all() and (big[65:] == -1).all()


def test_store_of_another_dask_array_gets_a_write_task():
    pipe, c, img, want = _case(seed=1)
    out = tsd.to_dask(c, [83, 61], chunks=(13, 17), input=da.from_array(img, chunks=(20, 31)))
    got = np.zeros(want.shape, np.float32)
    tsd.store(out * 2 + 1, got, client=False)
    _same(got, want * 2 + 1)


def test_store_errors_name_the_source_at_fault():
    pipe, c, img, want = _case()
    out = tsd.to_dask(c, [83, 61], input=img)
    with pytest.raises(ValueError, match="source 0 has shape"):
        tsd.store(out, np.zeros((3, 3), np.float32), client=False)
    with pytest.raises(ValueError, match="1 sources but 2 targets"):
        tsd.store([out], [np.zeros(want.shape), np.zeros(want.shape)], client=False)
    with pytest.raises(ValueError, match=r"regions\[0\] spans 60 along axis 0"):
        tsd.store(out, np.zeros((70, 90)), regions=(slice(0, 60), slice(0, 83)),
                  client=False)


def test_several_outputs_are_written_by_the_task_that_computes_them():
    pipe = _two_outputs()
    c = ts.compile(pipe)
    img = np.random.default_rng(4).integers(-50, 50, (37, 45)).astype(np.int32)
    want = ts.reference.realize(pipe, [45, 37], input=img)
    a, b = tsd.to_dask(c, [45, 37], chunks=(11, 45), input=da.from_array(img, chunks=(9, 45)))
    ga, gb = np.zeros_like(want[0]), np.zeros_like(want[1])
    dsk, keys, _ = _store_graph([a, b], [ga, gb], [None, None], False)
    assert all(dsk[k][0] is _run_and_write for k in keys)        # no write task of its own
    assert not any(isinstance(v, tuple) and v and v[0] is run_box for v in dsk.values())
    tsd.store([a, b], [ga, gb], client=False)
    np.testing.assert_array_equal(ga, want[0])
    np.testing.assert_array_equal(gb, want[1])
    only = np.zeros_like(want[1])
    tsd.store(b, only, client=False)                              # one output of two
    np.testing.assert_array_equal(only, want[1])


def test_a_box_reading_a_halo_is_cut_into_runs_that_tile_it():
    """Row-band inputs whose bands end inside an output chunk: the bands that read only
    this chunk's views run first, the band reading the halo last; the runs' rows tile
    the box and their pieces are the box's, each once."""
    pipe, c, img, want = _case(w=1000, h=600, seed=2)
    src = da.from_array(img, chunks=(50, 1000))
    out = tsd.to_dask(c, [1000, 600], chunks=(200, 1000), input=src)
    graph = dict(out.__dask_graph__())
    cut = 0
    for v in graph.values():
        if not (isinstance(v, tuple) and v and v[0] is run_box):
            continue
        layout, pieces = v[2], v[3:3 + pieces_used(v[2])]
        runs = _runs(layout, pieces)
        rows = sorted((a0, a0 + shape[0]) for shape, _, _, a0 in runs)
        assert rows[0][0] == 0 and rows[-1][1] == layout[0][0]
        assert all(p[1] == q[0] for p, q in zip(rows, rows[1:]))
        assert sorted(map(repr, sum((list(r[2]) for r in runs), []))) == \
            sorted(map(repr, pieces))
        if len(runs) > 1:
            cut += 1
            assert not any(str(p[0]).startswith("tilesolve-halo-")
                           for p in runs[0][2] if isinstance(p, tuple))
    assert cut >= 1
    got = np.zeros(want.shape, np.float32)
    tsd.store(out, got, client=False)
    _same(got, want)


@pytest.mark.parametrize("zchunks", [(300, 1000), (2, 1000)])
def test_store_on_worker_processes_into_zarr_matches_reference(client, tmp_path, zchunks):
    """Two boxes on two workers.  Output chunks aligned with the zarr chunks: no box is
    cut (two tasks would each rewrite the storage chunk they share).  Zarr chunks of 2
    rows: the box reading a halo is cut where its halo band starts."""
    pipe, c, img, want = _case(w=1000, h=600, seed=3)
    src = client.persist(da.from_array(img, chunks=(50, 1000)))
    out = tsd.to_dask(c, [1000, 600], chunks=(300, 1000), input=src)
    z = zarr.open(str(tmp_path / "out.zarr"), mode="w", shape=want.shape, chunks=zchunks,
                  dtype="f4")
    with distributed.get_task_stream(client) as stream:
        tsd.store(out, z)
    _same(z[...], want)
    tasks = {str(d["key"]) for d in stream.data if "tilesolve-store-" in str(d["key"])}
    boxes = len(out.chunks[0]) * len(out.chunks[1])
    assert len(tasks) == boxes if zchunks[0] == 300 else len(tasks) > boxes


def test_chunks_that_split_a_storage_chunk_are_refused_without_a_lock(tmp_path):
    pipe, c, img, want = _case(w=100, h=60)
    out = tsd.to_dask(c, [100, 60], chunks=(30, 50), input=img)
    z = zarr.open(str(tmp_path / "z.zarr"), mode="w", shape=want.shape, chunks=(1, 100),
                  dtype="f4")
    with pytest.raises(ValueError, match="chunks end at 50 along axis 1"):
        tsd.store(out, z, client=False)
    tsd.store(out, z, client=False, lock=__import__("threading").Lock())
    _same(z[...], want)


def test_a_numpy_target_is_refused_on_worker_processes(client):
    pipe, c, img, want = _case()
    out = tsd.to_dask(c, [83, 61], input=img)
    with pytest.raises(TypeError, match="target 0 is a numpy array"):
        tsd.store(out, np.zeros(want.shape, np.float32))


class _Sent(distributed.diagnostics.plugin.SchedulerPlugin):
    """A scheduler plugin that records, in order, each task the scheduler sends to a
    worker: (key, worker, priority)."""
    name = "tilesolve-test-sent"

    def __init__(self):
        self.sent = []

    async def start(self, scheduler):
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "processing":
            ts_ = self.scheduler.tasks[key]
            self.sent.append((str(key), ts_.processing_on.address, ts_.priority))


def test_the_halo_is_sent_before_the_box_of_the_worker_holding_its_chunk(client):
    """Inputs already on the workers (row bands, consecutive ones on one worker, as the
    benchmark places them): the scheduler gives the halo cuts a higher priority than the
    boxes, and sends them to their worker first, so that worker cuts them before its own
    long box (a worker runs its ready tasks by priority) and the box on the other worker
    is not held up.  What the scheduler decides is checked here, not the workers' timing,
    which a loaded machine can reorder.  The chunks are written into a sink that drops
    them."""
    from tilesolve.distributed.bench import Discard, _row_chunks, _scatter
    pipe, c, img, want = _case(w=1000, h=600, seed=5)
    src = _scatter(client, da, img, _row_chunks(img.shape, 12), True)
    out = tsd.to_dask(c, [1000, 600], chunks=(300, 1000), input=src)
    client.register_plugin(_Sent())
    try:
        for _ in range(2):
            client.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.plugins[_Sent.name].sent.clear())
            tsd.store(out, Discard(out.shape))
            sent = client.run_on_scheduler(
                lambda dask_scheduler: list(dask_scheduler.plugins[_Sent.name].sent))
            halos = [s for s in sent if "tilesolve-halo-" in s[0]]
            boxes = [s for s in sent if "tilesolve-store-" in s[0]]
            assert halos and len(boxes) > 2
            for key, worker, prio in halos:
                mine = [s for s in boxes if s[1] == worker]
                assert mine and all(prio < p for _, _, p in mine), (key, mine)
                assert all(sent.index((key, worker, prio)) < sent.index(s) for s in mine)
    finally:
        client.run_on_scheduler(
            lambda dask_scheduler: dask_scheduler.remove_plugin(_Sent.name))


def test_more_boxes_than_threads_keep_to_dasks_order_and_stay_whole(client):
    """Beyond one wave of boxes, no box is cut into runs and each box still waits for
    the halos cut from its own chunks (a halo priority would load every chunk early)."""
    from tilesolve.distributed.bench import Discard
    pipe, c, img, want = _case(w=1000, h=600, seed=6)
    src = da.from_array(img, chunks=(50, 1000))
    out = tsd.to_dask(c, [1000, 600], chunks=(100, 1000), input=src)
    dsk, keys, boxes = _store_graph([out], [Discard(out.shape)], [None], False, first_wave=2)
    assert boxes == 6 and len(keys) == 6
    graph = dict(out.__dask_graph__())
    for k in keys:
        task = dsk[k]
        box = next(v for v in graph.values() if isinstance(v, tuple) and v and
                   v[0] is run_box and v[2] == task[4])
        assert task[5:] == box[3:]                 # every piece, the order-only ones too
    z = np.zeros(want.shape, np.float32)
    tsd.store(out, z, client=False)
    _same(z, want)


def test_inputs_held_by_the_cluster_or_loaded_by_tasks(client, tmp_path):
    from tilesolve.distributed.store import _inputs_held
    pipe, c, img, want = _case(w=300, h=200, seed=7)
    z = zarr.open(str(tmp_path / "in.zarr"), mode="w", shape=img.shape, chunks=(50, 300),
                  dtype="f4")
    z[...] = img
    loaded = tsd.to_dask(c, [300, 200], (100, 300), input=da.from_zarr(str(tmp_path / "in.zarr")))
    held = tsd.to_dask(c, [300, 200], (100, 300),
                       input=client.persist(da.from_zarr(str(tmp_path / "in.zarr"))))
    assert not _inputs_held([loaded]) and _inputs_held([held])
