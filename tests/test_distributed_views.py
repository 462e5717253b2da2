"""tilesolve.distributed without copies: numpy inputs read through views, row bands over
Dask inputs (only halo strips copied), outputs written in place, automatic chunks.

Results are compared with ``ts.reference.realize``.  Most graphs run in this process
(``scheduler="sync"``) with a *checked* build of the chunk pipeline, whose every load is
tested against the array it is given: together with the views' bounds (inside the
source array, asserted from the graph) this shows that no task reads outside its input.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilesolve as ts

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import tilesolve.distributed as tsd  # noqa: E402
from tilesolve.distributed import worker as W  # noqa: E402
from tilesolve.distributed.api import _find_shipped, _prepare  # noqa: E402
from tilesolve.distributed.chunking import auto_chunks  # noqa: E402
from tilesolve.distributed.graph import InGraphArray  # noqa: E402
# the module's LocalCluster fixture, the comparison and the blur, shared with test_distributed
from test_distributed import _blur3, _same, client  # noqa: E402,F401


def _checked(job):
    """Compile the job's chunk pipelines as checked builds in this process (the memo
    run_box uses), so that any read outside a task's arrays fails the task."""
    added, shipped = [], {}
    for v in job.layer.values():
        _find_shipped(v, shipped)
    assert shipped, "no task carries a pipeline"
    for key, v in shipped.items():
        if key not in W._COMPILED:
            W._COMPILED[key] = v.build(checked=True)
            added.append(key)
    return added


def _run(compiled, sizes, chunks, **inputs):
    """(job, results) of to_dask run in this process under checked builds."""
    job = _prepare(compiled, sizes, chunks, 1, inputs)
    added = _checked(job)
    try:
        got = da.compute(*job.arrays, scheduler="sync")
    finally:
        for k in added:
            W._COMPILED.pop(k, None)
    return job, got


def _tasks(job):
    return {k: v for k, v in job.layer.items() if isinstance(v, tuple) and v and v[0] is W.run_box}


def _views_inside(job, shapes):
    """Every view a task takes lies inside the array it is cut from: the whole input
    (``shapes``: input -> numpy shape) or one Dask chunk (bounded by the chunk's size,
    checked by numpy when slicing; here against the input shape)."""
    n = 0
    for key, task in _tasks(job).items():
        for band in task[2][1]:
            inputs = band[4]
            for name, kind, data in inputs:
                if kind == "view":
                    n += 1
                    assert all(0 <= a < b <= s for (a, b), s in zip(data, shapes[name])), \
                        (key, name, data)
    return n


# -- numpy inputs: one key, views ------------------------------------------------------
@pytest.mark.parametrize("bc", ["repeat_edge", "constant_exterior", "mirror_interior"])
def test_numpy_input_is_one_key_read_through_views(bc):
    pipe = _blur3(ts.float32, bc)
    c = ts.compile(pipe)
    img = np.random.default_rng(1).random((61, 83), dtype=np.float32)
    job, (got,) = _run(c, [83, 61], (13, 17), input=img)
    _same(got, ts.reference.realize(pipe, [83, 61], input=img))
    held = [k for k, v in job.layer.items() if v is img]
    assert len(held) == 1 and isinstance(job.sources["input"], InGraphArray)
    assert _views_inside(job, {"input": img.shape}) == 5 * 5


