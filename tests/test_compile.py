"""CompiledPipeline.realize: argument checks, zero-copy inputs, out=, threads, the cache.

These tests use a hand-lowered pipeline (``compile_lowered``) so they do not depend on
the lowering; end-to-end tests through ``ts.compile`` are in test_compile_e2e.py.
"""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.compile import compile_lowered
from tilesolve.backend.cpu.jit import DiskCache
from tilesolve.errors import RealizeError
from tilesolve.lower import ir as L
from tilesolve.model import expr as E
from tilesolve.model import types as T

REPO = Path(__file__).resolve().parents[1]


def make_pipeline():
    """f[x, y] = (inp[x, y] + inp[x + 1, y]) * k, with k a Param without default."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "inp")
    k = ts.Param(ts.float32, "k")
    f = ts.Func("f")
    f[x, y] = (inp[x, y] + inp[x + 1, y]) * k
    return ts.Pipeline(f)


def hand_lowered():
    V, C = E.Var, (lambda v: E.Const(T.int32, v))
    x, y = V("f.s0.x"), V("f.s0.y")
    k = E.Param(T.float32, "k")

    def inp(ix):
        return L.load("inp", ix * V("inp.stride.0") + y * V("inp.stride.1"), T.float32)
    xo, xi = V("f.s0.x.xo"), V("f.s0.x.xi")
    xv = xo * 8 + xi
    vec = L.For("f.s0.x.xo", C(0), V("f.extent.0") / 8, "serial", L.For(
        "f.s0.x.xi", C(0), C(8), "vectorized",
        L.Store("f", xv + y * V("f.stride.1"), (inp(xv) + inp(xv + 1)) * k)))
    tail = L.For("f.s0.x", V("f.extent.0") / 8 * 8, V("f.extent.0") % 8, "serial",
                 L.Store("f", x + y * V("f.stride.1"), (inp(x) + inp(x + 1)) * k))
    body = L.For("f.s0.y", C(0), V("f.extent.1"), "parallel", L.Block.make([vec, tail]))
    args = (L.Argument("inp", "buffer", T.float32, 2), L.Argument("f", "buffer", T.float32, 2, True),
            L.Argument("k", "scalar", T.float32))
    regions = (("inp", ((C(0), V("f.extent.0") + 1), (C(0), V("f.extent.1")))),)
    return L.LoweredPipeline("f", args, body, input_regions=regions)


@pytest.fixture(scope="module")
def compiled():
    return compile_lowered(make_pipeline(), hand_lowered(), num_threads=2)


def _want(a, k, w, h):
    return ((a[:h, :w] + a[:h, 1:w + 1]) * np.float32(k)).astype(np.float32)


def test_realize_matches_reference(compiled):
    a = np.random.default_rng(0).random((7, 30)).astype(np.float32)
    got = compiled.realize([29, 7], inp=a, k=0.5)
    ref = ts.reference.realize(compiled.pipeline, [29, 7], inp=a, k=0.5)
    assert got.shape == (7, 29) and got.dtype == np.float32
    np.testing.assert_array_equal(got, ref)
    assert "parallel for f.s0.y" in compiled.loop_ir()
    assert "<8 x float>" in compiled.llvm_ir()
    assert compiled.compile_seconds > 0 and isinstance(compiled.cache_hit, bool)
    assert compiled.assembly().strip()


def test_out_argument(compiled):
    a = np.random.default_rng(1).random((4, 17)).astype(np.float32)
    out = np.full((4, 16), -1, np.float32)
    res = compiled.realize([16, 4], out=out, inp=a, k=2.0)
    assert res is out
    np.testing.assert_array_equal(out, _want(a, 2.0, 16, 4))
    bad = [np.zeros((4, 15), np.float32), np.zeros((4, 16), np.float64),
           np.zeros((4, 32), np.float32)[:, ::2], [out, out]]
    for b in bad:
        with pytest.raises(RealizeError, match="out="):
            compiled.realize([16, 4], out=b, inp=a, k=2.0)


def test_zero_copy_and_odd_strides(compiled):
    rng = np.random.default_rng(2)
    big = rng.random((9, 80)).astype(np.float32)
    view = big[::2, 3:]                               # strided rows: passed as is
    got = compiled.realize([20, 5], inp=view, k=1.0)
    np.testing.assert_array_equal(got, _want(view, 1.0, 20, 5))
    view = big[::2, ::3]                              # strided in x: copied
    got = compiled.realize([20, 5], inp=view, k=1.0)
    np.testing.assert_array_equal(got, _want(view, 1.0, 20, 5))
    raw = np.zeros(85 * 6 + 8, np.uint8)              # strides that are not whole floats
    odd = np.ndarray((6, 21), np.float32, raw.data, offset=1, strides=(4 * 21 + 1, 4))
    odd[...] = rng.random((6, 21))
    got = compiled.realize([20, 6], inp=odd, k=1.0)
    np.testing.assert_array_equal(got, _want(np.array(odd), 1.0, 20, 6))


def test_input_overlapping_output_is_copied(compiled):
    a = np.random.default_rng(3).random((3, 17)).astype(np.float32)
    want = _want(a, 3.0, 16, 3)
    out = np.zeros((5, 20), np.float32)[1:4, 2:18]   # a window of a larger array
    compiled.realize([16, 3], out=out, inp=a, k=3.0)
    np.testing.assert_array_equal(out, want)
    b = a.copy()                      # a window of the input: the input is copied first
    compiled.realize([16, 3], out=b[:, :16], inp=b, k=3.0)
    np.testing.assert_array_equal(b[:, :16], want)
    with pytest.raises(RealizeError, match="dense rows"):
        compiled.realize([8, 3], out=np.zeros((3, 16), np.float32)[:, ::2], inp=a, k=3.0)
    with pytest.raises(RealizeError, match="not writeable"):
        ro = np.zeros((3, 16), np.float32)
        ro.flags.writeable = False
        compiled.realize([16, 3], out=ro, inp=a, k=3.0)
    flat = a.ravel()
    inp = flat[: 3 * 17].reshape(3, 17)
    out = flat[: 3 * 16].reshape(3, 16)               # overlaps inp
    compiled.realize([16, 3], out=out, inp=inp, k=3.0)
    np.testing.assert_array_equal(out, want)


def test_repeated_calls_reuse_the_checked_arguments_and_check_what_can_change():
    """A second call with the same shapes and Params runs from the kept plan: new data
    gives new results, a new Param value or shape is checked again, and what a plan cannot
    know (an out= made read-only, an out= overlapping an input) is still caught."""
    fast = compile_lowered(make_pipeline(), hand_lowered(), num_threads=2)
    rng = np.random.default_rng(5)
    a, b = (rng.random((4, 17)).astype(np.float32) for _ in range(2))
    out = np.zeros((4, 16), np.float32)
    fast.realize([16, 4], out=out, inp=a, k=2.0)
    assert len(fast._plans) == 1
    for arr, k in ((b, 2.0), (a, 2.0), (b, -0.0), (b, 0.0)):
        got = fast.realize([16, 4], out=out, inp=arr, k=k)
        assert got is out
        np.testing.assert_array_equal(out, _want(arr, k, 16, 4))
        assert np.signbit(out).all() == (k == 0 and np.signbit(k))
    assert len(fast._plans) == 3                       # k = 2.0, -0.0 and 0.0
    np.testing.assert_array_equal(fast.realize([16, 4], inp=b, k=2.0), _want(b, 2.0, 16, 4))
    np.testing.assert_array_equal(fast.realize([16, 4], inp=b, k=2.0), _want(b, 2.0, 16, 4))
    with pytest.raises(RealizeError, match="too small"):     # another shape: checked
        fast.realize([16, 4], out=out, inp=b[:, :16].copy(), k=2.0)
    with pytest.raises(RealizeError, match="param 'k'.*out of its range"):
        fast.realize([16, 4], out=out, inp=b, k=1e39)
    out.flags.writeable = False
    with pytest.raises(RealizeError, match="not writeable"):
        fast.realize([16, 4], out=out, inp=b, k=2.0)
    both = np.zeros((4, 17), np.float32)
    src = rng.random((4, 17)).astype(np.float32)
    both[...] = src
    fast.realize([16, 4], out=np.zeros((4, 16), np.float32), inp=both, k=2.0)
    got = fast.realize([16, 4], out=both[:, :16], inp=both, k=2.0)    # overlaps: copied
    np.testing.assert_array_equal(got, _want(src, 2.0, 16, 4))


@pytest.mark.parametrize("kwargs,sizes,pattern", [
    ({"inp": np.zeros((4, 16), np.float32), "k": 1.0}, [16, 4],
     r"input 'inp' is too small: dimension 0 \(numpy axis 1\) must cover \[0, 16\].*extent 16"),
    ({"inp": np.zeros((3, 17), np.float32), "k": 1.0}, [16, 4],
     r"input 'inp' is too small: dimension 1 .*\[0, 3\].*extent 3"),
    ({"inp": np.zeros((4, 17), np.float64), "k": 1.0}, [16, 4], r"'inp' has dtype float64"),
    ({"inp": np.zeros((17,), np.float32), "k": 1.0}, [16, 4], r"'inp' has rank 1"),
    ({"k": 1.0}, [16, 4], r"missing input 'inp'"),
    ({"inp": np.zeros((4, 17), np.float32)}, [16, 4], r"missing param 'k'"),
    ({"inp": np.zeros((4, 17), np.float32), "k": 1.0, "kk": 2}, [16, 4], r"unknown argument 'kk'"),
    ({"inp": np.zeros((4, 17), np.float32), "k": 1.0}, [16], r"2 dimensions but 1 sizes"),
    ({"inp": np.zeros((4, 17), np.float32), "k": 1.0}, [16, 0], r"positive int"),
    ({"inp": np.zeros((4, 17), np.float32), "k": 1.0}, [16, 2.5], r"positive int"),
    ({"inp": [[0.0] * 17] * 4, "k": 1.0}, [16, 4], r"must be a numpy array"),
])
def test_realize_errors(compiled, kwargs, sizes, pattern):
    with pytest.raises(RealizeError, match=pattern):
        compiled.realize(sizes, **kwargs)


def test_concurrent_realize_from_python_threads(compiled):
    rng = np.random.default_rng(4)
    inputs = [rng.random((64, 257)).astype(np.float32) for _ in range(8)]
    results, errors = [None] * 8, []

    def work(i):
        try:
            for _ in range(5):
                results[i] = compiled.realize([256, 64], inp=inputs[i], k=float(i))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        np.testing.assert_array_equal(results[i], _want(inputs[i], float(i), 256, 64))


_SUBPROCESS = """
import json, sys
sys.path.insert(0, {tests!r})
from test_compile import make_pipeline, hand_lowered
from tilesolve.backend.compile import compile_lowered
from tilesolve.backend.cpu.jit import DiskCache
c = compile_lowered(make_pipeline(), hand_lowered(), cache=DiskCache({cache!r}))
print(json.dumps({{"hit": c.cache_hit, "seconds": c.compile_seconds}}))
"""


def test_cache_hit_in_a_second_process(tmp_path):
    code = _SUBPROCESS.format(tests=str(REPO / "tests"), cache=str(tmp_path))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120, cwd=REPO)
        assert r.returncode == 0, r.stderr
        runs.append(r.stdout.strip().splitlines()[-1])
    assert '"hit": false' in runs[0] and '"hit": true' in runs[1]
    assert len(list(tmp_path.glob("*.tsobj"))) == 1
    # and in this process the entry is found too
    c = compile_lowered(make_pipeline(), hand_lowered(), cache=DiskCache(tmp_path))
    assert c.cache_hit
    a = np.ones((2, 9), np.float32)
    np.testing.assert_array_equal(c.realize([8, 2], inp=a, k=1.0), np.full((2, 8), 2.0))


def test_compile_routes_gpu_targets_to_cuda():
    """A cuda schedule or a GPU spec goes to the CUDA backend, which (without pycuda
    and a GPU, as here) says so and names the CPU-side alternatives."""
    pipe = make_pipeline()
    from tilesolve.backend.cuda.runtime import availability
    if availability() is None:
        pytest.skip("a GPU and pycuda are present: the CUDA path is tested in test_cuda_backend")
    sched = ts.Schedule(pipe, target="cuda")
    with pytest.raises(ts.TilesolveError, match="emulate_cuda"):
        ts.compile(pipe, sched)
    with pytest.raises(ts.TilesolveError, match="needs a schedule made for it"):
        ts.compile(pipe, ts.Schedule(pipe), target=ts.load_spec("h100"))
    with pytest.raises(ts.TilesolveError, match="is a CPU"):
        ts.compile(pipe, sched, target="cpu")
    with pytest.raises(ts.TilesolveError, match="target must be"):
        ts.compile(pipe, target=3.5)
