"""The host side of a compiled CUDA pipeline, on devices that need no GPU.

A realize issues a *prepared plan* (``backend/cuda/prepared.py``): the host plan traced
once per sizes and Params, its launches' grids, blocks and packed arguments kept, every
device buffer an offset in one arena of the pipeline's pool.  Checked here with the
no-op device (``drivers.NoopDriver``: counts and records, runs nothing) and the CPU
shim (``emulate.ShimDriver``: the kernels run on the CPU from the packed arguments):

* the prepared plan launches exactly what the interpreter (``plan.run_plan``) launches:
  the same kernels, grids, blocks and arguments, buffers by name;
* after the first realize, a realize allocates and frees nothing on the device;
* ``ts.release_memory()`` and the pipeline's collection free the pool;
* other sizes or Params build another plan; the pool's arena grows only when needed;
* on the CPU shim the prepared path's outputs equal the reference.
"""
from __future__ import annotations

import gc
import shutil
import struct

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.backend import cuda as C
import cuda_samples as S
from tilesolve.backend.cuda.codegen import generate
from tilesolve.backend.cuda.drivers import NoopDriver
from tilesolve.backend.cuda.plan import bind_arguments, launch_dims
from tilesolve.backend.cuda.prepared import (ALIGN, _place, _Slot, arg_format, arg_offsets,
                                             scalar_format)
from tilesolve.backend.cuda.runtime import CudaPipeline, RealizeTiming

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")


def _app(name, size="small"):
    app = get_app(name)
    sizes = app.SMALL_SIZE if size == "small" else app.PAPER_SIZE
    pipe, est = app.build(sizes)
    sched = ts.solve_schedule(pipe, "h100", estimates=est, method="greedy")
    return pipe, sched, sizes, app.make_inputs(sizes)


def _noop(pipe, sched, interpreted=False):
    return C.noop_cuda(pipe, sched, interpreted=interpreted, driver=NoopDriver(log=True))


def _launches(fast, sizes, inputs) -> list:
    """What one realize launched: (kernel, grid, block, arguments with buffers by name)."""
    drv = fast.driver
    drv.log.clear()
    fast.realize(sizes, **inputs)
    kernels = {k.name: k for k in fast.program.kernels}
    out = []
    if fast.interpreted:
        for name, grid, block, args in drv.log:
            vals = tuple(drv.history[a][1] if p.kind == "buffer" else np.asarray(a).item()
                         for p, a in zip(kernels[name].params, args))
            out.append((name, tuple(grid), tuple(block), vals))
        return out
    plan, base = fast.last_plan, fast.pool.base
    assert len(drv.log) == len(plan.launches)
    for (name, grid, block, argbuf), lp in zip(drv.log, plan.launches):
        k = kernels[name]
        vals = list(struct.unpack(arg_format(k), argbuf))
        for i, b, param in lp.pointers:
            buf = plan.buffers[b]
            assert vals[i] == base + buf.offset and k.params[i].name == param
            vals[i] = buf.name
        out.append((name, tuple(grid), tuple(block), tuple(vals)))
    return out


@pytest.mark.parametrize("name", ["blur", "bilateral_grid", "hist_eq", "interpolate",
                                  "camera_pipe", "nl_means"])
def test_the_prepared_plan_launches_what_the_interpreter_launches(name):
    pipe, sched, sizes, inputs = _app(name)
    before = _launches(_noop(pipe, sched, interpreted=True), sizes, inputs)
    fast = _noop(pipe, sched)
    assert _launches(fast, sizes, inputs) == before and before
    assert _launches(fast, sizes, inputs) == before        # the cached plan, again


