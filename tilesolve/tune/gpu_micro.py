"""GPU microbenchmarks for ``tilesolve calibrate --base <gpu spec>``, where a GPU is
driven (pycuda and a CUDA device; elsewhere nothing is measured and the spec's
values are kept).

* ``launch_overhead_us``: an empty kernel launched back to back through pycuda,
  as the CUDA runtime launches each kernel of a plan, timed over many launches
  and one synchronize at the end: what a kernel costs a realize beyond its work.
  The latency of one launch waited for on its own is reported beside it.
* ``gpu_memory_bandwidth_gbs`` (the spec's ``memory_bandwidth_gbs``; the name
  keeps it apart from the host's figure): a device-to-device copy of 256 MiB, timed with CUDA
  events, counting the bytes read and written (as the GPU cost model counts a
  word loaded and a word stored).

The empty kernel is PTX text that the driver compiles itself, so no nvcc is
needed where this runs.  Nothing here asserts anything about speed.
"""
from __future__ import annotations

import time
from typing import List

import numpy as np

from .microbench import Measurement

__all__ = ["gpu_measurements", "EMPTY_KERNEL_PTX", "GPU_FIELDS"]

# spec field -> the measurement that gives it (calibrate writes it, yaml_out comments it)
GPU_FIELDS = (("launch_overhead_us", "launch_overhead_us"),
              ("memory_bandwidth_gbs", "gpu_memory_bandwidth_gbs"))

EMPTY_KERNEL_PTX = b"""
.version 7.0
.target sm_52
.address_size 64
.visible .entry tilesolve_empty()
{
    ret;
}
"""


def _driver():
    """pycuda's driver with a context on device 0, or None (and why) without a GPU."""
    from ..backend.cuda.runtime import availability
    reason = availability()
    if reason is not None:
        return None, reason
    import pycuda.autoprimaryctx  # noqa: F401  (a context on device 0)
    import pycuda.driver as cuda
    return cuda, None


def launch_overhead(cuda, launches: int = 5000) -> Measurement:
    mod = cuda.module_from_buffer(EMPTY_KERNEL_PTX)
    k = mod.get_function("tilesolve_empty")
    for _ in range(100):                                   # warm the launch path
        k(block=(1, 1, 1), grid=(1, 1))
    cuda.Context.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(launches):
            k(block=(1, 1, 1), grid=(1, 1))
        cuda.Context.synchronize()
        best = min(best, (time.perf_counter() - t0) / launches)
    waits = []
    for _ in range(200):
        t0 = time.perf_counter()
        k(block=(1, 1, 1), grid=(1, 1))
        cuda.Context.synchronize()
        waits.append(time.perf_counter() - t0)
    return Measurement("launch_overhead_us", best * 1e6, "us",
                       f"measured: an empty kernel launched {launches} times back to back "
                       f"through pycuda, best of 3 ({float(np.median(waits)) * 1e6:.3g} us "
                       "median when each launch is waited for)")


def copy_bandwidth(cuda, nbytes: int = 256 << 20, reps: int = 10) -> Measurement:
    a, b = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    try:
        cuda.memcpy_dtod(b, a, nbytes)
        best = float("inf")
        for _ in range(3):
            start, end = cuda.Event(), cuda.Event()
            start.record()
            for _ in range(reps):
                cuda.memcpy_dtod(b, a, nbytes)
            end.record()
            end.synchronize()
            best = min(best, start.time_till(end) * 1e-3 / reps)
    finally:
        a.free()
        b.free()
    return Measurement("gpu_memory_bandwidth_gbs", 2 * nbytes / best / 1e9, "GB/s",
                       f"measured: device-to-device copy of {nbytes >> 20} MiB, read + write "
                       f"bytes, CUDA events, best of 3 x {reps}")


def gpu_measurements(spec) -> List[Measurement]:
    """The launch overhead and copy bandwidth of the GPU this process drives, or the
    same names with no value (the spec's kept) where no GPU can be driven.  The
    device is not checked against ``spec``: calibrate on the GPU the spec names."""
    cuda, why = _driver()
    if cuda is None:
        keep = lambda v, u: f"; the spec's {v:g} {u} is kept" if v is not None else ""  # noqa: E731
        return [Measurement("launch_overhead_us", None, "us",
                            f"not measured: no GPU is driven here ({why})"
                            f"{keep(spec.launch_overhead_us, 'us')}"),
                Measurement("gpu_memory_bandwidth_gbs", None, "GB/s",
                            f"not measured: no GPU is driven here"
                            f"{keep(spec.memory_bandwidth_gbs, 'GB/s')}")]
    dev = cuda.Context.get_device()
    name = f"{dev.name()} (cc {'.'.join(map(str, dev.compute_capability()))})"
    out = [launch_overhead(cuda), copy_bandwidth(cuda)]
    for m in out:
        m.how += f", on {name}"
    return out
