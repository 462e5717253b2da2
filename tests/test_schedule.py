"""The Schedule value: builder, legality, printing, JSON, loop nests.

Golden files live in tests/golden/; regenerate them with
``TILESOLVE_UPDATE_GOLDEN=1 pytest tests/test_schedule.py``.
"""
import json
import os
import pathlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.errors import ScheduleError
from tilesolve.model.schedule import Dim, Fuse, LoopLevel, Schedule, Split

GOLDEN = pathlib.Path(__file__).parent / "golden"
x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TILESOLVE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with TILESOLVE_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from the golden file"


# -- pipelines -------------------------------------------------------------------------
def blur():
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by), bx, by


def blur_schedule():
    p, bx, by = blur()
    s = ts.Schedule(p)
    s[by].tile(x, y, xo, yo, xi, yi, 256, 32).parallel(yo).vectorize(xi, 16)
    s[bx].compute_at(by, xo).vectorize(x, 16)
    return s


def histogram():
    """hist over a 2-D input, then an equalization lookup (output ``out``)."""
    inp = ts.ImageParam(ts.uint8, 2, "input")
    r = ts.RDom((0, inp.width()), (0, inp.height()), name="r")
    i = ts.Var("i")
    hist, out = ts.Func("hist"), ts.Func("out")
    hist[i] = 0
    hist[ts.cast(ts.int32, inp[r.x, r.y])] += 1
    out[x, y] = hist[ts.cast(ts.int32, inp[x, y])]
    return ts.Pipeline(out), hist, out, r


def histogram_schedule():
    p, hist, out, r = histogram()
    s = ts.Schedule(p)
    rxo, rxi = ts.Var("rxo"), ts.Var("rxi")
    s[hist].compute_root().vectorize(ts.Var("i"), 8)
    s[hist].update(0).split(r.x, rxo, rxi, 4, tail="guard_with_if").unroll(rxi)
    s[out].parallel(y, 8).vectorize(x, 16)
    s.provenance = {"method": "greedy", "predicted_cost": 1234.5, "solve_time": 0.12}
    return s


def two_branch():
    """a and b both read the input; out reads both; c is an extra 3-D output."""
    inp = ts.ImageParam(ts.int32, 2, "input")
    a, b, out = ts.Func("a"), ts.Func("b"), ts.Func("out")
    a[x, y] = inp[x, y] + 1
    b[x, y] = inp[x, y] * 2
    out[x, y] = a[x, y] + b[x + 1, y]
    return ts.Pipeline(out), a, b, out


def chain():
    """a -> b -> c (output): a is read by c only through b."""
    inp = ts.ImageParam(ts.int32, 2, "input")
    a, b, cc = ts.Func("a"), ts.Func("b"), ts.Func("c")
    a[x, y] = inp[x, y]
    b[x, y] = a[x, y] + a[x + 1, y]
    cc[x, y] = b[x, y - 1] + b[x, y]
    return ts.Pipeline(cc), a, b, cc


# -- defaults and basic directives ----------------------------------------------------------
def test_defaults_outputs_root_others_inline():
    p, bx, by = blur()
    s = ts.Schedule(p)
    assert s.func_schedule("blur_y").compute == LoopLevel.root()
    assert s.func_schedule(by).store == LoopLevel.root()
    for name in ("blur_x", "input_repeat_edge"):
        fs = s.func_schedule(name)
        assert fs.compute == LoopLevel.inline() == fs.store
        assert fs.memory == "auto" and fs.bounds == ()
    assert s.func_schedule("blur_x").stages[0].dims == (Dim("x"), Dim("y"))
    assert s.directives == () and all(s.is_default(n) for n in p.funcs)
    assert "default schedule" in str(s)


def test_default_update_dims_rvars_inner_pure_outer():
    f, r = ts.Func("f"), ts.RDom((0, 4), (0, 3), name="r")
    f[x, y] = x + y
    f[x, r.y] = f[x, r.y] + r.x
    s = ts.Schedule(ts.Pipeline(f))
    st = s.func_schedule(f).stages[1]
    assert st.dims == (Dim("r.x", "serial", True), Dim("r.y", "serial", True), Dim("x"))
    assert st.transforms == ()


def test_blur_schedule_values():
    s = blur_schedule()
    by = s.func_schedule("blur_y").stages[0]
    assert by.transforms == (Split("x", "xo", "xi", 256), Split("y", "yo", "yi", 32),
                             Split("xi", "xi", "xi_v", 16))
    assert by.loop_names() == ("xi_v", "xi", "yi", "xo", "yo")
    assert [d.kind for d in by.dims] == ["vectorized", "serial", "serial", "serial", "parallel"]
    bx = s.func_schedule("blur_x")
    assert bx.compute == bx.store == LoopLevel.at("blur_y", "xo")
    assert bx.stages[0].loop_names() == ("x_v", "x", "y")
    s.validate()