@pytest.mark.slow
def test_the_prepared_plan_launches_what_the_interpreter_launches_at_paper_size():
    """local_laplacian: over 20 launches a realize, over 200 MB of intermediates (fewer
    in the arena: an intermediate lives from its first launch to its last)."""
    pipe, sched, sizes, inputs = _app("local_laplacian", "paper")
    before = _launches(_noop(pipe, sched, interpreted=True), sizes, inputs)
    fast = _noop(pipe, sched)
    assert _launches(fast, sizes, inputs) == before
    plan = fast.last_plan
    assert len(plan.launches) > 20
    io = sum(b.nbytes for b in plan.buffers if b.role != "intermediate")
    assert plan.allocated_bytes > 200e6 and plan.arena_bytes < io + plan.allocated_bytes


def test_after_warm_up_a_realize_allocates_nothing_on_the_device():
    pipe, sched, sizes, inputs = _app("bilateral_grid")
    fast = _noop(pipe, sched)
    drv = fast.driver
    fast.realize(sizes, **inputs)
    assert drv.allocs == 1 and drv.live_bytes == fast.last_plan.arena_bytes
    a, f, n = drv.allocs, drv.frees, drv.launches
    for _ in range(3):
        fast.realize(sizes, **inputs)
    assert (drv.allocs, drv.frees) == (a, f)
    assert drv.launches - n == 3 * len(fast.last_plan.launches) > 0
    # the interpreter allocates and frees every buffer on every realize
    slow = _noop(pipe, sched, interpreted=True)
    slow.realize(sizes, **inputs)
    d = slow.driver
    assert d.allocs == d.frees > len(slow.program.args) and not d.live


def test_release_memory_frees_the_pool_and_the_next_realize_allocates_it_again():
    pipe, sched, sizes, inputs = _app("hist_eq")
    fast = _noop(pipe, sched)
    fast.realize(sizes, **inputs)
    drv, arena = fast.driver, fast.last_plan.arena_bytes
    assert drv.live_bytes == arena
    assert ts.release_memory() >= arena
    assert not drv.live and fast.pool.base is None
    assert fast.release_memory() == 0
    fast.realize(sizes, **inputs)
    assert drv.allocs == 2 and drv.live_bytes == arena
    # the plan survives the release: its argument buffers follow the new arena
    assert _launches(fast, sizes, inputs) == _launches(_noop(pipe, sched, True), sizes, inputs)


def test_the_pool_is_freed_with_the_pipeline():
    pipe, sched, sizes, inputs = _app("blur")
    fast = _noop(pipe, sched)
    fast.realize(sizes, **inputs)
    drv = fast.driver
    assert drv.live
    del fast
    gc.collect()
    assert not drv.live and drv.frees == 1


def test_other_sizes_or_params_build_another_plan():
    pipe, sched, sizes, inputs = _app("bilateral_grid")
    fast = _noop(pipe, sched)
    drv = fast.driver
    fast.realize(sizes, **inputs)
    small = fast.last_plan
    big_sizes = [2 * s for s in sizes]
    big_inputs = get_app("bilateral_grid").make_inputs(big_sizes)
    fast.realize(big_sizes, **big_inputs)
    big = fast.last_plan
    assert fast.cached_plans == 2 and big is not small
    assert [lp.grid for lp in big.launches] != [lp.grid for lp in small.launches]
    assert big.arena_bytes > small.arena_bytes and drv.allocs == 2     # the arena grew
    fast.realize(sizes, **inputs)                  # the first plan again: no new plan,
    assert fast.last_plan is small and drv.allocs == 2                 # the arena is large enough
    fast.realize(sizes, **dict(inputs, r_sigma=0.05))   # another Param value: another plan
    assert fast.cached_plans == 3 and fast.last_plan is not small
    assert _launches(fast, sizes, dict(inputs, r_sigma=0.05)) == \
        _launches(_noop(pipe, sched, True), sizes, dict(inputs, r_sigma=0.05))


def test_the_plan_cache_keeps_the_most_recent_plans():
    pipe, sched, sizes, inputs = _app("blur")
    fast = CudaPipeline(C.generate(C.lower_cuda(pipe, sched)), None, None, {}, pipe,
                        driver=NoopDriver(), plan_cache_size=2)
    app = get_app("blur")
    for w in (40, 48, 56, 40):
        fast.realize([w, sizes[1]], **app.make_inputs([w, sizes[1]]))
    assert fast.cached_plans == 2


