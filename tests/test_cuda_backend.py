"""CUDA backend: generated CUDA C runs on the CPU shim and equals the reference; nvcc
compiles it for sm_80/sm_90; ptxas's report parses and is checked against the spec.

No GPU is needed: the emulation compiles the generated kernel text with g++ and the
CPU shim (``backend/cuda/cuda_cpu_shim.h``); tests that need nvcc or a GPU skip with
the reason.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend import cuda as C
from tilesolve.backend.cuda import nvcc, runtime
import cuda_samples as S
from tilesolve.lower.extent_bound import const_upper as upper_bound
from tilesolve.backend.cuda.cexpr import PRELUDE
from tilesolve.backend.cuda.codegen import generate
from tilesolve.backend.cuda.emulate import EmulatedPipeline, EmulationError
from tilesolve.errors import LoweringError
from tilesolve.lower.ir import (Allocate, Argument, Barrier, Block, For, LetStmt,
                                LoweredPipeline, Store, load)
from tilesolve.model import expr as E
from tilesolve.model import types as T
from tilesolve.model.evaluate import evaluate
from tilesolve.model.visit import mutate
from tilesolve.specs import load_spec

V, c = E.Var, S.c
needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")
needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")
rng = np.random.default_rng(7)


def _img(h, w):
    return rng.random((h, w), dtype=np.float32)


# ---------------------------------------------------------------------------
# Hand-built IR on the shim, against reference.realize
# ---------------------------------------------------------------------------
@needs_cxx
@pytest.mark.parametrize("w,h", [(50, 37), (8, 8), (3, 11)])
def test_map2d_matches_reference(w, h):
    emu = EmulatedPipeline(generate(S.map2d_ir()))
    a = _img(h, w)
    np.testing.assert_array_equal(emu.realize([w, h], inp=a),
                                  ts.reference.realize(S.map2d_pipeline(), [w, h], inp=a))


@needs_cxx
def test_blur_shared_memory_and_barrier_matches_reference():
    prog = generate(S.blur_ir())
    text = prog.source
    assert "__shared__ float blur_x[160];" in text and "__syncthreads();" in text
    assert "if ((ts_i32)threadIdx.y < 8)" in text          # 10-row producer, 8-row consumer
    assert prog.kernels[0].block_const == (16, 10, 1)
    emu = EmulatedPipeline(prog)
    for w, h in [(50, 37), (16, 8), (5, 3)]:
        a = _img(h, w)
        np.testing.assert_array_equal(emu.realize([w, h], input=a),
                                      ts.reference.realize(S.blur_pipeline(), [w, h], input=a))


@needs_cxx
def test_missing_barrier_gives_wrong_result():
    """Without the barrier, consumers read shared memory before it is written: the shim
    (threads run to the next barrier in turn) must show it."""
    a = _img(37, 50)
    out = EmulatedPipeline(generate(S.blur_ir(barrier=False))).realize([50, 37], input=a)
    ref = ts.reference.realize(S.blur_pipeline(), [50, 37], input=a)
    assert not np.allclose(out, ref, equal_nan=False)


@needs_cxx
def test_histogram_scatter_runs_on_one_thread():
    prog = generate(S.hist_ir())
    assert "if (threadIdx.x == 0) {" in prog.source
    img = _img(37, 50)
    np.testing.assert_array_equal(EmulatedPipeline(prog).realize([8, 37], img=img),
                                  ts.reference.realize(S.hist_pipeline(), [8, 37], img=img))


@needs_cxx
def test_single_thread_code_is_followed_by_a_barrier():
    """A store outside thread loops runs on thread 0; the threads after it wait for it."""
    b, t = V("out.b"), V("out.t")
    body = For("out.b", c(0), S.ext("out", 0) / 8, "gpu_block", Allocate(
        "acc", T.int32, (c(1),), "shared", Block.make([
            Store("acc", c(0), b * 100),
            For("out.t", c(0), c(8), "gpu_thread", Store("out", b * 8 + t, load("acc", c(0), T.int32) + t))])))
    prog = generate(_lp(body))
    assert "if (threadIdx.x == 0) {  // one thread of the block" in prog.source
    assert "__syncthreads();  // the other threads wait for its stores" in prog.source
    out = EmulatedPipeline(prog).realize([24])
    np.testing.assert_array_equal(out, (np.arange(24) // 8) * 100 + np.arange(24) % 8)


@needs_cxx
def test_host_plan_serial_kernel_and_host_loop():
    prog = generate(S.channels_ir())
    plan = prog.plan_str()
    assert "device allocate g[int32" in plan and "for sq.s0.c in" in plan
    assert [k.block_const for k in prog.kernels] == [(1, 1, 1), (32, 1, 1)]
    assert any("single GPU thread" in n for n in prog.notes)
    im = rng.integers(-1000, 1000, (3, 37, 50), dtype=np.int32)
    emu = EmulatedPipeline(prog, {"k": 3})
    for k in (3, -2147483000):          # the default, and a value whose square wraps
        out = emu.realize([50, 37, 3], im=im, k=k)
        np.testing.assert_array_equal(out, ts.reference.realize(S.channels_pipeline(), [50, 37, 3],
                                                                im=im, k=k))
    assert emu.last_launches == 1 + 3


def _fused_ir():
    """Five block loops (w, c, y, x.o on blocks; x.i on threads): w and c fuse into z."""
    W, H, Cn, N = (S.ext("out", d) for d in range(4))
    x = V("out.x.o") * 4 + V("out.x.i")
    body = For("out.x.i", c(0), c(4), "gpu_thread", Store(
        "out", S.flat("out", x, V("out.y"), V("out.c"), V("out.w")),
        x + V("out.y") * 100 + V("out.c") * 10000 + V("out.w") * 1000000))
    body = For("out.x.o", c(0), W / 4, "gpu_block", body)
    for name, e in (("out.y", H), ("out.c", Cn), ("out.w", N)):
        body = For(name, c(0), e, "gpu_block", body)
    return LoweredPipeline("fused", (Argument("out", "buffer", T.int32, 4, True),), body, "cuda")


@needs_cxx
def test_more_than_three_block_loops_fuse_into_z():
    prog = generate(_fused_ir())
    assert "blockIdx.z" in prog.source
    out = EmulatedPipeline(prog).realize([8, 3, 4, 5])
    w, c_, y, x = np.meshgrid(*(np.arange(n) for n in (5, 4, 3, 8)), indexing="ij")
    np.testing.assert_array_equal(out, x + 100 * y + 10000 * c_ + 1000000 * w)


@needs_cxx
def test_out_of_bounds_write_is_reported():
    # out[x + 1] for x up to the last column: writes one element past the buffer
    ir = LoweredPipeline("oob", (Argument("out", "buffer", T.float32, 1, True),), For(
        "out.x.o", c(0), S.ext("out", 0) / 4, "gpu_block", For(
            "out.x.i", c(0), c(4), "gpu_thread", Store(
                "out", V("out.x.o") * 4 + V("out.x.i") + 1, E.Const(T.float32, 1.0)))), "cuda")
    with pytest.raises(EmulationError, match="wrote outside buffer out"):
        EmulatedPipeline(generate(ir)).realize([16])


# ---------------------------------------------------------------------------
# Expression semantics: the generated C equals model.evaluate
# ---------------------------------------------------------------------------
_IN = {"a": T.int32, "b": T.int32, "u": T.uint8, "v": T.uint8, "s": T.int16, "w": T.uint32,
       "f": T.float32, "g": T.float32, "d": T.float64}
N = 64


def _inputs():
    r = np.random.default_rng(11)
    i32 = np.iinfo(np.int32)
    a = r.integers(-10 ** 6, 10 ** 6, N).astype(np.int32)
    b = r.integers(-9, 10, N).astype(np.int32)
    a[:8] = [i32.min, i32.min, i32.max, -7, 7, -7, 0, i32.min + 1]
    b[:8] = [-1, 0, -1, 2, -2, -2, 0, 8]
    f = (r.standard_normal(N) * 10).astype(np.float32)
    g = (r.standard_normal(N) * 3).astype(np.float32)
    f[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -2.5, 2.5]
    g[:8] = [1.0, np.nan, 2.0, 0.0, 3.0, -1e-30, 0.5, -0.5]
    return {"a": a, "b": b, "u": r.integers(0, 256, N).astype(np.uint8),
            "v": r.integers(0, 256, N).astype(np.uint8),
            "s": r.integers(-2 ** 15, 2 ** 15, N).astype(np.int16),
            "w": r.integers(0, 2 ** 32, N, dtype=np.uint64).astype(np.uint32), "f": f, "g": g,
            "d": r.standard_normal(N) * 1e3}


def _exact_cases(p):
    a, b, u, v, s, w, f, g, d = (p[k] for k in "abuvswfgd")
    i8 = lambda e: E.cast(T.int8, e)  # noqa: E731
    safe = E.select(f == f, E.clamp(f, -1e6, 1e6), 0.0)
    return [
        a + b, a - b, a * b, a / b, a % b, a / 8, a % 8, a / -8, a % -8, a / -1, -a,
        E.abs_(a), E.min_(a, b), E.max_(a, b), a * 1103515245 + 12345,
        u * v, u + v, u - v, u / v, u % v, E.max_(u, v), s * s, s / E.cast(T.int16, b),
        i8(a) * i8(b), i8(a) / i8(b), i8(a) % i8(b), E.cast(T.int8, E.Const(T.int32, -128)) / i8(b),
        w * w, w + E.Const(T.uint32, 4000000000), w / (w % 7), w % 1024, w / 16,
        E.cast(T.int8, a), E.cast(T.uint16, a), E.cast(T.float32, a), E.cast(T.float32, w),
        E.cast(T.int32, safe), E.cast(T.uint8, E.clamp(safe, 0.0, 255.0)), E.cast(T.bool_, a),
        f + g, f - g, f * g, f / g, f % g, E.min_(f, g), E.max_(f, g), E.floor(f), E.ceil(f),
        E.round_(f), E.abs_(f), E.sqrt(E.abs_(f)), E.select(f < g, f, g), f < g, f >= g,
        (a == b) & (f != g), (a < b) | ~(u > v), f + E.Const(T.float32, float("inf")),
        E.max_(f, E.Const(T.float32, float("-inf"))), f * E.Const(T.float32, float("nan")),
        d * d - d / 3.0, d % 7.5, E.min_(d, 0.5), E.cast(T.float32, d) + f,
        E.Let("t", a * 3, V("t") + V("t") * V("t")),
        E.select(a < 0, E.Const(T.int32, -2147483648), a),
    ]


def _approx_cases(p):
    f, g, d = p["f"], p["g"], p["d"]
    small = E.clamp(f, -20.0, 20.0)
    return [E.exp(small), E.log(E.abs_(f) + 1.0), E.pow_(E.abs_(f), E.clamp(g, -3.0, 3.0)),
            E.sin(small), E.cos(small), E.tan(E.clamp(f, -1.0, 1.0)), E.atan2(f, g),
            E.sqrt(E.abs_(d)), E.exp(E.clamp(d, -50.0, 50.0))]


def _random_cases(p, n=40, seed=3):
    """Random integer and float expressions (exact IEEE operations only)."""
    r = np.random.default_rng(seed)
    ops = ["add", "sub", "mul", "div", "mod", "min", "max", "select"]

    def gen(t, depth):
        if depth == 0 or r.random() < 0.25:
            leaves = [p[k] for k in ("a", "b") if t == T.int32] + [p[k] for k in ("f", "g") if t == T.float32]
            return leaves[r.integers(len(leaves))] if r.random() < 0.8 else \
                E.Const(t, int(r.integers(-9, 10)) if t == T.int32 else float(r.normal()))
        op = ops[r.integers(len(ops))]
        if op == "select":
            return E.select(gen(t, depth - 1) < gen(t, depth - 1), gen(t, depth - 1), gen(t, depth - 1))
        if r.random() < 0.15:
            other = T.float32 if t == T.int32 else T.int32
            inner = gen(other, depth - 1)
            if t == T.int32:        # float -> int only from a finite, small value
                inner = E.select(inner == inner, E.clamp(inner, -1e6, 1e6), 0.0)
            return E.cast(t, inner)
        return E.BinOp(op, gen(t, depth - 1), gen(t, depth - 1))
    return [gen(T.int32 if k % 2 else T.float32, 4) for k in range(n)]


def _expr_program(cases):
    """One kernel: thread i computes every case at lane i into out_<type>[k*N + i]."""
    loads = {n: load(n, V("i"), t) for n, t in _IN.items()}

    def to_ir(e):
        return mutate(e, lambda n: loads.get(n.name) if isinstance(n, E.Param) else None)

    by_type: dict = {}
    stores = []
    for e in cases:
        k = len(by_type.setdefault(e.type, []))
        by_type[e.type].append(e)
        stores.append(Store(f"out_{e.type}", V("i") + k * N, to_ir(e)))
    args = tuple(Argument(n, "buffer", t, 1) for n, t in _IN.items())
    args += tuple(Argument(f"out_{t}", "buffer", t, 1, True) for t in by_type)
    body = For("i", c(0), c(N), "gpu_thread", Block.make(stores))
    return LoweredPipeline("exprs", args, body, "cuda"), by_type


def _run_cases(cases, exact: bool):
    params = {n: E.Param(t, n) for n, t in _IN.items()}
    cases = cases(params)
    lp, by_type = _expr_program(cases)
    ins = _inputs()
    sizes = {f"out_{t}": [N * len(es)] for t, es in by_type.items()}
    outs = EmulatedPipeline(generate(lp)).realize(sizes, **ins)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for (t, es), out in zip(by_type.items(), outs):
        for k, e in enumerate(es):
            want = np.broadcast_to(evaluate(e, dict(ins)), (N,)).astype(t.dtype)
            got = out[k * N:(k + 1) * N]
            if exact or not t.is_float():
                np.testing.assert_array_equal(got, want, err_msg=f"{e} ({t})")
            else:
                np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True,
                                           err_msg=f"{e} ({t})")
    return lp


@needs_cxx
def test_expressions_match_evaluate_exactly():
    _run_cases(_exact_cases, exact=True)


@needs_cxx
def test_random_expressions_match_evaluate():
    _run_cases(_random_cases, exact=True)


@needs_cxx
def test_math_functions_match_evaluate():
    _run_cases(_approx_cases, exact=False)


# ---------------------------------------------------------------------------
# The real lowering: blur with a GPU schedule
# ---------------------------------------------------------------------------
def _gpu_blur_schedule():
    pipe = S.blur_pipeline()
    blur_x, blur_y = pipe.func("blur_x"), pipe.func("blur_y")
    x, y = ts.Var("x"), ts.Var("y")
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s = ts.Schedule(pipe, target="cuda")
    s[blur_y].gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    s[blur_x].compute_at(blur_y, xo).gpu_threads(x, y)
    return pipe, s


@needs_cxx
def test_lowered_blur_gpu_schedule_matches_reference():
    pipe, s = _gpu_blur_schedule()
    emu = C.emulate_cuda(pipe, s)
    src = emu.program.source
    assert "__shared__ float blur_x[288];" in src and "__syncthreads();" in src
    assert all(k.block_const == (16, 18, 1) for k in emu.program.kernels)
    for w, h in [(50, 37), (16, 16), (7, 5)]:
        a = _img(h, w)
        np.testing.assert_array_equal(emu.realize([w, h], input=a),
                                      ts.reference.realize(pipe, [w, h], input=a))
    with pytest.raises(ts.RealizeError, match="input"):
        emu.realize([50, 37], input=_img(37, 50).astype(np.float64))


@needs_cxx
def test_constant_serial_loops_are_unrolled_whole():
    """A 3 x 3 RDom's loops inside a thread get ``#pragma unroll`` (constant extents up to
    ``UNROLL_SERIAL``); a loop over a run-time extent does not; results stay exact."""
    from tilesolve.backend.cuda.kernels import UNROLL_SERIAL
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    n = ts.Param(ts.int32, "n", 3)
    r = ts.RDom((0, 3), (0, 3), name="r")
    q = ts.RDom((0, n), name="q")
    conv, row = ts.Func("conv"), ts.Func("row")
    conv[x, y] = ts.sum(inp[x + r.x, y + r.y])
    row[x, y] = conv[x, y] + ts.sum(inp[x + q, y])
    pipe = ts.Pipeline(row)
    s = ts.Schedule(pipe, target="cuda")
    s[row].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 16, 8)
    s[conv].compute_at(row, "xo").gpu_threads("x", "y")
    emu = C.emulate_cuda(pipe, s)
    src = emu.program.source
    assert 3 <= UNROLL_SERIAL
    loops = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("for (")]
    lines = [ln.strip() for ln in src.splitlines()]
    unrolled = [lines[i + 1] for i, ln in enumerate(lines) if ln == "#pragma unroll"]
    assert sum(" < 3; " in ln for ln in unrolled) >= 2
    assert any(ln not in unrolled for ln in loops)        # the loop over n stays a loop
    a = _img(30, 41)
    np.testing.assert_allclose(emu.realize([36, 25], input=a),
                               ts.reference.realize(pipe, [36, 25], input=a), rtol=1e-6)


@needs_cxx
@pytest.mark.parametrize("which", ["gpu_inline", "hand"])
def test_blur_app_with_gpu_schedules_matches_numpy(which):
    from tilesolve.apps import get_app
    from tilesolve.backend.cuda.naive import gpu_inline_schedule
    app = get_app("blur")
    pipe, _ = app.build(app.SMALL_SIZE)
    if which == "hand":
        s = ts.Schedule(pipe, target="cuda")
        s[pipe.func("blur_y")].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 16, 8)
        s[pipe.func("blur_x")].compute_at(pipe.func("blur_y"), "xo").gpu_threads("x", "y")
    else:
        s = gpu_inline_schedule(pipe)
    inputs = app.make_inputs([45, 21])
    out = C.emulate_cuda(pipe, s).realize([45, 21], **inputs)
    np.testing.assert_allclose(out, app.numpy_reference(inputs, [45, 21]), rtol=1e-6)


@needs_cxx
def test_program_pickles_and_runs_the_same():
    """gpu_run.sh builds programs on one machine and runs them on another."""
    import pickle
    prog = pickle.loads(pickle.dumps(generate(S.blur_ir())))
    a = _img(37, 50)
    np.testing.assert_array_equal(EmulatedPipeline(prog).realize([50, 37], input=a),
                                  ts.reference.realize(S.blur_pipeline(), [50, 37], input=a))


def test_launch_limits_are_checked_at_run_time():
    from tilesolve.backend.cuda.plan import launch_dims
    k = generate(S.map2d_ir()).kernels[0]
    env = {"out.extent.0": np.int32(16), "out.extent.1": np.int32(8 * 70000)}
    with pytest.raises(ts.RealizeError, match="grid dimension y is 70000"):
        launch_dims(k, env)
    assert launch_dims(k, {"out.extent.0": np.int32(17), "out.extent.1": np.int32(8)}) == \
        ((3, 1, 1), (8, 8, 1))
    assert launch_dims(k, {"out.extent.0": np.int32(0), "out.extent.1": np.int32(8)}) is None


# ---------------------------------------------------------------------------
# nvcc, ptxas and the spec's limits
# ---------------------------------------------------------------------------
@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_generated_code(arch):
    pipe, s = _gpu_blur_schedule()
    progs = [generate(S.map2d_ir()), generate(S.blur_ir()), generate(S.hist_ir()),
             generate(S.channels_ir()), generate(_fused_ir()),
             generate(_expr_program(_exact_cases({n: E.Param(t, n) for n, t in _IN.items()}))[0]),
             generate(C.lower_cuda(pipe, s))]
    # one translation unit (one nvcc run): every program's kernels after one prelude
    src = PRELUDE + "".join(p.source.replace(PRELUDE, "") for p in progs)
    r = nvcc.compile_cuda_source(src, arch, name="all")
    assert r.arch == arch and len(r.binary) > 0
    assert set(r.kernels) == {k.name for p in progs for k in p.kernels}
    for p in progs:
        for k in p.kernels:
            assert r.kernels[k.name].registers > 0
            assert r.kernels[k.name].shared_bytes == k.shared_bytes
    assert r.kernels["blur_k0_blur_y"].shared_bytes == 160 * 4
    assert r.kernels["blur_k0_blur_y"].barriers == 1


_PTXAS_80 = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k2' for 'sm_80'
ptxas info    : Function properties for k2
    800 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 42 registers, used 0 barriers, 800 bytes cumulative stack size, 360 bytes cmem[0]
ptxas info    : Compile time = 14.062 ms
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 1 barriers, 1152 bytes smem, 372 bytes cmem[0]
"""


