"""Run a CUDA program on a GPU (pycuda, imported lazily: pycuda is optional).

    pipe = CudaPipeline(program, cubin)          # cubin from nvcc.compile_cuda_source
    out = pipe.realize([W, H], input=arr)        # numpy in, numpy out
    t = pipe.benchmark([W, H], input=arr)        # t.kernel_ms, t.host_ms per realize

The cubin is loaded with ``pycuda.driver.module_from_buffer`` (no compiler is needed
where it runs).  The host side of a realize is compiled, not interpreted:

* **A prepared plan per scalar environment.**  The first realize at given output
  sizes, input shapes and Param values runs the host plan's interpreter once
  (``prepared.prepare_plan``: every HostLet, loop, condition, grid and block size and
  kernel scalar computed, each launch's argument struct packed) and caches the result
  on the pipeline, keyed by those scalars (``plan_cache_size`` plans, least recently
  used dropped).  A later realize looks the plan up and issues its launches: one
  driver call each (``cuLaunchKernel`` with the packed argument buffer), no Expr
  evaluated.
* **Device memory from a pool.**  Inputs, outputs and intermediates of a plan are
  offsets in one arena (intermediates never alive together share bytes), allocated at
  the first realize that needs it and kept: a realize allocates and frees nothing on
  the device (``cuMemFree`` waits for the device, so the interpreter's per-realize
  frees kept the host from running ahead of the GPU).  The arena grows when a larger
  plan comes; it is freed when the pipeline is garbage-collected, by
  ``pipe.release_memory()`` or by ``tilesolve.release_memory()`` (through the
  registry of ``tilesolve/memory.py``), and allocated again by the next realize.

``interpreted=True`` keeps the previous path (``plan.run_plan`` per realize, device
buffers allocated and freed each time) for comparison.  Every device call goes
through a *driver* (``drivers.py``): pycuda's by default, ``NoopDriver`` to time and
test the host side without a GPU (``launch_records`` lists what a realize launches:
grid, block, shared bytes and buffer bytes per launch).  Nothing here runs without a
GPU or a driver given: ``availability()`` says why not, and ``CudaUnavailableError``
carries that reason.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...errors import RealizeError, TilesolveError
from ...lower.regions import RegionCheck
from ...memory import register_holder
from .plan import CudaProgram, bind_arguments, run_plan
from .prepared import PreparedPlan, arg_format, prepare_plan

__all__ = ["CudaPipeline", "CudaUnavailableError", "RealizeTiming", "DevicePool",
           "availability", "check_inputs"]


class CudaUnavailableError(TilesolveError):
    """pycuda or a CUDA GPU is missing, so compiled CUDA code cannot run here."""


def availability() -> str | None:
    """None when pycuda imports and sees a GPU, else the reason it cannot run CUDA code."""
    try:
        import pycuda.driver as cuda
    except ImportError as e:
        return (f"pycuda is not installed ({e}); install it on a machine with a CUDA driver "
                "(pip install pycuda on a machine with the CUDA toolkit and driver)")
    except Exception as e:                       # e.g. libcuda.so missing
        return f"pycuda cannot load the CUDA driver: {e}"
    try:
        cuda.init()
        n = cuda.Device.count()
    except Exception as e:
        return f"the CUDA driver reports no usable GPU: {e}"
    return None if n > 0 else "the CUDA driver sees no GPU"


def check_inputs(check: RegionCheck, arrays: dict, outputs: list, env: dict) -> None:
    """Before any kernel runs: every input covers what the *lowered program* reads of it
    (``round_up`` loops included) and every output what is touched of it, or
    ``RealizeError``/``BoundsError`` naming it (the kernels do not check bounds).
    ``check`` is ``RegionCheck(pipeline, *program.regions)``: the CPU runtime's check."""
    pipeline = check.pipeline
    images = {n: arrays[n] for n in pipeline.images}
    params = {n: np.asarray(env[n]).item() for n in pipeline.params if n in env}
    out_sizes = {n: list(reversed(arrays[n].shape)) for n in outputs}
    check(out_sizes, images, arrays, params)


@dataclass(frozen=True)
class RealizeTiming:
    """``CudaPipeline.benchmark``'s answer, milliseconds per realize (medians).

    ``host_ms``: the host's time to issue one realize's device work (the prepared
    path: plan lookup and the launches; the interpreted path: ``run_plan`` with its
    allocations and frees), inputs resident, copies excluded.  ``kernel_ms``: CUDA
    events around that work on the device (None where the driver has no events: the
    no-op device)."""

    host_ms: float
    kernel_ms: float | None
    repeats: int
    path: str                                  # "prepared" or "interpreted"
    device: str
    launches: int                              # per realize
    host_samples: tuple = field(default=(), repr=False)
    kernel_samples: tuple = field(default=(), repr=False)