def test_launch_records_give_grid_block_shared_and_buffer_bytes():
    """Halide's GPU blur: 16 x 16 tiles, blur_x in shared memory."""
    pipe = S.blur_pipeline()
    blur_x, blur_y = pipe.func("blur_x"), pipe.func("blur_y")
    s = ts.Schedule(pipe, target="cuda")
    s[blur_y].gpu_tile("x", "y", "xo", "yo", "xi", "yi", 16, 16)
    s[blur_x].compute_at(blur_y, "xo").gpu_threads("x", "y")
    fast = C.noop_cuda(pipe, s)
    a = np.zeros((37, 50), np.float32)
    recs = fast.launch_records([50, 37], input=a)
    assert len(recs) == 1
    r = recs[0]
    k = fast.program.kernels[0]
    assert r.kernel == k.name and r.shared_bytes == k.shared_bytes > 0
    env = bind_arguments(fast.program.args, [50, 37], {"input": a})[0]
    assert (r.grid, r.block) == launch_dims(k, env) and r.grid == (4, 3, 1)
    sizes = {b[1]: b[2] for b in r.buffers}
    assert sizes["blur_y"] == 50 * 37 * 4 and sizes["input"] >= 50 * 37 * 4
    assert r.buffer_bytes == sum(sizes.values())
    assert fast.driver.launches == 0                # recording launches nothing


def test_benchmark_reports_host_time_and_no_kernel_time_on_the_noop_device():
    pipe, sched, sizes, inputs = _app("bilateral_grid")
    for interpreted in (False, True):
        t = _noop(pipe, sched, interpreted).benchmark(sizes, repeats=5, warmup=1, **inputs)
        assert isinstance(t, RealizeTiming) and t.kernel_ms is None and t.host_ms > 0
        assert t.path == ("interpreted" if interpreted else "prepared")
        assert t.launches > 0 and len(t.host_samples) == 5


def test_realize_errors_are_the_interpreters():
    """A grid over CUDA's limits is refused when the plan is prepared, before any
    launch, with the interpreter's message; a wrong argument as before."""
    fast = CudaPipeline(generate(S.map2d_ir()), None, driver=NoopDriver())
    with pytest.raises(ts.RealizeError, match="grid dimension y is 70000"):
        fast.realize([16, 8 * 70000], inp=np.zeros((8 * 70000, 16), np.float32))
    assert fast.driver.launches == 0 and fast.cached_plans == 0
    with pytest.raises(ts.RealizeError, match="missing input 'inp'"):
        fast.realize([16, 8])


def test_an_intermediate_lives_from_its_first_launch_to_its_last():
    """A chain of 10 stages at root: the plan allocates each stage to the end of the
    realize; in the arena two buffers take turns."""
    from test_deep_pipelines import pointwise_chain
    from tilesolve.backend.cuda.naive import gpu_root_schedule
    pipe = pointwise_chain(10)
    fast = C.noop_cuda(pipe, gpu_root_schedule(pipe))
    plan = fast.plan([4000], input=np.zeros(4000, np.int32))
    inter = [b for b in plan.buffers if b.role == "intermediate"]
    assert len(inter) == 9 and len({b.offset for b in inter}) == 2
    assert plan.peak_bytes == plan.allocated_bytes == 9 * 16000
    assert plan.arena_bytes == 2 * 16128 + 2 * 16128           # input, output, two stages


