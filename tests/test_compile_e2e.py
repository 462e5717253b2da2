"""End to end: ``ts.compile`` (lower -> codegen -> JIT) vs ``ts.reference.realize``.

The blur under the naive and the hand schedule, a few apps under the default schedule,
updates, several outputs and Params, the environment variables, and a cache hit in a
second process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend.cpu.target import host_target

from cuda_samples import blur_pipeline

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("llvm-cache"))


def blur():
    pipe = blur_pipeline()
    return pipe, pipe.func("blur_x"), pipe.func("blur_y"), ts.Var("x"), ts.Var("y")


def hand(pipe, blur_x, blur_y, x, y, tx=256, ty=32, width=16):
    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[blur_y].tile(x, y, xo, yo, xi, yi, tx, ty).parallel(yo).vectorize(xi, width)
    s[blur_x].compute_at(blur_y, xo).vectorize(x, width)
    return s


@pytest.mark.parametrize("schedule", ["naive", "hand", "hand_small_tiles"])
def test_blur_matches_reference(schedule, cache):
    pipe, bx, by, x, y = blur()
    sched = {"naive": None, "hand": hand(pipe, bx, by, x, y),
             "hand_small_tiles": hand(pipe, bx, by, x, y, 32, 8, 8)}[schedule]
    c = ts.compile(pipe, sched, num_threads=2, cache_dir=cache)
    rng = np.random.default_rng(0)
    # big enough for the tiled branch, with partial tiles; then smaller than one tile
    for w, h in ((300, 70), (37, 5), (1, 1)):
        img = rng.random((h, w), dtype=np.float32)
        got = c.realize([w, h], input=img)
        want = ts.reference.realize(pipe, [w, h], input=img)
        np.testing.assert_array_equal(got, want, err_msg=f"{schedule} {w}x{h}")
    if schedule == "hand":
        assert "parallel for" in c.loop_ir() and "<16 x float>" in c.llvm_ir()


def test_blur_vectorized_by_16_uses_wide_registers(cache):
    if not host_target().info.has_feature("avx"):
        pytest.skip("the host CPU has no AVX, so there are no ymm/zmm registers to look for")
    pipe, bx, by, x, y = blur()
    c = ts.compile(pipe, hand(pipe, bx, by, x, y), cache_dir=cache)
    asm = c.assembly()
    assert "ymm" in asm or "zmm" in asm
    assert "vdivps" not in asm          # division by 3 is an exact multiply in double


@pytest.mark.parametrize("name", ["hist_eq", "conv_layer", "matmul", "iir_blur"])
def test_apps_default_schedule(name, cache):
    app = get_app(name)
    kw = getattr(app, "SMALL_BUILD", {}) or {}
    pipe, _ = app.build(app.SMALL_SIZE, **kw)
    inputs = app.make_inputs(app.SMALL_SIZE, seed=1, **kw)
    c = ts.compile(pipe, cache_dir=cache, num_threads=2)
    got = c.realize(app.SMALL_SIZE, **inputs)
    want = ts.reference.realize(pipe, app.SMALL_SIZE, **inputs)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)


def _hist_pipeline():
    """A histogram (update at a computed site), a scan, two outputs and two Params."""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.uint8, 1, "inp")
    k = ts.Param(ts.int32, "k")
    bias = ts.Param(ts.float32, "bias", 0.5)
    r = ts.RDom((0, inp.width()), name="r")
    hist = ts.Func("hist")
    hist[x] = 0
    hist[ts.cast(ts.int32, inp[r.x]) % 16] += 1
    cdf = ts.Func("cdf")
    cdf[x] = hist[x] * k
    s = ts.RDom((1, 15), name="s")
    cdf[s.x] = cdf[s.x - 1] + cdf[s.x]
    scaled = ts.Func("scaled")
    scaled[x] = ts.cast(ts.float32, cdf[x]) + bias
    return ts.Pipeline([cdf, scaled]), cdf, scaled, x


@pytest.mark.parametrize("vectorize", [False, True])
def test_updates_multiple_outputs_and_params(vectorize, cache):
    pipe, cdf, scaled, x = _hist_pipeline()
    sched = None
    if vectorize:
        sched = ts.Schedule(pipe)
        sched[scaled].vectorize(x, 8)
        sched[cdf].vectorize(x, 8)
    c = ts.compile(pipe, sched, cache_dir=cache, num_threads=2)
    a = np.random.default_rng(2).integers(0, 256, 1000).astype(np.uint8)
    got = c.realize([16], inp=a, k=3)
    want = ts.reference.realize(pipe, [16], inp=a, k=3)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    got = c.realize([16], inp=a, k=-2, bias=-1.25)
    want = ts.reference.realize(pipe, [16], inp=a, k=-2, bias=-1.25)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


_SUBPROCESS = """
import json, sys
sys.path.insert(0, {tests!r})
from test_compile_e2e import blur, hand
import tilesolve as ts
pipe, bx, by, x, y = blur()
c = ts.compile(pipe, hand(pipe, bx, by, x, y))
print(json.dumps({{"hit": c.cache_hit, "threads": c.num_threads}}))
"""


def test_environment_and_cache_hit_in_second_process(tmp_path):
    env = dict(os.environ, TILESOLVE_CACHE_DIR=str(tmp_path), TILESOLVE_NUM_THREADS="3")
    code = _SUBPROCESS.format(tests=str(REPO / "tests"))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, cwd=REPO, env=env)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert runs[0] == {"hit": False, "threads": 3}
    assert runs[1] == {"hit": True, "threads": 3}
    assert list(tmp_path.glob("*.tsobj"))


def test_output_touched_beyond_its_size_is_a_realize_error(cache):
    """An update that writes past the requested size would write past the output array:
    realize refuses with a RealizeError instead of corrupting memory."""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.int32, 1, "inp")
    r = ts.RDom((2, 2), name="r")
    f = ts.Func("f")
    f[x] = ts.cast(ts.float32, ts.boundary.repeat_edge(inp)[x])
    f[r.x] = f[r.x + 1] + f[r.x]
    pipe = ts.Pipeline(f)
    c = ts.compile(pipe, cache_dir=cache)
    a = np.arange(3, dtype=np.int32)
    with pytest.raises(ts.RealizeError, match=r"output f .*\[0, 4\].*size there is 3"):
        c.realize([3], inp=a)
    np.testing.assert_array_equal(c.realize([5], inp=a), ts.reference.realize(pipe, [5], inp=a))
