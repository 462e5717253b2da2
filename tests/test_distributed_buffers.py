"""Worker-side output reuse and halo ordering in tilesolve.distributed.

* ``OutputPool`` hands an array back only when nothing else refers to it: a view, a
  memoryview, a consumer's reference all keep it out of reuse, so data a consumer holds
  is never overwritten (checked through the graph too, results against the reference).
* A task that reads a chunk waits for the halo slices cut from that chunk for other
  tasks (the slices run first on the worker holding the chunk).
* A plan's region answers are memoized, and a caller's changes to one do not leak.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilesolve as ts

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")
from tilesolve.distributed import worker as W  # noqa: E402
from tilesolve.distributed.api import _prepare  # noqa: E402
from tilesolve.distributed.buffers import OutputPool  # noqa: E402
from test_distributed import _blur3, _same  # noqa: E402


def test_a_released_array_is_reused():
    pool = OutputPool(max_arrays=2, max_bytes=1 << 20)
    a = pool.take((8, 16), np.float32)
    ptr = a.ctypes.data
    pool.keep([a])
    del a
    b = pool.take((8, 16), np.float32)
    assert b.ctypes.data == ptr and pool.reused == 1


@pytest.mark.parametrize("hold", ["array", "view", "memoryview", "slice of a view"])
def test_an_array_anyone_still_refers_to_is_never_handed_out(hold):
    pool = OutputPool(max_arrays=2, max_bytes=1 << 20)
    a = pool.take((8, 16), np.float32)
    a[...] = 7
    pool.keep([a])
    kept = {"array": lambda: a, "view": lambda: a[2:5], "memoryview": lambda: memoryview(a),
            "slice of a view": lambda: a[1:][::2, 3:]}[hold]()
    del a
    b = pool.take((8, 16), np.float32)
    b[...] = -1
    assert pool.reused == 0
    assert (np.asarray(kept) == 7).all()


def test_other_shapes_dtypes_and_the_bounds():
    pool = OutputPool(max_arrays=2, max_bytes=4096)
    arrays = [pool.take((16, 16), np.float32) for _ in range(3)]     # 1 KiB each
    pool.keep(arrays)
    assert len(pool._items) == 2                  # the oldest is forgotten
    del arrays
    assert pool.take((16, 16), np.int32).dtype == np.int32 and pool.reused == 0
    assert pool.take((16, 8), np.float32).shape == (16, 8) and pool.reused == 0
    big = pool.take((64, 64), np.float32)          # 16 KiB: over the byte bound
    pool.keep([big])                               # not kept, and nothing evicted for it
    assert len(pool._items) == 2 and all(x.nbytes == 1024 for x in pool._items)


def test_reuse_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("TILESOLVE_DASK_REUSE", "0")
    pool = OutputPool()
    a = pool.take((4, 4), np.uint8)
    pool.keep([a])
    assert pool._items == []


def test_a_chunk_the_consumer_keeps_is_not_overwritten_by_later_tasks():
    """Run the graph again and again in this process (where the pool lives) while the
    first result's chunks are held: they keep their values."""
    pipe = _blur3(ts.float32)
    c = ts.compile(pipe)
    rng = np.random.default_rng(3)
    a = rng.random((40, 37)).astype(np.float32)
    want = ts.reference.realize(pipe, [37, 40], input=a)
    chunks = ((13, 14, 13), (37,))
    job = _prepare(c, [37, 40], chunks, 1, {"input": a})
    first = [np.asarray(job.arrays[0].blocks[i, 0].compute(scheduler="sync")) for i in range(3)]
    reused0 = W.OUTPUTS.reused
    for seed in range(3):
        b = rng.random((40, 37)).astype(np.float32)
        other = _prepare(c, [37, 40], chunks, 1, {"input": b})
        got = da.compute(other.arrays[0], scheduler="sync")[0]
        _same(got, ts.reference.realize(pipe, [37, 40], input=b))
    _same(np.concatenate(first), want, "held chunks")
    assert W.OUTPUTS.reused > reused0       # the later runs did reuse their own outputs


def test_tasks_reading_a_chunk_wait_for_the_halos_cut_from_it():
    pipe = _blur3(ts.float32)
    c = ts.compile(pipe)
    a = np.random.default_rng(0).random((64, 40)).astype(np.float32)
    src = da.from_array(a, chunks=((16,) * 4, (40,)))
    job = _prepare(c, [40, 64], ((32, 32), (40,)), 1, {"input": src})
    tasks = {k: v for k, v in job.layer.items()
             if isinstance(v, tuple) and v and v[0] is W.run_box}
    halos = {k: v for k, v in job.layer.items()
             if isinstance(k, tuple) and str(k[0]).startswith("tilesolve-halo-")}
    assert len(tasks) == 2 and halos
    for hkey, (cut, chunk, _) in halos.items():
        assert cut is W.cut_strips
        readers = [k for k, t in tasks.items() if chunk in t[3:]]
        assert readers and all(hkey in tasks[k][3:] for k in readers), (hkey, chunk)
    got = da.compute(job.arrays[0], scheduler="sync")[0]
    _same(got, ts.reference.realize(pipe, [40, 64], input=a))


def test_plan_regions_are_memoized_and_answers_stay_independent():
    from tilesolve.distributed.api import chunk_plan
    pipe = _blur3(ts.float32)
    c = ts.compile(pipe)
    plan = chunk_plan(c)
    out = plan.output_names[0]
    args = ({out: [0, 8]}, {out: [37, 13]}, {}, {"input": [37, 40]})
    first = plan.regions(*args)
    first["input"] = "changed by the caller"
    again = plan.regions(*args)
    assert again["input"] == [(0, 36), (7, 21)] and len(plan._memo) == 1
    other = plan.regions({out: [0, 20]}, {out: [37, 20]}, {}, {"input": [37, 40]})
    assert other["input"] == [(0, 36), (19, 39)] and len(plan._memo) == 2