def test_arena_placement_shares_bytes_only_between_buffers_never_alive_together():
    a, b, c, d = (_Slot(i, n, "intermediate", nb) for i, (n, nb) in
                  enumerate([("a", 1000), ("b", 300), ("c", 900), ("d", 10)]))
    events = [("alloc", a), ("alloc", b), ("free", a), ("alloc", c), ("alloc", d),
              ("free", c), ("free", b), ("free", d)]
    offsets = {}
    top = _place(events, offsets, 0)
    assert offsets[c.index] == offsets[a.index] == 0            # c takes a's bytes
    assert offsets[b.index] == 1024 and all(o % ALIGN == 0 for o in offsets.values())
    live = [(a, b), (b, c), (b, d), (c, d)]
    for x, y in live:
        xo, yo = offsets[x.index], offsets[y.index]
        assert xo + x.nbytes <= yo or yo + y.nbytes <= xo, (x.name, y.name)
    assert top == 1024 + 512 + 256                   # a (then c), b, d: each rounded to 256


def test_argument_layout_is_cudas():
    """Each parameter at its natural alignment: pointers 8 bytes, a bool one byte."""
    k = generate(S.map2d_ir()).kernels[0]
    offs = arg_offsets(k)
    assert offs[0] == 0 and all(o % struct.calcsize(c) == 0
                                for o, c in zip(offs, arg_format(k)))
    assert scalar_format(np.bool_) == "B" and scalar_format(np.int64) == "q"
    assert struct.calcsize("iP") == 16                   # an int then a pointer: 4 padding bytes


@needs_cxx
@pytest.mark.parametrize("name,which", [("blur", "solver"), ("bilateral_grid", "solver"),
                                        ("hist_eq", "solver"), ("interpolate", "solver"),
                                        ("local_laplacian", "solver"), ("nl_means", "solver"),
                                        ("stencil_chain", "gpu_root"), ("unsharp", "gpu_root")])
def test_the_prepared_path_on_the_cpu_shim_equals_the_emulation(name, which):
    """The packed argument buffers and the arena's offsets, run: the kernels on the CPU
    shim read their arguments where CUDA would and the buffers where the plan put them
    (intermediates sharing bytes: every one of these arenas is smaller than what the
    interpreter allocates)."""
    from tilesolve.backend.cuda.emulate import ShimDriver
    from tilesolve.backend.cuda.naive import gpu_root_schedule
    pipe, sched, sizes, inputs = _app(name)
    if which == "gpu_root":
        sched = gpu_root_schedule(pipe)
    program = C.generate(C.lower_cuda(pipe, sched))
    defaults = {n: p.default for n, p in pipe.params.items() if p.default is not None}
    fast = CudaPipeline(program, None, None, defaults, pipe, driver=ShimDriver(program))
    slow = CudaPipeline(program, None, None, defaults, pipe, driver=ShimDriver(program),
                        interpreted=True)
    want = C.emulate_cuda(pipe, sched).realize(sizes, **inputs)
    for got in (fast.realize(sizes, **inputs), fast.realize(sizes, **inputs),  # then pooled
                slow.realize(sizes, **inputs)):
        got_t = got if isinstance(got, tuple) else (got,)
        want_t = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got_t, want_t):
            np.testing.assert_array_equal(g, w)
    plan = fast.last_plan
    # (nl_means' solver schedule keeps its three intermediates alive together: no sharing)
    if name in ("local_laplacian", "stencil_chain", "unsharp"):
        io = sum(b.nbytes for b in plan.buffers if b.role != "intermediate")
        assert plan.arena_bytes < io + plan.allocated_bytes


