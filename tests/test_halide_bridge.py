"""The Halide bridge: every app, every Expr node, RDoms, and schedules (hand-written,
solved, autoscheduled) give our reference's output when run by Halide."""
import numpy as np
import pytest

hl = pytest.importorskip(
    "halide", reason="Halide's Python bindings are not installed (optional: "
                     "`pip install tilesolve[halide]`); the bridge cannot be exercised")

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS  # noqa: E402
from tilesolve.bench.runner import Case  # noqa: E402
from tilesolve.errors import ScheduleError, TilesolveError  # noqa: E402
from tilesolve.interop import halide as th  # noqa: E402
from tilesolve.interop.halide_auto import AUTOSCHEDULERS, autoschedule, set_estimates  # noqa: E402
from tilesolve.model import expr as E  # noqa: E402
from tilesolve.tune.check import compare, transcendentals  # noqa: E402

# Halide's JIT takes seconds for the big pipelines on a small machine
_SLOW_APPS = {"lens_blur", "local_laplacian", "camera_pipe", "interpolate"}


def _check(pipe, sizes, hp, **inputs):
    ref = ts.reference.realize(pipe, sizes, **inputs)
    out = hp.realize(sizes, **inputs)
    ok, err, tol = compare(out, ref, int_slack=1 if transcendentals(pipe) else 0)
    assert ok, f"max error {err} ({tol})"
    return out


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_APPS
                                  else n for n in APPS])
def test_app_translation_matches_reference(name):
    app = APPS[name]
    case = Case(app, app.SMALL_SIZE, getattr(app, "SMALL_BUILD", {}) or {}, seed=0)
    hp = th.translate(case.pipeline)
    hp.compute_root_all()      # Halide's default (inline all) explodes on pyramids
    _check(case.pipeline, case.sizes, hp, **case.inputs)


def test_every_expr_node():
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.int32, 2, "a")
    u = ts.ImageParam(ts.uint8, 2, "u")
    k = ts.Param(ts.float32, "k", 1.5)
    n = ts.Param(ts.int32, "n", -3)
    v, w = a[x, y], u[x, y]
    fv = ts.cast(ts.float32, v) * k
    int8_min = ts.cast(ts.int8, ts.select(x == 0, -128, v % 100))
    parts = [
        v / 7, v % 7, v / -7, v % -7, v / n, v % n, v / (x - x), v % (x - x),   # Euclidean, /0
        ts.cast(ts.int32, fv), ts.cast(ts.int32, ts.cast(ts.uint8, v)),        # truncation, wrap
        ts.cast(ts.int32, ts.cast(ts.bool_, v % 3)),                 # x != 0 (not the low bit)
        ts.cast(ts.int32, ts.abs(int8_min)),                                    # abs wraps
        ts.select((v > 0) & ~(w < 100) | (x == y), ts.min(v, 5), ts.max(v, -5)),
        ts.cast(ts.int32, w + ts.cast(ts.uint8, 250)),                          # uint8 wraps
        ts.cast(ts.int32, ts.cast(ts.uint32, 4000000000) / ts.cast(ts.uint32, w + 1)),
        a.width() * 1000 + a.height(),
        ts.cast(ts.int32, ts.round(fv * 0.5) + ts.floor(fv) + ts.ceil(fv)),
        ts.cast(ts.int32, (fv % 2.5) * 4),
    ]
    f = ts.Func("f")
    c = ts.Var("c")
    out = ts.cast(ts.int32, 0)
    for i, p in enumerate(parts):
        out = ts.select(c == i, p, out)
    f[x, y, c] = out
    g = ts.Func("g")   # float math, compared with a tolerance
    g[x, y] = (ts.sqrt(ts.abs(fv)) + ts.exp(fv * 0.01) + ts.log(ts.abs(fv) + 1) + ts.sin(fv)
               + ts.cos(fv) + ts.tan(fv * 0.1) + ts.atan2(fv, 3.0) + ts.pow(ts.abs(fv) + 1, 0.5))
    rng = np.random.default_rng(1)
    inputs = {"a": rng.integers(-1000, 1000, (9, 11)).astype(np.int32),
              "u": rng.integers(0, 256, (9, 11)).astype(np.uint8)}
    _check(ts.Pipeline(f), [11, 9, len(parts)], th.translate(ts.Pipeline(f)), **inputs)
    _check(ts.Pipeline(g), [11, 9], th.translate(ts.Pipeline(g)), a=inputs["a"])
    # a Param bound at run time, not its default
    hp = th.translate(ts.Pipeline(f))
    ref = ts.reference.realize(ts.Pipeline(f), [11, 9, len(parts)], n=5, k=-2.0, **inputs)
    assert np.array_equal(hp.realize([11, 9, len(parts)], n=5, k=-2.0, **inputs), ref)


