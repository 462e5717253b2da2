"""Run the generated CUDA C on the CPU: the kernel text itself, compiled with g++.

    prog = generate(lowered)                   # codegen.generate
    emu = EmulatedPipeline(prog)
    out = emu.realize([50, 37], input=arr)     # same arguments as reference.realize

The kernels are compiled together with ``cuda_cpu_shim.h`` (every CUDA thread
a fiber, ``__syncthreads()`` a yield, blocks one after another) into a shared
library, loaded with ctypes; the host launch plan runs in Python
(``plan.run_plan``), exactly as the pycuda runtime runs it.

With ``count_sectors=True`` the kernels are built with the shim's sector counter
(each global buffer parameter wrapped, its signature's type only: the kernel body is
the same text) and ``realize`` leaves a ``sectors.MemoryReport`` in ``last_report``:
each launch's grid, block, shared and buffer bytes, and the 32-byte sectors its warps
load and store.  ``run(pipeline, schedule, sizes, inputs, count_sectors=True)`` does it
all in one call::

    out, report = run(pipe, sched, [64, 48], {"input": arr}, count_sectors=True)
    report.ratio()      # sectors requested by warps / compulsory sectors

What this checks that nvcc cannot: that the CUDA text computes the right
values (index math, guards, barriers, shared memory).  To catch more bugs,
every buffer lives inside guard zones (NaN for floats, a byte pattern for
integers) checked after each launch (a write out of bounds names the kernel
and the buffer), intermediate buffers start poisoned the same way (so reading
uninitialized data shows), and a barrier reached by only some threads of a
block is an error.  Speed: about a million threads per second with barriers,
more without; for small images only.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ...errors import LoweringError, RealizeError
from ...lower.regions import RegionCheck
from .drivers import UntimedDevice
from .plan import CudaProgram, bind_arguments, run_plan
from .prepared import arg_format, arg_offsets
from .runtime import check_inputs

SHIM = Path(__file__).with_name("cuda_cpu_shim.h")
GUARD = 64                      # guard elements on each side of every buffer
MAX_COUNTED_PARAMS = 256        # the shim's sector counter's buffers per kernel (MAX_BUFFERS)
CXX_FLAGS = ("-std=c++17", "-O1", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math",
             "-fno-strict-aliasing", "-w")

__all__ = ["EmulatedPipeline", "ShimDriver", "emulation_source", "build_library", "EmulationError",
           "run"]


class EmulationError(LoweringError):
    """The generated CUDA misbehaved on the CPU shim (out-of-bounds write, divergent barrier)."""


def _find_cxx() -> str:
    for name in ("g++", "c++", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    raise EmulationError("no C++ compiler (g++, c++ or clang++) on the PATH; the CUDA emulation "
                         "compiles the kernels with one")


def emulation_source(program: CudaProgram, count_sectors: bool = False) -> str:
    """The C++ translation unit: shim + the unmodified kernel text + one launcher per kernel
    (``count_sectors``: each kernel's buffer parameters declared as the shim's counting
    ``cudasim::Global`` instead of pointers; the kernel bodies are unchanged)."""
    from .cexpr import ctype
    source = _counting_signatures(program) if count_sectors else program.source
    parts = [f'#include "{SHIM.name}"', source, "// ---- emulation launchers ----"]
    for k in program.kernels:
        uses_barrier = "true" if "__syncthreads()" in _kernel_text(program.source, k.name) else "false"
        args = []
        for i, p in enumerate(k.params):
            t = ctype(p.type)
            if p.kind == "buffer" and count_sectors:
                g = f"cudasim::Global<{'const ' if p.read_only else ''}{t}>"
                args.append(f"{g}{{*({t}**)args[{i}], {i}u}}")
            elif p.kind == "buffer":
                args.append(f"*({t}**)args[{i}]")
            else:
                args.append(f"*(const {t}*)args[{i}]")
        parts.append(
            f'extern "C" int ts_launch_{k.name}(const unsigned* d, void** args) {{\n'
            f"  return cudasim::launch(dim3(d[0], d[1], d[2]), dim3(d[3], d[4], d[5]),\n"
            f"      [&]() {{ {k.name}({', '.join(args)}); }}, {uses_barrier});\n}}")
    parts.append('extern "C" const char* ts_last_error() { return cudasim::last_error(); }')
    return "\n".join(parts) + "\n"


def _counting_signatures(program: CudaProgram) -> str:
    """The program's text with each kernel's buffer parameters as ``cudasim::Global``."""
    from .cexpr import ctype
    from .kernels import param_decl
    source = program.source
    for k in program.kernels:
        start = source.find(f" {k.name}(")
        end = source.find("{", start)
        if start < 0 or end < 0:
            raise EmulationError(f"kernel {k.name}: no signature in the program text")
        sig = source[start:end]
        buffers = [p for p in k.params if p.kind == "buffer"]
        if len(k.params) > MAX_COUNTED_PARAMS:
            raise EmulationError(f"kernel {k.name}: {len(k.params)} parameters; the sector "
                                 f"counter records at most {MAX_COUNTED_PARAMS}")
        for p in buffers:
            decl = re.compile(re.escape(param_decl(p)) + r"(?![A-Za-z0-9_])")
            if not decl.search(sig):
                raise EmulationError(f"kernel {k.name}: parameter {param_decl(p)!r} not in its "
                                     "signature")
            sig = decl.sub(f"cudasim::Global<{'const ' if p.read_only else ''}"
                           f"{ctype(p.type)}> {p.cname}", sig, count=1)
        source = source[:start] + sig + source[end:]
    return source


def _kernel_text(source: str, name: str) -> str:
    start = source.find(f" {name}(")
    end = source.find("\n}\n", start)
    return source[start:end]


def _cache_dir() -> Path:
    d = Path(tempfile.gettempdir()) / f"tilesolve-cuda-emu-{os.getuid()}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def build_library(program: CudaProgram, extra_flags=(), count_sectors: bool = False) -> ctypes.CDLL:
    """Compile (or reuse from the cache) and load the emulation library of ``program``
    (``count_sectors``: with the shim's sector counter)."""
    src = emulation_source(program, count_sectors)
    cxx = _find_cxx()
    flags = CXX_FLAGS + tuple(extra_flags) + (("-DTS_COUNT_SECTORS",) if count_sectors else ())
    key = hashlib.sha256("\0".join((src, SHIM.read_text(), cxx, *flags)).encode()).hexdigest()[:24]
    lib = _cache_dir() / f"{program.name}-{key}.so"
    if not lib.exists():
        with tempfile.TemporaryDirectory() as tmp:
            cpp = Path(tmp) / "kernels.cpp"
            cpp.write_text(src)
            shutil.copy(SHIM, Path(tmp) / SHIM.name)
            out = Path(tmp) / "lib.so"
            r = subprocess.run([cxx, *flags, "-I", tmp, str(cpp), "-o", str(out)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise EmulationError(f"g++ could not compile the CUDA text of pipeline {program.name} "
                                     f"for the CPU shim:\n{r.stderr[-4000:]}")
            tmp_lib = lib.with_suffix(f".{os.getpid()}.tmp")
            shutil.copy(out, tmp_lib)
            os.replace(tmp_lib, lib)
    return ctypes.CDLL(str(lib))


def _poison(arr: np.ndarray) -> None:
    if arr.dtype.kind == "f":
        arr.fill(np.nan)
    else:
        arr.view(np.uint8).fill(0xA5)


class _Buf:
    """A host array with guard zones; ``inner`` is the buffer the kernels see."""

    def __init__(self, name: str, dtype, count: int):
        self.name = name
        self.full = np.empty(count + 2 * GUARD, dtype=dtype)
        _poison(self.full)
        self.guard = self.full[:GUARD].copy()
        self.inner = self.full[GUARD:GUARD + count]
        self.ptr = ctypes.c_void_p(self.inner.ctypes.data if count else self.full.ctypes.data)

    def intact(self) -> bool:
        eq = lambda a: np.array_equal(a.view(np.uint8), self.guard.view(np.uint8))  # noqa: E731
        return eq(self.full[:GUARD]) and eq(self.full[GUARD + self.inner.size:])


class _ShimDevice:
    def __init__(self, lib, program, count_sectors: bool = False):
        self.lib, self.program = lib, program
        self.live: dict = {}
        self.launches = 0
        self.traffic = [] if count_sectors else None     # LaunchTraffic per launch
        lib.ts_last_error.restype = ctypes.c_char_p

    def alloc(self, name, type_, count):
        b = _Buf(name, type_.dtype, count)
        self.live[id(b)] = b
        return b

    def free(self, handle):
        self.live.pop(id(handle), None)

    def launch(self, kernel, grid, block, args):
        holders, ptrs = [], []
        for p, a in zip(kernel.params, args):
            if p.kind == "buffer":
                holders.append(a.ptr)
            else:
                v = np.asarray(a, p.type.dtype)
                if v.dtype == np.float16:        # ts_f16: the 16 bits (ctypes has no half)
                    holders.append(ctypes.c_uint16(int(v.view(np.uint16))))
                else:
                    holders.append(np.ctypeslib.as_ctypes_type(v.dtype)(v.item()))
            ptrs.append(ctypes.addressof(holders[-1]))
        dims = (ctypes.c_uint * 6)(*grid, *block)
        argv = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
        fn = getattr(self.lib, f"ts_launch_{kernel.name}")
        if fn(dims, argv) != 0:
            raise EmulationError(f"kernel {kernel.name} (grid {grid}, block {block}): "
                                 f"{self.lib.ts_last_error().decode()}")
        self.launches += 1
        for p, a in zip(kernel.params, args):
            if p.kind == "buffer" and not a.intact():
                raise EmulationError(f"kernel {kernel.name} wrote outside buffer {p.name} "
                                     f"(grid {grid}, block {block})")
        if self.traffic is not None:
            self.traffic.append(self._traffic(kernel, grid, block, args))

    def _traffic(self, kernel, grid, block, args):
        """The counter's figures for the launch just run (and reset them)."""
        from .prepared import LaunchRecord
        from .sectors import FIELDS, BufferTraffic, LaunchTraffic, Traffic
        n = len(kernel.params)
        counts = np.zeros((max(n, 1), 2, len(FIELDS)), dtype=np.uint64)
        self.lib.ts_sector_counts(counts.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint(n))
        bufs = [(i, p, a) for i, (p, a) in enumerate(zip(kernel.params, args))
                if p.kind == "buffer"]
        record = LaunchRecord(kernel.name, tuple(int(g) for g in grid),
                              tuple(int(b) for b in block), kernel.shared_bytes,
                              tuple((p.name, a.name, int(a.inner.nbytes)) for _, p, a in bufs))
        return LaunchTraffic(record, tuple(
            BufferTraffic(p.name, a.name, Traffic(*map(int, counts[i, 0])),
                          Traffic(*map(int, counts[i, 1])))
            for i, p, a in bufs))


class EmulatedPipeline:
    """A CUDA program run on the CPU through the shim; ``realize`` as in ``reference``."""

    def __init__(self, program: CudaProgram, defaults: dict | None = None, pipeline=None,
                 count_sectors: bool = False):
        self.program = program
        self.defaults = dict(defaults or {})
        self.pipeline = pipeline
        self._regions = None if pipeline is None else RegionCheck(pipeline, *program.regions)
        self.count_sectors = bool(count_sectors)
        self.lib = build_library(program, count_sectors=self.count_sectors)
        self.last_launches = 0
        self.last_report = None        # a sectors.MemoryReport after a counting realize

    def realize(self, sizes, **inputs):
        env, arrays, outputs = bind_arguments(self.program.args, sizes, inputs, self.defaults)
        if self.pipeline is not None:
            check_inputs(self._regions, arrays, outputs, env)
        dev = _ShimDevice(self.lib, self.program, self.count_sectors)
        buffers = {}
        for name, arr in arrays.items():
            b = _Buf(name, arr.dtype, arr.size)
            if name not in outputs:
                b.inner[...] = arr.reshape(-1)
            buffers[name] = b
        run_plan(self.program, env, buffers, dev)
        self.last_launches = dev.launches
        if dev.traffic is not None:
            from .sectors import MemoryReport
            self.last_report = MemoryReport(
                self.program.name, tuple(dev.traffic),
                {n: int(a.nbytes) for n, a in arrays.items() if n not in outputs},
                {n: int(arrays[n].nbytes) for n in outputs},
                sum(int(arrays[n].size) for n in outputs))
        outs = []
        for name in outputs:
            arr = arrays[name]
            arr.reshape(-1)[...] = buffers[name].inner
            outs.append(arr)
        if not outs:
            raise RealizeError(f"pipeline {self.program.name} has no output buffer")
        return outs[0] if len(outs) == 1 else tuple(outs)


def run(pipeline, schedule, sizes, inputs: dict | None = None, *, count_sectors: bool = False):
    """Lower, generate and run ``schedule`` of ``pipeline`` on the CPU shim: ``(outputs,
    report)``, the report a ``sectors.MemoryReport`` with ``count_sectors`` (else None)."""
    from . import emulate_cuda
    emu = emulate_cuda(pipeline, schedule, count_sectors=count_sectors)
    out = emu.realize(sizes, **(inputs or {}))
    return out, emu.last_report


class ShimDriver(UntimedDevice):
    """The driver interface of ``runtime.CudaPipeline`` (``drivers.py``) on the CPU shim:
    device memory is host memory (each block poisoned, inside guard zones checked after
    every launch), a launch runs the kernel's g++ build with its arguments read from the
    packed argument buffer at the offsets CUDA would read them.  With it the prepared
    path (argument structs, the arena's shared offsets) runs and is checked on the CPU:

        CudaPipeline(program, None, driver=ShimDriver(program), pipeline=pipe)
    """

    name = "CPU shim"
    has_events = False
    PAD = 256

    def __init__(self, program: CudaProgram):
        self.lib = build_library(program)
        self.lib.ts_last_error.restype = ctypes.c_char_p
        self.blocks: dict = {}                  # address -> (array, start, nbytes, tag)
        self.launches = 0

    def load(self, program, cubin=None) -> dict:
        return {k.name: (k, getattr(self.lib, f"ts_launch_{k.name}"), arg_offsets(k))
                for k in program.kernels}

    def mem_alloc(self, nbytes: int, tag=None) -> int:
        nbytes = max(1, int(nbytes))
        full = np.empty(nbytes + 3 * self.PAD, dtype=np.uint8)
        start = -full.ctypes.data % self.PAD + self.PAD        # 256-aligned, a pad before
        full.fill(0xFF)                                         # NaN floats, -1 integers
        ptr = full.ctypes.data + start
        self.blocks[ptr] = (full, start, nbytes, tag)
        return ptr

    def mem_free(self, ptr: int) -> None:
        del self.blocks[ptr]

    def memcpy_htod(self, ptr: int, array) -> None:
        ctypes.memmove(ptr, np.ascontiguousarray(array).ctypes.data, array.nbytes)

    def memcpy_dtoh(self, array, ptr: int) -> None:
        ctypes.memmove(array.ctypes.data, ptr, array.nbytes)

    def launcher(self, function, fmt: str):
        kernel, fn, offsets = function
        n = max(len(offsets), 1)

        def launch(grid, block, argbuf, shared=0, stream=None):
            buf = ctypes.create_string_buffer(bytes(argbuf), max(len(argbuf), 1))
            base = ctypes.addressof(buf)
            argv = (ctypes.c_void_p * n)(*(base + o for o in offsets))
            self._run(kernel, fn, grid, block, argv)
        return launch

    def call(self, function, grid, block, args) -> None:
        kernel = function[0]
        vals = [int(a) if p.kind == "buffer" else np.asarray(a).item()
                for p, a in zip(kernel.params, args)]
        self.launcher(function, "")(grid, block, struct.pack(arg_format(kernel), *vals))

    def _run(self, kernel, fn, grid, block, argv) -> None:
        dims = (ctypes.c_uint * 6)(*grid, *block)
        if fn(dims, argv) != 0:
            raise EmulationError(f"kernel {kernel.name} (grid {grid}, block {block}): "
                                 f"{self.lib.ts_last_error().decode()}")
        self.launches += 1
        for ptr, (full, start, nbytes, tag) in self.blocks.items():
            if not ((full[:start] == 0xFF).all() and (full[start + nbytes:] == 0xFF).all()):
                raise EmulationError(f"kernel {kernel.name} wrote outside device block {tag} "
                                     f"(grid {grid}, block {block})")
