"""GPU shared/register buffers get constant sizes: the bound of a full tile.

A producer computed per GPU block (``compute_at`` the block loop,
``store_in("shared")``) covers a region whose extents are symbolic: a tail
tile's ``min(tile, W - base)``, or Exprs in the enclosing loops' variables and
the consumers' region lets.  As in Halide, the allocation is sized by a
constant upper bound of that extent (``lower.realize.ExtentBounder``), so a
tail tile uses part of a full tile's buffer; the region computed stays exact.
The solver's "h100" schedules of these apps failed with "store_in('shared')
needs a buffer of constant size" before; here they lower, generate CUDA C and
run on the CPU shim (g++), equal to the reference.

An extent with no constant bound (it grows with a Param or an image size)
is still a ScheduleError naming the Func and the dimension.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend import cuda as C
from tilesolve.errors import ScheduleError
from tilesolve.lower import ir as L
from tilesolve.lower.extent_bound import ExtentBounder, const_upper
from tilesolve.model import expr as E
from tilesolve.model import types as T

from cuda_samples import blur_pipeline

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")

# tests/test_apps_compiled.py's float tolerances
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6


def _gpu_allocations(lowered) -> list:
    return [a for a in L.walk_stmts(lowered.body)
            if isinstance(a, L.Allocate) and a.memory in ("shared", "register")]


def _assert_constant_sizes(lowered, at_least: int = 1) -> list:
    allocs = _gpu_allocations(lowered)
    assert len([a for a in allocs if a.memory == "shared"]) >= at_least
    for a in allocs:
        assert all(isinstance(x, E.Const) for x in a.extents), (a.name, a.memory, a.extents)
    return allocs


# ---------------------------------------------------------------------------
# The solver's h100 schedules of the apps
# ---------------------------------------------------------------------------
@needs_cxx
@pytest.mark.parametrize("name,estimates", [
    ("unsharp", "paper"),
    ("stencil_chain", "paper"),
    ("camera_pipe", "paper"),
    ("camera_pipe", "small"),     # another schedule: producers at a compute_root stage's tiles
    ("harris", "paper"),
])
def test_solver_gpu_schedule_lowers_with_constant_shared_buffers(name, estimates):
    app = get_app(name)
    params = dict(getattr(app, "SMALL_BUILD", {}))
    sizes = list(app.SMALL_SIZE)
    pipe, est = app.build(None if estimates == "paper" else sizes, **params)
    sched = ts.solve_schedule(pipe, "h100", estimates=est)
    assert 'store_in("shared")' in str(sched)
    _assert_constant_sizes(C.lower_cuda(pipe, sched))
    inputs = app.make_inputs(sizes, seed=0, **params)
    got = C.emulate_cuda(pipe, sched).realize(sizes, **inputs)
    want = ts.reference.realize(pipe, sizes, **inputs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


# ---------------------------------------------------------------------------
# A hand-written two-stage blur at sizes no tile divides
# ---------------------------------------------------------------------------
def _blur(tail):
    pipe = blur_pipeline()
    blur_x, blur_y = pipe.func("blur_x"), pipe.func("blur_y")
    s = ts.Schedule(pipe, target="cuda")
    s[blur_y].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 16, 8, tail=tail)
    s[blur_x].compute_at(blur_y, "xo").store_in("shared").gpu_threads("x", "y")
    return pipe, s


@needs_cxx
@pytest.mark.parametrize("tail", ["guard_with_if", "auto"])
def test_hand_written_blur_shared_producer_in_tail_tiles(tail):
    pipe, s = _blur(tail)
    lowered = C.lower_cuda(pipe, s)
    # a full 16 x 8 tile of blur_y reads 16 x 10 points of blur_x; a tail tile
    # computes fewer of them into the same constant-size buffer ("auto" tails:
    # one nest shifted inward, one guarded for images smaller than a tile)
    allocs = _assert_constant_sizes(lowered)
    assert len(allocs) == (1 if tail == "guard_with_if" else 2)
    for a in allocs:
        assert a.name == "blur_x" and [x.value for x in a.extents] == [16, 10]
    emu = C.emulate_cuda(pipe, s)
    assert "__shared__ float blur_x[160];" in emu.program.source
    rng = np.random.default_rng(3)
    for w, h in [(50, 37), (7, 5), (17, 9)]:     # 16 x 8 divides none of them
        a_in = rng.random((h, w), dtype=np.float32)
        np.testing.assert_allclose(emu.realize([w, h], input=a_in),
                                   ts.reference.realize(pipe, [w, h], input=a_in),
                                   rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


@needs_cxx
def test_producer_of_a_producer_is_bounded_through_the_consumer_lets():
    """``a``'s region is given by ``b``'s region lets (enclosing ``a``'s
    allocation), themselves a tail tile's ``min``: the bound substitutes the
    enclosing lets.  (Before: "store_in('shared') needs a buffer of constant
    size" for ``a``.)"""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    a, b, out = ts.Func("a"), ts.Func("b"), ts.Func("out")
    a[x, y] = ts.boundary.repeat_edge(inp)[x, y] * 2
    b[x, y] = a[x - 2, y] + a[x + 2, y]
    out[x, y] = b[x, y - 1] + b[x, y + 1]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe, target="cuda")
    s[out].gpu_tile(x, y, "xo", "yo", "xi", "yi", 32, 4, tail="guard_with_if")
    s[b].compute_at(out, "xo").store_in("shared").gpu_threads(x, y)
    s[a].compute_at(out, "xo").store_in("shared").gpu_threads(x, y)
    allocs = {al.name: [x.value for x in al.extents]
              for al in _assert_constant_sizes(C.lower_cuda(pipe, s), 2)}
    assert allocs == {"b": [32, 6], "a": [36, 6]}
    emu = C.emulate_cuda(pipe, s)
    rng = np.random.default_rng(5)
    for w, h in [(50, 37), (7, 5)]:
        a_in = rng.random((h, w), dtype=np.float32)
        np.testing.assert_allclose(emu.realize([w, h], input=a_in),
                                   ts.reference.realize(pipe, [w, h], input=a_in),
                                   rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


# ---------------------------------------------------------------------------
# The bound itself, and what has none
# ---------------------------------------------------------------------------
def test_const_upper_of_tile_extents():
    c = lambda v: E.Const(T.int32, v)  # noqa: E731
    xo, yo, W, m = E.Var("xo"), E.Var("yo"), E.Var("W"), E.Var("m")
    base = E.min_(xo * 32, W - 32)
    assert const_upper(E.min_(xo * 32 + 31, W - 1) - xo * 32 + 1) == 32
    assert const_upper((base + 7) / 8 - base / 8 + 5) == 6          # a grid tile
    assert const_upper((E.min_(xo * 32 + 31, W - 1) + 1) / 2 - xo * 16 + 2) == 18
    assert const_upper((E.min_(xo * 32 + 31, W - 1) + 1) / 2 * 2 - xo * 32 + 8) == 40
    assert const_upper(E.min_(xo * 32 + m + 31, W) / 2 - xo * 16 - m / 2 + 1) == 17
    level = E.min_(yo * 16, W - 16)                                    # a pyramid level
    assert const_upper(((level / 2 + 1) / 2 + 1) / 2 - (level + 1) / 8 + 4) == 5
    assert const_upper(W / 8) is None and const_upper(W - xo * 32) is None
    assert const_upper(c(7)) == 7


def test_extent_bounder_uses_lets_and_loop_ranges():
    c = lambda v: E.Const(T.int32, v)  # noqa: E731
    r, v, b, W = E.Var("r"), E.Var("v"), E.Var("b"), E.Var("W")
    lets = {"e": E.min_(b + 15, W - 1) - b + 1}
    assert ExtentBounder(lets)(E.Var("e") + 2) == 18
    assert ExtentBounder({}, [("r", c(0), c(4))])(r * 7 + 1) == 22    # r in [0, 3]
    assert ExtentBounder({}, [("v", b, c(8))])((v - b) * 2 + 1) == 15  # v in [b, b + 7]
    assert ExtentBounder({}, [("v", b, W)])((v - b) * 2 + 1) is None


def test_unbounded_shared_extent_names_the_func_and_dimension():
    """A producer whose region spans a Param-sized window has no constant size."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    k = ts.Param(ts.int32, "k", 3)
    g, out = ts.Func("g"), ts.Func("out")
    g[x, y] = ts.boundary.repeat_edge(inp)[x, y] + 1
    out[x, y] = g[x, y] + g[x + k, y]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe, target="cuda")
    s[out].gpu_tile(x, y, "xo", "yo", "xi", "yi", 16, 8)
    s[g].compute_at(out, "xo").store_in("shared").gpu_threads(x, y)
    with pytest.raises(ScheduleError, match=r"Func g: store_in\('shared'\) needs a buffer of "
                                            r"constant size, but its extent in dimension 0 \(x\) "
                                            r"has no constant upper bound \(it depends on the "
                                            r"run-time value of k\)"):
        C.lower_cuda(pipe, s)