def test_tile_four_arg_form_reuses_names_and_implicit_names():
    p, bx, by = blur()
    s = ts.Schedule(p)
    s[by].tile(x, y, xi, yi, 8, 4).unroll(yi, 2).parallel(y, 3)
    st = s.func_schedule(by).stages[0]
    assert st.loop_names() == ("xi", "yi_u", "yi", "x", "y_t", "y")
    assert st.dim("yi_u").kind == "unrolled" and st.dim("y").kind == "parallel"
    s[by].split(xi, xi, "xi_v", 4).vectorize(xi, 2)     # xi_v is taken: xi_v2
    assert s.func_schedule(by).stages[0].dim("xi_v2").kind == "vectorized"


def test_reorder_fuse_and_serial():
    f = ts.Func("f")
    f[x, y, c] = x + y + c
    s = ts.Schedule(ts.Pipeline(f))
    s[f].reorder(c, x)
    assert s.func_schedule(f).stages[0].loop_names() == ("c", "y", "x")
    s[f].fuse(y, x, "t").parallel("t").serial("t")
    st = s.func_schedule(f).stages[0]
    assert st.transforms[-1] == Fuse("y", "x", "t")
    assert st.dims == (Dim("c"), Dim("t"))


def test_update_stage_handles():
    p, hist, out, r = histogram()
    s = ts.Schedule(p)
    h = s[hist].update(0)
    assert repr(h) == "s[hist].update(0)"
    h.reorder(r.y, r.x)            # hist[lhs] + 1 is associative: RVars may move
    assert s.func_schedule(hist).stages[1].loop_names() == ("r.y", "r.x")
    assert s.func_schedule(hist).stages[0].loop_names() == ("i",)
    h.split(r.x, "rxo", "rxi", 16)
    assert all(d.is_rvar for d in s.func_schedule(hist).stages[1].dims)
    with pytest.raises(ScheduleError, match=r"Func hist has 1 update definition\(s\); there is no update 1"):
        s[hist].update(1)


def test_store_and_compute_levels_any_order():
    p, a, b, cc = chain()
    s = ts.Schedule(p)
    s[cc].split(y, yo, yi, 8)
    s[b].store_root().compute_at(cc, yo)
    fs = s.func_schedule(b)
    assert fs.compute == LoopLevel.at("c", "yo") and fs.store == LoopLevel.root()
    s[b].store_at(cc, yo).compute_at(cc, yi)
    assert s.func_schedule(b).store == LoopLevel.at("c", "yo")
    s[a].compute_at(cc, yi)             # a is read by c through b: legal
    s.validate()


def test_failed_directive_changes_nothing_and_copy_is_independent():
    s = blur_schedule()
    before = s.to_json()
    with pytest.raises(ScheduleError):
        s["blur_y"].split("xo", "a", "b", 2)        # blur_x is computed at xo
    with pytest.raises(ScheduleError):
        s["blur_y"].tile("yo", "xi_v", "p", "q", "r2", "t", 2, 2)   # second split fails
    assert s.to_json() == before
    t = s.copy()
    t["blur_y"].unroll("yi", 2)
    t.provenance["method"] = "beam"
    assert s.to_json() == before and "method" not in s.provenance
    assert t.func_schedule("blur_y") != s.func_schedule("blur_y")


def test_schedule_never_mutates_the_algorithm():
    p, bx, by = blur()
    text = str(p)
    defs = [f.definitions() for f in p.funcs.values()]
    s = ts.Schedule(p)
    s[by].tile(x, y, xo, yo, xi, yi, 4, 4)
    s[bx].compute_root().parallel(y)
    assert str(p) == text and defs == [f.definitions() for f in p.funcs.values()]


def test_keep_name_split_of_a_compute_at_loop_is_allowed():
    s = blur_schedule()
    s["blur_y"].split("xo", "xo", "xo_in", 2)
    assert s.func_schedule("blur_x").compute == LoopLevel.at("blur_y", "xo")


def test_gpu_tile_on_cuda():
    p, bx, by = blur()
    s = ts.Schedule(p, target="cuda")
    s[by].gpu_tile(x, y, xo, yo, xi, yi, 16, 8)
    kinds = {d.var: d.kind for d in s.func_schedule(by).stages[0].dims}
    assert kinds == {"xi": "gpu_thread", "yi": "gpu_thread", "xo": "gpu_block", "yo": "gpu_block"}
    s[bx].compute_at(by, xo).gpu_threads(x, y).store_in("shared")
    assert s.func_schedule(bx).memory == "shared"
    assert "(target cuda)" in str(s)
    assert Schedule.from_json(s.to_json(), p).to_json() == s.to_json()


