"""The driver calls a compiled CUDA pipeline makes, behind one small interface.

``runtime.CudaPipeline`` talks to the GPU only through a *driver*:

    functions = drv.load(program, cubin)      # kernel name -> function handle
    ptr = drv.mem_alloc(nbytes, tag)          # an int device address
    drv.mem_free(ptr)
    drv.memcpy_htod(ptr, array); drv.memcpy_dtoh(array, ptr)
    launch = drv.launcher(functions[name], fmt)   # the prepared launch (fmt: arg struct)
    launch(grid, block, argbuf, shared, stream)   #   argbuf: the packed argument struct
    drv.call(functions[name], grid, block, args)  # the unprepared call (plan.run_plan's path)
    drv.synchronize()
    drv.events() -> (start, end) or None; drv.elapsed_ms(start, end)

* :class:`PycudaDriver`: the real thing (pycuda, imported lazily).  The prepared
  launch is pycuda's ``Function._launch_kernel`` (``cuLaunchKernel`` with
  ``CU_LAUNCH_PARAM_BUFFER_POINTER``: what ``prepared_async_call`` ends in, without
  packing the arguments again), on the stream given (None: the default stream).
* :class:`NoopDriver`: does nothing but count and (optionally) record: fake
  addresses, copies that copy nothing, launches that run nothing.  With it the host
  side of a pipeline is timed and tested on a machine without a GPU.
* ``emulate.ShimDriver``: device memory in host memory, launches run on the CPU shim.
"""
from __future__ import annotations

__all__ = ["NoopDriver", "PycudaDriver"]


class UntimedDevice:
    """A driver with no device to time: host-only timing (``kernel_ms`` None)."""

    def synchronize(self) -> None:
        pass

    def events(self):
        return None

    def elapsed_ms(self, start, end):
        return None


class NoopDriver(UntimedDevice):
    """A device that does nothing.  ``allocs``/``frees``/``launches``/``copies``
    count calls; ``live`` maps each live address to ``(nbytes, tag)``; with
    ``log=True``, ``log`` lists every launch as ``(kernel, grid, block, argbuf)``
    (prepared) or ``(kernel, grid, block, args)`` (unprepared call), and ``history``
    maps every address ever allocated to ``(nbytes, tag)`` (addresses are never
    reused)."""

    name = "no-op device"
    has_events = False

    def __init__(self, log: bool = False):
        self.log = [] if log else None
        self.history = {} if log else None
        self.live: dict = {}
        self.allocs = self.frees = self.launches = self.copies = 0
        self.allocated_bytes = 0          # over the driver's life
        self._next = 1 << 40              # fake addresses: never reused, 256-byte aligned

    def load(self, program, cubin=None) -> dict:
        return {k.name: k.name for k in program.kernels}

    @property
    def live_bytes(self) -> int:
        return sum(n for n, _ in self.live.values())

    def mem_alloc(self, nbytes: int, tag=None) -> int:
        ptr = self._next
        self._next += (max(1, int(nbytes)) + 255) // 256 * 256 + 256
        self.live[ptr] = (int(nbytes), tag)
        if self.history is not None:
            self.history[ptr] = (int(nbytes), tag)
        self.allocs += 1
        self.allocated_bytes += int(nbytes)
        return ptr

    def mem_free(self, ptr: int) -> None:
        del self.live[ptr]
        self.frees += 1

    def memcpy_htod(self, ptr: int, array) -> None:
        self.copies += 1

    def memcpy_dtoh(self, array, ptr: int) -> None:
        self.copies += 1

    def launcher(self, function, fmt: str):
        log = self.log

        def launch(grid, block, argbuf, shared=0, stream=None):
            self.launches += 1
            if log is not None:
                log.append((function, grid, block, argbuf))
        return launch

    def call(self, function, grid, block, args) -> None:
        self.launches += 1
        if self.log is not None:
            self.log.append((function, tuple(grid), tuple(block), tuple(args)))


class PycudaDriver:
    """pycuda on the current (primary) context; see the module docstring."""

    has_events = True

    def __init__(self):
        import numpy as np
        import pycuda.autoprimaryctx  # noqa: F401  (the device's primary context, made current)
        import pycuda.driver as cuda
        self.cuda, self._uintp = cuda, np.uintp
        self.name = pycuda.autoprimaryctx.device.name()
        self._allocations: dict = {}      # address -> DeviceAllocation
        self.modules = []

    def load(self, program, cubin: bytes) -> dict:
        module = self.cuda.module_from_buffer(cubin)
        self.modules.append(module)       # the functions live as long as their module
        return {k.name: module.get_function(k.name) for k in program.kernels}

    def mem_alloc(self, nbytes: int, tag=None) -> int:
        a = self.cuda.mem_alloc(max(1, int(nbytes)))
        ptr = int(a)
        self._allocations[ptr] = a
        return ptr

    def mem_free(self, ptr: int) -> None:
        self._allocations.pop(ptr).free()

    def memcpy_htod(self, ptr: int, array) -> None:
        self.cuda.memcpy_htod(ptr, array)

    def memcpy_dtoh(self, array, ptr: int) -> None:
        self.cuda.memcpy_dtoh(array, ptr)

    def launcher(self, function, fmt: str):
        function.prepare(fmt)             # pycuda's arg_format: the same struct as ours
        launch = getattr(function, "_launch_kernel", None)
        if launch is not None:
            return launch
        # a pycuda without the stateless launch: unpack and let prepared_async_call pack
        import struct

        def prepared(grid, block, argbuf, shared=0, stream=None):
            function.prepared_async_call(grid, block, stream, *struct.unpack(fmt, argbuf),
                                         shared_size=shared)
        return prepared

    def call(self, function, grid, block, args) -> None:
        # device addresses come as ints (scalars as numpy scalars): pycuda packs np.uintp
        args = [self._uintp(a) if type(a) is int else a for a in args]
        function(*args, block=tuple(block), grid=tuple(grid))

    def synchronize(self) -> None:
        self.cuda.Context.synchronize()

    def events(self):
        return self.cuda.Event(), self.cuda.Event()

    def elapsed_ms(self, start, end) -> float:
        end.synchronize()
        return float(start.time_till(end))
