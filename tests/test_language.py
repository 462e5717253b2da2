"""The algorithm language: typing, hash-consing, printing, Pipelines, boundary Funcs."""
import pickle
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import PipelineError
from tilesolve.model import expr as E
from tilesolve.model.evaluate import evaluate, extent_key
from tilesolve.model.types import match_types

x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
b, u8, u16, u32 = ts.bool_, ts.uint8, ts.uint16, ts.uint32
i8, i16, i32, f32, f64 = ts.int8, ts.int16, ts.int32, ts.float32, ts.float64

# (a, b, expected): written out by hand from the rules in DESIGN.md / types.py
PROMOTION = [
    (u8, u8, u8), (u8, u16, u16), (u16, u32, u32), (i8, i16, i16), (i16, i32, i32),
    (u8, i8, i8), (u16, i8, i16), (u8, i32, i32), (u32, i16, i32), (u32, i32, i32),
    (i8, f32, f32), (u32, f32, f32), (i32, f64, f64), (f32, f64, f64),
    (b, u8, u8), (b, i32, i32), (b, f32, f32), (b, b, b), (f32, f32, f32),
]


@pytest.mark.parametrize("a,bt,want", PROMOTION, ids=lambda v: str(v))
def test_match_types_table(a, bt, want):
    assert match_types(a, bt) == want
    assert match_types(bt, a) == want


@pytest.mark.parametrize("a", ts.model.ALL_TYPES, ids=str)
def test_match_types_is_closed_and_idempotent(a):
    assert match_types(a, a) == a
    for other in ts.model.ALL_TYPES:
        t = match_types(a, other)
        assert t in (a, other) or (t.is_int() and t.bits == max(a.bits, other.bits))


def _typed(t, name):
    return ts.cast(t, ts.Var(name))


def test_binop_operands_are_cast_to_the_common_type():
    e = _typed(u8, "x") + _typed(i16, "y")
    assert e.type == i16
    assert isinstance(e.a, E.Cast) and e.a.type == i16 and e.b.type == i16
    assert (_typed(u16, "x") < _typed(f32, "y")).type == b


@pytest.mark.parametrize("t", [u8, u16, u32, i8, i16, i32, f32, f64], ids=str)
def test_python_int_adopts_the_other_operand_type(t):
    e = _typed(t, "x") + 1
    assert e.type == t and isinstance(e.b, E.Const) and e.b.type == t
    e2 = 3 * _typed(t, "x")
    assert e2.type == t and e2.a.type == t


def test_python_float_adoption():
    assert (_typed(f64, "x") + 1.5).type == f64            # float64 keeps float64
    assert (_typed(f64, "x") + 1.5).b.type == f64
    assert (_typed(u8, "x") * 0.5).type == f32             # int * float -> float32
    assert (x + 0.5).type == f32
    assert ts.model.as_expr(2).type == i32 and ts.model.as_expr(2.0).type == f32
    assert ts.model.as_expr(True).type == b