class _FakePycuda:
    """Just enough of pycuda's driver API, with its argument rules, to run
    ``drivers.PycudaDriver`` without a GPU: what it is called with is recorded."""

    def __init__(self):
        import types
        self.calls, self.live = [], {}
        fake = self

        class Allocation:
            def __init__(self, n):
                self.ptr = 0x1000 + 0x100000 * len(fake.calls)
                fake.live[self.ptr] = n
                fake.calls.append(("alloc", n))

            def __int__(self):
                return self.ptr

            def free(self):
                del fake.live[self.ptr]
                fake.calls.append(("free", self.ptr))

        class Function:
            def __init__(self, name):
                self.name = name

            def prepare(self, fmt):
                assert isinstance(fmt, str)
                self.arg_format = fmt

            def _launch_kernel(self, grid, block, argbuf, shared, stream):
                assert all(len(t) == 3 and all(type(v) is int for v in t) for t in (grid, block))
                assert isinstance(argbuf, bytes) and len(argbuf) == struct.calcsize(self.arg_format)
                fake.calls.append(("launch", self.name, grid, block, argbuf))

            def __call__(self, *args, block, grid):
                for a in args:                   # pycuda's _build_arg_buf takes no Python int
                    if not isinstance(a, np.number):
                        raise TypeError(f"invalid type on parameter {a!r}")
                fake.calls.append(("call", self.name, grid, block, args))

        class Module:
            def get_function(self, name):
                return Function(name)

        class Event:
            def record(self, stream=None):
                self.t = len(fake.calls)

            def synchronize(self):
                pass

            def time_till(self, other):
                return 0.5

        drv = types.ModuleType("pycuda.driver")
        drv.init = lambda: None
        drv.Device = types.SimpleNamespace(count=lambda: 1)
        drv.module_from_buffer = lambda cubin: Module()
        drv.mem_alloc = Allocation
        drv.memcpy_htod = lambda dst, src: fake.calls.append(("htod", int(dst), src.nbytes))
        drv.memcpy_dtoh = lambda dst, src: fake.calls.append(("dtoh", int(src), dst.nbytes))
        drv.Context = types.SimpleNamespace(synchronize=lambda: fake.calls.append(("sync",)))
        drv.Event = Event
        ctx = types.ModuleType("pycuda.autoprimaryctx")
        ctx.device = types.SimpleNamespace(name=lambda: "fake GPU")
        pkg = types.ModuleType("pycuda")
        pkg.driver, pkg.autoprimaryctx = drv, ctx
        self.modules = {"pycuda": pkg, "pycuda.driver": drv, "pycuda.autoprimaryctx": ctx}


def test_the_pycuda_driver_makes_the_calls_pycuda_takes(monkeypatch):
    """The prepared path launches through ``Function._launch_kernel`` with the packed
    buffer; the interpreted one calls the Function with numpy scalars only; both free
    what they allocate (the pool when released); benchmark reads the events."""
    import sys
    fake = _FakePycuda()
    for name, mod in fake.modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    pipe, sched, sizes, inputs = _app("bilateral_grid")
    program = C.generate(C.lower_cuda(pipe, sched))
    defaults = {n: p.default for n, p in pipe.params.items() if p.default is not None}
    fast = CudaPipeline(program, b"cubin", None, defaults, pipe)
    fast.realize(sizes, **inputs)
    kinds = [c[0] for c in fake.calls]
    n = len(fast.last_plan.launches)
    assert kinds == ["alloc", "htod"] + ["launch"] * n + ["sync", "dtoh"]
    launched = [(c[1], c[2], c[3], c[4]) for c in fake.calls if c[0] == "launch"]
    noop = _noop(pipe, sched)
    noop.realize(sizes, **inputs)
    assert list(fake.live) == [fast.pool.base]
    rebased = [(lp.kernel, lp.grid, lp.block, buf) for lp, buf in
               zip(noop.last_plan.launches, noop.last_plan.argument_buffers(fast.pool.base))]
    assert launched == rebased
    t = fast.benchmark(sizes, repeats=3, warmup=1, **inputs)
    assert t.kernel_ms == 0.5 and t.device == "fake GPU"
    assert fast.release_memory() > 0 and not fake.live
    slow = CudaPipeline(program, b"cubin", None, defaults, pipe, interpreted=True)
    fake.calls.clear()
    slow.realize(sizes, **inputs)
    assert sum(c[0] == "call" for c in fake.calls) == n and not fake.live
    assert slow.benchmark(sizes, repeats=2, warmup=0, **inputs).path == "interpreted"
    assert not fake.live
