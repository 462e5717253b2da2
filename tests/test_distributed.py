"""tilesolve.distributed: compiled pipelines chunk by chunk on a Dask LocalCluster.

Every result is compared with ``ts.reference.realize`` (or an independent numpy
computation), never with another run of the chunked code: exactly for integers, within a
float tolerance otherwise.  One LocalCluster of two worker processes (one thread each)
serves the whole module.  The 20000 x 20000 zarr-to-zarr case runs only when
``TILESOLVE_BIG_DASK=1``.
"""
from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.errors import ChunkingError, RealizeError, ScheduleError

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import tilesolve.distributed as tsd  # noqa: E402
from tilesolve.distributed.serialize import decode, encode  # noqa: E402
from tilesolve.distributed.worker import start_memory_sampler, stop_memory_sampler  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "property"))
from schedule_strategies import schedules  # noqa: E402
from strategies import pipelines  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _same(got, want, msg=""):
    if np.dtype(got.dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=msg)
    else:
        np.testing.assert_array_equal(got, want, err_msg=msg)


def _blur3(t=ts.float32, bc="repeat_edge"):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(t, 2, "input")
    src = getattr(ts.boundary, bc)(inp) if bc else inp
    bx, by = ts.Func("bx"), ts.Func("by")
    bx[x, y] = (src[x - 1, y] + src[x, y] + src[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by)


def _tiled(pipe, out, inner):
    s = ts.Schedule(pipe)
    s[out].tile("x", "y", "xo", "yo", "xi", "yi", 16, 8).vectorize("xi", 8)
    s[inner].compute_at(out, "xo").vectorize("x", 8)
    return s


# -- the pipeline travels as data ------------------------------------------------------
def test_encoded_pipeline_computes_the_same_as_the_original():
    from tilesolve.apps import hist_eq
    pipe, _ = hist_eq.build([40, 30, 3])
    again = decode(pickle.loads(pickle.dumps(encode(pipe))))
    assert again.output_names == pipe.output_names and list(again.funcs) == list(pipe.funcs)
    img = hist_eq.make_inputs([40, 30, 3])
    np.testing.assert_array_equal(ts.reference.realize(again, [40, 30, 3], **img),
                                  ts.reference.realize(pipe, [40, 30, 3], **img))


# -- chunked results equal the reference -----------------------------------------------
@pytest.mark.parametrize("bc", ["repeat_edge", "constant_exterior", "mirror_interior"])
def test_stencil_with_boundary_condition_and_odd_chunks(client, bc):
    pipe = _blur3(ts.float32, bc)
    c = ts.compile(pipe, _tiled(pipe, "by", "bx"))
    img = np.random.default_rng(1).random((61, 83), dtype=np.float32)
    out = tsd.to_dask(c, [83, 61], chunks=(13, 17), input=da.from_array(img, chunks=(20, 31)))
    assert out.shape == (61, 83) and out.chunks[0][0] == 13
    _same(out.compute(), ts.reference.realize(pipe, [83, 61], input=img))


def test_coordinates_params_resampling_and_two_outputs(client):
    """Vars used as values, a Param, 2x down- and upsampling through mirror_image, and
    two outputs, one read by the other at neighbouring points: each chunk must see the
    whole image's coordinates."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int32, 2, "input")
    gain = ts.Param(ts.int32, "gain", 1)
    m = ts.boundary.mirror_image(inp)
    down, up, a, b = ts.Func("down"), ts.Func("up"), ts.Func("a"), ts.Func("b")
    down[x, y] = m[2 * x - 1, 2 * y] + m[2 * x + 1, 2 * y + 1]
    up[x, y] = down[x / 2, y / 2] * gain
    b[x, y] = down[x + 1, y - 1] - x
    a[x, y] = up[x, y] + x * 1000 + y + b[ts.clamp(x - 1, 0, 44), ts.clamp(y + 2, 0, 36)]
    pipe = ts.Pipeline([a, b])
    c = ts.compile(pipe)
    img = np.random.default_rng(2).integers(-100, 100, (37, 45)).astype(np.int32)
    got = tsd.to_dask(c, [45, 37], chunks=(11, 7), input=img, gain=3)
    want = ts.reference.realize(pipe, [45, 37], input=img, gain=3)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(da.compute(*got), want):
        _same(g, w)


@pytest.mark.parametrize("app", ["blur", "camera_pipe", "hist_eq"])
def test_solver_schedules_run_chunked(client, app):
    """A schedule from solve_schedule (typed provenance, the solver's tilings) travels to
    the workers and gives the reference's result at chunk sizes that divide nothing."""
    from tilesolve.apps import get_app
    mod = get_app(app)
    sizes = [s * 3 for s in mod.SMALL_SIZE[:2]] + list(mod.SMALL_SIZE[2:])
    pipe, est = mod.build(sizes)
    inputs = mod.make_inputs(sizes, seed=1)
    sched = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    c = ts.compile(pipe, sched)
    chunks = tuple(reversed([37, 29] + list(sizes[2:])))
    got = tsd.to_dask(c, sizes, chunks, **inputs)
    want = ts.reference.realize(pipe, sizes, **inputs)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(da.compute(*got), want):
        _same(g, w)


_RANDOM = settings(max_examples=max(2, settings().max_examples // 6), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_RANDOM
@given(data=st.data())
def test_random_pipelines_and_schedules_match_reference(client, data):
    """Stencils, resampling, boundary conditions, lookups, inline reductions,
    histograms, scans and constant-site updates, with random schedules and chunks."""
    case = data.draw(pipelines(max_stages=3), label="pipeline")
    pipe = case.pipeline
    sizes = [s * 7 + 3 for s in case.sizes]
    sched = data.draw(schedules(pipe), label="schedule")
    boxes = ts.required_regions(pipe, sizes, input_sizes=case.input_sizes)
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    inputs = {}
    for name, img in pipe.images.items():
        if name in case.input_sizes:
            shape = list(case.input_sizes[name])
        else:
            box = boxes.get(name)
            assume(box is None or all(iv.lo >= 0 for iv in box))
            shape = [1] * img.dims if box is None else [int(iv.hi) + 1 for iv in box]
        shape = tuple(reversed(shape))
        inputs[name] = (rng.uniform(-4, 4, shape).astype(np.float32) if img.type.is_float()
                        else rng.integers(0, 200, shape).astype(img.type.dtype))
    chunks = tuple(data.draw(st.integers(max(1, s // 4), s), label="chunk")
                   for s in reversed(sizes))
    try:
        compiled = ts.compile(pipe, sched)
    except ScheduleError as exc:     # vectorize() without a width on a run-time extent
        assert "is not a constant" in str(exc), exc
        assume(False)
    try:
        want = ts.reference.realize(pipe, sizes, **inputs)
    except RealizeError as exc:
        # an output read by another output outside the region asked for: the oracle,
        # the compiled pipeline and the chunked one all refuse it
        assert "is accessed at" in str(exc), exc
        with pytest.raises(RealizeError):
            compiled.realize(sizes, **inputs)
        return
    try:
        got = tsd.to_dask(compiled, sizes, chunks, **inputs)
    except ChunkingError as e:       # the documented refusals, and only those
        assert ("cannot be split into output chunks" in str(e)
                or "must be the pipeline's only output" in str(e)
                or "does not hold for chunks of the image" in str(e)), e
        return
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(da.compute(*got), want):
        _same(g, w, f"{case}\n{sched}\nchunks {chunks}")
    if data.draw(st.booleans(), label="also tsd.store into zarr"):
        # the workers write each chunk themselves (boxes may be cut into runs: the
        # zarr arrays' storage chunks are one row high and as wide as the output
        # chunks, so neither runs nor chunks ever share one)
        import shutil
        import tempfile
        zarr = pytest.importorskip("zarr")
        where = tempfile.mkdtemp(prefix="tilesolve-store-")
        try:
            targets = [zarr.open_array(f"{where}/out{i}.zarr", mode="w", shape=g.shape,
                                       chunks=(1,) + tuple(c[0] for c in g.chunks[1:]),
                                       dtype=g.dtype)
                       for i, g in enumerate(got)]
            tsd.store(list(got), targets)
            for t, w in zip(targets, want):
                _same(t[...], w, f"{case}\n{sched}\nchunks {chunks} (store)")
        finally:
            shutil.rmtree(where, ignore_errors=True)


# -- each task reads exactly what bounds inference says -------------------------------
def test_task_regions_are_the_exact_halo():
    """Regions against hand-derived halos: a 3x3 blur without boundary condition (input
    two pixels larger: no clipping, no padding), the same with repeat_edge (clipped at
    the true edges only) and a 2x downsample."""
    from tilesolve.apps import blur
    pipe, _ = blur.build([50, 40])
    c = ts.compile(pipe)
    img = np.zeros((42, 52), np.float32)
    reads = tsd.chunk_regions(c, [50, 40], chunks=(9, 11), input=img)
    assert len(reads) == 5 * 5
    for key, regions in reads.items():
        by, bx = key[1:]
        ox, oy = 11 * bx, 9 * by
        sx, sy = min(11, 50 - ox), min(9, 40 - oy)
        assert regions["input"] == [(ox, ox + sx + 1), (oy, oy + sy + 1)], key

    edge = _blur3(ts.float32, "repeat_edge")
    reads = tsd.chunk_regions(ts.compile(edge), [50, 40], chunks=(9, 11),
                              input=np.zeros((40, 50), np.float32))
    for key, regions in reads.items():
        by, bx = key[1:]
        ox, oy = 11 * bx, 9 * by
        sx, sy = min(11, 50 - ox), min(9, 40 - oy)
        assert regions["input"] == [(max(ox - 1, 0), min(ox + sx, 49)),
                                    (max(oy - 1, 0), min(oy + sy, 39))], key

    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.uint8, 2, "input")
    d = ts.Func("d")
    d[x, y] = inp[2 * x, 2 * y] / 2 + inp[2 * x + 1, 2 * y + 1] / 2
    reads = tsd.chunk_regions(ts.compile(ts.Pipeline(d)), [20, 16], chunks=(5, 7),
                              input=np.zeros((32, 40), np.uint8))
    for key, regions in reads.items():
        by, bx = key[1:]
        ox, oy = 7 * bx, 5 * by
        sx, sy = min(7, 20 - ox), min(5, 16 - oy)
        assert regions["input"] == [(2 * ox, 2 * (ox + sx) - 1), (2 * oy, 2 * (oy + sy) - 1)]


def test_too_small_input_is_refused_before_running():
    from tilesolve.apps import blur
    pipe, _ = blur.build([50, 40])
    with pytest.raises(RealizeError, match="input 'input' is too small"):
        tsd.to_dask(ts.compile(pipe), [50, 40], chunks=(9, 11),
                    input=np.zeros((40, 50), np.float32))


# -- reductions over the whole input ---------------------------------------------------
def _histogram():
    b = ts.Var("b")
    im = ts.ImageParam(ts.uint8, 2, "im")
    hist = ts.Func("hist")
    hist[b] = 0
    r = ts.RDom((0, im.width()), (0, im.height()), name="r")
    hist[ts.cast(ts.int32, im[r.x, r.y])] += 1
    return ts.Pipeline(hist)


def test_histogram_is_a_tree_of_partial_histograms(client):
    pipe = _histogram()
    im = np.random.default_rng(3).integers(0, 256, (300, 310)).astype(np.uint8)
    out = tsd.to_dask(ts.compile(pipe), [256], im=da.from_array(im, chunks=(64, 70)))
    partials = [k for k in out.__dask_graph__() if "partial" in str(k)]
    assert len(partials) == 5 * 5           # one partial per input chunk
    np.testing.assert_array_equal(out.compute(), np.bincount(im.ravel(), minlength=256))


def test_max_reduction_feeds_the_rest_of_the_pipeline(client):
    """out = inp / max(inp): the maximum is reduced over chunks, then every output chunk
    reads it as an input."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int32, 2, "inp")
    r = ts.RDom((0, inp.width()), (0, inp.height()), name="r")
    top, out = ts.Func("top"), ts.Func("out")
    top[x] = ts.int32.min_value()
    top[0] = ts.max(top[0], inp[r.x, r.y])
    out[x, y] = inp[x, y] * 1000 / top[0]
    pipe = ts.Pipeline(out)
    img = np.random.default_rng(4).integers(1, 10 ** 6, (90, 120)).astype(np.int32)
    got = tsd.to_dask(ts.compile(pipe), [120, 90], chunks=(30, 40),
                      inp=da.from_array(img, chunks=(30, 40)))
    assert any("combine" in str(k) for k in got.__dask_graph__())
    np.testing.assert_array_equal(got.compute(), img * 1000 // img.max())


def test_histogram_equalization_app(client):
    from tilesolve.apps import hist_eq
    sizes = [120, 90, 3]
    pipe, _ = hist_eq.build(sizes)
    img = hist_eq.make_inputs(sizes)["input"]
    got = tsd.to_dask(ts.compile(pipe), sizes, chunks=(3, 30, 40),
                      input=da.from_array(img, chunks=(3, 30, 40)))
    np.testing.assert_array_equal(got.compute(), hist_eq.numpy_reference({"input": img}, sizes))


def test_non_associative_whole_input_update_is_refused():
    """A running sum along each row (a scan whose RDom spans the input's width) cannot
    be split into chunks along x."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.int32, 2, "inp")
    r = ts.RDom((1, inp.width() - 1), name="r")
    scan, out = ts.Func("scan"), ts.Func("out")
    scan[x, y] = inp[x, y]
    scan[r.x, y] = scan[r.x - 1, y] + inp[r.x, y]
    out[x, y] = scan[x, y] * 2
    pipe = ts.Pipeline(out)
    with pytest.raises(ChunkingError, match=r"Func scan: RDom r spans input inp.*not an "
                                            r"associative"):
        tsd.to_dask(ts.compile(pipe), [400, 20], chunks=(20, 20),
                    inp=np.zeros((20, 400), np.int32))


# -- compiled once per worker, bounded memory ------------------------------------------
def test_workers_compile_once_and_reuse_it(client):
    pipe = _blur3(ts.uint16, "repeat_edge")
    c = ts.compile(pipe, _tiled(pipe, "by", "bx"))
    img = np.random.default_rng(5).integers(0, 2 ** 16, (64, 64)).astype(np.uint16)
    want = ts.reference.realize(pipe, [64, 64], input=img)
    before = client.run(tsd.process_stats)
    for _ in range(2):               # the method tilesolve.distributed adds, then the function
        _same(c.to_dask([64, 64], chunks=(16, 16), input=img).compute(), want)
        _same(tsd.to_dask(c, [64, 64], chunks=(16, 16), input=img).compute(), want)
    after = client.run(tsd.process_stats)
    compiles = sum(after[w]["compiles"] - before[w]["compiles"] for w in after)
    tasks = sum(after[w]["tasks"] - before[w]["tasks"] for w in after)
    assert tasks == 4 * 16 and 1 <= compiles <= len(after)


def _zarr_blur(client, tmp_path, n, chunk):
    zarr = pytest.importorskip("zarr")
    from tilesolve.apps import blur
    pipe, _ = blur.build([n, n], dtype="uint16")
    rng = np.random.default_rng(6)
    src = zarr.open_array(str(tmp_path / "in.zarr"), mode="w", shape=(n + 2, n + 2),
                          chunks=(chunk, chunk), dtype="uint16")
    for i in range(0, n + 2, chunk):
        src[i:i + chunk] = rng.integers(0, 2 ** 16, (min(chunk, n + 2 - i), n + 2),
                                        dtype=np.uint16)
    fast = ts.compile(pipe, blur.hand_schedule(pipe))
    out = tsd.to_dask(fast, [n, n], chunks=(chunk, chunk),
                      input=da.from_zarr(str(tmp_path / "in.zarr")))
    tsd.warm_up(client, out)         # compile first: measure the data, not LLVM
    client.run(start_memory_sampler)
    out.to_zarr(str(tmp_path / "out.zarr"))
    peaks = client.run(stop_memory_sampler)
    return src, zarr.open_array(str(tmp_path / "out.zarr"), mode="r"), peaks


def test_zarr_to_zarr_uint16_blur_with_bounded_worker_memory(client, tmp_path):
    from tilesolve.apps import blur
    n, chunk = 4000, 500
    src, res, peaks = _zarr_blur(client, tmp_path, n, chunk)
    # a task holds one chunk plus its 1-pixel halo (the region bounds inference gives)
    # and its output; a worker holds a few such chunks at a time, far from the image
    task_bytes = ((chunk + 2) ** 2 + chunk ** 2) * 2
    assert all(0 < p["task"] <= task_bytes for p in peaks.values()), peaks
    assert max(p["managed"] + p["task"] for p in peaks.values()) < n * n * 2 / 3, peaks
    for i in range(0, n, 1500):      # bands against the app's independent numpy reference
        band = src[i:i + 102]
        want = blur.numpy_reference({"input": band}, [n, band.shape[0] - 2], dtype="uint16")
        np.testing.assert_array_equal(res[i:i + band.shape[0] - 2], want)


@pytest.mark.skipif(os.environ.get("TILESOLVE_BIG_DASK") != "1",
                    reason="20000 x 20000 (800 MB): set TILESOLVE_BIG_DASK=1")
def test_zarr_to_zarr_20000_squared(client, tmp_path):
    from tilesolve.apps import blur
    n, chunk = 20000, 2000
    src, res, peaks = _zarr_blur(client, tmp_path, n, chunk)
    # bounded in chunks, not by the image: a task's own region and output (2 chunks),
    # the input chunks Dask has read ahead for the next tasks and the outputs waiting
    # for their store; 10 chunks of 8 MB is a tenth of the 800 MB image (measured at
    # 7 chunks, 56 MB; the former bound, a sixteenth, was not met at a22fd01
    # either: 120 MB)
    chunk_bytes = chunk * chunk * 2
    assert max(p["managed"] + p["task"] for p in peaks.values()) < 10 * chunk_bytes, peaks
    band = src[7000:7102]
    want = blur.numpy_reference({"input": band}, [n, 100], dtype="uint16")
    np.testing.assert_array_equal(res[7000:7100], want)


def test_compiled_pipeline_has_to_dask_without_importing_distributed_first():
    """``CompiledPipeline.to_dask`` is a method of the class itself, in a fresh process
    where nothing imported ``tilesolve.distributed``."""
    import subprocess
    code = ("import numpy as np, tilesolve as ts, sys\n"
            "from tilesolve.apps import blur\n"
            "assert 'tilesolve.distributed' not in sys.modules\n"
            "pipe, _ = blur.build([20, 16]); c = ts.compile(pipe)\n"
            "img = np.random.default_rng(0).random((18, 22), dtype=np.float32)\n"
            "got = c.to_dask([20, 16], chunks=(8, 8), input=img).compute(scheduler='sync')\n"
            "np.testing.assert_allclose(got, c.realize([20, 16], input=img), rtol=1e-6)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_two_inputs_of_one_shape_get_their_own_scratch_arrays(client):
    """Each worker thread reuses the arrays it assembles task inputs into (saving page
    faults); two inputs of the same shape in one task must still get two arrays, and a
    later task must see its own data, not the previous task's."""
    x, y = ts.Var("x"), ts.Var("y")
    a, b = ts.ImageParam(ts.int32, 2, "a"), ts.ImageParam(ts.int32, 2, "b")
    ea, eb = ts.boundary.repeat_edge(a), ts.boundary.repeat_edge(b)
    f = ts.Func("f")
    f[x, y] = ea[x - 1, y] + 1000 * eb[x + 1, y + 1]
    pipe = ts.Pipeline(f)
    c = ts.compile(pipe)
    rng = np.random.default_rng(3)
    A, B = (rng.integers(0, 100, (40, 50)).astype(np.int32) for _ in range(2))
    out = tsd.to_dask(c, [50, 40], chunks=(10, 10), a=da.from_array(A, chunks=(11, 12)),
                      b=da.from_array(B, chunks=(11, 12)))
    for _ in range(2):               # the second compute reuses the workers' arrays
        _same(out.compute(), ts.reference.realize(pipe, [50, 40], a=A, b=B))
