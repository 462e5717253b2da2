"""Calling generated code from Python: argument packing for the entry ABI of codegen.py.

:class:`NativeKernel` loads a :class:`~.codegen.GeneratedModule` through the JIT (with an
optional disk cache) and calls its entry with numpy arrays and Python scalars.  It checks
nothing about sizes: ``CompiledPipeline.realize`` validates before it calls.  A call
allocates its own argument arrays, so one kernel may be called from several Python
threads at once (ctypes releases the GIL during the call).
"""
from __future__ import annotations

import ctypes
import struct

from ...model.types import Type
from .codegen import GeneratedModule
from .jit import DiskCache, JitModule
from .target import Target

__all__ = ["NativeKernel", "pack_scalar", "ENTRY_PROTOTYPE"]

ENTRY_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.POINTER(ctypes.c_int32),
                                   ctypes.POINTER(ctypes.c_int64), ctypes.c_int32)


def pack_scalar(value, t: Type) -> int:
    """The int64 slot holding ``value`` as a scalar argument of type ``t``."""
    if t.is_float():
        if t.bits == 16:
            return struct.unpack("<h", struct.pack("<e", float(value)))[0]
        if t.bits == 32:
            return struct.unpack("<i", struct.pack("<f", float(value)))[0]
        return struct.unpack("<q", struct.pack("<d", float(value)))[0]
    if t.is_bool():
        return int(bool(value))
    return Type("int", 64).wrap(t.wrap(int(value)))


class NativeKernel:
    """Native code for one generated module; call it with arrays in buffer-argument order."""

    def __init__(self, gen: GeneratedModule, target: Target | None = None,
                 cache: DiskCache | None = None, unroll: int | None = None):
        self.generated = gen
        # a profiled build is keyed as such even though its IR already differs
        self.jit = JitModule(gen.ir_text, target, cache,
                             key_extra=("profile",) if gen.profile is not None else (),
                             unroll=unroll)
        self._fn = ENTRY_PROTOTYPE(self.jit.address(gen.entry))
        self._extra = 3 if gen.checked else 0      # a checked build's fault slots

    def __call__(self, arrays, scalars=(), num_threads: int = 0, fault=None,
                 counters=None) -> int:
        """Run the entry; ``arrays`` are numpy arrays whose strides are multiples of their
        itemsize and whose last axis (dimension 0) is dense, stride = itemsize (the code
        assumes it); axes reversed: array axis -1 is dimension 0.  Returns the error code.
        Checked builds: the first fault (buffer id, flat index, last valid index) is
        written into the list ``fault`` when one is given.  Profiled builds: ``counters``
        is the zeroed int64 array of ``GeneratedModule.profile.size(rows)`` counters, its
        element 0 set to ``rows`` (required)."""
        cdims, cscal = self.pack(arrays, scalars, counters)
        return self.call([a.ctypes.data for a in arrays], cdims, cscal, num_threads, fault)

    def pack(self, arrays, scalars=(), counters=None) -> tuple:
        """The entry's shape and scalar arguments for ``arrays`` and ``scalars``: what a
        call needs besides the data pointers, so that calls with the same shapes and
        scalars may reuse it (``call``)."""
        gen = self.generated
        if len(arrays) != len(gen.buffer_args) or len(scalars) != len(gen.scalar_args):
            raise TypeError(f"{gen.entry} takes {len(gen.buffer_args)} arrays and "
                            f"{len(gen.scalar_args)} scalars")
        dims = []
        for a in arrays:
            size = a.itemsize
            for ext, st in zip(reversed(a.shape), reversed(a.strides)):
                dims.append(ext)
                dims.append(st // size)
        cdims = (ctypes.c_int32 * max(1, len(dims)))(*dims)
        profiled = gen.profile is not None
        if profiled and (counters is None or counters.dtype != "int64" or
                         not counters.flags.c_contiguous or
                         counters.size < gen.profile.size(int(counters[0]))):
            raise TypeError(f"{gen.entry} is profiled: it needs its int64 counters array")
        cscal = (ctypes.c_int64 * max(1, len(scalars) + self._extra + profiled))(
            *[pack_scalar(v, a.type) for v, a in zip(scalars, gen.scalar_args)])
        if profiled:
            cscal[len(scalars) + self._extra] = counters.ctypes.data
        return cdims, cscal

    def call(self, pointers, cdims, cscal, num_threads: int = 0, fault=None) -> int:
        """Run the entry on the data at ``pointers`` with arguments from ``pack`` (not
        modified: a checked build writes its fault into a copy)."""
        ptrs = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        extra = self._extra
        if extra:
            cscal = type(cscal).from_buffer_copy(cscal)
        rc = self._fn(ptrs, cdims, cscal, int(num_threads))     # the arrays stay alive
        if extra and fault is not None:
            n = len(self.generated.scalar_args)
            fault[:] = list(cscal[n:n + 3])
        return rc