def test_parse_ptxas_report():
    r = nvcc.parse_ptxas(_PTXAS_80)
    assert r["k2"] == nvcc.KernelResources("k2", 42, 0, 800, 8, 12, 0)
    assert r["k1"] == nvcc.KernelResources("k1", 14, 1152, 0, 0, 0, 1)


def test_spec_limits_name_the_kernel():
    spec = load_spec("h100")
    assert nvcc.arch_of(spec) == "sm_90" and nvcc.arch_of(load_spec("a100")) == "sm_80"
    prog = generate(S.blur_ir())
    res = nvcc.CompileResult("sm_90", "cubin", b"", nvcc.parse_ptxas(
        _PTXAS_80.replace("'k1'", "'blur_k0_blur_y'").replace("for k1", "for blur_k0_blur_y")))
    nvcc.check_resources(res, spec, prog)                       # within the H100's limits
    with pytest.raises(LoweringError, match="kernel blur_k0_blur_y: 1152 bytes of shared"):
        nvcc.check_resources(res, spec.replace(shared_mem_per_block_bytes=1024), prog)
    with pytest.raises(LoweringError, match="kernel k2: 42 registers"):
        nvcc.check_resources(res, spec.replace(max_registers_per_thread=32), prog)
    with pytest.raises(LoweringError, match="blur_k0_blur_y: 16x10x1 = 160 threads"):
        C.check_program(prog, spec.replace(max_threads_per_block=128))
    with pytest.raises(ts.SpecError, match="not a GPU spec"):
        nvcc.check_resources(res, load_spec("xeon-e5-2620v3"))