def test_python_number_adoption_in_helpers():
    assert ts.min(_typed(i16, "x"), 3).type == i16
    assert ts.clamp(_typed(u8, "x"), 0, 255).type == u8
    assert ts.select(x > 0, _typed(u8, "x"), 0).type == u8
    assert ts.select(x > 0, 1, _typed(f64, "x")).type == f64
    assert ts.sqrt(x).type == f32 and ts.sqrt(_typed(f64, "x")).type == f64
    assert (x // 2).type == i32 and (x / 2).type == i32
    assert isinstance(ts.cast(f32, x) // 2, E.Intrinsic)   # float // is floor(a / b)


def test_constants_wrap_into_their_type():
    assert E.Const(u8, 256).value == 0
    assert E.Const(i8, 200).value == -56
    assert E.Const(b, 5).value is True


# -- hash-consing -------------------------------------------------------------------
def test_structurally_equal_exprs_are_identical():
    assert (x + 1) is (x + 1)
    assert ts.Var("x") is x
    assert ts.min(x * 2, y) is ts.min(x * 2, y)
    assert (x + 1) is not (1 + x)                       # structure, not algebra
    assert E.Const(i32, 1) is not E.Const(f32, 1.0)
    assert E.Const(f32, 1.0) is not E.Const(f64, 1.0)


def test_eq_builds_a_node_whose_truth_is_identity():
    e = (x + 1) == (x + 1)
    assert isinstance(e, E.BinOp) and e.op == "eq" and e.type == b
    assert bool(e) is True
    assert bool((x + 1) == (x + 2)) is False
    assert bool((x + 1) != (x + 2)) is True


def test_exprs_as_dict_keys_and_set_members():
    d = {x + 1: "a", y * 2: "b"}
    assert d[x + 1] == "a" and d[y * 2] == "b"
    assert (x + 2) not in d
    assert len({x + 1, x + 1, 1 + x}) == 2
    assert [x, y].index(y) == 1


def test_calls_are_hash_consed():
    f = ts.Func("hc_f")
    f[x, y] = x + y
    assert f[x, y + 1] is f[x, y + 1]
    assert f[x, y] is not f[y, x]


def test_pickle_preserves_identity():
    k = ts.Param(f32, "pk", 2.0)
    e = ts.select(x > 2, ts.cast(f32, x) * k, 0.5)
    assert pickle.loads(pickle.dumps(e)) is e


def test_exprs_are_immutable():
    with pytest.raises(AttributeError):
        (x + 1).a = y


# -- printing ---------------------------------------------------------------------------
_NS = {"x": x, "y": y, "min": ts.min, "max": ts.max, "select": ts.select, "sqrt": ts.sqrt,
       "float32": f32, "uint8": u8, "int16": i16, "f64": lambda v: ts.cast(f64, v)}


@pytest.mark.parametrize("text,build", [
    ("x + 1", lambda: x + 1),
    ("(x + 1) * (y - 2) / 3", lambda: (x + 1) * (y - 2) / 3),
    ("x - (y - 1)", lambda: x - (y - 1)),
    ("x - y - 1", lambda: x - y - 1),
    ("x % 3 * 2", lambda: x % 3 * 2),
    ("min(x, y * 2)", lambda: ts.min(x, y * 2)),
    ("select(x > y, x, 0)", lambda: ts.select(x > y, x, 0)),
    ("(x > 1) & (y < 2)", lambda: (x > 1) & (y < 2)),
    ("((x > 1) | (y > 1)) & (x < 3)", lambda: ((x > 1) | (y > 1)) & (x < 3)),
    ("(x < y) == (y < x)", lambda: (x < y) == (y < x)),
    ("x + 1 >= y", lambda: x + 1 >= y),
    ("~(x > 1)", lambda: ~(x > 1)),
    ("float32(x) * 0.5", lambda: ts.cast(f32, x) * 0.5),
    ("sqrt(float32(x))", lambda: ts.sqrt(x)),
    ("uint8(x) + uint8(1)", lambda: ts.cast(u8, x) + 1),
    ("float64(x) + f64(1.5)", lambda: ts.cast(f64, x) + 1.5),
])
def test_expr_printing_and_round_trip(text, build):
    e = build()
    assert str(e) == text
    assert repr(e) == text
    # The printed text is valid user syntax that rebuilds the very same node.
    ns = dict(_NS, float64=f64)
    assert eval(text, ns) is e


def test_printing_of_params_extents_and_calls():
    inp = ts.ImageParam(u8, 2, "pin")
    k = ts.Param(i32, "kk")
    assert str(inp[x, y + k]) == "pin[x, y + kk]"
    assert str(inp.width() - 1) == "pin.extent(0) - 1"
    r = ts.RDom((0, 4), (1, 3), name="rr")
    assert str(r.x + r.y) == "rr.x + rr.y"


def test_func_printing():
    f = ts.Func("fp")
    f[x, y] = ts.select(x > y, x * 2 + 1, (x - 1) % 3)
    f[x, 0] = f[x, 0] + 1
    assert repr(f) == "Func('fp')"
    assert str(f) == ("fp[x, y] = select(x > y, x * 2 + 1, (x - 1) % 3)\n"
                      "fp[x, 0] = fp[x, 0] + 1")
    assert str(ts.Func("undef_fp")) == "undef_fp (undefined)"


# -- Pipelines ---------------------------------------------------------------------------
def _diamond():
    inp = ts.ImageParam(f32, 2, "din")
    k = ts.Param(f32, "dk", 1.0)
    a, bb, cc, unused = ts.Func("da"), ts.Func("db"), ts.Func("dc"), ts.Func("dunused")
    a[x, y] = inp[x, y] * k
    bb[x, y] = inp[x, y] + 1
    cc[x, y] = a[x, y] + bb[x, y]
    unused[x, y] = cc[x, y]
    return ts.Pipeline(cc), inp, k


def test_pipeline_order_producers_consumers():
    p, inp, k = _diamond()
    assert p.order() == ["da", "db", "dc"]             # deterministic, producers first
    assert list(p.funcs) == ["da", "db", "dc"]         # the unused consumer is not reached
    assert p.producers("dc") == ["da", "db"]
    assert p.producers("da") == ["din"]
    assert p.consumers("din") == ["da", "db"]
    assert p.consumers("da") == ["dc"] and p.consumers("dc") == []
    assert p.images == {"din": inp} and p.params == {"dk": k}
    assert p.output_names == ("dc",) and p.is_output("dc") and not p.is_output("da")
    assert str(p).splitlines()[0] == "da[x, y] = din[x, y] * dk"
    with pytest.raises(PipelineError, match="no Func named 'zz'"):
        p.func("zz")


def test_pipeline_topological_order_is_respected():
    f = [ts.Func(f"chain{i}") for i in range(5)]
    f[0][x] = x
    for i in range(1, 5):
        f[i][x] = f[i - 1][x - 1] + f[max(0, i - 2)][x]
    p = ts.Pipeline([f[4], f[2]])
    order = p.order()
    for n in order:
        for prod in p.producers(n):
            assert order.index(prod) < order.index(n)
    assert p.output_names == ("chain4", "chain2")


def test_pipeline_finds_params_in_rdoms_and_update_sites():
    n = ts.Param(i32, "nn", 4)
    lut = ts.ImageParam(u8, 1, "lut")
    r = ts.RDom((0, n), name="rn")
    h = ts.Func("h_sites")
    h[x] = 0
    h[ts.cast(i32, lut[r.x])] += 1
    p = ts.Pipeline(h)
    assert p.params == {"nn": n} and list(p.images) == ["lut"]
    assert p.producers("h_sites") == ["lut"]


def test_pipeline_makes_duplicate_names_unique():
    """A helper that builds a Func of one name, called twice: the Func reached first
    from the outputs keeps the name, the other becomes dup_2 (Halide's names are unique
    too), and the pipeline computes what was written."""
    f1, f2 = ts.Func("dup"), ts.Func("dup")
    f1[x] = x
    f2[x] = f1[x] + 1
    p = ts.Pipeline(f2)
    assert (f2.name, f1.name) == ("dup", "dup_2") and p.order() == ["dup_2", "dup"]
    assert ts.reference.realize(p, [3]).tolist() == [1, 2, 3]
    g = ts.Func("dup_2")                 # a user's own name is never taken
    g[x] = f2[x] * 2
    p = ts.Pipeline(g)
    assert g.name == "dup_2" and f1.name == "dup_2_2"
    assert ts.reference.realize(p, [3]).tolist() == [2, 4, 6]


# -- boundary conditions ------------------------------------------------------------------
_BOUNDARY_INDEX = {   # extent 4, x = -3..6, written out by hand
    "repeat_edge":     [0, 0, 0, 0, 1, 2, 3, 3, 3, 3],
    "mirror_image":    [2, 1, 0, 0, 1, 2, 3, 3, 2, 1],
    "mirror_interior": [3, 2, 1, 0, 1, 2, 3, 2, 1, 0],
}


@pytest.mark.parametrize("kind", sorted(_BOUNDARY_INDEX))
def test_boundary_index_functions(kind):
    inp = ts.ImageParam(u8, 2, "bin")
    f = getattr(ts.boundary, kind)(inp)
    assert f.name == f"bin_{kind}" and f.dimensions() == 2 and f.type == u8
    assert all(isinstance(a, ts.Var) for a in f.args) and not f.updates
    call = f.value
    assert isinstance(call, E.Call) and call.target is inp
    env = {f.args[0].name: np.arange(-3, 7, dtype=np.int32), extent_key("bin", 0): np.int32(4)}
    got = evaluate(call.args[0], env)
    assert got.tolist() == _BOUNDARY_INDEX[kind]


def test_constant_exterior_definition():
    inp = ts.ImageParam(f32, 1, "cin")
    f = ts.boundary.constant_exterior(inp, 2.5, name="cext")
    assert f.name == "cext" and f.type == f32
    v = f.value
    assert isinstance(v, E.Select) and v.true_value is E.Const(f32, 2.5)
    seen = []
    env = {f.args[0].name: np.arange(-2, 6, dtype=np.int32), extent_key("cin", 0): np.int32(4)}
    out = evaluate(v, env, lambda t, idx: seen.append(idx[0].copy()) or idx[0].astype(np.float32))
    assert out.tolist() == [2.5, 2.5, 0, 1, 2, 3, 2.5, 2.5]
    assert seen[0].min() >= 0 and seen[0].max() <= 3     # reads stay inside the input


def test_boundary_needs_an_imageparam_or_a_func():
    with pytest.raises(PipelineError, match="applies to an ImageParam or a Func, got 3"):
        ts.boundary.repeat_edge(3)


def test_invert_of_an_integer_is_its_bitwise_complement_everywhere():
    """``~`` on an integer is Halide's bitwise not: the reference, the CPU build and the
    CUDA text (on the CPU shim) give Halide's answer; on a bool it stays logical."""
    img = ts.ImageParam(ts.uint8, 2, "img")
    x, y = ts.Var("x"), ts.Var("y")
    f = ts.Func("inv")
    f[x, y] = ~img[x, y]
    g = ts.Func("g")
    g[x, y] = ts.cast(ts.uint16, img[x, y]) * ts.cast(ts.uint16, f[x, y])
    assert f.type == ts.uint8
    pipe = ts.Pipeline(g)
    a = np.array([[0, 5, 200, 255]], np.uint8)
    want = np.array([[0, 1250, 11000, 0]], np.uint16)          # Halide's result
    np.testing.assert_array_equal(ts.reference.realize(pipe, [4, 1], img=a), want)
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", {"g": [4, 1], "img": [4, 1]},
                          method="greedy")
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([4, 1], img=a), want)
    if shutil.which("g++"):
        from tilesolve.backend.cuda import emulate_cuda
        gs = ts.Schedule(pipe, target="cuda")
        gs[g].gpu_tile(x, y, ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi"), 4, 1)
        np.testing.assert_array_equal(emulate_cuda(pipe, gs).realize([4, 1], img=a), want)
    assert (~(x > 1)).type == ts.bool_
    assert ts.reference.realize(ts.Pipeline(_func_of(~(x > 1))), [3]).tolist() == [1, 1, 0]


def _func_of(e):
    f = ts.Func("fe")
    f[ts.Var("x")] = e
    return f


def test_an_update_of_an_undefined_func_starts_from_the_identity():
    """``f[...] += e`` with no pure definition: f is 0 everywhere first (1 for *= and
    /=), in the type of e, as in Halide; reading an undefined Func is still an error."""
    inp = ts.ImageParam(ts.uint8, 1, "img8")
    r = ts.RDom((0, 10))
    h = ts.Func("h_implicit")
    h[ts.cast(ts.int32, inp[r.x]) % 4] += 1
    assert h.type == ts.int32 and str(h.pure.value) == "0"
    data = np.arange(10, dtype=np.uint8)
    pipe = ts.Pipeline(h)
    want = np.bincount(data % 4, minlength=4)
    np.testing.assert_array_equal(ts.reference.realize(pipe, [4], img8=data), want)
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", {"h_implicit": [4], "img8": [10]},
                          method="greedy")
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([4], img8=data), want)
    g = ts.Func("g_implicit")
    g[x, r.x] *= 2.0
    assert g.args[0] is x and g.type == ts.float32 and str(g.pure.value) == "1.0"
    u, k = ts.Func("u_undefined"), ts.Func("k_user")
    with pytest.raises(PipelineError, match="u_undefined is called but never defined"):
        k[x] = u[x] + 1
    with pytest.raises(PipelineError, match="u_undefined is called but never defined"):
        k[x] = ts.sqrt(u[x])


