"""Interval, Box, bounds_of, boxes_required, required_regions: hand-computed answers."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.analysis.intervals import (Box, Interval, bounds_of, boxes_required,
                                          func_value_bounds, required_regions)
from tilesolve.model import expr as E

x, y, xo, yo = ts.Var("x"), ts.Var("y"), ts.Var("xo"), ts.Var("yo")
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


def iv(e, **scope):
    return bounds_of(e, {k: Interval(*v) if isinstance(v, tuple) else v for k, v in scope.items()})


def ends(i):
    return (i.lo, i.hi)


# -- Interval and Box -----------------------------------------------------------------
def test_interval_basics():
    a, b = Interval(0, 9), Interval(5, 20)
    assert ends(a.union(b)) == (0, 20) and ends(a.intersect(b)) == (5, 9)
    assert a.extent() == 10 and Interval.nothing().extent() == 0
    assert Interval(3, 1).is_empty() and Interval.nothing().is_empty()
    assert ends(Interval.nothing().union(a)) == (0, 9)
    assert a.intersect(Interval(20, 30)).is_empty()
    assert a.contains(0) and a.contains(9) and not a.contains(10)
    assert a.contains(Interval(2, 3)) and not a.contains(b)
    e = Interval.everything()
    assert ends(e) == (None, None) and not e.is_bounded() and e.extent() is None
    assert ends(e.union(a)) == (None, None) and ends(e.intersect(a)) == (0, 9)
    assert ends(Interval(None, 5).union(Interval(0, None))) == (None, None)
    assert Interval(float("-inf"), float("inf")).is_everything()
    assert Interval.point(4).is_single_point() and Interval(1, 2).is_const()
    assert not Interval(0, None).is_const() and Interval(0, x).is_bounded()
    assert Interval(0, 9) == Interval(0, 9) and hash(Interval(0, 9)) == hash(Interval(0, 9))
    assert repr(Interval(None, 3)) == "[-inf, 3]"


def test_symbolic_interval():
    t0 = Interval(xo * 32, xo * 32 + 31)
    assert t0.extent() == 32                       # simplified to a number
    u = t0.union(Interval(xo * 32 - 1, xo * 32 + 30))
    assert u.lo is xo * 32 - 1 and u.hi is xo * 32 + 31
    assert t0.contains(xo * 32 + 5) is True
    assert t0.contains(xo * 32 + 32) is False
    assert t0.contains(y) is None
    assert Interval(xo, xo).is_single_point() and not t0.is_const()


def test_box():
    a = Box([(0, 9), (0, 4)])
    b = Box.from_sizes([20, 2])
    assert a.extents() == (10, 5) and a.size() == 50 and a.is_const()
    assert a.union(b) == Box([(0, 19), (0, 4)])
    assert a.intersect(b) == Box([(0, 9), (0, 1)])
    assert a.contains((9, 4)) and not a.contains((10, 0))
    assert a.contains(Box([(1, 2), (3, 4)]))
    s = Box([Interval(xo * 8, xo * 8 + 7), Interval(0, 3)])
    assert s.extents() == (8, 4) and s.size() == 32 and not s.is_const()
    with pytest.raises(ValueError):
        a.union(Box([(0, 1)]))


# -- bounds_of ---------------------------------------------------------------------------
@pytest.mark.parametrize("e, scope, want", [
    (x + 1, {"x": (0, 9)}, (1, 10)),
    (x - y, {"x": (0, 9), "y": (2, 3)}, (-3, 7)),
    (x * y, {"x": (-2, 3), "y": (4, 5)}, (-10, 15)),
    (x * -3, {"x": (-2, 3)}, (-9, 6)),
    (x / 2, {"x": (-3, 5)}, (-2, 2)),                 # Euclidean: -3 / 2 == -2
    (x / -2, {"x": (-3, 5)}, (-2, 2)),                # -3 / -2 == 2, 5 / -2 == -2
    (x / y, {"x": (-4, 6), "y": (-1, 1)}, (-6, 6)),  # y may be 0: x / 0 == 0
    (x / y, {"x": (8, 9), "y": (2, 4)}, (2, 4)),
    (x % 5, {"x": (-100, 100)}, (0, 4)),
    (x % 8, {"x": (10, 12)}, (2, 4)),
    (x % y, {"x": (-50, 50), "y": (-3, 2)}, (0, 2)),
    (x % y, {"x": (-50, 50), "y": (0, 0)}, (0, 0)),
    (x % y, {"x": (0, 3), "y": (5, 9)}, (0, 3)),
    (ts.min(x, y), {"x": (0, 9), "y": (3, 4)}, (0, 4)),
    (ts.clamp(x, 0, 15), {"x": (-5, 100)}, (0, 15)),
    (ts.cast(ts.uint8, x) + 200, {"x": (0, 100)}, (0, 255)),      # may wrap
    (ts.cast(ts.uint8, x) + 200, {"x": (60, 100)}, (4, 44)),      # always wraps
    (ts.cast(ts.uint8, x), {"x": (250, 260)}, (0, 255)),
    (ts.cast(ts.uint8, x), {"x": (256, 260)}, (0, 4)),
    (ts.cast(ts.int16, x), {"x": (-5, 5)}, (-5, 5)),
    (x + 1, {"x": (0, INT_MAX)}, (INT_MIN, INT_MAX)),              # int32 wraps too
    (ts.cast(ts.int32, ts.Param(ts.float32, "f")), {"f": (-1.5, 2.7)}, (-1, 2)),
    (ts.cast(ts.int32, ts.Param(ts.float32, "f")), {"f": (0.0, 1e20)}, (INT_MIN, INT_MAX)),
    (x < y, {"x": (0, 3), "y": (4, 9)}, (1, 1)),
    (x < y, {"x": (0, 5), "y": (4, 9)}, (0, 1)),
    (x >= y, {"x": (0, 3), "y": (4, 9)}, (0, 0)),
    ((x < 0) | (x > 9), {"x": (0, 9)}, (0, 0)),
    (ts.select(x < 5, x, 100), {"x": (0, 3)}, (0, 3)),
    (ts.select(x < 2, x, 100), {"x": (0, 3)}, (0, 100)),
    (ts.abs(x), {"x": (-7, 3)}, (0, 7)),
    # the op's rule in its own type: abs(-128) wraps (ts.abs gives the unsigned type)
    (E.Intrinsic("abs", (ts.cast(ts.int8, x),), ts.int8), {"x": (-128, 0)}, (-128, 127)),
    (E.Let("w", x * 2, ts.Var("w") + 1), {"x": (0, 4)}, (1, 9)),
])
def test_bounds_of(e, scope, want):
    assert ends(iv(e, **scope)) == want


def test_bounds_of_leaves():
    p8, p32 = ts.Param(ts.uint8, "p8"), ts.Param(ts.int32, "p32")
    inp = ts.ImageParam(ts.uint8, 2, "inp")
    finp = ts.ImageParam(ts.float32, 1, "finp")
    assert ends(bounds_of(x)) == (None, None)
    assert ends(bounds_of(x, symbolic=True)) == (x, x)
    assert ends(bounds_of(p8)) == (0, 255) and ends(bounds_of(p32)) == (INT_MIN, INT_MAX)
    assert ends(bounds_of(p32, {"p32": 7})) == (7, 7)
    assert ends(bounds_of(inp.width())) == (1, None)
    assert ends(bounds_of(inp.width() - 1, {"inp.extent.0": 64})) == (63, 63)
    assert ends(bounds_of(inp[x, y])) == (0, 255)
    assert ends(bounds_of(finp[x])) == (None, None)
    assert ends(bounds_of(x * 2 + 1, {"x": Interval(xo * 32, xo * 32 + 31)})) == \
        (xo * 64 + 1, xo * 64 + 63)
    assert ends(bounds_of(x / 2, {"x": Interval(xo * 32, xo * 32 + 31)})) == (xo * 16, xo * 16 + 15)


def test_bounds_of_math():
    f = ts.Param(ts.float32, "f")
    assert ends(bounds_of(ts.sqrt(f), {"f": (4.0, 9.0)})) == (2.0, 3.0)
    assert ends(bounds_of(ts.sin(f))) == (-1.0, 1.0)
    assert ends(bounds_of(ts.floor(f), {"f": (-1.5, 2.5)})) == (-2.0, 2.0)
    lo, hi = ends(bounds_of(ts.exp(f), {"f": (0.0, 1.0)}))
    assert 0.99 < lo <= 1.0 and 2.718281 <= hi < 2.7183
    lo, hi = ends(bounds_of(ts.log(f), {"f": (0.0, 1.0)}))
    assert lo is None and 0.0 <= hi < 1e-5
    assert ends(bounds_of(f * 2.0, {"f": (1.0, 2.0)})) == (2.0, 4.0)
    assert ends(bounds_of(f / 0.0)) == (None, None)


def test_bounds_of_calls_use_func_bounds():
    lut = ts.Func("lut")
    lut[x] = ts.clamp(x * 3, 0, 99)
    assert ends(bounds_of(lut[x])) == (INT_MIN, INT_MAX)
    assert ends(bounds_of(lut[x] + 1, func_bounds={"lut": Interval(0, 99)})) == (1, 100)


# -- boxes_required --------------------------------------------------------------------
def _blur(boundary=True):
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = ts.boundary.repeat_edge(inp) if boundary else inp
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (src[x - 1, y] + src[x, y] + src[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by), bx, by


def test_boxes_required_symbolic_tiles():
    _, bx, by = _blur()
    scope = {"x": Interval(xo * 32, xo * 32 + 31), "y": Interval(yo * 8, yo * 8 + 7)}
    boxes = boxes_required(by.value, scope)
    assert set(boxes) == {"blur_x"}
    b = boxes["blur_x"]
    assert ends(b[0]) == (xo * 32, xo * 32 + 31)
    assert ends(b[1]) == (yo * 8 - 1, yo * 8 + 8)
    assert b.extents() == (32, 10)
    # and one level further, through blur_x's own definition
    inner = boxes_required(bx.value, {"x": b[0], "y": b[1]})
    assert ends(inner["input_repeat_edge"][0]) == (xo * 32 - 1, xo * 32 + 32)


def test_boxes_required_unknown_vars():
    f = ts.Func("f")
    f[x] = x
    assert ends(boxes_required(f[x + 1], {})["f"][0]) == (None, None)
    assert ends(boxes_required(f[x + 1], {}, symbolic=True)["f"][0]) == (x + 1, x + 1)
    g = ts.Func("g")
    g[x] = f[f[x]]                                 # nested: both calls are found
    assert set(boxes_required(g.value, {"x": Interval(0, 3)})) == {"f"}


# -- required_regions --------------------------------------------------------------------
def _ends(box):
    return [ends(i) for i in box]


def test_blur_regions():
    pipe, _, _ = _blur()
    W, H = 64, 48
    r = required_regions(pipe, [W, H], input_sizes={"input": [W, H]})
    assert _ends(r["blur_y"]) == [(0, W - 1), (0, H - 1)]
    assert _ends(r["blur_x"]) == [(0, W - 1), (-1, H)]
    assert _ends(r["input_repeat_edge"]) == [(-1, W), (-1, H)]
    assert _ends(r["input"]) == [(0, W - 1), (0, H - 1)]      # exact, thanks to the clamp
    # a smaller input is read only up to its own edge
    r = required_regions(pipe, [W, H], input_sizes={"input": [10, 5]})
    assert _ends(r["input"]) == [(0, 9), (0, 4)]


def test_blur_without_boundary_reads_outside():
    pipe, _, _ = _blur(boundary=False)
    r = required_regions(pipe, {"blur_y": [8, 6]})
    assert _ends(r["input"]) == [(-1, 8), (-1, 6)]


def test_sampling_and_multiple_outputs():
    inp = ts.ImageParam(ts.uint16, 1, "inp")
    down, up = ts.Func("down"), ts.Func("up")
    down[x] = inp[2 * x] + inp[2 * x + 1]
    up[x] = down[x / 2] + down[x / 2 + 1]
    r = required_regions(ts.Pipeline([up, down]), {"up": [10], "down": [3]})
    assert _ends(r["down"]) == [(0, 5)]
    assert _ends(r["inp"]) == [(0, 11)]


def test_histogram_regions():
    inp8 = ts.ImageParam(ts.uint8, 1, "inp8")
    r = ts.RDom((0, 100))
    hist = ts.Func("hist")
    hist[x] = 0
    hist[inp8[r.x]] += 1
    out = ts.Func("out")
    out[x] = hist[x] * 2
    reg = required_regions(ts.Pipeline(out), [10])
    assert _ends(reg["hist"]) == [(0, 255)]         # written sites: every uint8
    assert _ends(reg["inp8"]) == [(0, 99)]


def test_scan_and_constant_site():
    img = ts.ImageParam(ts.float32, 2, "img")
    s = ts.Func("s")
    s[x, y] = img[x, y]
    r = ts.RDom((1, 9))
    s[x, r.x] = s[x, r.x - 1] + s[x, r.x]
    s[x, 20] = s[x, 20] * 2
    out = ts.Func("out")
    out[x, y] = s[x, y]
    reg = required_regions(ts.Pipeline(out), [4, 3])
    assert _ends(reg["s"]) == [(0, 3), (0, 20)]
    assert _ends(reg["img"]) == [(0, 3), (0, 20)]


def test_update_reads_and_writes_outside_the_consumers_need():
    inp = ts.ImageParam(ts.int32, 1, "inp")
    f, out = ts.Func("f"), ts.Func("out")
    f[x] = inp[x]
    r = ts.RDom((-1, 3))                 # writes -1..1, reads -3..-1 (and its own sites)
    f[r.x] = f[r.x - 2] + f[r.x]
    f[5] = inp[9]                        # a site written without reading f
    out[x] = f[x]
    reg = required_regions(ts.Pipeline(out), [2])
    assert _ends(reg["f"]) == [(-3, 5)]
    assert _ends(reg["inp"]) == [(-3, 9)]


def test_rdom_with_params_and_extents():
    img = ts.ImageParam(ts.int32, 1, "img")
    n = ts.Param(ts.int32, "n")
    total = ts.Func("total")
    r = ts.RDom((0, n))
    total[x] = 0
    total[x] += img[x + r.x]
    out = ts.Func("out")
    out[x] = total[x]
    assert _ends(required_regions(ts.Pipeline(out), [4], params={"n": 3})["img"]) == [(0, 5)]
    with pytest.raises(ts.BoundsError, match=r"total.*RDom.*Param n"):
        required_regions(ts.Pipeline(out), [4])
    s = ts.Func("s")
    rr = ts.RDom((0, img.width()))
    s[x] = 0
    s[x] += img[rr.x]
    o2 = ts.Func("o2")
    o2[x] = s[x]
    assert _ends(required_regions(ts.Pipeline(o2), [1], input_sizes={"img": [7]})["img"]) == [(0, 6)]
    with pytest.raises(ts.BoundsError, match=r"extent of input img in dimension 0"):
        required_regions(ts.Pipeline(o2), [1])


def test_lookup_through_a_bounded_func():
    inp = ts.ImageParam(ts.int32, 1, "inp")
    lut, out = ts.Func("lut"), ts.Func("out")
    lut[x] = ts.clamp(inp[x], 0, 15) * 2
    out[x] = lut[lut[x]]
    assert func_value_bounds(ts.Pipeline(out))["lut"] == Interval(0, 30)
    reg = required_regions(ts.Pipeline(out), [4])
    assert _ends(reg["lut"]) == [(0, 30)]


# -- errors -----------------------------------------------------------------------------
def _single(value_fn, itype=ts.int32):
    inp = ts.ImageParam(itype, 1, "inp")
    f, g = ts.Func("producer"), ts.Func("consumer")
    f[x] = x
    g[x] = value_fn(f, inp)
    return ts.Pipeline(g)


def test_data_dependent_index_without_bound():
    pipe = _single(lambda f, inp: f[inp[x]])
    with pytest.raises(ts.BoundsError, match=r"Func consumer reads producer in dimension 0 "
                                             r"at the index inp\[x\].*ts\.clamp"):
        required_regions(pipe, [8])
    # a uint8 value is bounded by its type
    reg = required_regions(_single(lambda f, inp: f[inp[x]], ts.uint8), [8])
    assert _ends(reg["producer"]) == [(0, 255)]
    reg = required_regions(_single(lambda f, inp: f[ts.clamp(inp[x], -3, 3)]), [8])
    assert _ends(reg["producer"]) == [(-3, 3)]


def test_float_index_and_unbounded_param():
    fl = _single(lambda f, inp: f[ts.cast(ts.int32, inp[x] * 0.5)], ts.float32)
    with pytest.raises(ts.BoundsError, match=r"consumer reads producer in dimension 0.*clamp"):
        required_regions(fl, [8])
    p = ts.Param(ts.int32, "offset")
    pp = _single(lambda f, inp: f[x + p])
    with pytest.raises(ts.BoundsError, match=r"offset"):
        required_regions(pp, [8])
    assert _ends(required_regions(pp, [8], params={"offset": 2})["producer"]) == [(2, 9)]


def test_histogram_with_int32_values_needs_a_clamp():
    inp = ts.ImageParam(ts.int32, 1, "vals")
    r = ts.RDom((0, 10))
    h = ts.Func("h")
    h[x] = 0
    h[inp[r.x]] += 1
    out = ts.Func("out")
    out[x] = h[x]
    with pytest.raises(ts.BoundsError, match=r"Func h .*writes h in dimension 0.*vals\[r"):
        required_regions(ts.Pipeline(out), [4])


def test_boundary_condition_needs_input_sizes():
    pipe, _, _ = _blur()
    with pytest.raises(ts.BoundsError, match=r"extent of input input in dimension 0.*input_sizes"):
        required_regions(pipe, [8, 8])


def test_bad_sizes():
    pipe, _, _ = _blur(boundary=False)
    with pytest.raises(ts.BoundsError, match="blur_y"):
        required_regions(pipe, [8])
    with pytest.raises(ts.BoundsError, match="no sizes given for output blur_y"):
        required_regions(pipe, {"other": [8, 8]})


def test_hundred_func_chain():
    im = ts.ImageParam(ts.float32, 2, "im")
    f = ts.Func("c0")
    f[x, y] = im[x, y]
    for i in range(1, 100):
        g = ts.Func(f"c{i}")
        g[x, y] = f[x - 1, y] + f[x + 1, y] + f[x, y + 1]
        f = g
    reg = required_regions(ts.Pipeline(f), [640, 480])
    assert _ends(reg["im"]) == [(-99, 738), (0, 578)]


def test_shifts_by_constants_of_symbolic_indices_are_bounded():
    """``x >> 1`` and ``x << 1`` of a symbolic index are a floor division and a product:
    without a rule their bounds were the whole int32 range, and a pipeline reading
    ``clamped[x >> 1, y]`` asked for a 2**30 x 2**30 buffer."""
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.Var("a")
    iv = bounds_of(x >> 2, {"x": Interval(a, a + 7)})
    assert "a" in str(iv.lo) and "a" in str(iv.hi)
    u = ts.ImageParam(ts.float32, 2, "u_shift")
    ux = ts.Func("ux_shift")
    ux[x, y] = ts.boundary.repeat_edge(u)[x >> 1, y]
    uy = ts.Func("uy_shift")
    uy[x, y] = ux[x, y >> 1] + ux[x << 1, y]
    pipe = ts.Pipeline(uy)
    img = np.random.default_rng(0).random((10, 30), dtype=np.float32)
    want = ts.reference.realize(pipe, [12, 10], u_shift=img)
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", {"uy_shift": [12, 10]}, method="greedy")
    np.testing.assert_array_equal(ts.compile(pipe, s, checked=True).realize(
        [12, 10], u_shift=img), want)