# -- one test per ScheduleError ---------------------------------------------------------------
def err(match):
    return pytest.raises(ScheduleError, match=match)


def test_error_unknown_loop_lists_valid_ones():
    p, bx, by = blur()
    with err(r"Func blur_y \(pure stage\): cannot split loop z: no such loop; valid loops are x, y"):
        ts.Schedule(p)[by].split("z", "zo", "zi", 4)


def test_error_unknown_func_and_input():
    p, bx, by = blur()
    s = ts.Schedule(p)
    with err(r"no Func named 'nope'.*blur_x"):
        s["nope"]
    with err(r"input is an input of the pipeline"):
        s["input"]


def test_error_splitting_twice():
    p, bx, by = blur()
    s = ts.Schedule(p)
    s[by].split(x, xo, xi, 8)
    with err(r"Func blur_y \(pure stage\): cannot split loop x: it was already split into xo and xi"):
        s[by].split(x, "a", "b", 4)


def test_error_reusing_a_name():
    p, bx, by = blur()
    s = ts.Schedule(p)
    s[by].split(x, xo, xi, 8)
    with err(r"Func blur_y \(pure stage\): split\(y, xo, yi, 4\): the name xo is already used"):
        s[by].split(y, xo, yi, 4)
    with err(r"split\(y, yo, yo, 4\): the outer and inner loops need different names"):
        s[by].split(y, yo, yo, 4)


@pytest.mark.parametrize("factor", [0, -3, 2.5, True])
def test_error_bad_factor(factor):
    p, bx, by = blur()
    with err(r"Func blur_y \(pure stage\).*(positive int|must be an int)"):
        ts.Schedule(p)[by].split(x, xo, xi, factor)


@pytest.mark.parametrize("width", [1, 12, 128, 0])
def test_error_vector_width(width):
    p, bx, by = blur()
    with err(rf"Func blur_y \(pure stage\): vectorize\(x, {width}\): the width must be a power of two"):
        ts.Schedule(p)[by].vectorize(x, width)


def test_error_one_vectorized_loop_per_stage():
    p, bx, by = blur()
    with err(r"Func blur_y \(pure stage\): vectorize\(y\): loop x is already vectorized"):
        ts.Schedule(p)[by].vectorize(x).vectorize(y)


def test_error_compute_at_not_a_consumer():
    p, a, b, out = two_branch()
    s = ts.Schedule(p)
    s[b].compute_root()
    with err(r"Func a \(pure stage\): compute_at\(b, x\): b does not read a .*consumers are out"):
        s[a].compute_at(b, x)
    with err(r"Func a \(pure stage\): compute_at\(a, x\): a Func cannot be computed .* its own"):
        s[a].compute_at(a, x)


def test_error_compute_at_missing_loop():
    p, bx, by = blur()
    with err(r"Func blur_x \(pure stage\): compute_at\(blur_y, xo\): blur_y has no loop xo .*loops are x, y"):
        ts.Schedule(p)[bx].compute_at(by, xo)


def test_error_compute_at_inlined_consumer():
    p, a, b, cc = chain()
    with err(r"Func a \(pure stage\): compute_at\(b, x\): b is inlined, so it has no loops"):
        ts.Schedule(p)[a].compute_at(b, x)


def test_error_output_cannot_be_inlined_or_computed_at():
    f, g = ts.Func("f"), ts.Func("g")
    f[x] = x
    g[x] = f[x] + 1
    s = ts.Schedule(ts.Pipeline([f, g]))
    with err(r"Func f \(pure stage\): compute_at\(g, x\): f is an output"):
        s[f].compute_at(g, x)
    with err(r"Func f \(pure stage\): compute_inline\(\): f is an output"):
        s[f].compute_inline()
    with err(r"Func f \(pure stage\): store_at\(g, x\): f is an output"):
        s[f].store_at(g, x)
    s[f].compute_root().store_root()          # the defaults, spelled out: fine


def test_error_inline_func_with_updates():
    p, hist, out, r = histogram()
    with err(r"Func hist \(pure stage\): compute_inline\(\): hist has update definitions"):
        ts.Schedule(p)[hist].compute_inline()


def test_error_store_inside_compute():
    s = blur_schedule()
    with err(r"Func blur_x \(pure stage\): store_at\(blur_y, xi\): storage level blur_y.xi of Func "
             r"blur_x is inside compute level blur_y.xo"):
        s["blur_x"].store_at("blur_y", "xi")
    s["blur_x"].store_at("blur_y", "yo")
    with err(r"compute_root\(\): storage level blur_y.yo of Func blur_x is inside compute level root"):
        s["blur_x"].compute_root()
    with err(r"blur_x has a storage level \(blur_y.yo\); an inlined Func has no storage"):
        s["blur_x"].compute_inline()