def test_let_is_substituted():
    x = ts.Var("x")
    f = ts.Func("f")
    f[x] = x
    hp = th.translate(ts.Pipeline(f))
    e = th._ExprTranslator(hp).expr(E.Let("t", E.Const(ts.int32, 21), E.Var("t") + E.Var("t")))
    assert hl.evaluate(e) == 42


def test_rdoms_where_computed_sites_and_scans():
    x = ts.Var("x")
    img = ts.ImageParam(ts.uint8, 1, "img")
    r = ts.RDom((0, img.width()), name="r")
    r.where(img[r.x] % 3 != 0)
    hist = ts.Func("hist")
    hist[x] = 0
    hist[ts.cast(ts.int32, img[r.x]) / 16] = hist[ts.cast(ts.int32, img[r.x]) / 16] + 1
    cdf = ts.Func("cdf")
    cdf[x] = hist[0]
    s = ts.RDom((1, 15), name="s")
    cdf[s.x] = cdf[s.x - 1] + hist[s.x]
    total = ts.Func("total")
    total[x] = ts.sum(cdf[ts.RDom((0, 16), name="q").x]) + x
    pipe = ts.Pipeline([cdf, total])
    data = np.random.default_rng(2).integers(0, 256, 300).astype(np.uint8)
    ref = ts.reference.realize(pipe, {"cdf": [16], "total": [3]}, img=data)
    hp = th.translate(pipe)
    out = hp.realize({"cdf": [16], "total": [3]}, img=data)
    assert all(np.array_equal(o, r_) for o, r_ in zip(out, ref))


def _blur():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    cl = ts.boundary.mirror_interior(inp)
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (cl[x - 1, y] + cl[x, y] + cl[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by), bx, by, x, y


def test_hand_schedule_replayed():
    pipe, bx, by, x, y = _blur()
    xo, yo, xi, yi, t = (ts.Var(n) for n in ("xo", "yo", "xi", "yi", "t"))
    s = ts.Schedule(pipe)
    s[by].tile(x, y, xo, yo, xi, yi, 16, 8).fuse(xo, yo, t).parallel(t).vectorize(xi, 8).unroll(yi, 2)
    s[bx].compute_at(by, t).vectorize(x, 4)
    hp = th.translate(pipe)
    hp.apply_schedule(s)
    assert "compute_at(blur_y, t)" in hp.schedule_source
    arr = np.random.default_rng(3).random((37, 45), dtype=np.float32)
    _check(pipe, [45, 37], hp, input=arr)
    # sliding window: stored at root, computed per row of a serial loop
    s = ts.Schedule(pipe)
    s[by].vectorize(x, 8)
    s[bx].store_root().compute_at(by, y).store_in("heap")
    hp = th.translate(pipe)
    hp.apply_schedule(s)
    assert "store_root()" in hp.schedule_source
    _check(pipe, [45, 37], hp, input=arr)


def test_update_stage_schedule_with_rvar_split():
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.float32, 2, "a")
    b = ts.ImageParam(ts.float32, 2, "b")
    r = ts.RDom((0, a.width()), name="r")
    mm = ts.Func("mm")
    mm[x, y] = 0.0
    mm[x, y] = mm[x, y] + a[r.x, y] * b[x, r.x]
    pipe = ts.Pipeline(mm)
    ro, ri, xo, xi = (ts.Var(n) for n in ("ro", "ri", "xo", "xi"))
    s = ts.Schedule(pipe)
    s[mm].parallel(y).vectorize(x, 8)
    s[mm].update(0).split(r.x, ro, ri, 4).split(x, xo, xi, 8).reorder(xi, ri, ro, xo, y) \
        .vectorize(xi).parallel(y)
    hp = th.translate(pipe)
    hp.apply_schedule(s)
    rng = np.random.default_rng(4)
    _check(pipe, [24, 10], hp, a=rng.random((10, 13), dtype=np.float32),
           b=rng.random((13, 24), dtype=np.float32))


@pytest.mark.parametrize("name", ["blur", "harris", "hist_eq", "bilateral_grid"])
def test_solver_schedule_replayed(name):
    app = APPS[name]
    case = Case(app, app.SMALL_SIZE, getattr(app, "SMALL_BUILD", {}) or {}, seed=0)
    sched = ts.solve_schedule(case.pipeline, ts.load_spec("host", measure_bandwidth=False),
                              estimates=case.estimates, method="greedy")
    hp = th.translate(case.pipeline)
    hp.apply_schedule(sched)
    _check(case.pipeline, case.sizes, hp, **case.inputs)