# ---------------------------------------------------------------------------
# What the code generator refuses, with the loop or allocation named
# ---------------------------------------------------------------------------
def _lp(body, *bufs):
    return LoweredPipeline("bad", tuple(Argument(b, "buffer", T.int32, 1, True) for b in bufs) or
                           (Argument("out", "buffer", T.int32, 1, True),), body, "cuda")


def test_codegen_rejects_illegal_gpu_nests():
    st = Store("out", V("t"), c(1))
    sibling = For("b", c(0), c(4), "gpu_block", Block.make([
        For("b1", c(0), c(2), "gpu_block", st), For("b2", c(0), c(2), "gpu_block", st)]))
    with pytest.raises(LoweringError, match="gpu_block loops b1 and b2 are not nested"):
        generate(_lp(sibling))
    in_thread = For("b", c(0), c(4), "gpu_block", For("t", c(0), c(8), "gpu_thread", Barrier()))
    with pytest.raises(LoweringError, match="barrier inside gpu_thread loop t"):
        generate(_lp(in_thread))
    data = For("b", c(0), c(4), "gpu_block", For(
        "t", c(0), load("out", V("b"), T.int32), "gpu_thread", st))
    with pytest.raises(LoweringError, match="gpu_thread loop t .* reads buffer out"):
        generate(_lp(data))
    unbounded = For("b", c(0), S.ext("out", 0), "gpu_block",
                    For("t", c(0), V("b") * 2, "gpu_thread", st))
    with pytest.raises(LoweringError, match="gpu_thread loop t .* depends on b"):
        generate(_lp(unbounded))
    # over a constant grid the same extent is bounded (b < 4: at most 6 threads)
    bounded = For("b", c(0), c(4), "gpu_block", For("t", c(0), V("b") * 2, "gpu_thread", st))
    assert generate(_lp(bounded)).kernels[0].block_const == (6, 1, 1)
    shared = For("b", c(0), c(4), "gpu_block", Allocate(
        "tmp", T.int32, (S.ext("out", 0),), "shared", For("t", c(0), c(8), "gpu_thread", st)))
    with pytest.raises(LoweringError, match="allocation tmp has a size"):
        generate(_lp(shared))
    between = For("b", c(0), c(4), "gpu_block", Block.make([
        Store("out", V("b"), c(0)), For("b2", c(0), c(2), "gpu_block", st)]))
    with pytest.raises(LoweringError, match="between gpu_block loops b and b2"):
        generate(_lp(between))
    with pytest.raises(LoweringError, match="target 'cpu'"):
        generate(LoweredPipeline("x", (), Block(()), "cpu"))


