"""Compile time of the CPU backend's JIT, cold vs from the disk cache, plus a sanity run.

    python benchmarks/cpu_infra.py [--kernels 24] [--threads N]

Builds a module of realistic size by hand (no codegen needed): ``--kernels`` 3x3 stencil
kernels, each a parallel loop over rows (libgomp) around a scalar loop over columns that
LLVM's loop vectorizer widens. Prints, for that module: IR size, a cold compile (optimize +
codegen + load), a cached compile in this process and in a fresh process (load only), and
the throughput of one kernel against numpy. Ratios are measured in this run, not asserted.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from llvmlite import ir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tilesolve.backend.cpu import parallel  # noqa: E402
from tilesolve.backend.cpu.jit import DiskCache, JitModule  # noqa: E402

F32, I32 = ir.FloatType(), ir.IntType(32)
F32P = F32.as_pointer()


def build_stencil(m: ir.Module, name: str, weights) -> None:
    """name(out, in, W, H, nthreads): out[y, x] = sum_k w_k in[y+dy, x+dx] on the interior
    rows/columns 1..H-2 x 1..W-2 (float32)."""
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [F32P, F32P, I32, I32, I32]), name)
    out, inp, W, H, nt = fn.args
    out.add_attribute("noalias")
    inp.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    one = ir.Constant(I32, 1)
    rows = b.sub(H, ir.Constant(I32, 2), flags=("nsw",))

    def row(bb, r, caps):
        o, src, w = caps
        y = bb.add(r, one, flags=("nsw",))
        pre = bb.block
        loop = bb.append_basic_block("x")
        done = bb.append_basic_block("x.done")
        last = bb.sub(w, one, flags=("nsw",))
        bb.cbranch(bb.icmp_signed("<", one, last), loop, done)
        bb.position_at_end(loop)
        x = bb.phi(I32)
        x.add_incoming(one, pre)
        acc = ir.Constant(F32, 0.0)
        for k, wt in enumerate(weights):
            dy, dx = k // 3 - 1, k % 3 - 1
            yy = bb.add(y, ir.Constant(I32, dy), flags=("nsw",))
            idx = bb.add(bb.mul(yy, w, flags=("nsw",)), bb.add(x, ir.Constant(I32, dx),
                                                                flags=("nsw",)), flags=("nsw",))
            v = bb.load(bb.gep(src, [idx], inbounds=True), align=4)
            acc = bb.fadd(acc, bb.fmul(v, ir.Constant(F32, wt)))
        oidx = bb.add(bb.mul(y, w, flags=("nsw",)), x, flags=("nsw",))
        bb.store(acc, bb.gep(o, [oidx], inbounds=True), align=4)
        nx = bb.add(x, one, flags=("nsw",))
        x.add_incoming(nx, bb.block)
        bb.cbranch(bb.icmp_signed("<", nx, last), loop, done)
        bb.position_at_end(done)

    parallel.emit_parallel_for(b, m, rows, row, [out, inp, W], nt, name=f"{name}.par",
                               noalias=[True, True])
    b.ret_void()


def build_module(kernels: int) -> str:
    m = ir.Module("bench")
    rng = np.random.default_rng(0)
    for k in range(kernels):
        build_stencil(m, f"stencil{k}", [float(w) for w in rng.random(9).round(3)])
    return str(m)


_CHILD = """
import sys, time
sys.path.insert(0, {repo!r})
sys.path.insert(0, {bench!r})
import cpu_infra as c
from tilesolve.backend.cpu.jit import DiskCache, JitModule
text = c.build_module({kernels})
t = time.perf_counter(); jm = JitModule(text, cache=DiskCache({cache!r}))
print(jm.cache_hit, time.perf_counter() - t)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=24)
    ap.add_argument("--threads", type=int,
                    default=parallel.resolve_num_threads(os.environ))
    args = ap.parse_args()

    t = time.perf_counter()
    text = build_module(args.kernels)
    build_s = time.perf_counter() - t
    print(f"module: {args.kernels} stencil kernels, {text.count(chr(10))} lines of IR "
          f"({build_s * 1e3:.1f} ms to build with llvmlite.ir)")

    with tempfile.TemporaryDirectory() as tmp:
        cache = DiskCache(tmp)
        cold = JitModule(text, cache=cache)
        warm = JitModule(text, cache=cache)
        assert not cold.cache_hit and warm.cache_hit
        ph = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in cold.timings.items())
        print(f"cold compile        : {cold.compile_seconds * 1e3:8.1f} ms  ({ph})")
        print(f"cached, same process: {warm.compile_seconds * 1e3:8.1f} ms  "
              f"({cold.compile_seconds / warm.compile_seconds:.0f}x faster)")
        code = _CHILD.format(repo=str(REPO), bench=str(REPO / "benchmarks"),
                             kernels=args.kernels, cache=tmp)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        hit, secs = res[0] == "True", float(res[1])
        print(f"cached, new process : {secs * 1e3:8.1f} ms  (hit={hit}; "
              f"{cold.compile_seconds / secs:.0f}x faster)")
        entry_kb = sum(p.stat().st_size for p in Path(tmp).glob("*.tsobj")) / 1024
        print(f"cache entry         : {entry_kb:8.1f} KiB")

        import ctypes
        H, W = 2048, 2048
        src = np.random.default_rng(1).random((H, W), np.float32)
        out = np.zeros_like(src)
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                              ctypes.c_int32, ctypes.c_int32)(cold.address("stencil0"))
        rng = np.random.default_rng(0)
        w = rng.random(9).round(3).astype(np.float32)

        def numpy_ref():
            acc = np.zeros((H - 2, W - 2), np.float32)
            for k in range(9):
                dy, dx = k // 3, k % 3
                acc += w[k] * src[dy:dy + H - 2, dx:dx + W - 2]
            return acc

        def best(f, reps=5):
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                f()
                times.append(time.perf_counter() - t)
            return min(times)

        for nt in sorted({1, args.threads}):
            s = best(lambda: fn(out.ctypes.data, src.ctypes.data, W, H, nt))
            print(f"stencil0 {W}x{H}, {nt} thread(s): {s * 1e3:7.2f} ms")
        s_np = best(numpy_ref)
        print(f"numpy reference              : {s_np * 1e3:7.2f} ms")
        np.testing.assert_allclose(out[1:-1, 1:-1], numpy_ref(), rtol=1e-5, atol=1e-5)
        print("results match numpy")


if __name__ == "__main__":
    main()
