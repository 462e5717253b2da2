"""float16 (IEEE binary16) through every layer.

Each op on float16 operands is the float16 rounding of its exact result (computed in
float32, rounded once); casts follow types.py.  The op-by-op agreement of every backend
with numpy is tests/test_op_backends.py (float16 is one of its types); here: the type's
rules, the interval analysis, casts from and to every type on every backend, Params, the
conversion runtime on a target without half instructions, and a solved, vectorized blur.
"""
from __future__ import annotations

import ctypes
import platform
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.analysis.intervals import numeric as N
from tilesolve.backend.cuda.nvcc import find_nvcc
from tilesolve.model import types as T

x, y = ts.Var("x"), ts.Var("y")
HAS_GXX = shutil.which("g++") is not None
F16_BITS = st.integers(0, 0xFFFF).map(lambda v: np.uint16(v).view(np.float16))


def _same(got, want) -> np.ndarray:
    """Equal values, or both NaN."""
    g, w = np.asarray(got), np.asarray(want)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(g.astype(np.float64)) & np.isnan(w.astype(np.float64))
    return (g == w) | nan


# -- the type --------------------------------------------------------------------------
def test_float16_is_a_type_of_the_table():
    assert ts.float16 is T.float16 and ts.float16 in T.ALL_TYPES
    assert str(ts.float16) == "float16" and T.type_named("float16") == ts.float16
    assert T.type_of_dtype(np.float16) == ts.float16 and ts.float16.dtype == np.float16
    assert ts.float16.bytes == 2 and ts.float16.significand_bits() == 11
    # Halide's match_types: an integer meets a float in the float type; two floats, the wider
    assert T.match_types(ts.float16, ts.int32) == ts.float16
    assert T.match_types(ts.uint8, ts.float16) == ts.float16
    assert T.match_types(ts.float16, ts.float32) == ts.float32
    assert T.match_types(ts.float64, ts.float16) == ts.float64
    h = ts.ImageParam(ts.float16, 1, "h")
    assert (h[x] + 0.5).type == ts.float16 and (h[x] * x).type == ts.float16
    assert ts.float16(x).type == ts.float16


def test_int_to_float16_round_trips_only_when_exact():
    """The simplifier removes cast(int, cast(float16, v)) only for sources of at most 11
    significant bits (uint8, int8): an int16 does not survive float16."""
    from tilesolve.analysis.simplify_rules import _cast_pair_collapses
    assert _cast_pair_collapses(ts.uint8, ts.float16, ts.int32)
    assert not _cast_pair_collapses(ts.int16, ts.float16, ts.int16)
    assert not _cast_pair_collapses(ts.float64, ts.float32, ts.float16)
    assert _cast_pair_collapses(ts.float16, ts.float32, ts.float16)
    img = ts.ImageParam(ts.int16, 1, "img")
    f = ts.Func("f")
    f[x] = ts.cast(ts.int16, ts.cast(ts.float16, img[x]))
    p = ts.Pipeline(f)
    data = np.array([2049, -2049, 30001, 7], np.int16)
    want = data.astype(np.float16).astype(np.int16)
    np.testing.assert_array_equal(ts.reference.realize(p, [4], img=data), want)
    np.testing.assert_array_equal(ts.compile(p).realize([4], img=data), want)


# -- intervals ---------------------------------------------------------------------------
def test_float16_intervals_round_outward_and_overflow_to_inf():
    above_two = float(np.nextafter(np.float16(2), np.float16(3)))
    assert N.fit(ts.float16, 1.0001, 2.0001) == (1.0, above_two)
    assert N.fit(ts.float16, -70000.0, 65519.0) == (-np.inf, np.inf)
    assert N.fit(ts.float16, 65504.0, 65504.0) == (65504.0, 65504.0)
    assert N.const(ts.float16, 1e6) == (np.inf, np.inf)
    assert N.const(ts.float16, 0.1) == (float(np.float16(0.1)),) * 2
    assert N.add(ts.float16, (60000.0, 60000.0), (6000.0, 6000.0))[1] == np.inf
    assert N.cast(ts.int32, ts.float16, (0, 70000)) == (0.0, np.inf)
    lo, hi = N.intrinsic("exp", ts.float16, [(0.0, 11.0)])
    assert lo <= 1.0 and np.float16(np.exp(np.float16(11.0))) <= hi


