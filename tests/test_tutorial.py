"""Halide's tutorial, lesson by lesson, written for tilesolve.

Each test is one lesson of Halide's Python tutorial, ported (not copied): the same
idea, in tilesolve's language, and what the lesson shows checked against numpy.
Lessons about Halide's own runtime are left out, each with the reason:

- 3 and 4 (tracing and printing from the JIT'd code): tilesolve shows the same things
  as ``Schedule.loop_nest``, ``compiled.loop_ir()`` and ``profile=True`` (lesson 5
  prints the loop nest);
- 10, 11 and 15 (ahead-of-time compilation, cross-compilation, generators): tilesolve
  compiles in-process (with a disk cache) for the machine it runs on;
- 18 (parallel associative reductions with rfactor): not supported; the solver
  vectorizes and parallelizes a reduction's pure dimensions.
"""
import numpy as np
import pytest

import tilesolve as ts

x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
SPEC = "xeon-e5-2620v3"


def test_lesson_01_a_func_over_a_grid():
    """``f.realize(sizes)`` solves and compiles the Func's pipeline once, then runs it."""
    gradient = ts.Func("gradient")
    gradient[x, y] = x + y
    out = gradient.realize([800, 600], spec=SPEC)
    assert out.shape == (600, 800) and out.dtype == np.int32
    yy, xx = np.mgrid[0:600, 0:800]
    np.testing.assert_array_equal(out, xx + yy)
    np.testing.assert_array_equal(gradient.realize([3, 2], spec=SPEC), [[0, 1, 2], [1, 2, 3]])
    np.testing.assert_array_equal(ts.reference.realize(ts.Pipeline(gradient), [800, 600]), out)
    gradient.set_estimates([4000, 3000])                      # what the solver assumes
    with pytest.raises(ts.PipelineError, match="set_estimates takes a list of positive"):
        gradient.set_estimates([0, 3])


def test_lesson_02_brighten_an_input_image():
    img = ts.ImageParam(ts.uint8, 3, "img")
    brighter = ts.Func("brighter")
    value = ts.cast(ts.float32, img[x, y, c]) * 1.5
    brighter[x, y, c] = ts.cast(ts.uint8, ts.min(value, 255.0))
    pipe = ts.Pipeline(brighter)
    data = np.random.default_rng(0).integers(0, 256, (3, 48, 64), dtype=np.uint8)
    compiled = ts.compile(pipe, ts.Schedule(pipe))
    out = compiled.realize([64, 48, 3], img=data)
    np.testing.assert_array_equal(out, np.minimum(data * np.float32(1.5), 255).astype(np.uint8))


def _gradient():
    g = ts.Func("gradient")
    g[x, y] = x + y
    return g, ts.Pipeline(g)


@pytest.mark.parametrize("how", ["default", "reorder", "split", "fuse", "tile", "vectorize",
                                 "unroll", "split_not_dividing", "everything"])
def test_lesson_05_scheduling_changes_the_order_never_the_result(how):
    g, pipe = _gradient()
    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("x_outer"), ts.Var("y_outer"), ts.Var("x_inner"), ts.Var("y_inner")
    h = s[g]
    if how == "reorder":
        h.reorder(y, x)
    elif how == "split":
        h.split(x, xo, xi, 2)
    elif how == "fuse":
        h.fuse(x, y, ts.Var("fused"))
    elif how == "tile":
        h.tile(x, y, xo, yo, xi, yi, 4, 4)
    elif how == "vectorize":
        h.vectorize(x, 4)
    elif how == "unroll":
        h.split(x, xo, xi, 2).unroll(xi)
    elif how == "split_not_dividing":          # 7 wide by 3: the last split is shifted in
        h.split(x, xo, xi, 3)
    elif how == "everything":
        h.tile(x, y, xo, yo, xi, yi, 64, 64).fuse(xo, yo, ts.Var("tile")) \
            .parallel(ts.Var("tile")).split(xi, ts.Var("xio"), ts.Var("xii"), 4) \
            .vectorize(ts.Var("xii")).unroll(ts.Var("xio"))
    sizes = [7, 2] if how == "split_not_dividing" else [350, 250]
    out = ts.compile(pipe, s).realize(sizes)
    yy, xx = np.mgrid[0:sizes[1], 0:sizes[0]]
    np.testing.assert_array_equal(out, xx + yy)
    assert "for" in s.loop_nest(sizes)               # what lesson 3 and 4 printed


