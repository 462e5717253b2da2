"""Native-code infrastructure of the CPU backend: target, JIT, disk cache, parallel-for.

Everything here is hand-written llvmlite IR, independent of the loop IR and codegen.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from llvmlite import ir

from tilesolve.backend.cpu import parallel
from tilesolve.backend.cpu.jit import DiskCache, JitModule, default_cache_dir, optimize
from tilesolve.backend.cpu.target import host_target, make_target

F32 = ir.FloatType()
I32 = ir.IntType(32)
F32P = F32.as_pointer()
I32P = I32.as_pointer()
VEC = ir.VectorType(F32, 8)
REPO = Path(__file__).resolve().parents[1]


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


HAS_AVX = "avx" in _cpu_flags()


def counted_loop(b: ir.IRBuilder, start, end, step: int, body, name="l"):
    """Emit ``for i = start; i < end; i += step: body(b, i)``; leaves b after the loop."""
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    loop = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32, f"{name}.i")
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, end), loop, done)
    b.position_at_end(loop)
    body(b, i)
    i.add_incoming(b.add(i, ir.Constant(I32, step), flags=("nsw",)), b.block)
    b.branch(head)
    b.position_at_end(done)


def build_saxpy(m: ir.Module) -> None:
    """out[i] = a * x[i] + y[i], 8 lanes at a time with <8 x float>, then a scalar tail."""
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [F32P, F32P, F32P, F32, I32]), "saxpy")
    out, x, y, a, n = fn.args
    for p in (out, x, y):
        p.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    va = b.insert_element(ir.Constant(VEC, ir.Undefined), a, ir.Constant(I32, 0))
    va = b.shuffle_vector(va, va, ir.Constant(ir.VectorType(I32, 8), [0] * 8))
    nvec = b.and_(n, ir.Constant(I32, -8))

    def vec_ptr(p, i):
        return b.bitcast(b.gep(p, [i], inbounds=True), VEC.as_pointer())

    def vbody(b, i):
        vx = b.load(vec_ptr(x, i), align=4)   # numpy only guarantees element alignment
        vy = b.load(vec_ptr(y, i), align=4)
        b.store(b.fadd(b.fmul(va, vx), vy), vec_ptr(out, i), align=4)

    def sbody(b, i):
        sx = b.load(b.gep(x, [i], inbounds=True), align=4)
        sy = b.load(b.gep(y, [i], inbounds=True), align=4)
        b.store(b.fadd(b.fmul(a, sx), sy), b.gep(out, [i], inbounds=True), align=4)

    counted_loop(b, ir.Constant(I32, 0), nvec, 8, vbody, "vec")
    counted_loop(b, nvec, n, 1, sbody, "tail")
    b.ret_void()


def build_rows(m: ir.Module, name="rows", schedule="static", nested=False) -> None:
    """rows(out, tids, W, H, nthreads): out[y, x] = 1000*y + x in a parallel loop over y;
    tids[y, x] = the OpenMP thread number that wrote the element. With ``nested`` the loop
    over x is itself a parallel loop (which must run serially inside the outer one)."""
    fnty = ir.FunctionType(ir.VoidType(), [F32P, I32P, I32, I32, I32])
    fn = ir.Function(m, fnty, name)
    out, tids, W, H, nthreads = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def element(bb, y, x, o, t, w):
        idx = bb.add(bb.mul(y, w, flags=("nsw",)), x, flags=("nsw",))
        v = bb.sitofp(bb.add(bb.mul(y, ir.Constant(I32, 1000)), x), F32)
        bb.store(v, bb.gep(o, [idx], inbounds=True), align=4)
        bb.store(parallel.emit_thread_num(bb), bb.gep(t, [idx], inbounds=True), align=4)

    def row(bb, y, caps):
        o, t, w, nt = caps
        if nested:
            parallel.emit_parallel_for(
                bb, m, w, lambda b2, x, c2: element(b2, c2[0], x, c2[1], c2[2], c2[3]),
                [y, o, t, w], nt, name=f"{name}.inner")
        else:
            counted_loop(bb, ir.Constant(I32, 0), w, 1, lambda b2, x: element(b2, y, x, o, t, w))

    parallel.emit_parallel_for(b, m, H, row, [out, tids, W, nthreads], nthreads,
                               name=f"{name}.outer", schedule=schedule, chunk=3,
                               noalias=[True, True])
    b.ret_void()


SAXPY_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_float, ctypes.c_int32)
ROWS_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                          ctypes.c_int32, ctypes.c_int32)


def build_all() -> ir.Module:
    m = ir.Module("cpu_infra_test")
    build_saxpy(m)
    build_rows(m, "rows")
    build_rows(m, "rows_dyn", schedule="dynamic")
    build_rows(m, "rows_nested", nested=True)
    return m


def run_saxpy(jm: JitModule, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    out = np.zeros(n, np.float32)
    SAXPY_T(jm.address("saxpy"))(out.ctypes.data, x.ctypes.data, y.ctypes.data, 2.5, n)
    return out, np.float32(2.5) * x + y


def run_rows(jm: JitModule, name: str, W: int, H: int, nthreads: int):
    out = np.full((H, W), -1, np.float32)
    tids = np.full((H, W), -1, np.int32)
    ROWS_T(jm.address(name))(out.ctypes.data, tids.ctypes.data, W, H, nthreads)
    expect = (1000 * np.arange(H)[:, None] + np.arange(W)[None, :]).astype(np.float32)
    return out, tids, expect


@pytest.fixture(scope="module")
def jm() -> JitModule:
    return JitModule(build_all())


# ------------------------------------------------------------------------------- tests

def test_saxpy_matches_numpy(jm):
    for n in (0, 1, 7, 8, 1003):
        out, expect = run_saxpy(jm, n)
        np.testing.assert_array_equal(out, expect)
    # unaligned views: the vector loads must not assume 32-byte alignment
    rng = np.random.default_rng(1)
    buf = rng.random(1001, np.float32)
    x, y, out = buf[1:513], buf[2:514].copy(), np.zeros(513, np.float32)[1:]
    SAXPY_T(jm.address("saxpy"))(out.ctypes.data, x.ctypes.data, y.ctypes.data, 2.5, 512)
    np.testing.assert_array_equal(out, np.float32(2.5) * x + y)
    assert "<8 x float>" in jm.llvm_ir()


@pytest.mark.skipif(not HAS_AVX, reason="host CPU has no AVX (/proc/cpuinfo), so no ymm/zmm")
def test_saxpy_assembly_uses_wide_registers(jm):
    asm = jm.assembly()
    assert "ymm" in asm or "zmm" in asm


def test_target_info_and_baseline_target():
    info = host_target().info
    assert info.triple and info.cpu_name and info.data_layout
    base = make_target(cpu_name="x86-64", features="") if "x86_64" in info.triple else None
    if base is None:
        pytest.skip("baseline comparison is x86-64 specific")
    m = ir.Module()
    build_saxpy(m)
    text = str(m)
    assert DiskCache.key(text, base) != DiskCache.key(text, host_target())
    asm = JitModule(text, base).assembly()
    assert "ymm" not in asm and "zmm" not in asm      # plain SSE2 target: xmm only


def test_optimize_sets_target_and_rejects_bad_ir():
    m = ir.Module()
    build_saxpy(m)
    mod = optimize(m)
    assert mod.triple == host_target().info.triple
    with pytest.raises(RuntimeError):
        optimize("define void @f() { ret i32 0 }")
    with pytest.raises(KeyError):
        JitModule(m).address("no_such_function")


@pytest.mark.parametrize("name", ["rows", "rows_dyn"])
def test_parallel_rows_two_threads(jm, name):
    assert parallel.runtime_info().kind in ("pool", "gomp"), "a thread runtime expected"
    W, H = 37, 64
    out, tids, expect = run_rows(jm, name, W, H, 2)
    np.testing.assert_array_equal(out, expect)
    # each row was written by exactly one thread of a team of two
    assert (tids == tids[:, :1]).all()
    assert set(np.unique(tids)) <= {0, 1}
    if name == "rows":
        # static schedule: both threads really ran, one contiguous half each. (Dynamic
        # scheduling may legitimately let thread 0 take every chunk of so small a loop.)
        assert (tids[:H // 2] == 0).all() and (tids[H // 2:] == 1).all()


def test_parallel_edge_counts(jm):
    for W, H, nt in ((5, 0, 2), (5, 1, 2), (3, 5, 16), (4, 9, 1), (4, 9, 0)):
        out, tids, expect = run_rows(jm, "rows", W, H, nt)
        np.testing.assert_array_equal(out, expect)
        if nt == 1 or H <= 1:
            assert (tids == 0).all()


def test_nested_parallel_runs_inner_serially(jm):
    W, H = 16, 10
    out, tids, expect = run_rows(jm, "rows_nested", W, H, 2)
    np.testing.assert_array_equal(out, expect)
    # the inner loop ran on the outer loop's thread: one thread number per row
    assert (tids == tids[:, :1]).all()
    assert set(np.unique(tids)) == {0, 1}


def test_calls_from_many_python_threads(jm):
    errors = []

    def work(seed):
        try:
            for _ in range(20):
                out, expect = run_saxpy(jm, 517 + seed, seed)
                np.testing.assert_array_equal(out, expect)
                out, _, expect = run_rows(jm, "rows_dyn" if seed % 2 else "rows",
                                          33, 20 + seed, 2)
                np.testing.assert_array_equal(out, expect)
        except BaseException as exc:     # reported on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_compiles():
    results, errors = [], []

    def work(k):
        try:
            m = ir.Module(f"m{k}")
            build_saxpy(m)
            mod = JitModule(m)
            out, expect = run_saxpy(mod, 100 + k)
            results.append(np.array_equal(out, expect))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [True] * 4


def test_default_cache_dir_and_num_threads():
    assert default_cache_dir({"TILESOLVE_CACHE_DIR": "/x/y"}) == Path("/x/y")
    assert default_cache_dir({"HOME": "/h"}) == Path("/h/.cache/tilesolve/llvm")
    assert default_cache_dir({"TILESOLVE_CACHE_DIR": "", "HOME": "/h"}) == \
        Path("/h/.cache/tilesolve/llvm")
    assert parallel.resolve_num_threads({"TILESOLVE_NUM_THREADS": "3"}, 8) == 3
    assert parallel.resolve_num_threads({}, 8) == 8
    assert parallel.resolve_num_threads({}) >= 1
    with pytest.raises(ValueError):
        parallel.resolve_num_threads({"TILESOLVE_NUM_THREADS": "zero"})


# --------------------------------------------------------------- separate processes

_CHILD = """
import json, sys, warnings
sys.path.insert(0, {tests!r})
from tilesolve.backend.cpu import parallel
if {kind!r}:
    parallel.install_runtime({kind!r})
