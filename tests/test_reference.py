"""The reference evaluator against independent numpy code and hand-computed values."""
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve import reference_updates as RU
from tilesolve.errors import BoundsError, RealizeError
from tilesolve.reference import evaluate_pipeline

x, y, c, i = ts.Var("x"), ts.Var("y"), ts.Var("c"), ts.Var("i")
realize = ts.reference.realize


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- the blur ---------------------------------------------------------------------------
def _blur_pipeline():
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by)


def _np_blur(a):
    p = np.pad(a, 1, mode="edge")
    third = np.float32(3)
    bx = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / third
    return (bx[:-2] + bx[1:-1] + bx[2:]) / third


def test_separable_blur_with_repeat_edge():
    a = _rng().random((37, 53), dtype=np.float32)
    out = realize(_blur_pipeline(), [53, 37], input=a)
    assert out.dtype == np.float32 and out.shape == (37, 53)
    np.testing.assert_allclose(out, _np_blur(a), rtol=1e-6, atol=0)


def test_blur_of_a_smaller_output_window():
    a = _rng(1).random((20, 30), dtype=np.float32)
    out = realize(_blur_pipeline(), [7, 4], input=a)
    np.testing.assert_allclose(out, _np_blur(a)[:4, :7], rtol=1e-6)


# -- histogram equalization -----------------------------------------------------------
def _equalize_pipeline():
    img = ts.ImageParam(ts.uint8, 2, "img")
    r = ts.RDom((0, img.width()), (0, img.height()), name="rimg")
    hist, cdf, out = ts.Func("hist"), ts.Func("cdf"), ts.Func("equalized")
    hist[i] = 0
    hist[ts.cast(ts.int32, img[r.x, r.y])] += 1
    s = ts.RDom((1, 255), name="rscan")
    cdf[i] = hist[i]
    cdf[s.x] = cdf[s.x - 1] + cdf[s.x]
    total = img.width() * img.height()
    out[x, y] = ts.cast(ts.uint8, cdf[ts.cast(ts.int32, img[x, y])] * 255 / total)
    return ts.Pipeline(out), ts.Pipeline([hist, cdf])


