"""A large LLVM module compiled in parts by worker processes (``llvm_split.py``,
``llvm_worker.py``, ``JitModule(workers=...)``): the parts call each other across
objects, the result equals the one-process build, the disk cache keeps every part, and a
worker that fails leaves its part to this process."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.cpu import jit
from tilesolve.backend.cpu.jit import PART_MARK, DiskCache, JitModule
from tilesolve.backend.cpu.llvm_split import split_module

# entry(n) = sum of f_k(n) for k < 6; f_k(n) loops n times.  f_0 calls f_5 and the
# internal pair g.body / g.worker stays together.
_FUNC = """define internal i64 @"f{k}"(i64 %".1") {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i2, %loop]
  %acc = phi i64 [{k}, %entry], [%acc2, %loop]
  %m = mul i64 %i, {m}
  %acc2 = add i64 %acc, %m
  %i2 = add i64 %i, 1
  %c = icmp slt i64 %i2, %".1"
  br i1 %c, label %loop, label %done
done:
{tail}
}}
"""


def _module() -> str:
    parts = ['target triple = "unknown"', ""]
    for k in range(6):
        tail = ('  %x = call i64 @"f5"(i64 %".1")\n  %r = add i64 %acc2, %x\n  ret i64 %r'
                if k == 0 else "  ret i64 %acc2")
        parts.append(_FUNC.format(k=k, m=k + 3, tail=tail))
    parts.append('define internal i64 @"g.body"(i64 %".1") {\nentry:\n'
                 '  %r = mul i64 %".1", 7\n  ret i64 %r\n}\n')
    parts.append('define internal i64 @"g.worker"(i64 %".1") {\nentry:\n'
                 '  %r = call i64 @"g.body"(i64 %".1")\n  ret i64 %r\n}\n')
    calls = "\n".join(f'  %c{k} = call i64 @"f{k}"(i64 %".1")' for k in range(6))
    adds = "\n".join(f"  %s{k + 1} = add i64 %s{k}, %c{k}" for k in range(6))
    parts.append(f'define i64 @"entry"(i64 %".1") {{\nentry:\n{calls}\n'
                 f'  %g = call i64 @"g.worker"(i64 %".1")\n  %s0 = add i64 %g, 0\n{adds}\n'
                 '  ret i64 %s6\n}\n')
    return "\n".join(parts)


def _want(n: int) -> int:
    f = [k + (k + 3) * n * (n - 1) // 2 for k in range(6)]
    return sum(f) + f[5] + 7 * n


def _call(jm, n):
    return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(jm.address("entry"))(n)


def test_split_keeps_families_together_and_links_only_what_crosses():
    parts = split_module(_module(), 2)
    assert parts is not None and len(parts) == 2
    owner = {}
    for k, p in enumerate(parts):
        for line in p.splitlines():
            if line.startswith("define"):
                owner[line.split('@"')[1].split('"')[0]] = (k, line.startswith("define internal"))
    assert owner["g.body"][0] == owner["g.worker"][0]
    for name, (k, internal) in owner.items():
        elsewhere = any(f'@"{name}"' in p for j, p in enumerate(parts) if j != k)
        assert internal == (not elsewhere and name != "entry")
        assert all(f'declare i64 @"{name}"' in p for j, p in enumerate(parts)
                   if j != k and f'@"{name}"(' in p)
    assert split_module(_module(), 20) is None        # fewer functions than parts


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_parts_compiled_by_workers_equal_one_process(monkeypatch, tmp_path, workers):
    monkeypatch.setattr(jit, "SPLIT_LINES", 10)
    text = _module()
    jm = JitModule(text, workers=workers)
    assert [_call(jm, n) for n in (1, 5, 1000)] == [_want(n) for n in (1, 5, 1000)]
    assert (PART_MARK in jm.llvm_ir()) == (workers > 1)
    assert "entry:" in jm.assembly()
    if workers > 1:
        assert "wait" in jm.timings
        cache = DiskCache(tmp_path)
        JitModule(text, cache=cache, workers=workers)
        again = JitModule(text, cache=cache, workers=workers)
        assert again.cache_hit and _call(again, 77) == _want(77)
        assert again.llvm_ir() == jm.llvm_ir() or PART_MARK in again.llvm_ir()


def test_a_worker_that_fails_leaves_its_part_to_this_process(monkeypatch, tmp_path):
    monkeypatch.setattr(jit, "SPLIT_LINES", 10)
    monkeypatch.setattr(jit, "_WORKER", tmp_path / "missing_worker.py")
    jm = JitModule(_module(), workers=2)
    assert _call(jm, 9) == _want(9)
    assert PART_MARK in jm.llvm_ir()


def test_a_pipeline_compiled_in_parts_matches_the_reference(monkeypatch):
    """A real pipeline's module split in parts: its parallel bodies and entry live in
    different objects, and the result is the reference's."""
    monkeypatch.setattr(jit, "SPLIT_LINES", 10)
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "inp")
    a, b, out = ts.Func("a"), ts.Func("b"), ts.Func("out")
    a[x, y] = inp[x, y] * 2
    b[x, y] = a[x, y] + a[x, y + 1]
    out[x, y] = b[x, y] - inp[x + 1, y]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    s[a].compute_root().parallel(y).vectorize(x, 8)
    s[b].compute_root().parallel(y).vectorize(x, 8)
    s[out].parallel(y).vectorize(x, 8)
    fast = ts.compile(pipe, s, num_threads=2, cache_dir=False)
    assert PART_MARK in fast.llvm_ir()
    img = np.random.default_rng(0).random((41, 37)).astype(np.float32)
    np.testing.assert_array_equal(fast.realize([36, 40], inp=img),
                                  ts.reference.realize(pipe, [36, 40], inp=img))