def test_lesson_06_realizing_over_a_shifted_domain():
    """``gradient`` realized over [100, 105) x [50, 57): into a buffer whose min is set,
    or with ``mins=``; an input whose first element sits at (10, 20) is read at its own
    coordinates, and ``img.dim(d).min()`` reads where it starts."""
    g = ts.Func("gradient")
    g[x, y] = x + y
    pipe = ts.Pipeline(g)
    compiled = ts.compile(pipe, ts.Schedule(pipe))
    yy, xx = np.mgrid[50:57, 100:105]
    shifted = ts.Buffer(ts.int32, [5, 7], mins=[100, 50])
    assert compiled.realize(shifted) is shifted.array
    np.testing.assert_array_equal(shifted.array, xx + yy)
    np.testing.assert_array_equal(compiled.realize([5, 7], mins=[100, 50]), xx + yy)
    np.testing.assert_array_equal(g.realize([5, 7], mins=[100, 50], spec=SPEC), xx + yy)
    img = ts.ImageParam(ts.int32, 2, "img")
    f = ts.Func("f")
    f[x, y] = img[x, y] * 10 + img.dim(0).min()
    fp = ts.Pipeline(f)
    data = np.arange(30, dtype=np.int32).reshape(5, 6)
    crop = ts.Buffer(data, mins=[10, 20])
    got = ts.compile(fp, ts.solve_schedule(fp, SPEC, {"f": [4, 3], "img": [6, 5]})).realize(
        [4, 3], mins=[11, 21], img=crop)
    np.testing.assert_array_equal(got, data[1:4, 1:5] * 10 + 10)


def _blur_pipeline():
    img = ts.ImageParam(ts.uint8, 3, "img")
    clamped = ts.boundary.repeat_edge(img)
    wide = ts.Func("input_16")
    wide[x, y, c] = ts.cast(ts.uint16, clamped[x, y, c])
    blur_x, blur_y, out = ts.Func("blur_x"), ts.Func("blur_y"), ts.Func("output")
    blur_x[x, y, c] = wide[x - 1, y, c] + 2 * wide[x, y, c] + wide[x + 1, y, c]
    blur_y[x, y, c] = blur_x[x, y - 1, c] + 2 * blur_x[x, y, c] + blur_x[x, y + 1, c]
    out[x, y, c] = ts.cast(ts.uint8, blur_y[x, y, c] / 16)
    return ts.Pipeline(out), (wide, blur_x, blur_y, out)


def _blur_numpy(data):
    p = np.pad(data.astype(np.uint16), ((0, 0), (1, 1), (1, 1)), mode="edge")
    bx = p[:, :, :-2] + 2 * p[:, :, 1:-1] + p[:, :, 2:]
    by = bx[:, :-2] + 2 * bx[:, 1:-1] + bx[:, 2:]
    return (by // 16).astype(np.uint8)


def test_lesson_07_a_multi_stage_blur_with_a_boundary_condition():
    pipe, _ = _blur_pipeline()
    data = np.random.default_rng(1).integers(0, 256, (3, 40, 50), dtype=np.uint8)
    s = ts.solve_schedule(pipe, SPEC, {"output": [50, 40, 3], "img": [50, 40, 3]})
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([50, 40, 3], img=data),
                                  _blur_numpy(data))


@pytest.mark.parametrize("how", ["inline", "root", "at_row", "store_root_at_row", "tiles"])
def test_lesson_08_producer_consumer_placements(how):
    pipe, (wide, blur_x, blur_y, out) = _blur_pipeline()
    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    if how == "root":
        s[blur_x].compute_root()
    elif how == "at_row":
        s[blur_x].compute_at(out, y)
    elif how == "store_root_at_row":         # the sliding window of lesson 8
        s[blur_x].store_root().compute_at(out, y)
    elif how == "tiles":
        s[out].tile(x, y, xo, yo, xi, yi, 16, 8).parallel(yo).vectorize(xi, 8)
        s[blur_x].compute_at(out, xo).vectorize(x, 8)
    data = np.random.default_rng(2).integers(0, 256, (3, 37, 45), dtype=np.uint8)
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([45, 37, 3], img=data),
                                  _blur_numpy(data))


