"""``Schedule.wrap``: Halide's ``in()`` wrapper Funcs as a schedule directive.

A wrapper ``w(v...) = source(v...)`` is read by the listed consumers instead of the
source; the user's Pipeline never changes (the Schedule's ``view`` holds the wrapper).
Every compiled result is checked against the app's numpy reference (or the reference
interpreter); the lowered IR shows where the loads come from; on the GPU (the CUDA
text emulated on the CPU) a wrapped input staged per block in shared memory moves
fewer global sectors of the input per output point than the unwrapped schedule.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend import cuda as C
from tilesolve.backend.cuda import emulate as EM
from tilesolve.backend.cuda import nvcc
from tilesolve.errors import ScheduleError
from tilesolve.lower import ir as L
from tilesolve.lower import lower
from tilesolve.model.visit import walk

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
BLUR = get_app("blur")
UNSHARP = get_app("unsharp")


# -- IR helpers ---------------------------------------------------------------------------
def _loads(stmt) -> set:
    """The buffers loaded under ``stmt``, outside the produce blocks nested in it (other
    Funcs computed inside its loops)."""
    out, stack = set(), [stmt]
    while stack:
        s = stack.pop()
        if isinstance(s, L.ProducerConsumer) and s.is_producer and s is not stmt:
            continue
        for e in L.stmt_exprs(s):
            out.update(n.buffer for n in walk(e) if isinstance(n, L.Load))
        stack.extend(L.stmt_children(s))
    return out


def _producer(body, name):
    found = [s for s in L.walk_stmts(body)
             if isinstance(s, L.ProducerConsumer) and s.is_producer and s.name == name]
    assert found, f"no produce {name} in the lowered program"
    return found


def _loads_of(body, name) -> set:
    out = set()
    for p in _producer(body, name):
        out |= _loads(p)
    return out


def _allocated(body) -> set:
    return {s.name for s in L.walk_stmts(body) if isinstance(s, L.Allocate)}


def _blur(sizes):
    pipe, _ = BLUR.build(sizes)
    inputs = BLUR.make_inputs(sizes, seed=1)
    return pipe, inputs, BLUR.numpy_reference(inputs, sizes)


def _blur_cpu(pipe, wrap_at):
    s = ts.Schedule(pipe)
    blur_x, blur_y = pipe.funcs["blur_x"], pipe.funcs["blur_y"]
    s[blur_y].tile("x", "y", "xo", "yo", "xi", "yi", 16, 8)
    s[blur_x].compute_at(blur_y, "xo")
    h = s.wrap("input", "blur_x")
    if wrap_at == "root":
        h.compute_root()
    elif wrap_at == "xo":
        h.compute_at("blur_y", "xo")
    return s


# -- 1. CPU ----------------------------------------------------------------------------------
@pytest.mark.parametrize("wrap_at", ["xo", "root"])
def test_cpu_blur_with_a_wrapped_input_equals_the_reference(wrap_at):
    sizes = [37, 21]
    pipe, inputs, want = _blur(sizes)
    s = _blur_cpu(pipe, wrap_at)
    assert s.wrappers == {"input_in_blur_x": ("input", ("blur_x",))}
    assert s.pipeline is pipe and "input_in_blur_x" not in pipe.funcs
    assert list(s.view.funcs) == ["input_in_blur_x", "blur_x", "blur_y"]
    # the user's Funcs are unchanged: blur_x still reads the input there
    assert "input" in {n.name for n in walk(pipe.funcs["blur_x"].value)
                       if hasattr(n, "target")}
    low = lower(pipe, s)
    assert "input_in_blur_x" in _allocated(low.body)
    assert _loads_of(low.body, "blur_x") == {"input_in_blur_x"}
    assert _loads_of(low.body, "input_in_blur_x") == {"input"}
    got = ts.compile(pipe, s).realize(sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_the_default_inline_wrapper_lowers_as_no_wrap():
    pipe, _, _ = _blur([32, 16])
    plain = ts.Schedule(pipe)
    plain["blur_y"].tile("x", "y", "xo", "yo", "xi", "yi", 16, 8)
    plain["blur_x"].compute_at("blur_y", "xo")
    wrapped = plain.copy()
    h = wrapped.wrap("input", "blur_x")
    assert wrapped.func_schedule("input_in_blur_x").is_inline()
    assert wrapped.is_default("input_in_blur_x") and h._func == "input_in_blur_x"
    a = L.stmt_str(lower(pipe, plain).body)
    b = L.stmt_str(lower(pipe, wrapped).body)
    assert "input_in" not in b and a == b
    assert plain.wrappers == {} and plain.view is pipe        # the copy kept its own


# -- 2. GPU (CUDA text emulated on the CPU) ----------------------------------------------
def _blur_gpu(pipe, wrap: bool):
    s = ts.Schedule(pipe, target="cuda")
    s["blur_y"].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 32, 8)
    s["blur_x"].compute_at("blur_y", "xo").store_in("shared").gpu_threads("x", "y")
    if wrap:
        (s.wrap("input", ["blur_x"]).compute_at("blur_y", "xo").store_in("shared")
         .gpu_threads("_x", "_y"))
    return s


@needs_cxx
@pytest.mark.parametrize("sizes", [[64, 16], [45, 19]])
def test_gpu_input_staged_in_shared_memory_equals_the_reference_with_fewer_sectors(sizes):
    pipe, inputs, want = _blur(sizes)
    per_point = {}
    for wrap in (False, True):
        s = _blur_gpu(pipe, wrap)
        low = lower(pipe, s)
        shared = {a.name for a in L.walk_stmts(low.body)
                  if isinstance(a, L.Allocate) and a.memory == "shared"}
        assert shared == ({"blur_x", "input_in_blur_x"} if wrap else {"blur_x"})
        if wrap:
            assert _loads_of(low.body, "blur_x") == {"input_in_blur_x"}
        got, rep = EM.run(pipe, s, sizes, inputs, count_sectors=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        per_point[wrap] = rep.by_buffer("sectors")["input"][0] / rep.output_points
        assert rep.by_buffer("sectors")["input"][1] == 0
    # three x-taps of blur_x over ten rows, from global memory, against one coalesced
    # load of the block's 34 x 10 input box
    assert per_point[True] < 0.5 * per_point[False]


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_gpu_staged_input_kernel_builds_with_nvcc():
    """nvcc compiles the kernel; ptxas' shared memory is both staged buffers (34 x 10
    input floats, 32 x 10 blur_x floats), within the h100 spec's limits."""
    pipe, _, _ = _blur([64, 16])
    build = C.build_cuda(pipe, _blur_gpu(pipe, True), "h100")
    assert build.program.kernels           # the interior blocks' and the border blocks'
    for k in build.program.kernels:
        assert k.shared_bytes == 4 * (34 * 10 + 32 * 10)
        assert build.resources[k.name].shared_bytes == k.shared_bytes
        assert k.block_const == (34, 10, 1)     # the staged box's threads