def test_an_fma_schedule_compiles_without_strict_float():
    """``set_codegen(fma=True)`` lets both compilers fuse multiply-adds: Halide's
    target drops ``strict_float`` for that schedule only."""
    app = APPS["matmul"]
    case = Case(app, [40, 24], {"k": 48}, seed=0)
    sched = ts.solve_schedule(case.pipeline, "host", estimates=case.estimates, method="greedy")
    hp = th.translate(case.pipeline)
    hp.apply_schedule(sched)
    assert hp.strict_float and hp.target().has_feature(hl.TargetFeature.StrictFloat)
    fused = th.translate(case.pipeline)
    fused.apply_schedule(sched.copy().set_codegen(fma=True))
    assert not fused.strict_float
    assert not fused.target().has_feature(hl.TargetFeature.StrictFloat)
    want = ts.compile(case.pipeline, sched.copy().set_codegen(fma=True)).realize(
        case.sizes, **case.inputs)
    np.testing.assert_allclose(fused.realize(case.sizes, **case.inputs), want, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("name", list(AUTOSCHEDULERS))
def test_halide_autoschedulers(name):
    app = APPS["blur"]
    case = Case(app, app.SMALL_SIZE, {}, seed=0)
    hp = th.translate(case.pipeline)
    set_estimates(hp, case.sizes, case.inputs)
    seconds, source = autoschedule(hp, name, parallelism=2)
    assert seconds >= 0 and isinstance(source, str)
    _check(case.pipeline, case.sizes, hp, **case.inputs)


def test_untranslatable_schedules_are_refused_clearly():
    pipe, bx, by, x, y = _blur()
    s = ts.Schedule(pipe, target="cuda")
    with pytest.raises(ScheduleError, match="CPU schedules"):
        th.translate(pipe).apply_schedule(s)
    hp = th.translate(pipe)
    with pytest.raises(TilesolveError, match="missing input 'input'"):
        hp.realize([4, 4])


def test_names_halide_accepts():
    assert th.halide_name("r.x") == "r_x"
    assert th.halide_name("_") == "v_" and th.halide_name("_0") == "v_0"
    assert th.halide_name("_x") == "_x" and th.halide_name("blur") == "blur"
    assert th.available()[0]


def test_bench_compare_halide_at_paper_size():
    """The Halide rows end to end on a tiny app: paper-size schedules that fail at the
    small size in Halide are checked with small-size ones; outputs match naive's."""
    from tilesolve.bench.runner import BenchOptions, run_bench

    def build(sizes=None):
        x, y = ts.Var("x"), ts.Var("y")
        inp = ts.ImageParam(ts.float32, 2, "input")
        cl = ts.boundary.repeat_edge(inp)
        bx, by = ts.Func("blur_x"), ts.Func("blur_y")
        bx[x, y] = (cl[x - 1, y] + cl[x, y] + cl[x + 1, y]) / 3
        by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
        w, h = sizes or [512, 256]
        return ts.Pipeline(by), {"blur_y": [w, h], "input": [w, h]}

    def make_inputs(sizes, seed=0):
        return {"input": np.random.default_rng(seed).random(sizes[::-1], dtype=np.float32)}
    app = type("TinyApp", (), {"build": staticmethod(build), "make_inputs": staticmethod(make_inputs),
                               "PAPER_SIZE": [512, 256], "SMALL_SIZE": [20, 12]})
    opts = BenchOptions(methods=["naive", "greedy"], size="paper", repeat=1, compare_halide=True,
                        halide_autoschedulers=["mullapudi2016"])
    res = run_bench(opts, apps={"tiny": app})
    rows = {(r.method, r.schedule_from): r for r in res.records}
    assert set(rows) == {("naive", None), ("greedy", None), ("halide-mullapudi2016", None),
                         ("ts-schedule@halide", "greedy")}
    for r in res.records:
        assert r.status == "ok" and r.check == "ok", (r.method, r.detail)
        assert r.run_ms_min > 0 and r.sizes == [512, 256] and r.check_sizes == [20, 12]
    assert rows[("ts-schedule@halide", "greedy")].backend == "halide"
    # the 512-wide tiles of the paper-size schedule do not fit the 20 x 12 check in Halide
    assert "checked with its small-size schedule" in rows[("halide-mullapudi2016", None)].detail
    assert res.ok