def test_params_take_estimates():
    """A Param with no default that sizes an RDom: the solver takes its value from
    ``estimates={name: value}`` or ``set_estimate``, and says so when it has neither."""
    from tilesolve.errors import SolverError
    inp = ts.ImageParam(ts.float32, 1, "inp_pe")
    n = ts.Param(ts.int32, "taps_pe")
    r = ts.RDom((0, n))
    f = ts.Func("f_pe")
    f[x] = ts.sum(inp[x + r.x])
    pipe = ts.Pipeline(f)
    est = {"f_pe": [100], "inp_pe": [110]}
    with pytest.raises(SolverError, match=r"no default and no estimate: taps_pe.*set_estimate"):
        ts.solve_schedule(pipe, "xeon-e5-2620v3", est, method="greedy")
    with pytest.raises(SolverError, match="estimate for Param 'taps_pe' must be one number"):
        ts.solve_schedule(pipe, "xeon-e5-2620v3", {**est, "taps_pe": [5]}, method="greedy")
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", {**est, "taps_pe": 5}, method="greedy")
    n.set_estimate(7)
    assert n.estimate == 7 and n.default is None
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", est, method="greedy")
    data = np.arange(20, dtype=np.float32)
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([10], inp_pe=data, taps_pe=3),
                                  ts.reference.realize(pipe, [10], inp_pe=data, taps_pe=3))