# -- 3. Several consumers --------------------------------------------------------------------
def _unsharp(sizes):
    pipe, _ = UNSHARP.build(sizes)
    inputs = UNSHARP.make_inputs(sizes, seed=2)
    return pipe, inputs, UNSHARP.numpy_reference(inputs, sizes)


@pytest.mark.parametrize("consumers", [None, ["output"]])
def test_unsharp_input_wrapped_for_every_caller_or_one(consumers):
    sizes = [19, 13, 3]
    pipe, inputs, want = _unsharp(sizes)
    callers = pipe.consumers("input")
    assert callers == ["input_repeat_edge", "output"]
    s = ts.Schedule(pipe)
    s["input_repeat_edge"].compute_root()
    s["gray"].compute_root()
    h = s.wrap("input", consumers).compute_root()
    name = "input_in" if consumers is None else "input_in_output"
    assert h._func == name
    assert s.wrappers[name] == ("input", tuple(callers if consumers is None else consumers))
    low = lower(pipe, s)
    assert _loads_of(low.body, name) == {"input"}
    assert "input" not in _loads_of(low.body, "output") and name in _loads_of(low.body, "output")
    edge = _loads_of(low.body, "input_repeat_edge")
    assert edge == ({name} if consumers is None else {"input"})
    got = ts.compile(pipe, s).realize(sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_func_wrapped_after_its_input_and_chained_wrappers():
    """blur_x wrapped for blur_y after the input was wrapped for blur_x (blur_x is
    rebuilt twice); then the wrapper of the input wrapped again."""
    sizes = [23, 17]
    pipe, inputs, want = _blur(sizes)
    s = ts.Schedule(pipe)
    s["blur_y"].split("y", "yo", "yi", 4)
    s.wrap("input", "blur_x").compute_root()
    s["blur_x"].compute_root()
    s.wrap("blur_x", "blur_y").compute_at("blur_y", "yo")
    s.wrap("input_in_blur_x", "blur_x", name="staged").compute_at("blur_x", "y")
    assert list(s.wrappers) == ["input_in_blur_x", "blur_x_in_blur_y", "staged"]
    assert s.view.funcs["blur_x_in_blur_y"].pure.args == pipe.funcs["blur_x"].pure.args
    low = lower(pipe, s)
    assert _loads_of(low.body, "blur_x") == {"staged"}
    assert _loads_of(low.body, "staged") == {"input_in_blur_x"}
    assert _loads_of(low.body, "blur_y") == {"blur_x_in_blur_y"}
    got = ts.compile(pipe, s).realize(sizes, **inputs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    t = ts.Schedule.from_json(s.to_json(), pipe)
    assert t == s and t.to_json() == s.to_json()


def test_an_output_wrapped_for_another_output_and_rdom_predicates():
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "inp")
    a, b, tot = ts.Func("a"), ts.Func("b"), ts.Func("tot")
    a[x] = inp[x] * 2
    b[x] = a[x] + a[x] * a[x]
    r = ts.RDom((0, 8), name="r")
    r.where(a[r.x] > 1.0)                  # an RDom predicate that calls the source
    tot[x] = ts.cast(ts.float32, 0)
    tot[x] += a[r.x] + ts.cast(ts.float32, x)
    pipe = ts.Pipeline([a, b, tot])
    s = ts.Schedule(pipe)
    s.wrap(a, [b, tot]).compute_root()
    view = s.view
    assert view.output_names == pipe.output_names
    upd = view.funcs["tot"].updates[0]
    assert upd.rdom is not pipe.funcs["tot"].updates[0].rdom
    pred_calls = {n.name for p in upd.rdom.predicates for n in walk(p) if hasattr(n, "target")}
    assert pred_calls == {"a_in_b_tot"}
    assert all(n.rdom is upd.rdom for n in walk(upd.value) if hasattr(n, "rdom"))
    arr = np.random.default_rng(0).random(16, dtype=np.float32)
    low = lower(pipe, s)
    assert _loads_of(low.body, "b") == {"a_in_b_tot"}
    assert _loads_of(low.body, "tot") <= {"a_in_b_tot", "tot"}
    got = ts.compile(pipe, s).realize([8], inp=arr)
    want = ts.reference.realize(pipe, [8], inp=arr)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


# -- 4. Errors ---------------------------------------------------------------------------------
def test_errors_name_what_is_at_fault():
    pipe, _, _ = _blur([16, 8])
    s = ts.Schedule(pipe)
    with pytest.raises(ScheduleError, match="'nope'"):
        s.wrap("nope")
    with pytest.raises(ScheduleError, match="Func blur_y does not call input"):
        s.wrap("input", "blur_y")
    with pytest.raises(ScheduleError, match="consumer zzz is not a Func"):
        s.wrap("input", ["zzz"])
    with pytest.raises(ScheduleError, match="consumer input is an input"):
        s.wrap("blur_x", ["input"])
    with pytest.raises(ScheduleError, match="the name blur_y is already"):
        s.wrap("input", "blur_x", name="blur_y")
    with pytest.raises(ScheduleError, match="listed twice"):
        s.wrap("input", ["blur_x", "blur_x"])
    with pytest.raises(ScheduleError, match="no Func calls blur_y"):
        s.wrap("blur_y")
    assert s.directives == () and s.view is pipe        # nothing changed
    h = s.wrap("input", "blur_x")
    n = len(s.directives)
    assert s.wrap("input", ["blur_x"])._func == h._func and len(s.directives) == n
    with pytest.raises(ScheduleError, match="already wrapped .* as input_in_blur_x"):
        s.wrap("input", "blur_x", name="other")
    with pytest.raises(ScheduleError, match="input is an input of the pipeline"):
        s["input"]
    other = ts.Func("blur_x")
    other[ts.Var("x")] = ts.Var("x") * 1.0
    with pytest.raises(ScheduleError, match="blur_x is not the Func"):
        s.wrap("input", [other])


def test_a_tuple_source_is_refused():
    x = ts.Var("x")
    inp = ts.ImageParam(ts.float32, 1, "inp")
    t, out = ts.Func("t"), ts.Func("out")
    t[x] = (inp[x], inp[x] * 2)
    out[x] = t[x][0] + t[x][1]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    with pytest.raises(ScheduleError, match="Func t is a Tuple"):
        s.wrap(t, [out])


def test_compute_at_checks_use_the_wrapped_call_graph():
    pipe, _, _ = _blur([16, 8])
    s = ts.Schedule(pipe)
    s["blur_y"].tile("x", "y", "xo", "yo", "xi", "yi", 8, 4)
    h = s.wrap("input", "blur_x")
    h.compute_at("blur_y", "xo")
    # a wrapper computed at blur_x's loops needs blur_x to have loops there
    with pytest.raises(ScheduleError, match="blur_x is inlined"):
        s["input_in_blur_x"].compute_at("blur_x", "x")
    s["blur_x"].compute_root()      # at root, it reads the wrapper computed inside blur_y
    msg = r"Func input_in_blur_x \(pure stage\): it is computed at blur_y.xo, but Func blur_x"
    with pytest.raises(ScheduleError, match=msg):
        s.validate()
    with pytest.raises(ScheduleError, match=msg):
        lower(pipe, s)
    s["input_in_blur_x"].compute_at("blur_x", "y")
    s.validate()


# -- 5. JSON, printed code, copy ------------------------------------------------------------
def test_json_print_and_copy_round_trip():
    pipe, inputs, want = _blur([45, 19])
    s = _blur_gpu(pipe, True)
    s.wrap("blur_x", name="bx_stage")           # inline, for every caller
    text = s.to_json()
    t = ts.Schedule.from_json(text, pipe)
    assert t == s and t.to_json() == text and t.wrappers == s.wrappers
    code = str(s)
    assert 's.wrap("input", ["blur_x"])' in code and 's.wrap("blur_x", name="bx_stage")' in code
    assert 's["input_in_blur_x"].compute_at(blur_y, xo).store_in("shared")' in code
    u = ts.Schedule(pipe, target="cuda")
    ns = {"ts": ts, "s": u, **pipe.funcs, "x": ts.Var("x"), "y": ts.Var("y")}
    exec(code, ns)        # noqa: S102 - the schedule's own printed code
    assert u.func_schedules() == s.func_schedules() and u.wrappers == s.wrappers
    assert str(u) == code
    c = s.copy()
    assert c == s and c.view is s.view and c.wrappers == s.wrappers
    c.wrap("input_in_blur_x", "blur_x")
    assert "input_in_blur_x_in_blur_x" not in s.wrappers and c != s
    assert "wraps input for blur_x" in s.explain()
    assert "input_in_blur_x" in s.func_schedules() and s.func_schedule("input_in_blur_x")
    assert "produce input_in_blur_x" in s.loop_nest([45, 19])


def test_the_halide_bridge_refuses_a_scheduled_wrapper_and_keeps_an_inlined_one():
    pytest.importorskip("halide", reason="Halide's Python bindings are not installed")
    from tilesolve.interop import halide as th
    sizes = [20, 12]
    pipe, inputs, want = _blur(sizes)
    s = ts.Schedule(pipe)
    s["blur_x"].compute_root()
    s.wrap("input", "blur_x")                       # inlined: the same algorithm
    hp = th.translate(pipe)
    hp.apply_schedule(s)
    np.testing.assert_allclose(hp.realize(sizes, **inputs), want, rtol=1e-6, atol=1e-6)
    s["input_in_blur_x"].compute_root()
    with pytest.raises(ScheduleError, match="input_in_blur_x is scheduled"):
        th.translate(pipe).apply_schedule(s)