_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "min": np.minimum, "max": np.maximum}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(a=F16_BITS, b=F16_BITS, c=F16_BITS, d=F16_BITS)
def test_float16_interval_rules_contain_what_numpy_computes(a, b, c, d):
    """For intervals [a, b] and [c, d] of float16 values, every op's result on their
    endpoints lies in the op's interval (float16 arithmetic rounds each result once)."""
    if np.isnan([a, b, c, d]).any():
        return
    ia, ib = (float(min(a, b)), float(max(a, b))), (float(min(c, d)), float(max(c, d)))
    with np.errstate(all="ignore"):
        for name, fn in _BIN.items():
            lo, hi = N.op_rule(name)(ts.float16, ia, ib)
            for u in ia:
                for v in ib:
                    r = float(fn(np.float16(u), np.float16(v)))
                    assert r != r or lo <= r <= hi, (name, u, v, r, lo, hi)
        for name in ("sqrt", "exp", "floor", "abs"):
            lo, hi = N.intrinsic(name, ts.float16, [ia])
            for u in ia:
                r = float(ts.model.ops.OPS[name].numpy(ts.float16, np.float16(u)))
                assert r != r or lo <= r <= hi, (name, u, r, lo, hi)
        lo, hi = N.cast(ts.float16, ts.float64, ia)
        assert lo <= ia[0] and ia[1] <= hi
        i64 = (int(np.trunc(ia[0])) if np.isfinite(ia[0]) else -2 ** 40,
               int(np.trunc(ia[1])) if np.isfinite(ia[1]) else 2 ** 40)
        lo, hi = N.cast(ts.int64, ts.float16, i64)
        for v in i64:
            assert lo <= float(np.float16(np.int64(v))) <= hi