def test_lesson_09_update_definitions():
    img = ts.ImageParam(ts.uint8, 2, "img")
    data = np.random.default_rng(3).integers(0, 256, (30, 40), dtype=np.uint8)
    # an update at one point and one over a row, after a pure definition
    f = ts.Func("f")
    f[x, y] = x + y
    f[2, 1] = 42
    f[x, 0] = f[x, 0] * f[x, 1]
    want = np.add.outer(np.arange(4), np.arange(4)).T.copy()
    want[1, 2] = 42
    want[0, :] = want[0, :] * want[1, :]
    np.testing.assert_array_equal(ts.reference.realize(ts.Pipeline(f), [4, 4]), want)
    # a histogram over an RDom spanning the input (implicit zero)
    r = ts.RDom(img)
    hist = ts.Func("hist")
    hist[ts.cast(ts.int32, img[r.x, r.y])] += 1
    pipe = ts.Pipeline(hist)
    s = ts.solve_schedule(pipe, SPEC, {"hist": [256], "img": [40, 30]})
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([256], img=data),
                                  np.bincount(data.ravel(), minlength=256))
    # a scan down the rows, and an inline reduction
    scan = ts.Func("scan")
    scan[x, y] = ts.cast(ts.int32, img[x, y])
    q = ts.RDom((1, 29))
    scan[x, q.x] = scan[x, q.x] + scan[x, q.x - 1]
    box = ts.Func("box")
    k = ts.RDom((0, 3), (0, 3))
    box[x, y] = ts.sum(ts.cast(ts.int32, img[x + k.x, y + k.y]))
    pipe = ts.Pipeline([scan, box])
    s = ts.solve_schedule(pipe, SPEC, {"scan": [40, 30], "box": [38, 28], "img": [40, 30]})
    got_scan, got_box = ts.compile(pipe, s).realize({"scan": [40, 30], "box": [38, 28]},
                                                    img=data)
    np.testing.assert_array_equal(got_scan, np.cumsum(data.astype(np.int32), axis=0))
    d = data.astype(np.int32)
    want_box = sum(d[j:j + 28, i:i + 38] for i in range(3) for j in range(3))
    np.testing.assert_array_equal(got_box, want_box)


def test_lesson_12_the_gpu_schedule_on_the_cuda_emulation():
    pytest.importorskip("tilesolve.backend.cuda.emulate")
    import shutil
    if shutil.which("g++") is None:
        pytest.skip("the CUDA emulation needs g++")
    from tilesolve.backend.cuda import emulate_cuda
    pipe, _ = _blur_pipeline()
    s = ts.solve_schedule(pipe, "h100", {"output": [50, 40, 3], "img": [50, 40, 3]})
    data = np.random.default_rng(4).integers(0, 256, (3, 40, 50), dtype=np.uint8)
    np.testing.assert_array_equal(emulate_cuda(pipe, s).realize([50, 40, 3], img=data),
                                  _blur_numpy(data))