def test_block_dependent_thread_extent_is_bounded():
    yo, h = V("yo"), V("out.extent.0")
    e = E.min_(yo * 16 + 15, h - 1) - yo * 16 + 3
    assert upper_bound(e) == 18 and upper_bound(yo * 2) is None
    assert upper_bound(E.max_(E.min_(yo, c(4)), c(2)) - 1) == 3
    body = For("b", c(0), c(4), "gpu_block", LetStmt("n", E.min_(V("b") * 8 + 8, h) - V("b") * 8, For(
        "t", c(0), V("n"), "gpu_thread", Store("out", V("b") * 8 + V("t"), V("t")))))
    prog = generate(_lp(body))
    assert prog.kernels[0].block_const == (8, 1, 1)
    assert "(ts_i32)threadIdx.x < n" in prog.source


def test_names_become_unique_c_identifiers():
    from tilesolve.backend.cuda.cexpr import Namer
    n = Namer()
    assert n("blur_y.s0.x") == "blur_y_s0_x" and n("blur_y_s0.x") == "blur_y_s0_x_2"
    assert n("int") == "int_" and n("for") == "for_" and n("0x") == "v_0x" and n("ts_a") == "v_ts_a"
    assert n("blur_y.s0.x") == "blur_y_s0_x"


# ---------------------------------------------------------------------------
# The runtime: a clear error without pycuda/GPU; a real run where there is one
# ---------------------------------------------------------------------------
def test_compile_cuda_explains_what_is_missing(monkeypatch):
    monkeypatch.setattr(runtime, "availability", lambda: "pycuda is not installed (test)")
    pipe, s = _gpu_blur_schedule()
    with pytest.raises(runtime.CudaUnavailableError, match="needs pycuda and an NVIDIA GPU.*emulate_cuda"):
        C.compile_cuda(pipe, s, load_spec("h100"))
    with pytest.raises(ts.SpecError, match="not a GPU spec"):
        C.compile_cuda(pipe, s, load_spec("xeon-e5-2620v3"))