class DevicePool:
    """The device memory a compiled pipeline keeps between realizes: one arena, as
    large as the largest plan realized so far.  ``lock`` is held while a realize uses
    the arena (so ``release_memory`` from another thread waits for it)."""

    def __init__(self, driver, name: str):
        self.driver, self.name = driver, name
        self.base: int | None = None
        self.nbytes = 0
        self.lock = threading.RLock()

    def ensure(self, nbytes: int) -> int:
        """The arena's base address, (re)allocated to hold at least ``nbytes``."""
        if self.base is None or self.nbytes < nbytes:
            self.release_memory()
            self.base = self.driver.mem_alloc(nbytes, f"{self.name}: arena")
            self.nbytes = nbytes
        return self.base

    def release_memory(self) -> int:
        """Free the arena (the next realize allocates it again); the bytes freed."""
        with self.lock:
            if self.base is None:
                return 0
            base, freed = self.base, self.nbytes
            self.base, self.nbytes = None, 0
            self.driver.mem_free(base)
            return freed

    def _finalize(self) -> None:                # the pipeline was collected
        try:
            self.release_memory()
        except Exception:                        # a context already gone: nothing to free
            pass


class _Entry:
    """A cached plan and its launch calls for the arena at ``base``."""

    __slots__ = ("plan", "base", "calls")

    def __init__(self, plan: PreparedPlan):
        self.plan, self.base, self.calls = plan, None, ()


class _DriverDevice:
    """``run_plan``'s device over a driver (the interpreted path): allocates and frees
    every buffer on each realize, launches through the unprepared call."""

    def __init__(self, driver, functions):
        self.driver, self.functions = driver, functions

    def alloc(self, name, type_, count):
        return self.driver.mem_alloc(max(1, count * type_.dtype.itemsize), name)

    def free(self, handle):
        self.driver.mem_free(handle)

    def launch(self, kernel, grid, block, args):
        # a C++ bool parameter is one byte: pass numpy bools as uint8
        args = [a.astype(np.uint8) if isinstance(a, np.bool_) else a for a in args]
        self.driver.call(self.functions[kernel.name], grid, block, args)


