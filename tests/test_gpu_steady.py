"""The GPU steady state (lower/partition.py, "GPU blocks"): a kernel's innermost block
loop holds two bodies behind one block-uniform condition, the steady one without the
boundary conditions' clamps and the tails' guards.

* the CUDA text of a repeat_edge blur: the steady branch has no ``ts_imin``/``ts_imax``
  and no guard of a coordinate against an extent; the other branch keeps its clamps;
* the steady branch runs for exactly the interior blocks (the blocks whose reads need
  no clamp), counted on the checking interpreter, which also faults any read outside a
  buffer;
* every kernel equals the reference under the CUDA emulation at sizes that are and are
  not multiples of the tile, and smaller than a tile, for three boundary conditions, an
  update stage (``guard_with_if`` tails) and the solver's h100 schedules;
* the CPU lowering is left alone (its partitioned loops are the same).
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend import cuda as C
from tilesolve.lower import ir as L
from tilesolve.lower.interpret import Interpreter, run
from tilesolve.lower.lower import lower

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")

TILE = (16, 8)
SIZES = [(64, 32), (53, 29), (16, 8), (17, 9), (7, 5), (3, 20), (40, 3)]


def _blur(boundary):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = boundary(inp)
    blur_x, blur_y = ts.Func("blur_x"), ts.Func("blur_y")
    blur_x[x, y] = (src[x - 1, y] + src[x, y] + src[x + 1, y]) / 3
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    return ts.Pipeline(blur_y), blur_x, blur_y, (x, y)


def _tiled(boundary):
    """blur_y in 16 x 8 blocks, blur_x computed per block in shared memory."""
    pipe, blur_x, blur_y, (x, y) = _blur(boundary)
    s = ts.Schedule(pipe, target="cuda")
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[blur_y].gpu_tile(x, y, xo, yo, xi, yi, *TILE)
    s[blur_x].compute_at(blur_y, xo).store_in("shared").gpu_threads(x, y)
    return pipe, s


def _serial(boundary):
    """blur_y in 64 x 16 blocks, each thread 4 rows (unrolled); blur_x's 18 rows a block
    over 5 rows of threads, the last 2 of its 20 guarded in every block."""
    pipe, blur_x, blur_y, (x, y) = _blur(boundary)
    s = ts.Schedule(pipe, target="cuda")
    xo, yo, xi, yi, yt, ys = (ts.Var(n) for n in ("xo", "yo", "xi", "yi", "yt", "ys"))
    s[blur_y].split(x, xo, xi, 64).split(y, yo, yi, 16).split(yi, yt, ys, 4) \
        .reorder(ys, xi, yt, xo, yo).gpu_blocks(xo, yo).gpu_threads(xi, yt).unroll(ys)
    s[blur_x].compute_at(blur_y, xo).store_in("shared") \
        .split(y, y, ys, 4, tail="guard_with_if").reorder(ys, x, y).gpu_threads(x, y)
    return pipe, s


def _update():
    """An update stage in blocks: its pure splits guard each point with an ``if``."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = ts.boundary.repeat_edge(inp)
    f = ts.Func("f")
    f[x, y] = src[x, y]
    f[x, y] = f[x, y] * 0.5 + src[x + 1, y - 1]
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe, target="cuda")
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[f].gpu_tile(x, y, xo, yo, xi, yi, *TILE)
    s[f].update(0).gpu_tile(x, y, xo, yo, xi, yi, *TILE)
    return pipe, s


def _kernels(source: str) -> list:
    return ['extern "C"' + k for k in source.split('extern "C"')[1:]]


def _branches(kernel: str):
    """(steady branch, other branch) of a kernel: the text between the first ``if`` at
    the kernel's top level and its ``else``, and from there to the closing brace."""
    lines = kernel.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("  if ("))
    mid = next(i for i in range(start, len(lines)) if lines[i] == "  } else {")
    end = next(i for i in range(mid + 1, len(lines)) if lines[i] == "  }")
    return "\n".join(lines[start + 1:mid]), "\n".join(lines[mid + 1:end])


_CLAMP = re.compile(r"ts_im(in|ax)<")
_GUARD = re.compile(r"if \(\(\w+ < \w+\)\)")     # a coordinate tested against an extent


def test_the_steady_branch_of_a_repeat_edge_blur_has_no_clamp_and_no_guard():
    pipe, s = _tiled(ts.boundary.repeat_edge)
    source = C.generate(C.lower_cuda(pipe, s)).source
    kernels = _kernels(source)
    assert len(kernels) == 2       # images at least a tile large, and smaller ones
    for k in kernels:
        steady, other = _branches(k)
        assert "input[" in steady and "blur_y[" in steady
        assert not _CLAMP.search(steady), steady
        assert not _GUARD.search(steady), steady
        assert len(_CLAMP.findall(other)) >= 4      # x and y, at both ends
    # the small images' kernel guards its points outside the steady branch
    assert _GUARD.search(_branches(kernels[1])[1])
    # the shared buffer is declared once, above the branch
    assert kernels[0].count("__shared__ float blur_x[") == 1