def test_histogram_equalization():
    a = _rng(2).integers(0, 200, size=(45, 61)).astype(np.uint8)
    eq, hc = _equalize_pipeline()
    h = np.bincount(a.ravel(), minlength=256)
    cdf = np.cumsum(h)
    np.testing.assert_array_equal(realize(eq, [61, 45], img=a),
                                  (cdf[a] * 255 // a.size).astype(np.uint8))
    hist, cdf_out = realize(hc, [256], img=a)
    assert hist.dtype == np.int32
    np.testing.assert_array_equal(hist, h)
    np.testing.assert_array_equal(cdf_out, cdf)


def test_histogram_counts_wrap_in_uint8():
    img = ts.ImageParam(ts.uint8, 1, "vals")
    r = ts.RDom((0, img.width()))
    h = ts.Func("h8")
    h[i] = ts.cast(ts.uint8, 0)
    h[ts.cast(ts.int32, img[r.x])] += 1
    a = np.array([7] * 300 + [3] * 5, dtype=np.uint8)
    out = realize(ts.Pipeline(h), [256], vals=a)   # the site's bound is uint8's range
    assert out.dtype == np.uint8
    assert out[:8].tolist() == [0, 0, 0, 5, 0, 0, 0, 300 - 256] and not out[8:].any()


# -- matrix multiply ------------------------------------------------------------------
def _matmul(t, inline=False):
    A, B = ts.ImageParam(t, 2, "A"), ts.ImageParam(t, 2, "B")
    r = ts.RDom((0, A.width()), name="rk")
    C = ts.Func("C")
    if inline:
        C[x, y] = ts.sum(A[r.x, y] * B[x, r.x])
    else:
        C[x, y] = ts.cast(t, 0)
        C[x, y] += A[r.x, y] * B[x, r.x]
    return ts.Pipeline(C)


@pytest.mark.parametrize("inline", [False, True])
def test_matmul_float32(inline):
    rng = _rng(3)
    a = rng.standard_normal((13, 29), dtype=np.float32)
    b = rng.standard_normal((29, 17), dtype=np.float32)
    out = realize(_matmul(ts.float32, inline), [17, 13], A=a, B=b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("inline", [False, True])
def test_matmul_int32_exact(inline):
    rng = _rng(4)
    a = rng.integers(-1000, 1000, (11, 23)).astype(np.int32)
    b = rng.integers(-1000, 1000, (23, 9)).astype(np.int32)
    out = realize(_matmul(ts.int32, inline), [9, 11], A=a, B=b)
    np.testing.assert_array_equal(out, a @ b)


# -- resampling, several outputs ------------------------------------------------------
def test_downsample_then_upsample():
    inp = ts.ImageParam(ts.float32, 2, "full")
    down, up = ts.Func("down"), ts.Func("up")
    down[x, y] = (inp[2 * x, 2 * y] + inp[2 * x + 1, 2 * y]
                  + inp[2 * x, 2 * y + 1] + inp[2 * x + 1, 2 * y + 1]) * 0.25
    up[x, y] = down[x / 2, y / 2]
    a = _rng(5).random((16, 22), dtype=np.float32)
    d = (a[0::2, 0::2] + a[0::2, 1::2] + a[1::2, 0::2] + a[1::2, 1::2]) * np.float32(0.25)
    np.testing.assert_allclose(realize(ts.Pipeline(down), [11, 8], full=a), d, rtol=1e-6)
    np.testing.assert_allclose(realize(ts.Pipeline(up), [22, 16], full=a),
                               np.repeat(np.repeat(d, 2, axis=0), 2, axis=1), rtol=1e-6)


def test_two_outputs_sharing_a_producer():
    inp = ts.ImageParam(ts.int16, 2, "shared_in")
    clamped = ts.boundary.repeat_edge(inp)
    prod, o1, o2 = ts.Func("prod"), ts.Func("o1"), ts.Func("o2")
    prod[x, y] = clamped[x, y] * 2
    o1[x, y] = prod[x, y] + 1
    o2[x, y] = prod[x + 1, y] - prod[x, y - 1]
    pipe = ts.Pipeline([o1, o2])
    a = _rng(6).integers(-100, 100, (6, 9)).astype(np.int16)
    p = np.pad(a, 1, mode="edge") * 2
    r1, r2 = realize(pipe, [9, 6], shared_in=a)
    assert r1.dtype == r2.dtype == np.int16
    np.testing.assert_array_equal(r1, a * 2 + 1)
    np.testing.assert_array_equal(r2, p[1:-1, 2:] - p[:-2, 1:-1])
    r1, r2 = realize(pipe, {"o1": [3, 2], "o2": [9, 6]}, shared_in=a)
    assert r1.shape == (2, 3) and r2.shape == (6, 9)
    np.testing.assert_array_equal(r1, (a * 2 + 1)[:2, :3])


def test_output_read_outside_its_own_window():
    # An output's buffer is exactly the size asked for (as in compiled code and Halide):
    # out_b reads out_a over [-1, 5], so out_a must be realized over at least that.
    a, b = ts.Func("out_a"), ts.Func("out_b")
    a[x] = x * 10
    b[x] = a[x - 1] + a[x + 2]
    with pytest.raises(RealizeError, match=r"output out_a is accessed at -1, which is before "
                                           r"the min \(0\) in dimension 0"):
        realize(ts.Pipeline([a, b]), [4])
    c = ts.Func("out_c")
    c[x] = a[x + 1] + a[x + 2]
    with pytest.raises(RealizeError, match=r"output out_a is accessed at 5, which is beyond "
                                           r"the max \(3\) in dimension 0"):
        realize(ts.Pipeline([a, c]), [4])
    ra, rc = realize(ts.Pipeline([a, c]), {"out_a": [6], "out_c": [4]})
    assert ra.tolist() == [0, 10, 20, 30, 40, 50] and rc.tolist() == [30, 50, 70, 90]


# -- inline reductions, where, Params -------------------------------------------------
def test_inline_reductions():
    inp = ts.ImageParam(ts.int32, 2, "red_in")
    cl = ts.boundary.repeat_edge(inp)
    r = ts.RDom((-1, 3), name="rtap")
    outs = {}
    for kind in ("sum", "maximum", "minimum", "product"):
        f = ts.Func(f"box_{kind}")
        f[x, y] = getattr(ts, kind)(cl[x + r.x, y])
        outs[kind] = f
    a = _rng(7).integers(-9, 9, (5, 8)).astype(np.int32)
    p = np.pad(a, ((0, 0), (1, 1)), mode="edge")
    taps = np.stack([p[:, :-2], p[:, 1:-1], p[:, 2:]])
    res = realize(ts.Pipeline(list(outs.values())), [8, 5], red_in=a)
    want = [taps.sum(0), taps.max(0), taps.min(0), taps.prod(0)]
    for got, w in zip(res, want):
        np.testing.assert_array_equal(got, w)


def test_scalar_inline_sum_over_the_whole_image():
    img = ts.ImageParam(ts.uint8, 2, "whole")
    r = ts.RDom((0, img.width()), (0, img.height()))
    f = ts.Func("plus_total")
    f[x] = ts.sum(ts.cast(ts.int32, img[r.x, r.y])) + x
    a = _rng(8).integers(0, 256, (7, 9)).astype(np.uint8)
    np.testing.assert_array_equal(realize(ts.Pipeline(f), [4], whole=a),
                                  int(a.astype(np.int64).sum()) + np.arange(4))


def test_rdom_where_restricts_the_domain():
    inp = ts.ImageParam(ts.int32, 2, "tri")
    r = ts.RDom((0, 6), (0, 6), name="rtri")
    r.where(r.x <= r.y)
    f = ts.Func("lower_sum")
    f[x] = ts.sum(inp[r.x, r.y] * (x + 1))
    a = _rng(9).integers(-50, 50, (6, 6)).astype(np.int32)
    np.testing.assert_array_equal(realize(ts.Pipeline(f), [3], tri=a),
                                  np.tril(a).sum() * np.arange(1, 4))


def test_param_default_and_passed():
    inp = ts.ImageParam(ts.float32, 1, "pin")
    k = ts.Param(ts.float32, "gain", 2.0)
    n = ts.Param(ts.int32, "taps")
    r = ts.RDom((0, n), name="rn")
    f = ts.Func("scaled_sum")
    f[x] = ts.sum(inp[x + r.x]) * k
    a = np.arange(10, dtype=np.float32)
    pipe = ts.Pipeline(f)
    np.testing.assert_array_equal(realize(pipe, [4], pin=a, taps=3), (3 * a[:4] + 3) * 2)
    np.testing.assert_array_equal(realize(pipe, [4], pin=a, taps=2, gain=0.5),
                                  (2 * a[:4] + 1) * 0.5)


def test_empty_rdom_leaves_the_initial_value():
    inp = ts.ImageParam(ts.int32, 1, "e_in")
    n = ts.Param(ts.int32, "ntaps")
    f = ts.Func("maybe_sum")
    f[x] = ts.sum(inp[x + ts.RDom((0, n), name="re").x]) + 5
    a = np.arange(6, dtype=np.int32)
    pipe = ts.Pipeline(f)
    assert realize(pipe, [4], e_in=a, ntaps=0).tolist() == [5, 5, 5, 5]
    assert realize(pipe, [4], e_in=a, ntaps=2).tolist() == [6, 8, 10, 12]


@pytest.mark.parametrize("kind,mode", [("repeat_edge", "edge"), ("mirror_image", "symmetric"),
                                       ("mirror_interior", "reflect"),
                                       ("constant_exterior", "constant")])
def test_boundary_conditions_match_np_pad(kind, mode):
    inp = ts.ImageParam(ts.uint16, 2, f"b_{kind}")
    b = getattr(ts.boundary, kind)(inp)
    f = ts.Func(f"shift_{kind}")
    f[x, y] = b[x - 3, y - 2]
    a = _rng(10).integers(0, 60000, (5, 6)).astype(np.uint16)
    got = realize(ts.Pipeline(f), [6 + 6, 5 + 4], **{f"b_{kind}": a})
    np.testing.assert_array_equal(got, np.pad(a, ((2, 2), (3, 3)), mode=mode))


def test_constant_exterior_value():
    inp = ts.ImageParam(ts.float32, 1, "cv")
    b = ts.boundary.constant_exterior(inp, 7.5)
    f = ts.Func("cshift")
    f[x] = b[x - 2]
    got = realize(ts.Pipeline(f), [6], cv=np.array([1, 2], dtype=np.float32))
    assert got.tolist() == [7.5, 7.5, 1, 2, 7.5, 7.5]


# -- integer and float semantics ------------------------------------------------------
def test_uint8_and_int8_wrap():
    inp = ts.ImageParam(ts.uint8, 1, "w8")
    f, g, h = ts.Func("wadd"), ts.Func("wmul"), ts.Func("wneg")
    f[x] = inp[x] + 10
    g[x] = inp[x] * 3
    h[x] = ts.cast(ts.int8, inp[x]) * -1
    a = np.array([250, 5, 128, 0], dtype=np.uint8)
    r1, r2, r3 = realize(ts.Pipeline([f, g, h]), [4], w8=a)
    assert r1.dtype == np.uint8 and r3.dtype == np.int8
    assert r1.tolist() == [4, 15, 138, 10]
    assert r2.tolist() == [238, 15, 128, 0]
    assert r3.tolist() == [6, -5, -128, 0]


def test_euclidean_division_and_modulo():
    a_in, b_in = ts.ImageParam(ts.int32, 1, "num"), ts.ImageParam(ts.int32, 1, "den")
    q, m = ts.Func("quot"), ts.Func("rem")
    q[x] = a_in[x] / b_in[x]
    m[x] = a_in[x] % b_in[x]
    a = np.array([7, -7, 7, -7, 6, -6, 5, 0, -2**31], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, 0, -3, -1], dtype=np.int32)
    qa, ma = realize(ts.Pipeline([q, m]), [9], num=a, den=b)
    assert qa.tolist() == [3, -4, -3, 4, 2, 0, 0, 0, -2**31]
    assert ma.tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0]


def test_division_of_index_expressions():
    f, g = ts.Func("vdiv"), ts.Func("vmod")
    f[x] = (x - 5) / 3
    g[x] = (x - 5) % -3
    r1, r2 = realize(ts.Pipeline([f, g]), [10])
    assert r1.tolist() == [-2, -2, -1, -1, -1, 0, 0, 0, 1, 1]
    assert r2.tolist() == [1, 2, 0, 1, 2, 0, 1, 2, 0, 1]


def test_float32_stays_float32():
    inp = ts.ImageParam(ts.float32, 1, "fin")
    mid, f = ts.Func("fmid"), ts.Func("fout")
    mid[x] = ts.sqrt(inp[x]) * 0.1 + 1
    f[x] = mid[x] / 3 + ts.cast(ts.float32, x)
    a = (_rng(11).random(64) * 100).astype(np.float32)
    out = realize(ts.Pipeline(f), [64], fin=a)
    assert out.dtype == np.float32
    m = np.sqrt(a) * np.float32(0.1) + np.float32(1)
    np.testing.assert_array_equal(out, m / np.float32(3) + np.arange(64, dtype=np.float32))
    # The data tells the two apart: computing in float64 and rounding at the end differs.
    m64 = np.sqrt(a.astype(np.float64)) * 0.1 + 1
    assert not np.array_equal(out, (m64 / 3 + np.arange(64)).astype(np.float32))


def test_float64_pipeline():
    inp = ts.ImageParam(ts.float64, 1, "din64")
    f = ts.Func("d64")
    f[x] = inp[x] * 0.1 + 1
    a = np.array([1.0, 3.0], dtype=np.float64)
    out = realize(ts.Pipeline(f), [2], din64=a)
    assert out.dtype == np.float64 and out.tolist() == (a * 0.1 + 1).tolist()


# -- update definitions: every strategy gives the serial loop nest's result ----------
@pytest.fixture(params=["default", "scalar", "slices", "at"])
def strategy(request, monkeypatch):
    """Force one update strategy where it is valid (see reference_updates)."""
    orig = RU.plan_update
    chosen = []

    def plan(f, d, buf, env):
        s, dims, vec, red = orig(f, d, buf, env)
        if request.param == "scalar":
            s, vec = "scalar", []
        elif request.param == "slices":
            s = "slices" if vec else "scalar"
        elif request.param == "at" and red is not None:
            s = "at"
        chosen.append((f.name, s))
        return s, dims, vec, red
    monkeypatch.setattr(RU, "plan_update", plan)
    return SimpleNamespace(param=request.param, chosen=chosen)


def test_scan_along_an_rdom_dimension(strategy):
    inp = ts.ImageParam(ts.int32, 2, "scan_in")
    f = ts.Func("row_scan")
    f[x, y] = inp[x, y]
    r = ts.RDom((1, inp.width() - 1), (0, inp.height()), name="rs")
    f[r.x, r.y] = f[r.x - 1, r.y] + f[r.x, r.y]
    a = _rng(12).integers(-100, 100, (4, 7)).astype(np.int32)
    np.testing.assert_array_equal(realize(ts.Pipeline(f), [7, 4], scan_in=a), np.cumsum(a, axis=1))


def test_scan_with_a_pure_var(strategy):
    inp = ts.ImageParam(ts.float32, 2, "col_in")
    f = ts.Func("col_scan")
    f[x, y] = inp[x, y]
    r = ts.RDom((1, 4), name="rc")
    f[x, r.x] = f[x, r.x - 1] + f[x, r.x]
    a = _rng(13).random((5, 6), dtype=np.float32)
    np.testing.assert_array_equal(realize(ts.Pipeline(f), [6, 5], col_in=a), np.cumsum(a, axis=0))


def test_serial_dependence_across_a_pure_var(strategy):
    inp = ts.ImageParam(ts.int32, 1, "ser_in")
    f = ts.Func("serial")
    f[x] = inp[x]
    f[x] = f[ts.max(x - 1, 0)] * 2 + f[x]      # reads the value just updated at x - 1
    out = realize(ts.Pipeline(f), [4], ser_in=np.ones(4, np.int32))
    assert out.tolist() == [3, 7, 15, 31]


def test_last_write_wins(strategy):
    f = ts.Func("lastw")
    r = ts.RDom((0, 10), name="rl")
    f[i] = -1
    f[r.x % 3] = r.x
    assert realize(ts.Pipeline(f), [4]).tolist() == [9, 7, 8, -1]


def test_constant_site_update(strategy):
    f = ts.Func("csite")
    f[x, y] = x + 10 * y
    f[x, 0] = f[x, 0] * 100
    f[1, y] = f[0, y] - 1
    out = realize(ts.Pipeline(f), [3, 2])
    assert out.tolist() == [[0, -1, 200], [10, 9, 12]]


def test_float_sums_accumulate_in_loop_order(strategy):
    inp = ts.ImageParam(ts.float32, 2, "acc_in")
    r = ts.RDom((0, inp.width()), name="racc")
    f = ts.Func("row_sums")
    f[y] = ts.cast(ts.float32, 0)
    f[y] += inp[r.x, y]
    a = (_rng(14).standard_normal((3, 500)) * 1e4).astype(np.float32)
    want = []
    for row in a:
        acc = np.float32(0)
        for v in row:
            acc = np.float32(acc + v)
        want.append(acc)
    np.testing.assert_array_equal(realize(ts.Pipeline(f), [3], acc_in=a), np.array(want))
    forced = {"scalar": "scalar", "slices": "slices", "at": "at"}.get(strategy.param, "at")
    assert strategy.chosen == [("row_sums", forced)]


def test_histogram_with_where(strategy):
    img = ts.ImageParam(ts.int16, 2, "hw_in")
    r = ts.RDom((0, img.width()), (0, img.height()), name="rh")
    r.where(img[r.x, r.y] > 0)
    h = ts.Func("pos_hist")
    h[i] = 0
    h[ts.cast(ts.int32, ts.clamp(img[r.x, r.y], 0, 15))] += ts.cast(ts.int32, img[r.x, r.y]) * 0 + 1
    a = _rng(15).integers(-20, 20, (5, 7)).astype(np.int16)
    want = np.bincount(np.minimum(a[a > 0], 15), minlength=16)
    np.testing.assert_array_equal(realize(ts.Pipeline(h), [16], hw_in=a), want)


def test_min_max_product_updates(strategy):
    inp = ts.ImageParam(ts.int32, 2, "mm_in")
    r = ts.RDom((0, inp.height()), name="rmm")
    lo, hi, pr = ts.Func("colmin"), ts.Func("colmax"), ts.Func("colprod")
    lo[x] = ts.int32.max_value()
    hi[x] = ts.int32.min_value()
    pr[x] = 1
    lo[x] = ts.min(lo[x], inp[x, r.x])
    hi[x] = ts.max(inp[x, r.x], hi[x])
    pr[x] = inp[x, r.x] * pr[x]
    a = _rng(16).integers(-1000, 1000, (40, 6)).astype(np.int32)
    r1, r2, r3 = realize(ts.Pipeline([lo, hi, pr]), [6], mm_in=a)
    np.testing.assert_array_equal(r1, a.min(0))
    np.testing.assert_array_equal(r2, a.max(0))
    np.testing.assert_array_equal(r3, a.prod(0, dtype=np.int64).astype(np.int32))  # wraps
    if strategy.param == "at":
        assert [s for _, s in strategy.chosen] == ["at", "at", "at"]


def test_strategies_chosen_by_default():
    chosen = []
    orig = RU.plan_update

    def plan(f, d, buf, env):
        res = orig(f, d, buf, env)
        chosen.append((f.name, res[0], sorted(x.var.name for x in res[2])))
        return res
    with mock.patch.object(RU, "plan_update", plan):
        a = _rng(17).integers(0, 256, (30, 40)).astype(np.uint8)
        realize(_equalize_pipeline()[1], [256], img=a)
        m = np.ones((64, 64), np.float32)
        realize(_matmul(ts.float32), [64, 64], A=m, B=m)
    assert chosen == [("hist", "at", []), ("cdf", "scalar", []), ("C", "slices", ["x", "y"])]


# -- reading or writing outside what was computed is an error -------------------------
def test_reading_outside_the_computed_region_raises():
    pipe = _blur_pipeline()
    a = np.zeros((6, 8), np.float32)
    regions = {"input_repeat_edge": [(-1, 8), (-1, 6)], "blur_x": [(0, 7), (0, 5)],
               "blur_y": [(0, 7), (0, 5)]}
    with pytest.raises(BoundsError, match=r"reading blur_x outside its computed region: "
                                          r"dimension 1 needs \[-1, 4\] but \[0, 5\] was computed"):
        evaluate_pipeline(pipe, regions, {"input": a})


def test_writing_outside_the_computed_region_raises(strategy):
    _, pipe = _equalize_pipeline()
    a = np.full((3, 4), 200, np.uint8)
    regions = {"hist": [(0, 99)], "cdf": [(0, 255)]}
    with pytest.raises(BoundsError, match=r"update 0 of hist writes hist outside its computed "
                                          r"region: dimension 0 needs \[200, 200\] but \[0, 99\]"):
        evaluate_pipeline(pipe, regions, {"img": a})


def test_chunks_cover_the_box_in_loop_order():
    box = [(0, 3), (-2, 2)]
    pts = [(a, b) for a in range(0, 4) for b in range(-2, 3)]
    for limit in (1, 3, 7, 100):
        chunks = list(RU._chunks(box, limit))
        got = [(a, b) for ch in chunks for a in range(ch[0][0], ch[0][1] + 1)
               for b in range(ch[1][0], ch[1][1] + 1)]
        assert got == pts
        assert all((ch[0][1] - ch[0][0] + 1) * (ch[1][1] - ch[1][0] + 1) <= max(limit, 1)
                   for ch in chunks)


def test_reductions_in_small_chunks_match(monkeypatch):
    monkeypatch.setattr(RU, "_CHUNK", 7)
    a = _rng(18).integers(0, 256, (9, 11)).astype(np.uint8)
    hist, _ = realize(_equalize_pipeline()[1], [256], img=a)
    np.testing.assert_array_equal(hist, np.bincount(a.ravel(), minlength=256))
    f = (_rng(19).standard_normal((2, 50)) * 1e3).astype(np.float32)
    inp = ts.ImageParam(ts.float32, 2, "chunk_in")
    r = ts.RDom((0, 50), name="rch")
    s = ts.Func("chunk_sum")
    s[y] = ts.cast(ts.float32, 0)
    s[y] += inp[r.x, y]
    want = [np.float32(0)] * 2
    for j in range(2):
        for v in f[j]:
            want[j] = np.float32(want[j] + v)
    np.testing.assert_array_equal(realize(ts.Pipeline(s), [2], chunk_in=f), np.array(want))


@given(st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2),
                          st.integers(-3, 3), st.sampled_from(["add", "mul", "min", "max"]),
                          st.booleans()), min_size=1, max_size=3))