# -- casts, every type, every backend -------------------------------------------------------
def _values(t, rng, n):
    if t.is_bool():
        return rng.integers(0, 2, n).astype(bool)
    if t.is_float():
        h = rng.integers(0, 0x10000, n).astype(np.uint16).view(np.float16)
        bits = h.astype(np.float64)
        with np.errstate(all="ignore"):                      # just past float16 midpoints
            mids = (bits + np.nextafter(h, np.float16(np.inf)).astype(np.float64)) / 2
        near_ties = np.where(np.arange(n) % 2 == 0, mids * (1 + 2.0 ** -40),
                             mids * (1 - 2.0 ** -40))
        wide = rng.normal(size=n) * 10.0 ** rng.integers(-9, 7, n)
        edges = np.array([0.0, -0.0, 65504.0, 65519.9, 65520.0, -65520.0, 2.0 ** -24,
                          2.0 ** -25, 1.5 * 2.0 ** -25, np.inf, -np.inf, np.nan])
        v = np.concatenate([edges, near_ties[: n // 2], bits, wide])[:n]
        with np.errstate(all="ignore"):
            return v.astype(t.dtype)
    info = np.iinfo(t.dtype)
    small = rng.integers(max(info.min, -70000), min(info.max, 70000), n // 2, endpoint=True)
    big = rng.integers(info.min, info.max, n - n // 2, dtype=t.dtype, endpoint=True)
    return np.concatenate([small.astype(t.dtype), big])


def _cast_pipeline(t):
    a, h = ts.ImageParam(t, 1, "a"), ts.ImageParam(ts.float16, 1, "h")
    to, frm = ts.Func("to_f16"), ts.Func("from_f16")
    to[x] = ts.cast(ts.float16, a[x])
    frm[x] = ts.cast(t, h[x])
    return ts.Pipeline([to, frm])


def _builds(p):
    """(name, realize) for each backend that can run here."""
    outs = list(p.outputs)
    s = ts.Schedule(p)
    for f in outs:
        s[f].vectorize(x, 16)
    yield "scalar", ts.compile(p).realize
    yield "vector", ts.compile(p, s).realize
    if HAS_GXX:
        from tilesolve.backend.cuda import emulate_cuda
        g = ts.Schedule(p, target="cuda")
        for f in outs:
            g[f].gpu_tile(x, ts.Var("xo"), ts.Var("xi"), 32)
        yield "cuda", emulate_cuda(p, g).realize
    try:
        import halide  # noqa: F401
    except ImportError:
        return
    from tilesolve.interop import halide as th
    if not any(img.type == ts.uint64 for img in p.images.values()):
        hp = th.translate(p)
        hp.compute_root_all()
        yield "halide", hp.realize


@pytest.mark.parametrize("t", [t for t in T.ALL_TYPES if t != ts.float16], ids=str)
def test_casts_to_and_from_float16_agree_on_every_backend(t):
    """cast(float16, v) rounds once (a float64 too, not through float32 twice), and
    cast(t, h) follows float32's rules; float -> int only for in-range values (out of
    range it is undefined, as in C and Halide)."""
    rng = np.random.default_rng(t.bits + len(t.code))
    n = 301
    a, h = _values(t, rng, n), _values(ts.float16, rng, n)
    if t.is_integral():
        hf = h.astype(np.float64)
        ok = np.isfinite(hf) & (hf > t.min_value() - 1) & (hf < t.max_value() + 1)
        h = np.where(ok, h, np.float16(3))
    p = _cast_pipeline(t)
    want = ts.reference.realize(p, [n], a=a, h=h)
    assert want[0].dtype == np.float16 and want[1].dtype == t.dtype
    with np.errstate(over="ignore", invalid="ignore"):
        assert _same(want[0], np.asarray(a).astype(np.float16)).all()
    for name, run in _builds(p):
        got = run([n], a=a, h=h)
        for g, w, what in zip(got, want, ("to float16", "from float16")):
            ok = _same(g, w)
            i = int(np.argmin(ok))
            assert ok.all(), f"{name}, {t} {what}: a={a[i]!r} h={h[i]!r} got {g[i]!r} want {w[i]!r}"


# -- Params -----------------------------------------------------------------------------
def test_float16_params_on_the_cpu_and_in_halide():
    img, k = ts.ImageParam(ts.float16, 1, "img"), ts.Param(ts.float16, "k", 1.5)
    f = ts.Func("f")
    f[x] = img[x] * k + k
    p = ts.Pipeline(f)
    data = np.linspace(-3, 3, 37).astype(np.float16)
    for kv in (None, 0.1, 65504.0, -2.5e-7):
        kw = {} if kv is None else {"k": kv}
        want = ts.reference.realize(p, [37], img=data, **kw)
        kk = np.float16(1.5 if kv is None else kv)
        np.testing.assert_array_equal(want, data * kk + kk)
        np.testing.assert_array_equal(ts.compile(p).realize([37], img=data, **kw), want)
        try:
            import halide  # noqa: F401
        except ImportError:
            continue
        from tilesolve.interop import halide as th
        hp = th.translate(p)
        hp.compute_root_all()
        np.testing.assert_array_equal(hp.realize([37], img=data, **kw), want)


@pytest.mark.skipif(shutil.which("g++") is None, reason="the CUDA emulation needs g++")
def test_a_float16_param_under_the_cuda_emulation():
    from tilesolve.backend.cuda import emulate_cuda
    img, k = ts.ImageParam(ts.float16, 1, "img"), ts.Param(ts.float16, "k", 1.5)
    f = ts.Func("f")
    f[x] = img[x] * k + k
    p = ts.Pipeline(f)
    data = np.linspace(-3, 3, 37).astype(np.float16)
    s = ts.solve_schedule(p, "h100", {"f": [37], "img": [37]}, method="greedy")
    em = emulate_cuda(p, s)
    for kv in (0.1, -2.5e-7):
        np.testing.assert_array_equal(em.realize([37], img=data, k=kv),
                                      ts.reference.realize(p, [37], img=data, k=kv))


# -- the conversion runtime, for targets without half instructions -------------------------
x86_only = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                              reason="the baseline x86-64 target (no F16C) is an x86 target")


def _baseline():
    from tilesolve.backend.cpu.target import make_target
    return make_target(cpu_name="x86-64", features="")


@x86_only
def test_half_runtime_converts_exactly_without_f16c():
    """The integer-only __extendhfsf2 / __truncsfhf2 / __truncdfhf2 agree with numpy on
    every float16, on float32 values around every float16 and its midpoints, and on
    float64 values just past the midpoints (where rounding twice would be wrong)."""
    import llvmlite.binding as llvm

    from tilesolve.backend.cpu import half
    from tilesolve.backend.cpu.target import LLVM_LOCK, runtime_engine
    half.install_runtime()
    probe = r"""
define void @convert(i8* %src, i8* %dst, i32 %n, i32 %kind) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%j, %next]
  switch i32 %kind, label %d2h [i32 0, label %h2f  i32 1, label %f2h]
h2f:
  %ps = bitcast i8* %src to half*
  %pa = getelementptr half, half* %ps, i32 %i
  %h = load half, half* %pa
  %f = fpext half %h to float
  %pd = bitcast i8* %dst to float*
  %pb = getelementptr float, float* %pd, i32 %i
  store float %f, float* %pb
  br label %next
f2h:
  %fs = bitcast i8* %src to float*
  %fa = getelementptr float, float* %fs, i32 %i
  %fv = load float, float* %fa
  %fh = fptrunc float %fv to half
  %hd = bitcast i8* %dst to half*
  %hb = getelementptr half, half* %hd, i32 %i
  store half %fh, half* %hb
  br label %next
d2h:
  %ds = bitcast i8* %src to double*
  %da = getelementptr double, double* %ds, i32 %i
  %dv = load double, double* %da
  %dh = fptrunc double %dv to half
  %hd2 = bitcast i8* %dst to half*
  %hb2 = getelementptr half, half* %hd2, i32 %i
  store half %dh, half* %hb2
  br label %next
next:
  %j = add i32 %i, 1
  %c = icmp slt i32 %j, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}
"""
    tgt = _baseline()
    with LLVM_LOCK:
        asm = tgt.machine().emit_assembly(llvm.parse_assembly(probe))
        engine = runtime_engine(probe, tgt)
    for sym in half.RUNTIME_SYMBOLS:            # the runtime is what runs here
        assert sym in asm
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                          ctypes.c_int32)(engine.get_function_address("convert"))

    def run(src, dtype, kind):
        out = np.empty(len(src), dtype)
        fn(src.ctypes.data, out.ctypes.data, len(src), kind)
        return out

    every = np.arange(0x10000, dtype=np.uint16).view(np.float16)
    f = every.astype(np.float32)
    assert _same(run(every, np.float32, 0), f).all()
    got = run(every, np.float32, 0).view(np.uint32)
    fin = ~np.isnan(f)
    np.testing.assert_array_equal(got[fin], f.view(np.uint32)[fin])      # signed zeros too
    rng = np.random.default_rng(0)
    with np.errstate(all="ignore"):
        up = np.nextafter(f, np.float32(np.inf))
        mids = ((f.astype(np.float64) + np.nextafter(every, np.float16(np.inf))) / 2)
        floats = np.concatenate([f, up, np.nextafter(f, -np.float32(np.inf)),
                                 mids.astype(np.float32),
                                 rng.integers(0, 2 ** 32, 200000, dtype=np.uint64)
                                 .astype(np.uint32).view(np.float32)])
        doubles = np.concatenate([mids, mids * (1 + 2.0 ** -40), mids * (1 - 2.0 ** -40),
                                  rng.integers(0, 2 ** 63, 200000, dtype=np.int64)
                                  .view(np.float64)])
        for src, kind in ((floats, 1), (doubles, 2)):
            want = src.astype(np.float16)
            got = run(src, np.float16, kind)
            ok = _same(got, want) & ((got.view(np.uint16) == want.view(np.uint16))
                                     | np.isnan(want))
            i = int(np.argmin(ok))
            assert ok.all(), (src[i], got[i], want[i])


@x86_only
def test_float16_pipeline_runs_on_a_target_without_f16c():
    """Code generated for float16 runs on the baseline x86-64 target, where every
    conversion is a call into the runtime."""
    from tilesolve.backend.cpu.compiled import CompiledPipeline
    from tilesolve.backend.cpu.runtime import NativeKernel
    a, b = ts.ImageParam(ts.float16, 1, "a"), ts.ImageParam(ts.float64, 1, "b")
    f = ts.Func("f")
    f[x] = ts.sqrt(a[x] * a[x] + 0.1) - a[x] % 3 + ts.cast(ts.float16, b[x])
    p = ts.Pipeline(f)
    s = ts.Schedule(p)
    s[f].vectorize(x, 8)
    host = ts.compile(p, s, cache_dir=False)
    kernel = NativeKernel(host.generated, _baseline(), None)
    assert "__truncsfhf2" in kernel.jit.assembly() and "__extendhfsf2" in kernel.jit.assembly()
    base = CompiledPipeline(p, s, host.lowered, host.generated, kernel, 1, 0.0)
    rng = np.random.default_rng(5)
    av = rng.integers(0, 0x10000, 203).astype(np.uint16).view(np.float16)
    bv = rng.normal(size=203) * 1000
    want = ts.reference.realize(p, [203], a=av, b=bv)
    for c in (host, base):
        got = c.realize([203], a=av, b=bv)
        assert got.dtype == np.float16 and _same(got, want).all()


# -- a pipeline ---------------------------------------------------------------------------
def test_float16_blur_solved_for_a_xeon_vectorized_matches_the_reference():
    inp = ts.ImageParam(ts.float16, 2, "input")
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    p = ts.Pipeline(by)
    s = ts.solve_schedule(p, "xeon-e5-2620v3",
                          estimates={"blur_y": [1536, 1024], "input": [1538, 1026]})
    assert "vectorize" in str(s)
    img = (np.random.default_rng(0).random((130, 203)) * 300 - 150).astype(np.float16)
    img[3, 5] = img[3, 6] = np.float16(65504)       # their sum overflows to inf ...
    img[4, 6] = np.float16(-np.inf)                   # ... which meets -inf: NaN
    compiled = ts.compile(p, s)
    got = compiled.realize([201, 128], input=img)
    want = ts.reference.realize(p, [201, 128], input=img)
    assert got.dtype == np.float16
    assert np.isinf(want).any() and np.isnan(want).any()
    assert _same(got, want).all()
    # the float16 result is the float32 computation rounded after every op, not once
    wide = img.astype(np.float32)
    once = (((wide[:, :-2] + wide[:, 1:-1] + wide[:, 2:]) / 3)[:, :201])
    once = ((once[:-2] + once[1:-1] + once[2:]) / 3)[:128].astype(np.float16)
    assert not _same(once, want).all()


@pytest.mark.skipif(find_nvcc() is None, reason="compiling CUDA C for a GPU needs nvcc")
def test_float16_cuda_c_compiles_for_the_device_with_ptx_conversions():
    """On the device, ts_f16 converts with cvt.f32.f16 and cvt.rn.f16.f32 (the CPU shim's
    integer code is what the emulation tests run)."""
    from tilesolve.backend.cuda import build_cuda
    from tilesolve.backend.cuda.nvcc import compile_cuda_source
    a, b = ts.ImageParam(ts.float16, 1, "a"), ts.ImageParam(ts.float64, 1, "b")
    f = ts.Func("f")
    f[x] = ts.sqrt(a[x] * a[x]) % a[x] + ts.cast(ts.float16, b[x])
    p = ts.Pipeline(f)
    s = ts.Schedule(p, target="cuda")
    s[f].gpu_tile(x, ts.Var("xo"), ts.Var("xi"), 32)
    build = build_cuda(p, s, "h100")
    ptx = compile_cuda_source(build.program.source, "sm_90", output="ptx").binary.decode()
    assert "cvt.f32.f16" in ptx and "cvt.rn.f16.f32" in ptx