def test_lesson_13_tuples():
    """A Func with two values of two types, realized as two arrays; the (index, value)
    of a maximum written by hand as an update whose values read each other, and with
    ``ts.argmax``; complex numbers as pairs, iterated z = z * z + c."""
    multi = ts.Func("multi_valued")
    multi[x, y] = (x + y, ts.sin(ts.cast(ts.float32, x * y)))
    pipe = ts.Pipeline(multi)
    s = ts.solve_schedule(pipe, SPEC, {"multi_valued": [80, 60]})
    ints, floats = ts.compile(pipe, s).realize([80, 60])
    yy, xx = np.mgrid[0:60, 0:80]
    np.testing.assert_array_equal(ints, xx + yy)
    np.testing.assert_allclose(floats, np.sin((xx * yy).astype(np.float32)), rtol=1e-5,
                               atol=1e-6)
    a = ts.ImageParam(ts.float32, 1, "a")
    r = ts.RDom(a)
    by_hand = ts.Func("by_hand")
    by_hand[()] = (ts.cast(ts.int32, 0), a[0])
    better = a[r.x] > by_hand[()][1]                     # reads value 1 to update value 0
    by_hand[()] = (ts.select(better, r.x, by_hand[()][0]), ts.max(a[r.x], by_hand[()][1]))
    best = ts.Func("best")
    best[()] = ts.argmax(a[r.x])
    data = np.random.default_rng(5).random(100, dtype=np.float32)
    for f in (by_hand, best):
        pipe = ts.Pipeline(f)
        s = ts.solve_schedule(pipe, SPEC, {"a": [100]})
        index, value = ts.compile(pipe, s).realize([], a=data)
        assert index == data.argmax() and value == data.max()

    t = ts.Var("t")
    z = ts.Func("z")
    cr = ts.cast(ts.float32, x) / 10.0 - 2.0
    ci = ts.cast(ts.float32, y) / 10.0 - 1.0
    z[x, y, t] = (ts.cast(ts.float32, 0.0), ts.cast(ts.float32, 0.0))
    it = ts.RDom((1, 8), name="it")
    re, im = z[x, y, it.x - 1]
    z[x, y, it.x] = (re * re - im * im + cr, re * im * 2.0 + ci)
    q = ts.RDom((0, 9), name="q")
    inside = ts.Func("inside")        # the iterations that stay in the circle of radius 2
    zr, zi = z[x, y, q.x]
    inside[x, y] = ts.sum(ts.cast(ts.int32, zr * zr + zi * zi < 4.0))
    pipe = ts.Pipeline(inside)
    s = ts.solve_schedule(pipe, SPEC, {"inside": [30, 20]})
    out = ts.compile(pipe, s).realize([30, 20])
    yy, xx = np.mgrid[0:20, 0:30].astype(np.float32)
    c_re, c_im = xx / np.float32(10) - 2, yy / np.float32(10) - 1
    zr, zi = np.zeros_like(c_re), np.zeros_like(c_re)
    want = np.ones(zr.shape, np.int32)                  # z = 0 at t = 0 is inside
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(8):
            zr, zi = zr * zr - zi * zi + c_re, zr * zi * np.float32(2) + c_im
            want += zr * zr + zi * zi < 4
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(ts.reference.realize(pipe, [30, 20]), want)


def test_lesson_14_types():
    u8, i16 = ts.cast(ts.uint8, x), ts.cast(ts.int16, x)
    assert (u8 + u8).type == ts.uint8                       # wraps
    assert (u8 + i16).type == ts.int16                      # signed and unsigned meet signed
    assert (u8 + 1.5).type == ts.float32 and (i16 * 2).type == ts.int16
    assert ts.widening_mul(u8, u8).type == ts.uint16 and ts.abs(i16).type == ts.uint16
    f = ts.Func("wrap")
    f[x] = ts.cast(ts.uint8, x) * ts.cast(ts.uint8, 3)
    np.testing.assert_array_equal(ts.reference.realize(ts.Pipeline(f), [256]),
                                  (np.arange(256) * 3 % 256).astype(np.uint8))
    g = ts.Func("bits")
    g[x] = (ts.cast(ts.uint8, x) >> 4) | (ts.cast(ts.uint8, x) << 4)      # swap the nibbles
    v = np.arange(256)
    np.testing.assert_array_equal(ts.reference.realize(ts.Pipeline(g), [256]),
                                  ((v >> 4) | (v << 4) & 0xFF).astype(np.uint8))


def test_lesson_17_predicated_reduction_domains():
    img = ts.ImageParam(ts.int32, 2, "img")
    r = ts.RDom((0, 7), (0, 5))
    r.where(r.x + r.y > 5)                                   # a triangle
    total = ts.Func("total")
    total[x] += img[r.x + x, r.y]
    data = np.arange(60, dtype=np.int32).reshape(5, 12)
    pipe = ts.Pipeline(total)
    s = ts.solve_schedule(pipe, SPEC, {"total": [4], "img": [12, 5]})
    want = [sum(data[j, i + xx] for i in range(7) for j in range(5) if i + j > 5)
            for xx in range(4)]
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([4], img=data), want)


def test_lesson_21_the_autoscheduler_and_lesson_23_serialization():
    pipe, _ = _blur_pipeline()
    est = {"output": [640, 480, 3], "img": [640, 480, 3]}
    s = ts.solve_schedule(pipe, SPEC, est, method="greedy")
    again = ts.Schedule.from_json(s.to_json(), pipe)          # a schedule is a value
    assert str(again).splitlines()[2:] == str(s).splitlines()[2:]
    data = np.random.default_rng(6).integers(0, 256, (3, 30, 20), dtype=np.uint8)
    np.testing.assert_array_equal(ts.compile(pipe, again).realize([20, 30, 3], img=data),
                                  _blur_numpy(data))