def test_error_removing_a_compute_at_loop_or_inlining_its_func():
    p, a, b, cc = chain()
    s = ts.Schedule(p)
    s[b].compute_root().split(y, yo, yi, 4)
    s[a].compute_at(b, yo)
    with err(r"s\[b\].fuse: this removes loop yo of Func b, where a is computed \(b.yo\)"):
        s[b].fuse(yi, yo, "t")
    with err(r"s\[b\].compute_inline: Func b cannot be inlined: a is computed at b.yo"):
        s[b].compute_inline()


def non_assoc():
    """g's update is not ``g[lhs] op e``; scan's update reads it at x - 1."""
    inp = ts.ImageParam(ts.int32, 2, "input")
    r = ts.RDom((0, 4), (0, 3), name="r")
    g, scan = ts.Func("g"), ts.Func("scan")
    g[x] = 0
    g[x] = g[x] * 2 + inp[r.x + x, r.y]
    scan[x, y] = g[x] + y
    scan[x, y] = scan[x - 1, y] + scan[x, y]
    return ts.Pipeline(scan), g, scan, r


def test_error_rvar_reorder_non_associative():
    p, g, scan, r = non_assoc()
    s = ts.Schedule(p)
    s[g].compute_root()
    with err(r"Func g \(update 0\): reorder\(r.y, r.x\): reordering RVar loops r.x and r.y may change"):
        s[g].update(0).reorder(r.y, r.x)
    s[g].update(0).reorder(x, r.y)          # a pure Var may move across RVars
    assert s.func_schedule(g).stages[1].loop_names() == ("r.x", "x", "r.y")
    s[g].update(0).split(r.x, "rxo", "rxi", 2).reorder("rxi", "rxo")     # no change
    with err(r"reorder\(rxo, rxi\): reordering RVar loops rxi and rxo"):
        s[g].update(0).reorder("rxo", "rxi")
    assert s.func_schedule(g).stages[1].loop_names() == ("rxi", "rxo", "x", "r.y")


@pytest.mark.parametrize("method", ["parallel", "vectorize", "unroll"])
def test_error_parallel_or_vectorized_rvar(method):
    p, hist, out, r = histogram()
    h = ts.Schedule(p)[hist].compute_root().update(0)
    if method == "unroll":
        h.unroll(r.x, 2)                   # unrolling keeps the order: legal
        return
    with err(r"Func hist \(update 0\): .*loop r.x iterates an RDom.*rfactor"):
        getattr(h, method)(r.x)


def test_error_parallel_dependent_pure_var():
    p, g, scan, r = non_assoc()
    u = ts.Schedule(p)[scan].update(0)
    with err(r"Func scan \(update 0\): parallel\(x\): the update reads scan at another x coordinate"):
        u.parallel(x)
    with err(r"Func scan \(update 0\): reorder\(y, x\): the update reads scan at another x"):
        u.reorder(y, x)
    u.parallel(y)                           # y is independent
    assert u._s.func_schedule(scan).stages[1].dim("y").kind == "parallel"


def test_error_tail_strategies():
    p, hist, out, r = histogram()
    s = ts.Schedule(p)
    s[hist].compute_root()
    with err(r"Func hist \(update 0\): split\(r.x, a, b, 4\): tail='round_up'.*RVar loop r.x"):
        s[hist].update(0).split(r.x, "a", "b", 4, tail="round_up")
    with err(r"Func out \(pure stage\): split\(x, a, b, 4\): tail='round_up' would write past"):
        s[out].split(x, "a", "b", 4, tail="round_up")
    with err(r"tail must be one of"):
        s[out].split(x, "a", "b", 4, tail="wrap")
    p2, g, scan, r2 = non_assoc()
    with err(r"Func scan \(update 0\): split\(y, a, b, 2\): tail='shift_inward' recomputes"):
        ts.Schedule(p2)[scan].update(0).split(y, "a", "b", 2, tail="shift_inward")


def test_error_split_of_marked_loop():
    p, bx, by = blur()
    with err(r"Func blur_y \(pure stage\): split\(y, yo, yi, 4\): loop y is already marked parallel"):
        ts.Schedule(p)[by].parallel(y).split(y, yo, yi, 4)


def test_error_fuse_not_adjacent_or_mixed():
    f = ts.Func("f")
    f[x, y, c] = x + y + c
    s = ts.Schedule(ts.Pipeline(f))
    with err(r"Func f \(pure stage\): fuse\(x, c, t\): loop c must be the loop just outside x"):
        s[f].fuse(x, c, "t")
    r = ts.RDom((0, 3), name="r")
    g = ts.Func("g")
    g[x] = 0
    g[x] = g[x] + r.x
    with err(r"Func g \(update 0\): fuse\(r.x, x, t\): cannot fuse an RVar loop with a pure loop"):
        ts.Schedule(ts.Pipeline(g))[g].update(0).fuse(r.x, x, "t")