def test_numpy_views_copy_nothing_and_cover_the_true_edges():
    """A 2x downsample through mirror_image on a numpy input: no assembled input at all,
    and edge chunks read up to the input's true edges."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int32, 2, "input")
    m = ts.boundary.mirror_image(inp)
    d = ts.Func("d")
    d[x, y] = m[2 * x - 1, 2 * y] + 3 * m[2 * x + 1, 2 * y + 1]
    pipe = ts.Pipeline(d)
    img = np.random.default_rng(2).integers(-100, 100, (37, 45)).astype(np.int32)
    before = W._STATS["copied_bytes"]
    job, (got,) = _run(ts.compile(pipe), [23, 19], (7, 5), input=img)
    assert W._STATS["copied_bytes"] == before
    _same(got, ts.reference.realize(pipe, [23, 19], input=img))
    _views_inside(job, {"input": img.shape})
    reads = [r["input"] for r in job.read.values()]
    assert min(r[0][0] for r in reads) == 0 and max(r[0][1] for r in reads) == 44


def test_numpy_input_on_process_workers(client):
    """The same graph on two worker processes: the array travels as one key."""
    pipe = _blur3(ts.uint16, "repeat_edge")
    c = ts.compile(pipe)
    img = np.random.default_rng(3).integers(0, 2 ** 16, (70, 90)).astype(np.uint16)
    out = tsd.to_dask(c, [90, 70], chunks=(9, 90), input=img)
    assert sum(1 for v in dict(out.__dask_graph__()).values()
               if getattr(v, "value", v) is img) == 1
    _same(out.compute(), ts.reference.realize(pipe, [90, 70], input=img))


# -- Dask inputs: row bands ------------------------------------------------------------
@pytest.mark.parametrize("bc", ["repeat_edge", "constant_exterior", "mirror_interior", None])
def test_row_bands_over_dask_row_chunks(bc):
    """Input in row chunks of 16, output in row bands of 20: each task reads views of
    chunks and copies only the rows around each chunk boundary."""
    if bc is None:                   # the blur app: no boundary condition, a larger input
        from tilesolve.apps import blur
        pipe, _ = blur.build([83, 61])
    else:
        pipe = _blur3(ts.float32, bc)
    c = ts.compile(pipe)
    n = 2 if bc is None else 0
    img = np.random.default_rng(4).random((61 + n, 83 + n), dtype=np.float32)
    job, (got,) = _run(c, [83, 61], (20, 83), input=da.from_array(img, chunks=(16, 83 + n)))
    _same(got, ts.reference.realize(pipe, [83, 61], input=img))
    assert job.split and all(len(b) >= 3 for b in job.split.values())
    # strips of chunks a task reads views of anyway are cut inside the task, not by a
    # slicing task of their own
    halos = [k for k in job.layer if isinstance(k, tuple) and "halo" in str(k[0])]
    assert len(halos) <= len(_tasks(job)), halos
    for key, task in _tasks(job).items():
        for a, b, _, _, inputs in task[2][1]:
            top = 20 * key[1] + a
            if bc == "mirror_interior" and (top == 0 or top + b - a == 61):
                continue                 # a mirrored edge row reads the whole column
            for name, kind, data in inputs:
                if kind == "copy":       # a halo strip, not the chunk
                    assert data[0][0] <= 8, (key, a, b, data[0])


def test_row_bands_with_downsampling_and_two_outputs():
    """Rows that read two input rows each (the guess of where a band ends is checked,
    then searched), and two outputs written band by band."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int32, 2, "input")
    e = ts.boundary.repeat_edge(inp)
    d, u = ts.Func("d"), ts.Func("u")
    d[x, y] = e[2 * x, 2 * y - 1] + e[2 * x + 1, 2 * y + 2] * 7 + y
    u[x, y] = d[x, y] * 2 - x
    pipe = ts.Pipeline([d, u])
    img = np.random.default_rng(5).integers(-50, 50, (81, 60)).astype(np.int32)
    job, got = _run(ts.compile(pipe), [30, 40], (13, 30),
                    input=da.from_array(img, chunks=(9, 60)))
    for g, w in zip(got, ts.reference.realize(pipe, [30, 40], input=img)):
        _same(g, w)
    assert job.split