def test_random_scans_match_a_python_loop(updates):
    """Updates f[r + s, y] = op(f[r + a, y], (f or inp)[r + b, y] * k) vs plain Python."""
    inp = ts.ImageParam(ts.int32, 2, "rand_in")
    f = ts.Func("rand_scan")
    f[x, y] = inp[x, y]
    r = ts.RDom((2, 8), name="rr")
    ops = {"add": lambda p, q: p + q, "mul": lambda p, q: p * q, "min": ts.min, "max": ts.max}
    at = lambda o: r.x if o == 0 else r.x + o  # noqa: E731  (bare r.x when o == 0)
    for s, a, b, k, op, self_read in updates:
        src = f if self_read else inp
        f[at(s), y] = ops[op](f[at(a), y], src[at(b), y] * k)
    data = _rng(20).integers(-2**31, 2**31, (3, 12)).astype(np.int32)
    want = [[int(v) for v in row] for row in data]
    py = {"add": lambda p, q: p + q, "mul": lambda p, q: p * q, "min": min, "max": max}
    wrap = ts.int32.wrap
    for s, a, b, k, op, self_read in updates:
        for yy in range(3):
            for rx in range(2, 10):
                q = want[yy][rx + b] if self_read else int(data[yy][rx + b])
                want[yy][rx + s] = wrap(py[op](want[yy][rx + a], wrap(q * k)))
    regions = {"rand_scan": [(0, 11), (0, 2)]}
    for force in ("default", "scalar"):
        with mock.patch.object(RU, "plan_update", _forced(force)):
            got = evaluate_pipeline(ts.Pipeline(f), regions, {"rand_in": data})["rand_scan"].array
        np.testing.assert_array_equal(got, np.array(want, dtype=np.int32))


def _forced(kind):
    orig = RU.plan_update
    if kind == "default":
        return orig
    return lambda f, d, buf, env: ("scalar", orig(f, d, buf, env)[1], [], None)


def test_a_region_past_int32_is_refused_by_compiled_code_too():
    """An unclamped lookup of a Func with large values needs that Func over 3.2e9 points:
    past int32 coordinates.  The reference refuses; so does compiled code, before it
    runs (its extents would wrap and it would write far outside its allocation)."""
    x = ts.Var("x")
    src, f1, f3 = ts.Func("src"), ts.Func("f1"), ts.Func("f3")
    src[x] = x * 3 - 4
    f1[x] = ((src[x] ^ (src[x] << 3)) & 32767 | ((src[x] ^ -1) >> 2)) * 3
    f3[x] = src[f1[x]]
    pipe = ts.Pipeline(f3)
    with pytest.raises(RealizeError, match="src would be computed over .* too large"):
        ts.reference.realize(pipe, [1])
    s = ts.Schedule(pipe)
    s[src].compute_root()
    with pytest.raises(RealizeError, match="src would be computed over .* too large"):
        ts.compile(pipe, s, cache_dir=False).realize([1])