def test_error_gpu_directives():
    p, bx, by = blur()
    with err(r"Func blur_y \(pure stage\): gpu_blocks needs a GPU target; this schedule's target is 'cpu'"):
        ts.Schedule(p)[by].gpu_blocks(y)
    with err(r"Func blur_y \(pure stage\): store_in\('shared'\): shared memory needs the 'cuda' target"):
        ts.Schedule(p)[by].store_in("shared")
    s = ts.Schedule(p, target="cuda")
    with err(r"Func blur_y \(pure stage\): gpu_blocks\(x\): gpu_block loop x is inside gpu_thread loop y"):
        s[by].gpu_threads(y).gpu_blocks(x)
    with err(r"Func blur_y \(pure stage\): reorder\(y, x\): gpu_block loop y is inside gpu_thread loop x"):
        s[by].serial(y).gpu_blocks(y).gpu_threads(x).reorder(y, x)


def test_error_misc_arguments():
    p, bx, by = blur()
    s = ts.Schedule(p)
    with err(r"Func blur_y \(pure stage\): tile takes"):
        s[by].tile(x, y, 4)
    with err(r"Func blur_y \(pure stage\): reorder\(x, x\): loop x is listed twice"):
        s[by].reorder(x, x)
    with err(r"Func blur_y \(pure stage\): bound\(z, 0, 8\): z is not a pure Var of blur_y"):
        s[by].bound("z", 0, 8)
    with err(r"bound\(x, 0, 0\): the extent must be positive"):
        s[by].bound(x, 0, 0)
    with err(r"store_in\('gpu'\): memory must be one of"):
        s[by].store_in("gpu")
    with err(r"new loop name 'a b' must be an identifier"):
        s[by].split(x, "a b", xi, 4)
    with err(r"expected a Var, an RVar or a loop name"):
        s[by].split(1, xo, xi, 4)


def test_validate_all_uses_inside_the_compute_loop():
    p, a, b, out = two_branch()
    s = ts.Schedule(p)
    s[out].split(y, yo, yi, 4)
    s[b].compute_at(out, yo)
    s[a].compute_root().parallel(y)
    s.validate()
    s2 = ts.Schedule(p)
    s2[out].split(y, yo, yi, 4)
    s2[a].compute_root()
    s2[b].compute_at(out, yi)
    s2[a].compute_at(out, yo)
    s2.validate()
    # a is read by out's pure stage only; put a inside b's loop: b's loop is not out's
    s3 = ts.Schedule(p)
    s3[b].compute_root()
    s3[a].compute_root()
    s3[a].split(x, xo, xi, 2)
    s3.validate()
    s4 = ts.Schedule(p)
    s4[a].vectorize(x, 4)                      # a is still inlined
    with err(r"Func a \(pure stage\): it is inlined, so its loops, memory and bounds cannot"):
        s4.validate()


# -- printing, golden files, JSON ----------------------------------------------------------------
def replay_printed(s, namespace):
    """Run the printed code on a fresh Schedule; return that Schedule."""
    t = ts.Schedule(s.pipeline, s.target)
    exec(str(s), {"ts": ts, "s": t, **namespace})       # noqa: S102 - our own printed code
    return t


def test_golden_blur_schedule():
    s = blur_schedule()
    check_golden("schedule_blur.txt", str(s))
    lines = str(s).splitlines()
    assert lines[0] == "# tilesolve schedule for pipeline outputs: blur_y"
    assert lines[1] == 'xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")'
    assert lines[2] == "s[blur_y].tile(x, y, xo, yo, xi, yi, 256, 32).parallel(yo).vectorize(xi, 16)"
    assert lines[3] == "s[blur_x].compute_at(blur_y, xo).vectorize(x, 16)"
    p = s.pipeline
    t = replay_printed(s, {"x": x, "y": y, "blur_x": p.func("blur_x"), "blur_y": p.func("blur_y")})
    assert t.func_schedules() == s.func_schedules() and str(t) == str(s)


def test_golden_histogram_schedule_with_provenance():
    s = histogram_schedule()
    text = str(s)
    check_golden("schedule_histogram.txt", text)
    assert "# solver: greedy, predicted cost 1234.5, solve 0.12 s" in text
    assert 's[hist].update(0).split(r.x, rxo, rxi, 4, tail="guard_with_if").unroll(rxi)' in text
    p = s.pipeline
    r = p.func("hist").updates[0].rdom
    t = replay_printed(s, {"x": x, "y": y, "i": ts.Var("i"), "r": r,
                           "hist": p.func("hist"), "out": p.func("out")})
    assert t.func_schedules() == s.func_schedules()
    ex = s.explain()
    assert "method: greedy" in ex and "hist: computed at root" in ex
    assert "update 0 loops (outer to inner): r.y, rxo, rxi unrolled" in ex