def test_deep_halos_keep_the_box_whole():
    """Six stacked 9-tap vertical blurs (a halo of 24 rows) over two chunks of 200 rows:
    three bands (view, 50 copied rows, view) would recompute more than copying the
    whole input costs, so the box is assembled whole; one such blur is cut into bands."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    f = ts.boundary.repeat_edge(inp)
    for i in range(6):
        g = ts.Func(f"v{i}")
        g[x, y] = sum(f[x, y + k] for k in range(-4, 5)) * (1 / 9)
        f = g
    pipe = ts.Pipeline([f])
    img = np.random.default_rng(8).random((400, 30), dtype=np.float32)
    want = ts.reference.realize(pipe, [30, 400], input=img)
    job, (got,) = _run(ts.compile(pipe), [30, 400], (400, 30),
                       input=da.from_array(img, chunks=(200, 30)))
    _same(got, want)
    assert not job.split
    one = ts.Pipeline([pipe.func("v0")])          # one blur over larger chunks: bands pay
    job, (got,) = _run(ts.compile(one), [30, 400], (400, 30),
                       input=da.from_array(img, chunks=(200, 30)))
    _same(got, ts.reference.realize(one, [30, 400], input=img))
    assert job.split


def test_two_dimensional_chunks_are_cut_into_a_grid():
    """Chunks cut across columns: no row band reads inside one chunk, so each box is cut
    into a grid: views where a sub-box reads inside its tile, copied strips along the
    edges, each realized into its window of the output chunk (checked builds)."""
    pipe = _blur3(ts.float32, "repeat_edge")
    img = np.random.default_rng(6).random((40, 50), dtype=np.float32)
    job, (got,) = _run(ts.compile(pipe), [50, 40], (20, 25),
                       input=da.from_array(img, chunks=(20, 25)))
    _same(got, ts.reference.realize(pipe, [50, 40], input=img))
    assert len(job.split) == 4
    for subs in job.split.values():
        assert all(len(s) == 5 for s in subs) and sum(s[4] for s in subs) == 1
        area = sum((b - a) * (d - c) for a, b, c, d, _ in subs)
        assert area == 20 * 25                       # the sub-boxes tile the box
    _views_inside(job, {"input": img.shape})


def test_a_grid_over_tiles_that_do_not_match_the_output_chunks():
    """Output chunks spanning 2 x 2 input tiles, and others straddling tile edges."""
    pipe = _blur3(ts.float32, "repeat_edge")
    img = np.random.default_rng(7).random((120, 200), dtype=np.float32)
    want = ts.reference.realize(pipe, [200, 120], input=img)
    for chunks in [(60, 100), (37, 53)]:
        job, (got,) = _run(ts.compile(pipe), [200, 120], chunks,
                           input=da.from_array(img, chunks=(30, 50)))
        _same(got, want)
        assert job.split and any(len(s) == 5 and s[4] for v in job.split.values() for s in v)


# -- automatic chunks ------------------------------------------------------------------
def test_auto_chunks_follow_workers_work_and_memory():
    big = (9600, 12800)
    assert auto_chunks(big, 4, workers=2) == ((4800, 4800), (12800,))
    assert auto_chunks(big, 4, workers=1) == ((9600,), (12800,))
    assert auto_chunks((100, 120), 4, workers=8) == ((100,), (120,))      # too little work
    many = auto_chunks((40000, 40000), 2, workers=2)                      # 3.2 GB of output
    assert len(many[0]) == 6 and max(many[0]) * 40000 * 2 <= 512 * 2 ** 20
    assert auto_chunks((3, 4000, 4000), 4, workers=2) == ((3,), (2000, 2000), (4000,))
    like = da.zeros((9602, 12802), chunks=(1000, 12802))
    assert auto_chunks(big, 4, workers=2, like=[like]) == ((5000, 4600), (12800,))


def test_auto_chunks_use_the_client_threads(client):
    pipe = _blur3(ts.float32, "repeat_edge")
    img = np.zeros((3000, 3000), np.float32)
    out = tsd.to_dask(ts.compile(pipe), [3000, 3000], input=img)
    assert out.chunks == ((1500, 1500), (3000,))
    small = tsd.to_dask(ts.compile(pipe), [300, 200], chunks="auto", input=img[:200, :300])
    assert small.chunks == ((200,), (300,))
    given = tsd.to_dask(ts.compile(pipe), [300, 200], chunks=(7, 300), input=img[:200, :300])
    assert given.chunks[0][:2] == (7, 7) and given.chunks[1] == (300,)


def test_band_search_without_and_with_wrong_predictions():
    """The band search alone (no guess), with a wrong prediction (rejected, then
    searched) and with a guess: the bands tile the rows, every view band lies in one
    chunk, copy bands are the rows that cross a boundary."""
    from tilesolve.distributed.bands import row_bands

    def regions_of(a, b):                   # rows a-1 .. b of a 100-row input, chunks of 10
        return {"in": [(0, 9), (max(a - 1, 0), min(b, 99))]}

    def inside(r):
        lo, hi = r["in"][1]
        return lo // 10 == hi // 10

    def reach(r0, r1):
        lo, hi = r0["in"][1]
        return 10 - hi % 10

    for kw in ({}, {"predicted": [(0, 45, True)]}, {"reach": reach}):
        bands = row_bands(regions_of, 45, inside, **kw)
        assert bands[0][0] == 0 and bands[-1][1] == 45, kw
        assert all(x[1] == y[0] for x, y in zip(bands, bands[1:])), kw
        for a, b, reg, view in bands:
            assert reg == regions_of(a, b) and (inside(reg) or not view), (kw, a, b)
        copies = [(a, b) for a, b, _, v in bands if not v]
        assert copies == [(9, 11), (19, 21), (29, 31), (39, 41)], (kw, copies)
    assert row_bands(regions_of, 45, lambda r: False) is None      # nothing to view


@pytest.mark.parametrize("dask_input", [False, True], ids=["numpy", "dask"])
def test_a_round_up_split_reads_past_the_chunk_and_past_the_image(dask_input):
    """f0 computed per point of f1 in pairs (split by 2, round_up): each chunk's code
    reads one input point past its region; the last chunk's lies past the image, where
    the task pads its copy.  (The whole image in memory needs an input one longer.)"""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.int32, 1, "in0")
    f0, f1 = ts.Func("f0"), ts.Func("f1")
    f0[x] = inp[x] * 3
    f1[x] = f0[x] + inp[x] * 2
    pipe = ts.Pipeline(f1)
    s = ts.Schedule(pipe)
    s["f0"].compute_at("f1", "x").split("x", "xo", "xi", 2, tail="round_up")
    c = ts.compile(pipe, s)
    a = np.arange(10, dtype=np.int32) * 7 - 20
    with pytest.raises(ts.errors.RealizeError, match="too small"):
        c.realize([10], in0=a)
    src = da.from_array(a, chunks=3) if dask_input else a
    job, (got,) = _run(c, [10], (2,), in0=src)
    np.testing.assert_array_equal(got, ts.reference.realize(pipe, [10], in0=a))
    last = job.read[max(job.read)]["in0"]
    assert last == [(8, 10)]                 # one point past the image: padded