@pytest.mark.parametrize("kind", ["repeat_edge", "mirror_image", "mirror_interior",
                                  "constant_exterior"])
def test_boundary_conditions_on_a_func_with_bounds_on_some_dimensions(kind):
    """``bc(f, [(min, extent), None])``: x is kept inside [1, 1 + W) (a Param), y is not
    touched; the compiled result equals the reference and an index written out by hand."""
    xx, yy = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "inp_bc")
    g = ts.Func("g_bc")
    g[xx, yy] = inp[xx, yy] * 2
    w = ts.Param(ts.int32, "w_bc", 5)
    bc = getattr(ts.boundary, kind)
    args = (9.0,) if kind == "constant_exterior" else ()
    b = bc(g, *args, [(1, w), None])
    o = ts.Func("o_bc")
    o[xx, yy] = b[xx - 3, yy] + b[xx + 4, yy]
    pipe = ts.Pipeline(o)
    img = np.random.default_rng(0).random((4, 12), dtype=np.float32)
    ref = ts.reference.realize(pipe, [6, 4], inp_bc=img)
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", {"o_bc": [6, 4], "inp_bc": [12, 4]},
                          method="greedy")
    np.testing.assert_array_equal(ts.compile(pipe, s).realize([6, 4], inp_bc=img), ref)
    xs = np.arange(6)
    if kind == "repeat_edge":
        left, right = np.clip(xs - 3, 1, 5), np.clip(xs + 4, 1, 5)
        np.testing.assert_array_equal(ref, 2 * img[:, left] + 2 * img[:, right])
    if kind == "constant_exterior":
        inside = lambda v: (v >= 1) & (v < 6)                     # noqa: E731
        col = lambda v: np.where(inside(v), 2 * img[:, np.clip(v, 1, 5)], 9.0)   # noqa: E731
        np.testing.assert_array_equal(ref, col(xs - 3) + col(xs + 4))