def test_printing_groups_chains_consumers_first():
    p, a, b, cc = chain()
    s = ts.Schedule(p)
    s[b].compute_root()
    s[cc].parallel(y)
    s[b].vectorize(x, 4)
    s[a].compute_at(b, y)
    code = str(s).splitlines()[1:]
    assert code == ["s[c].parallel(y)", "s[b].compute_root().vectorize(x, 4)",
                    "s[a].compute_at(b, y)"]


def test_printing_falls_back_to_call_order_when_grouping_breaks():
    p, a, b, cc = chain()
    s = ts.Schedule(p)
    s[cc].split(y, yo, yi, 4)
    s[b].compute_at(cc, yi).store_at(cc, yo).compute_at(cc, yo)
    s[cc].reorder(yo, yi)                 # yi is now outside yo
    text = str(s)
    assert text.splitlines()[2:] == ["s[c].split(y, yo, yi, 4)",
                                     "s[b].compute_at(c, yi).store_at(c, yo).compute_at(c, yo)",
                                     "s[c].reorder(yo, yi)"]
    t = replay_printed(s, {"y": y, "c": cc, "b": b})
    assert t.func_schedules() == s.func_schedules()


def test_json_round_trip_exact_and_readable():
    for s in (blur_schedule(), histogram_schedule()):
        text = s.to_json()
        doc = json.loads(text)
        assert doc["format"] == "tilesolve.schedule" and doc["outputs"] == list(s.pipeline.output_names)
        t = Schedule.from_json(text, s.pipeline)
        assert t.to_json() == text and str(t) == str(s) and t == s
        assert t.func_schedules() == s.func_schedules() and t.provenance == s.provenance


def test_json_errors():
    s = blur_schedule()
    text = s.to_json()
    p2, *_ = histogram()
    with err(r"the schedule is for outputs \['blur_y'\] but the pipeline's outputs are \['out'\]"):
        Schedule.from_json(text, p2)
    doc = json.loads(text)
    doc["funcs"]["blur_x"]["memory"] = "heap"
    with err(r"Func blur_x: the stored schedule differs"):
        Schedule.from_json(json.dumps(doc), s.pipeline)
    with err(r"does not parse"):
        Schedule.from_json("{", s.pipeline)
    with err(r"not a tilesolve schedule"):
        Schedule.from_json("{}", s.pipeline)
    s.provenance["bad"] = object()
    with err(r"provenance is not JSON-able \(key bad\)"):
        s.to_json()


# -- Hypothesis: random legal directive sequences round-trip exactly -----------------------------
def small_pipeline():
    inp = ts.ImageParam(ts.float32, 2, "inp")
    r = ts.RDom((0, 3), (0, 2), name="r")
    a, b, out = ts.Func("a"), ts.Func("b"), ts.Func("out")
    a[x, y] = inp[x, y] * 2
    b[x, y] = a[x, y] + a[x + 1, y]
    out[x, y] = b[x, y]
    out[x, y] = out[x, y] + b[x + r.x, y + r.y]
    return ts.Pipeline(out), {"x": x, "y": y, "r": r, "a": a, "b": b, "out": out}


METHODS = ["split", "tile", "tile4", "reorder", "fuse", "vectorize", "unroll", "parallel",
           "serial", "compute_root", "compute_at", "store_at", "store_root", "compute_inline",
           "store_in", "bound", "gpu_blocks", "gpu_threads", "gpu_tile"]