def test_availability_reports_a_reason_or_none():
    reason = runtime.availability()
    assert reason is None or ("pycuda" in reason or "GPU" in reason or "driver" in reason)


@pytest.mark.gpu
@needs_nvcc
@pytest.mark.skipif(runtime.availability() is not None, reason=f"no CUDA GPU: {runtime.availability()}")
def test_gpu_realize_matches_reference():
    pipe, s = _gpu_blur_schedule()
    fast = C.compile_cuda(pipe, s, load_spec("h100"))
    a = _img(371, 509)
    np.testing.assert_allclose(fast.realize([509, 371], input=a),
                               ts.reference.realize(pipe, [509, 371], input=a), rtol=1e-6)


def test_a_gpu_spec_may_be_named():
    """``build_cuda(..., "h100")`` takes a spec name, as ``solve_schedule`` does (it
    once said "spec 'h100' is not a GPU spec"); a CPU spec is still refused."""
    from tilesolve.backend.cuda import _gpu_spec
    assert _gpu_spec("h100").is_gpu and _gpu_spec("a100").name == "a100"
    with pytest.raises(ts.SpecError, match="not a GPU spec"):
        _gpu_spec("xeon-e5-2620v3")


def test_nvcc_fmad_follows_the_schedules_fma_option_unless_given():
    x = ts.Var("x")
    f = ts.Func("f")
    f[x] = x * 2.0 + 1.0
    s = ts.Schedule(ts.Pipeline(f), target="cuda")
    assert C._fmad(s, None) is False
    s.set_codegen(fma=True)
    assert C._fmad(s, None) is True and C._fmad(s, False) is False