def test_boundary_condition_errors_name_the_source():
    g = ts.Func("g_bc_err")
    g[x, y] = x + y
    with pytest.raises(PipelineError, match="repeat_edge of Func g_bc_err needs bounds"):
        ts.boundary.repeat_edge(g)
    with pytest.raises(PipelineError, match="1 bounds for 2 dimensions"):
        ts.boundary.mirror_image(g, [(0, 4)])
    inp = ts.ImageParam(ts.uint8, 2, "inp_bc_err")
    with pytest.raises(PipelineError, match="the name is name="):
        ts.boundary.repeat_edge(inp, "clamped")


def test_rdom_over_an_input_and_a_where_on_pure_vars():
    """``RDom(img)`` spans the input's domain; ``r.where(r.x <= x)`` a triangle (a
    running sum), in the reference and the compiled build (checked)."""
    xx, yy = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.float32, 2, "a_tri")
    r = ts.RDom(a)
    assert len(r) == 2 and str(r.extents[0]) == "a_tri.extent(0)"
    total = ts.Func("total_tri")
    total[xx] = 0.0
    total[xx] += a[r.x, r.y] * ts.cast(ts.float32, xx + 1)
    q = ts.RDom((0, 16), name="q_tri")
    q.where(q.x <= xx)
    run = ts.Func("run_tri")
    run[xx, yy] = 0.0
    run[xx, yy] += a[q.x, yy]
    pipe = ts.Pipeline([run, total])
    img = np.random.default_rng(1).random((5, 16), dtype=np.float32)
    ref_run, ref_total = ts.reference.realize(pipe, {"run_tri": [16, 5], "total_tri": [3]},
                                              a_tri=img)
    np.testing.assert_allclose(ref_run, np.cumsum(img, axis=1), rtol=1e-5)
    np.testing.assert_allclose(ref_total, img.sum() * np.arange(1, 4), rtol=1e-5)
    est = {"run_tri": [16, 5], "total_tri": [3], "a_tri": [16, 5]}
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", est, method="greedy")
    got = ts.compile(pipe, s, checked=True).realize({"run_tri": [16, 5], "total_tri": [3]},
                                                   a_tri=img)
    np.testing.assert_array_equal(got[0], ref_run)
    np.testing.assert_allclose(got[1], ref_total, rtol=1e-5)