class CudaPipeline:
    """A compiled pipeline on the GPU: ``realize`` with the reference's arguments.

    ``driver``: None for pycuda on this machine's GPU (``cubin`` is loaded there), or
    a driver object (``drivers.NoopDriver()``: no GPU, no cubin needed).
    ``interpreted``: run the host plan through ``plan.run_plan`` on every realize,
    allocating and freeing device buffers each time (the path before prepared plans).
    """

    def __init__(self, program: CudaProgram, cubin: bytes | None, spec=None,
                 defaults: dict | None = None, pipeline=None, *, driver=None,
                 interpreted: bool = False, plan_cache_size: int = 16):
        if driver is None:
            reason = availability()
            if reason is not None:
                raise CudaUnavailableError(f"cannot run pipeline {program.name} on a GPU: {reason}")
            from .drivers import PycudaDriver
            driver = PycudaDriver()
        self.driver = driver
        self.cuda = getattr(driver, "cuda", None)
        self.program, self.spec, self.pipeline = program, spec, pipeline
        self._regions = None if pipeline is None else RegionCheck(pipeline, *program.regions)
        self.defaults = dict(defaults or {})
        self.interpreted = bool(interpreted)
        self.functions = driver.load(program, cubin)
        self.max_threads = getattr(spec, "max_threads_per_block", None) or 1024
        self.plan_cache_size = max(1, int(plan_cache_size))
        self.stream = None                       # the default stream
        self._launchers = {k.name: driver.launcher(self.functions[k.name], arg_format(k))
                           for k in program.kernels}
        self._plans: OrderedDict = OrderedDict()
        self.pool = DevicePool(driver, program.name)
        register_holder(self.pool)
        self._finalizer = weakref.finalize(self, self.pool._finalize)
        self._finalizer.atexit = False           # at exit the process's memory goes anyway
        self.last_plan: PreparedPlan | None = None

    # -- plans ---------------------------------------------------------------------
    def _entry(self, env: dict, arrays: dict, outputs: list) -> _Entry:
        """The cached plan for ``env`` (checked and prepared at its first realize)."""
        key = tuple(env.values())
        e = self._plans.get(key)
        if e is not None:
            self._plans.move_to_end(key)
            return e
        if self._regions is not None:
            check_inputs(self._regions, arrays, outputs, env)
        io = {n: ("output" if n in outputs else "input", a.nbytes) for n, a in arrays.items()}
        e = _Entry(prepare_plan(self.program, env, io, self.max_threads))
        self._plans[key] = e
        while len(self._plans) > self.plan_cache_size:
            self._plans.popitem(last=False)
        return e

    def _bind(self, e: _Entry):
        """``e``'s launch calls and the arena's base (allocated at first use)."""
        base = self.pool.ensure(e.plan.arena_bytes)
        if e.base != base:
            stream, launchers = self.stream, self._launchers
            e.calls = tuple((launchers[lp.kernel], (lp.grid, lp.block, buf, 0, stream))
                            for lp, buf in zip(e.plan.launches, e.plan.argument_buffers(base)))
            e.base = base
        return e.calls, base

    def plan(self, sizes, **inputs) -> PreparedPlan:
        """The prepared plan a realize with these arguments issues (built if new)."""
        env, arrays, outputs = bind_arguments(self.program.args, sizes, inputs, self.defaults)
        with self.pool.lock:
            return self._entry(env, arrays, outputs).plan

    def launch_records(self, sizes, **inputs) -> list:
        """The launch recorder: what a realize with these arguments launches, in order
        (``prepared.LaunchRecord``: kernel, grid, block, shared bytes, buffer bytes)."""
        return self.plan(sizes, **inputs).records()

    def release_memory(self) -> int:
        """Free this pipeline's device pool now; the bytes freed."""
        return self.pool.release_memory()

    @property
    def cached_plans(self) -> int:
        return len(self._plans)

    # -- running -------------------------------------------------------------------
    def realize(self, sizes, **inputs):
        env, arrays, outputs = bind_arguments(self.program.args, sizes, inputs, self.defaults)
        if not outputs:
            raise RealizeError(f"pipeline {self.program.name} has no output buffer")
        if self.interpreted:
            self._realize_interpreted(env, arrays, outputs)
        else:
            drv = self.driver
            with self.pool.lock:
                e = self._entry(env, arrays, outputs)
                calls, base = self._bind(e)
                for name, off in e.plan.inputs:
                    drv.memcpy_htod(base + off, arrays[name])
                for launch, a in calls:
                    launch(*a)
                drv.synchronize()
                for name, off in e.plan.outputs:
                    drv.memcpy_dtoh(arrays[name], base + off)
                self.last_plan = e.plan
        outs = [arrays[n] for n in outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _upload(self, env, arrays, outputs) -> dict:
        """The interpreted path's input and output buffers, fresh on the device."""
        if self._regions is not None:
            check_inputs(self._regions, arrays, outputs, env)
        drv, buffers = self.driver, {}
        try:
            for name, arr in arrays.items():
                buffers[name] = drv.mem_alloc(max(1, arr.nbytes), name)
                if name not in outputs:
                    drv.memcpy_htod(buffers[name], arr)
        except BaseException:
            for b in buffers.values():
                drv.mem_free(b)
            raise
        return buffers

    def _realize_interpreted(self, env, arrays, outputs) -> None:
        buffers = self._upload(env, arrays, outputs)
        drv = self.driver
        try:
            run_plan(self.program, env, dict(buffers), _DriverDevice(drv, self.functions),
                     self.max_threads)
            drv.synchronize()
            for name in outputs:
                drv.memcpy_dtoh(arrays[name], buffers[name])
        finally:
            for b in buffers.values():
                drv.mem_free(b)

    def benchmark(self, sizes, repeats: int = 20, warmup: int = 2, **inputs) -> RealizeTiming:
        """Host and device milliseconds of one realize, inputs resident on the device,
        copies excluded (medians over ``repeats`` after ``warmup``): see
        :class:`RealizeTiming`."""
        env, arrays, outputs = bind_arguments(self.program.args, sizes, inputs, self.defaults)
        drv = self.driver
        with self.pool.lock:
            if self.interpreted:
                buffers = self._upload(env, arrays, outputs)
                device = _DriverDevice(drv, self.functions)
                program, max_threads = self.program, self.max_threads

                def step():
                    run_plan(program, env, dict(buffers), device, max_threads)

                def done():
                    for b in buffers.values():
                        drv.mem_free(b)
                launches = None
            else:
                e = self._entry(env, arrays, outputs)
                _, base = self._bind(e)
                for name, off in e.plan.inputs:
                    drv.memcpy_htod(base + off, arrays[name])
                plans, key, bind = self._plans, tuple(env.values()), self._bind

                def step():                      # what a realize issues: lookup, launches
                    for launch, a in bind(plans[key])[0]:
                        launch(*a)

                def done():
                    pass
                launches = len(e.plan.launches)
            try:
                host, kernel = self._time(step, repeats, warmup)
            finally:
                done()
        if launches is None:
            launches = len(self.plan(sizes, **inputs).launches)
        return RealizeTiming(float(np.median(host)),
                             None if None in kernel else float(np.median(kernel)),
                             len(host), "interpreted" if self.interpreted else "prepared",
                             getattr(drv, "name", type(drv).__name__), launches,
                             tuple(host), tuple(kernel))

    def _time(self, step, repeats: int, warmup: int):
        drv = self.driver
        events = drv.events()
        host, kernel = [], []
        clock = time.perf_counter
        for i in range(warmup + max(1, repeats)):
            if events is not None:
                events[0].record()
            t0 = clock()
            step()
            t1 = clock()
            if events is not None:
                events[1].record()
                k = drv.elapsed_ms(*events)
            else:
                drv.synchronize()
                k = None
            if i >= warmup:
                host.append((t1 - t0) * 1e3)
                kernel.append(k)
        return host, kernel