import test_cpu_infra as t
from tilesolve.backend.cpu.jit import DiskCache, JitModule
cache = DiskCache({cache!r}) if {cache!r} else None
jm = JitModule(t.build_all(), cache=cache)
out, expect = t.run_saxpy(jm, 1003)
rows, tids, rexpect = t.run_rows(jm, "rows", 9, 12, 2)
print(json.dumps({{"hit": jm.cache_hit, "corrupt": cache.corrupt if cache else 0,
                  "ok": bool((out == expect).all() and (rows == rexpect).all()),
                  "sum": float(out.sum()) + float(rows.sum()),
                  "tids": sorted(set(tids.ravel().tolist())),
                  "runtime": parallel.runtime_info().kind, "ir": len(jm.llvm_ir())}}))
"""


def _child(cache_dir, kind="") -> dict:
    code = _CHILD.format(tests=str(REPO / "tests"), cache=str(cache_dir or ""), kind=kind)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_disk_cache_across_processes(tmp_path):
    first = _child(tmp_path)
    second = _child(tmp_path)
    assert first["ok"] and second["ok"]
    assert not first["hit"] and second["hit"]
    assert first["sum"] == second["sum"] and first["ir"] == second["ir"] > 0
    (entry,) = tmp_path.glob("*.tsobj")
    assert not list(tmp_path.glob("*.tmp"))
    # corrupt the entry: it is detected, ignored and rebuilt
    blob = bytearray(entry.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    entry.write_bytes(bytes(blob))
    third = _child(tmp_path)
    assert third["ok"] and not third["hit"] and third["corrupt"] == 1
    assert third["sum"] == first["sum"]
    fourth = _child(tmp_path)
    assert fourth["hit"] and fourth["corrupt"] == 0 and fourth["ok"]
    # truncated to garbage: same story
    entry.write_bytes(b"not an object")
    fifth = _child(tmp_path)
    assert fifth["ok"] and not fifth["hit"] and fifth["corrupt"] == 1


def test_serial_fallback_runtime():
    res = _child(None, kind="serial")
    assert res["runtime"] == "serial" and res["ok"] and res["tids"] == [0]


@pytest.mark.parametrize("kind", ["pool", "gomp"])
def test_each_thread_runtime_runs_a_static_loop_as_two_threads(kind):
    """The pool and libgomp both give a static loop of a team of two its two halves:
    with the pool, a share no worker took in time is run by the master as that thread."""
    res = _child(None, kind=kind)
    assert res["runtime"] == kind and res["ok"] and res["tids"] == [0, 1]


def test_a_schedules_unroll_threshold_keys_the_build_and_keeps_results(tmp_path):
    """``Schedule.set_codegen(unroll_threshold=...)``: another cache key (the IR is the
    same), the same results; ``jit.UNROLL_THRESHOLD`` is the default for schedules
    without one, and None leaves LLVM's own."""
    import tilesolve as ts
    from tilesolve.apps import blur
    from tilesolve.backend.cpu import jit
    pipe, est = blur.build([70, 37])
    s = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    s60 = s.copy().set_codegen(unroll_threshold=60)
    inputs = blur.make_inputs([70, 37], seed=2)
    want = blur.numpy_reference(inputs, [70, 37])
    plain = ts.compile(pipe, s, cache_dir=str(tmp_path))
    low = ts.compile(pipe, s60, cache_dir=str(tmp_path))
    assert plain._kernel.jit.unroll is None and low._kernel.jit.unroll == 60
    assert plain.generated.ir_text == low.generated.ir_text
    assert plain._kernel.jit.key != low._kernel.jit.key
    for c in (plain, low):
        np.testing.assert_allclose(c.realize([70, 37], **inputs), want, rtol=1e-6)
    assert jit.unroll_threshold(None) is jit.UNROLL_THRESHOLD and jit.unroll_threshold(80) == 80


def test_fma_contracts_float_multiply_adds_only_when_asked():
    """``set_codegen(fma=True)``: float add/sub/mul carry LLVM's ``contract`` flag
    and the machine code fuses them where the ISA has FMA; without it, no flag and
    the result is numpy's bit for bit.  Either way the values match the reference."""
    import tilesolve as ts
    from tilesolve.apps import matmul
    from tilesolve.backend.cpu.target import host_target
    sizes = [48, 20]
    pipe, est = matmul.build(sizes, k=64)
    s = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    inputs = matmul.make_inputs(sizes, seed=3, k=64)
    want = np.asarray(inputs["A"], np.float64) @ np.asarray(inputs["B"], np.float64)
    plain = ts.compile(pipe, s, cache_dir=False)
    fused = ts.compile(pipe, s.copy().set_codegen(fma=True), cache_dir=False)
    assert " contract " not in plain.generated.ir_text
    assert "fmul contract" in fused.generated.ir_text
    assert "fadd contract" in fused.generated.ir_text
    a, b = plain.realize(sizes, **inputs), fused.realize(sizes, **inputs)
    for got in (a, b):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if host_target().info.has_feature("fma"):
        assert "vfmadd" in fused.assembly() and "vfmadd" not in plain.assembly()