def test_zero_dimensional_funcs():
    """``s[()] = ...`` and ``s[()] += ...``: one point, read by ``s[()]``; as an output,
    realized with sizes ``[]`` into a 0-d array."""
    a = ts.ImageParam(ts.float32, 1, "a_zd")
    r = ts.RDom(a)
    total = ts.Func("total_zd")
    total[()] = 0.0
    total[()] += a[r.x]
    peak = ts.Func("peak_zd")
    peak[()] = ts.maximum(a[r.x])
    count = ts.Func("count_zd")
    count[()] += ts.cast(ts.int32, a[r.x] > 2.0)         # implicit zero, zero-dimensional
    norm = ts.Func("norm_zd")
    norm[x] = a[x] / total[()] + peak[()]
    assert total.is_scalar and total.dimensions() == 1 and not norm.is_scalar
    data = np.arange(1, 6, dtype=np.float32)
    want = data / data.sum() + data.max()
    pipe = ts.Pipeline(norm)
    np.testing.assert_allclose(ts.reference.realize(pipe, [5], a_zd=data), want, rtol=1e-6)
    for method in ("greedy", "ilp"):
        s = ts.solve_schedule(pipe, "xeon-e5-2620v3", {"norm_zd": [5], "a_zd": [5]},
                              method=method)
        np.testing.assert_allclose(ts.compile(pipe, s).realize([5], a_zd=data), want, rtol=1e-6)
    both = ts.Pipeline([total, count])
    ref = ts.reference.realize(both, [], a_zd=data)
    assert [o.shape for o in ref] == [(), ()] and ref[0] == 15.0 and ref[1] == 3
    s = ts.solve_schedule(both, "xeon-e5-2620v3", {"total_zd": [], "count_zd": [], "a_zd": [5]},
                          method="greedy")
    got = ts.compile(both, s).realize([], a_zd=data)
    assert [o.shape for o in got] == [(), ()] and got[0] == 15.0 and got[1] == 3