def apply_random(data, s, names):
    func = data.draw(st.sampled_from(["a", "b", "out"]))
    nstages = len(s.func_schedule(func).stages)
    stage = data.draw(st.integers(0, nstages - 1))
    h = s[func] if stage == 0 else s[func].update(stage - 1)
    loops = list(s.func_schedule(func).stages[stage].loop_names())
    loop = st.sampled_from(loops + ["nope"])
    fresh = st.sampled_from(names)
    fac = st.integers(1, 9)
    m = data.draw(st.sampled_from(METHODS))
    tail = data.draw(st.sampled_from(["auto", "auto", "guard_with_if", "round_up", "shift_inward"]))
    consumer = data.draw(st.sampled_from(["a", "b", "out"]))
    cloops = list(s.func_schedule(consumer).stages[0].loop_names())
    if m == "split":
        h.split(data.draw(loop), data.draw(fresh), data.draw(fresh), data.draw(fac), tail=tail)
    elif m in ("tile", "gpu_tile"):
        vs = [data.draw(loop), data.draw(loop)] + [data.draw(fresh) for _ in range(4)]
        getattr(h, m)(*vs, data.draw(fac), data.draw(fac), tail=tail)
    elif m == "tile4":
        h.tile(data.draw(loop), data.draw(loop), data.draw(fresh), data.draw(fresh),
               data.draw(fac), data.draw(fac))
    elif m == "reorder":
        h.reorder(*data.draw(st.permutations(loops)))
    elif m == "fuse":
        h.fuse(data.draw(loop), data.draw(loop), data.draw(fresh))
    elif m in ("vectorize", "unroll", "parallel"):
        f = data.draw(st.sampled_from([None, 2, 4, 8]))
        getattr(h, m)(data.draw(loop), f) if f else getattr(h, m)(data.draw(loop))
    elif m == "serial":
        h.serial(data.draw(loop))
    elif m in ("gpu_blocks", "gpu_threads"):
        getattr(h, m)(*data.draw(st.lists(loop, min_size=1, max_size=2, unique=True)))
    elif stage == 0 and m in ("compute_at", "store_at"):
        getattr(h, m)(consumer, data.draw(st.sampled_from(cloops)))
    elif stage == 0 and m == "store_in":
        h.store_in(data.draw(st.sampled_from(["heap", "stack", "shared", "register"])))
    elif stage == 0 and m == "bound":
        h.bound(data.draw(st.sampled_from(["x", "y"])), data.draw(st.integers(-4, 4)), data.draw(fac))
    elif stage == 0:
        getattr(h, m)()


@given(st.data())
def test_random_schedules_round_trip(data):
    p, ns = small_pipeline()
    target = data.draw(st.sampled_from(["cpu", "cuda"]))
    s = ts.Schedule(p, target)
    names = ["xo", "xi", "yo", "yi", "t", "u", "v", "w"]
    for _ in range(data.draw(st.integers(1, 14))):
        before = s.to_json()
        try:
            apply_random(data, s, names)
        except ScheduleError:
            assert s.to_json() == before           # a rejected directive changes nothing
    s.provenance = {"method": "random", "predicted_cost": data.draw(st.floats(0, 1e9)),
                    "gap": None, "columns": [1, 2]}
    text = s.to_json()
    t = Schedule.from_json(text, p)
    assert t.to_json() == text and str(t) == str(s) and t.func_schedules() == s.func_schedules()
    u = replay_printed(s, ns)
    u.provenance = s.provenance
    assert u.func_schedules() == s.func_schedules() and str(u) == str(s)
    for name, fs in s.func_schedules().items():          # the value invariants lowering relies on
        for stage in fs.stages:
            assert len(set(stage.loop_names())) == len(stage.dims)
    try:
        s.validate()
    except ScheduleError as e:
        assert "Func " in str(e)


# -- loop nests ------------------------------------------------------------------------------------
def test_golden_blur_loop_nest():
    s = blur_schedule()
    text = s.loop_nest([6400, 4800], input_sizes={"input": [6400, 4800]})
    check_golden("loop_nest_blur.txt", text)
    assert "  parallel yo in [0, 149]:\n    for xo in [0, 24]:\n      produce blur_x:\n" in text
    assert "        for y in [-1, 32]:" in text           # one row above and below the tile
    assert "vectorized xi_v in [0, 15]:" in text and "consume blur_x:" in text
    # the lowered program: the first tile's left clamp is its own loop, then the steady state
    assert "          for x in [0, 0]:" in text and "          for x (steady) in [1, 15]:" in text


def test_golden_histogram_loop_nest():
    s = histogram_schedule()
    text = s.loop_nest([640, 480], input_sizes={"input": [640, 480]})
    check_golden("loop_nest_histogram.txt", text)
    assert "  for r.y in [0, 479]:\n    for rxo in [0, 159]:\n      unrolled rxi in [0, 3]:" in text
    assert text.index("produce hist:") < text.index("consume hist:") < text.index("produce out:")


def test_loop_nest_nested_compute_at_regions():
    p, a, b, cc = chain()
    s = ts.Schedule(p)
    s[cc].tile(x, y, xo, yo, xi, yi, 8, 8).fuse(xo, yo, "t").parallel("t")
    s[b].compute_at(cc, "t").split(y, yo, yi, 3)
    s[a].compute_at(b, yi)
    lines = s.loop_nest([64, 32], input_sizes={"input": [100, 100]}).splitlines()
    # a is computed one row at a time (its one-iteration y loop is gone from the program)
    assert lines[:8] == ["produce c:", "  parallel t in [0, 31]:", "    produce b:",
                         "      for yo in [0, 2]:", "        for yi in [0, 2]:",
                         "          produce a:", "            for x in [0, 8]:",
                         "              a(x, y) = ..."]
    s[a].compute_at(cc, yi)                    # b reads a outside c.yi: rejected
    with err(r"Func a \(pure stage\): it is computed at c.yi, but Func b \(pure stage\) reads it outside"):
        s.loop_nest([64, 32], input_sizes={"input": [100, 100]})


