"""Run a CUDA program on a real GPU with pycuda (imported lazily: pycuda is optional).

    pipe = CudaPipeline(program, cubin)          # cubin from nvcc.compile_cuda_source
    out = pipe.realize([W, H], input=arr)        # numpy in, numpy out
    ms = pipe.benchmark([W, H], input=arr)       # device time per realize, inputs resident

The cubin is loaded with ``pycuda.driver.module_from_buffer`` (no compiler is
needed where it runs); the host launch plan runs in Python (``plan.run_plan``)
and launches each kernel with its grid and block computed from the buffer
extents.  Nothing here runs without a GPU: ``availability()`` says why not,
and ``CudaUnavailableError`` carries that reason.
"""
from __future__ import annotations

import numpy as np

from ...errors import TilesolveError
from ...lower.regions import RegionCheck
from .plan import CudaProgram, bind_arguments, run_plan

__all__ = ["CudaPipeline", "CudaUnavailableError", "availability", "check_inputs"]


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


class _PycudaDevice:
    def __init__(self, cuda, functions):
        self.cuda, self.functions = cuda, functions

    def alloc(self, name, type_, count):
        return self.cuda.mem_alloc(max(1, count * type_.dtype.itemsize))

    def free(self, handle):
        handle.free()

    def launch(self, kernel, grid, block, args):
        # a C++ bool parameter is one byte: pass numpy bools as uint8
        args = [a.astype(np.uint8) if isinstance(a, np.bool_) else a for a in args]
        self.functions[kernel.name](*args, block=tuple(block), grid=tuple(grid))


class CudaPipeline:
    """A compiled pipeline on the GPU: ``realize`` with the reference's arguments."""

    def __init__(self, program: CudaProgram, cubin: bytes, spec=None, defaults: dict | None = None,
                 pipeline=None):
        reason = availability()
        if reason is not None:
            raise CudaUnavailableError(f"cannot run pipeline {program.name} on a GPU: {reason}")
        import pycuda.autoprimaryctx  # noqa: F401  (the device's primary context, made current)
        import pycuda.driver as cuda
        self.cuda = cuda
        self.program, self.spec, self.pipeline = program, spec, pipeline
        self._regions = None if pipeline is None else RegionCheck(pipeline, *program.regions)
        self.defaults = dict(defaults or {})
        self.module = cuda.module_from_buffer(cubin)
        self.functions = {k.name: self.module.get_function(k.name) for k in program.kernels}
        self.max_threads = getattr(spec, "max_threads_per_block", None) or 1024

    def _upload(self, sizes, inputs):
        env, arrays, outputs = bind_arguments(self.program.args, sizes, inputs, self.defaults)
        if self.pipeline is not None:
            check_inputs(self._regions, arrays, outputs, env)
        cuda = self.cuda
        buffers = {}
        for name, arr in arrays.items():
            if name in outputs:
                buffers[name] = cuda.mem_alloc(max(1, arr.nbytes))
            else:
                buffers[name] = cuda.to_device(arr)
        return env, arrays, outputs, buffers

    def _run(self, env, buffers):
        run_plan(self.program, env, dict(buffers), _PycudaDevice(self.cuda, self.functions),
                 self.max_threads)

    def realize(self, sizes, **inputs):
        env, arrays, outputs, buffers = self._upload(sizes, inputs)
        try:
            self._run(env, buffers)
            self.cuda.Context.synchronize()
            outs = []
            for name in outputs:
                self.cuda.memcpy_dtoh(arrays[name], buffers[name])
                outs.append(arrays[name])
        finally:
            for b in buffers.values():
                b.free()
        return outs[0] if len(outs) == 1 else tuple(outs)

    def benchmark(self, sizes, repeats: int = 20, warmup: int = 2, **inputs) -> float:
        """Median milliseconds of one whole realize on the device (inputs already there,
        launches and host plan included, copies excluded)."""
        env, arrays, outputs, buffers = self._upload(sizes, inputs)
        cuda = self.cuda
        try:
            for _ in range(warmup):
                self._run(env, buffers)
            times = []
            for _ in range(repeats):
                start, end = cuda.Event(), cuda.Event()
                start.record()
                self._run(env, buffers)
                end.record()
                end.synchronize()
                times.append(start.time_till(end))
        finally:
            for b in buffers.values():
                b.free()
        return float(np.median(times))