def test_the_steady_branch_of_an_update_drops_its_guards():
    pipe, s = _update()
    source = C.generate(C.lower_cuda(pipe, s)).source
    update = next(k for k in _kernels(source) if "f_s1" in k)
    steady, other = _branches(update)
    assert not _GUARD.search(steady) and not _CLAMP.search(steady), steady
    assert len(_GUARD.findall(other)) == 2 and _CLAMP.search(other)


def _steady_blocks(lowered, sizes, inputs, monkeypatch) -> tuple:
    """(blocks that took a steady branch, blocks that did not), run on the checking
    interpreter (which faults a read outside any buffer)."""
    counts = [0, 0]
    run_stmt = Interpreter.exec

    def exec_(self, s, env):
        if isinstance(s, L.IfThenElse) and s.steady:
            counts[0 if bool(self.ev(s.cond, env)) else 1] += 1
        return run_stmt(self, s, env)
    monkeypatch.setattr(Interpreter, "exec", exec_)
    out = run(lowered, sizes, **inputs)
    return counts, out


@pytest.mark.parametrize("w,h", [(64, 32), (53, 29), (80, 8)])
def test_the_steady_branch_runs_for_exactly_the_interior_blocks(w, h, monkeypatch):
    """Block (i, j) reads columns 16 i - 1 .. 16 i + 16 and rows 8 j - 2 .. 8 j + 9 of
    the input (the last block of a row shifted back to end at the image's edge): it
    needs no clamp when those lie inside the image."""
    pipe, s = _tiled(ts.boundary.repeat_edge)
    lowered = lower(pipe, s)
    a = np.random.default_rng(1).random((h, w), dtype=np.float32)
    (steady, other), out = _steady_blocks(lowered, [w, h], {"input": a}, monkeypatch)
    np.testing.assert_allclose(out, ts.reference.realize(pipe, [w, h], input=a), rtol=1e-6)

    def interior(n, tile, halo):
        bases = [min(i * tile, n - tile) for i in range(-(-n // tile))]
        return sum(1 for b in bases if b - halo >= 0 and b + tile - 1 + halo <= n - 1)
    want = interior(w, TILE[0], 1) * interior(h, TILE[1], 2)
    blocks = -(-w // TILE[0]) * -(-h // TILE[1])
    assert (steady, steady + other) == (want, blocks)


def test_a_guard_that_fails_inside_every_block_stays_in_the_steady_state(monkeypatch):
    """The guard of blur_x's rows past its 18 holds in no block: the steady state keeps it
    (read with the steady extents, 18 rows over 5 x 4), and still runs in the interior."""
    pipe, s = _serial(ts.boundary.repeat_edge)
    source = C.generate(C.lower_cuda(pipe, s)).source
    for k in _kernels(source):       # images at least a tile large, and smaller ones
        steady, other = _branches(k)
        assert not _CLAMP.search(steady), steady
        assert re.search(r"if \(\(blur_x_s0_y < ", steady), steady
    w, h = 256, 64
    a = np.random.default_rng(5).random((h, w), dtype=np.float32)
    (n_steady, n_other), out = _steady_blocks(lower(pipe, s), [w, h], {"input": a}, monkeypatch)
    np.testing.assert_allclose(out, ts.reference.realize(pipe, [w, h], input=a), rtol=1e-6)
    assert (n_steady, n_steady + n_other) == (2 * 2, 4 * 4)


def _equal_at_every_size(pipe, s, seed):
    """The emulated kernels of schedule ``s`` equal the reference at every size of SIZES."""
    emu = C.emulate_cuda(pipe, s)
    rng = np.random.default_rng(seed)
    for w, h in SIZES:
        a = rng.random((h, w), dtype=np.float32)
        want = ts.reference.realize(pipe, [w, h], input=a)
        np.testing.assert_allclose(emu.realize([w, h], input=a), want, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{w} x {h}")


@needs_cxx
@pytest.mark.parametrize("boundary", [ts.boundary.repeat_edge, ts.boundary.constant_exterior,
                                      ts.boundary.mirror_interior])
@pytest.mark.parametrize("form", [_tiled, _serial])
def test_steady_kernels_equal_the_reference_at_every_size(boundary, form):
    _equal_at_every_size(*form(boundary), seed=2)


@needs_cxx
def test_an_update_in_blocks_equals_the_reference_at_every_size():
    _equal_at_every_size(*_update(), seed=3)


@needs_cxx
@pytest.mark.parametrize("spec", ["h100", "a100"])
def test_the_solvers_schedule_has_a_steady_branch_and_equals_the_reference(spec):
    pipe, _, _, _ = _blur(ts.boundary.repeat_edge)
    s = ts.solve_schedule(pipe, spec, estimates={"blur_y": [256, 128], "input": [256, 128]},
                          method="greedy")
    source = C.generate(C.lower_cuda(pipe, s)).source
    steady, _ = _branches(_kernels(source)[0])
    assert "input[" in steady and not _CLAMP.search(steady)
    emu = C.emulate_cuda(pipe, s)
    rng = np.random.default_rng(4)
    for w, h in [(96, 40), (45, 37), (5, 3)]:
        a = rng.random((h, w), dtype=np.float32)
        want = ts.reference.realize(pipe, [w, h], input=a)
        np.testing.assert_allclose(emu.realize([w, h], input=a), want, rtol=1e-6, atol=1e-7)


def test_a_kernel_with_nothing_to_remove_keeps_one_body():
    """No boundary condition and tiles shifted inside the image: nothing to specialize."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    f = ts.Func("f")
    f[x, y] = inp[x, y] * 2
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe, target="cuda")
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[f].gpu_tile(x, y, xo, yo, xi, yi, *TILE)
    lowered = lower(pipe, s)
    shifted = lowered.body
    while not (isinstance(shifted, L.IfThenElse) and not shifted.steady):
        shifted = L.stmt_children(shifted)[0]
    assert not any(isinstance(n, L.IfThenElse) and n.steady
                   for n in L.walk_stmts(shifted.then_case))


# -- conditions on loaded values ---------------------------------------------------------
# Two full-range int32 values differ by anything: bounds [-2**31, 2**31 - 1].  "a > b at
# every lane" needs min(a - b) - 1 >= 0; written in int32 that is -2**31 - 1, which wraps
# to 2**31 - 1 >= 0, and the steady state took the select's true branch (or dropped a
# clamp of a loaded index) in every block.
def _tiles(f, x, n=4):
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe, target="cuda")
    s[f].gpu_tile(x, ts.Var("xb"), ts.Var("xt"), n)
    return pipe, s


def _compare_1d(pipe, s, inputs):
    """The lowered program (checking interpreter) and, with a C++ compiler, the emulated
    CUDA both equal the reference on ``inputs`` (1-D, their extent the output's + 1)."""
    w = min(len(v) for v in inputs.values()) - 1
    want = ts.reference.realize(pipe, [w], **inputs)
    np.testing.assert_array_equal(run(lower(pipe, s), [w], **inputs), want)
    if shutil.which("g++") or shutil.which("c++"):
        np.testing.assert_array_equal(C.emulate_cuda(pipe, s).realize([w], **inputs), want)


def test_a_select_between_loaded_values_stays_in_the_steady_state():
    x = ts.Var("x")
    a, b = ts.ImageParam(ts.int32, 1, "a"), ts.ImageParam(ts.int32, 1, "b")
    f = ts.Func("f")
    f[x] = ts.select(a[x] > b[x], 1, 2)
    pipe, s = _tiles(f, x)
    source = C.generate(C.lower_cuda(pipe, s)).source
    for k in _kernels(source):
        assert k.count("b[") == k.count("f[")      # every store keeps its select
    av = np.arange(-8, 9, dtype=np.int32)
    _compare_1d(pipe, s, {"a": av, "b": np.zeros_like(av)})


def test_a_clamp_of_a_loaded_index_stays_in_the_steady_state():
    """``lut[clamp(a[x], 5, 10)]``: the clamp is no no-op (a[x] is any int32); without it
    the checking interpreter faults the read at lut[-6]."""
    x = ts.Var("x")
    a, lut = ts.ImageParam(ts.int32, 1, "a"), ts.ImageParam(ts.int32, 1, "lut")
    f = ts.Func("f")
    f[x] = lut[ts.clamp(a[x], 5, 10)]
    pipe, s = _tiles(f, x)
    av = np.arange(11, dtype=np.int32) * 3 - 6
    _compare_1d(pipe, s, {"a": av, "lut": np.arange(11, dtype=np.int32) * 10})


def test_a_packed_tuples_update_equals_the_reference():
    """The update of a Tuple (packed in one uint32 Func, a slot per value, the new values
    written at slot (r + 2) % 4 and copied back) selects on its loaded values: the steady
    state of its kernel keeps the select (the random GPU lowering test's find)."""
    x = ts.Var("x")
    inp = ts.ImageParam(ts.int32, 1, "in0")
    t = ts.Func("t0")
    t[x] = (inp[x] * 3, ts.cast(ts.float32, inp[x]) - 1.5)
    a, b = t[x]
    t[x] = (ts.cast(ts.int32, b) - a, ts.select(a > ts.cast(ts.int32, b), b * 0.5, b + 1.0))
    f = ts.Func("f")
    f[x] = t[x][0] + ts.cast(ts.int32, t[x + 1][1])
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe, target="cuda")
    s["t0_packed"].compute_root()
    s["t0_packed"].update(0).gpu_tile(x, ts.Var("xb"), ts.Var("xt"), 2)
    lowered = lower(pipe, s)
    assert any(isinstance(n, L.IfThenElse) and n.steady for n in L.walk_stmts(lowered.body))
    _compare_1d(pipe, s, {"in0": np.arange(-6, 7, dtype=np.int32)})