def test_lazy_export():
    assert ts.Schedule is Schedule


def test_round_up_on_an_update_is_refused():
    """Found by the fuzz profile: an update stage split with tail='round_up' under
    store_root updated points of other iterations' regions (a wrong result). As in
    Halide, an update's pure Vars take guard_with_if only."""
    x, y = ts.Var("x"), ts.Var("y")
    r = ts.RDom((0, 3))
    f, g = ts.Func("f"), ts.Func("g")
    f[x, y] = x + y
    f[x, y] = f[x, y] + r.x
    g[x, y] = f[x, y] * 2
    s = ts.Schedule(ts.Pipeline(g))
    with pytest.raises(ts.ScheduleError, match=r"Func f \(update 0\): split\(y, yo, yi, 8\): "
                                               r"tail='round_up' updates points past the region"):
        s[f].update(0).split(y, "yo", "yi", 8, tail="round_up")
    s[f].update(0).split(y, "yo", "yi", 8, tail="guard_with_if")


def test_gpu_blocks_inside_a_consumers_threads_are_refused_naming_the_func():
    """Found by the lowering property test under the fuzz profile: a Func computed inside
    its consumer's gpu_thread loop was given gpu_tile; lowering's verifier caught the
    nested block loop, now the error names the Func and its loop."""
    from tilesolve.lower import lower
    x, y = ts.Var("x"), ts.Var("y")
    r = ts.RDom((0, 2))
    inp = ts.ImageParam(ts.int32, 2, "inp")
    acc, g = ts.Func("acc"), ts.Func("g")
    acc[x, y] = 0
    acc[x, y] = acc[x, y] + inp[x + r.x, y]
    g[x, y] = acc[x, y] * 2
    pipe = ts.Pipeline(g)
    s = ts.Schedule(pipe, target="cuda")
    s[g].gpu_tile(x, "xb", "xt", 2)
    s[acc].compute_at(g, "xt")
    s[acc].update(0).gpu_tile(x, "xb", "xt", 2)
    with pytest.raises(ts.ScheduleError, match=r"Func acc is computed inside a gpu_thread loop "
                                               r".* its gpu_block loop acc\.s1\.x\.xb"):
        lower(pipe, s)


def test_codegen_options_validate_print_copy_and_round_trip():
    from tilesolve.model.schedule import Schedule
    x, y = ts.Var("x"), ts.Var("y")
    f = ts.Func("f")
    f[x, y] = x + y
    pipe = ts.Pipeline(f)
    s = Schedule(pipe)
    s[f].vectorize(x, 8)
    for bad in (0, 10001, 2.5, True, "100"):
        with pytest.raises(ScheduleError, match="unroll_threshold"):
            s.set_codegen(unroll_threshold=bad)
    assert s.set_codegen(unroll_threshold=120) is s
    assert "s.set_codegen(unroll_threshold=120)" in str(s)
    c = s.copy()
    assert c == s and c.codegen == {"unroll_threshold": 120}
    c.set_codegen(unroll_threshold=None)
    assert c.codegen == {} and c != s and "set_codegen" not in str(c)
    back = Schedule.from_json(s.to_json(), pipe)
    assert back == s
    assert "codegen" not in c.to_json()
    doc = json.loads(s.to_json())
    doc["codegen"] = {"inline_limit": 3}
    with pytest.raises(ScheduleError, match="'codegen' names 'inline_limit'"):
        Schedule.from_json(json.dumps(doc), pipe)
    doc["codegen"] = {"unroll_threshold": -4}
    with pytest.raises(ScheduleError, match="field 'codegen'.*unroll_threshold"):
        Schedule.from_json(json.dumps(doc), pipe)
    # fma: a bool; set alone, it leaves the other options as they are
    for bad in (1, "yes", 0.0):
        with pytest.raises(ScheduleError, match="fma must be a bool"):
            s.set_codegen(fma=bad)
    with pytest.raises(ScheduleError, match="'fast_math' is not a code-generation option"):
        s.set_codegen(fast_math=True)
    s.set_codegen(fma=True)
    assert s.codegen == {"unroll_threshold": 120, "fma": True}
    assert "s.set_codegen(fma=True, unroll_threshold=120)" in str(s)
    assert Schedule.from_json(s.to_json(), pipe) == s
    s.set_codegen(fma=None)
    assert s.codegen == {"unroll_threshold": 120}
