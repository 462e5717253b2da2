"""A host launch plan compiled once per scalar environment: what a realize issues.

``plan.run_plan`` interprets the host plan on every call: each ``HostLet``, loop bound,
condition, allocation size and grid size is an Expr evaluated with numpy.  All of them
depend only on the *scalars* of a realize (output sizes, input extents and strides,
Param values): :func:`prepare_plan` runs the interpreter once for those scalars
against a device that only records, and keeps what it did:

* the launches, in order, each with its grid and block as ints and its argument buffer
  laid out as CUDA wants it (``arg_format``: the C struct of the kernel's parameters,
  pointers 8 bytes, scalars of their type, each at its natural alignment) with holes
  for the buffer pointers;
* every device buffer (inputs, outputs, intermediates) as an offset in one *arena*,
  256-byte aligned as ``cuMemAlloc``'s: inputs and outputs live for the whole realize;
  an intermediate from the first launch it is passed to the last (not the plan's
  allocation scope, which for root buffers runs to the end of the realize), and
  intermediates never alive together share bytes (best fit over the holes, in launch
  order).

:meth:`PreparedPlan.argument_buffers` fills the pointer holes for an arena's base
address: then a realize is a loop over ``(launch, (grid, block, argbuf, 0, stream))``
calls, no Expr evaluated.  The plan is the interpreter's own trace, so it issues the
same launches (kernels, grids, blocks, arguments) as ``run_plan`` does.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .plan import CudaProgram, Kernel, run_plan

__all__ = ["prepare_plan", "PreparedPlan", "PreparedLaunch", "PlanBuffer", "LaunchRecord",
           "arg_format", "arg_offsets", "scalar_format", "ALIGN"]

ALIGN = 256                      # cuMemAlloc's alignment: every buffer of the arena starts at one
POINTER = "P"                    # a device pointer in the argument buffer (8 bytes)

_SCALAR_FORMATS = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
                   ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q",
                   ("f", 2): "e", ("f", 4): "f", ("f", 8): "d", ("b", 1): "B"}


def scalar_format(dtype) -> str:
    """The ``struct`` code of a kernel scalar of numpy ``dtype`` (a C++ bool is one byte)."""
    dt = np.dtype(dtype)
    try:
        return _SCALAR_FORMATS[(dt.kind, dt.itemsize)]
    except KeyError:
        raise TypeError(f"no kernel argument format for dtype {dt}") from None


def arg_format(kernel: Kernel) -> str:
    """The ``struct`` format (native alignment: CUDA's parameter layout) of ``kernel``'s
    parameters, in order."""
    return "".join(POINTER if p.kind == "buffer" else scalar_format(p.type.dtype)
                   for p in kernel.params)


def arg_offsets(kernel: Kernel) -> tuple:
    """The byte offset of each parameter of ``kernel`` in its argument buffer."""
    fmt, out = "", []
    for p in kernel.params:
        code = POINTER if p.kind == "buffer" else scalar_format(p.type.dtype)
        out.append(struct.calcsize(fmt + code) - struct.calcsize(code))
        fmt += code
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PlanBuffer:
    """A device buffer of a plan: ``offset`` bytes into the arena, ``nbytes`` long."""

    name: str
    role: str                  # "input", "output" or "intermediate"
    nbytes: int
    offset: int


@dataclass(frozen=True, slots=True)
class LaunchRecord:
    """One launch of a realize, as the launch recorder reports it."""

    kernel: str
    grid: tuple                # (x, y, z) ints
    block: tuple               # (x, y, z) ints
    shared_bytes: int          # the kernel's static shared memory per block
    buffers: tuple             # (parameter name, buffer name, bytes of the buffer) per buffer

    @property
    def buffer_bytes(self) -> int:
        return sum(b[2] for b in self.buffers)


@dataclass(frozen=True, slots=True)
class PreparedLaunch:
    """A launch with every scalar computed: ``values`` are the kernel's arguments, with
    ``None`` where a buffer pointer goes (``pointers``: (argument index, buffer index,
    parameter name) each)."""

    kernel: str
    grid: tuple
    block: tuple
    shared_bytes: int
    fmt: str
    values: tuple
    pointers: tuple

    def pack(self, base: int, offsets: tuple) -> bytes:
        """The argument buffer for an arena at ``base`` (``offsets``: each buffer's)."""
        vals = list(self.values)
        for i, b, _ in self.pointers:
            vals[i] = base + offsets[b]
        return struct.pack(self.fmt, *vals)


@dataclass(frozen=True)
class PreparedPlan:
    """The launches and buffers of one realize at one scalar environment."""

    program: str
    launches: tuple            # of PreparedLaunch, in issue order
    buffers: tuple             # of PlanBuffer: inputs and outputs first, then intermediates
    arena_bytes: int
    inputs: tuple              # (name, offset) of each input buffer
    outputs: tuple             # (name, offset) of each output buffer
    allocated_bytes: int       # what the interpreter allocates a realize (intermediates)
    peak_bytes: int            # the most intermediate bytes alive at once

    def argument_buffers(self, base: int) -> tuple:
        """Every launch's argument buffer for an arena at device address ``base``."""
        offsets = tuple(b.offset for b in self.buffers)
        return tuple(lp.pack(base, offsets) for lp in self.launches)

    def records(self) -> list:
        """The launch recorder's view: grid, block, shared bytes and the buffers (with
        their bytes) each launch is passed."""
        bufs = self.buffers
        return [LaunchRecord(lp.kernel, lp.grid, lp.block, lp.shared_bytes,
                             tuple((param, bufs[b].name, bufs[b].nbytes)
                                   for _, b, param in lp.pointers))
                for lp in self.launches]

    def buffer_at(self, offset: int):
        """The first buffer starting ``offset`` bytes into the arena, or None
        (intermediates never alive together may share an offset)."""
        for b in self.buffers:
            if b.offset == offset:
                return b
        return None


class _Slot:
    """A buffer while the plan is traced: the interpreter's device handle."""

    __slots__ = ("index", "name", "role", "nbytes")

    def __init__(self, index, name, role, nbytes):
        self.index, self.name, self.role, self.nbytes = index, name, role, nbytes


class _Tracer:
    """A device for ``run_plan`` that records allocations, frees and launches in order."""

    def __init__(self, slots: list):
        self.slots = slots
        self.events = []           # ("alloc" | "free", slot) and ("launch", ...)

    def alloc(self, name, type_, count):
        s = _Slot(len(self.slots), name, "intermediate", max(1, count * type_.dtype.itemsize))
        self.slots.append(s)
        self.events.append(("alloc", s))
        return s

    def free(self, handle):
        self.events.append(("free", handle))

    def launch(self, kernel, grid, block, args):
        self.events.append(("launch", kernel, tuple(grid), tuple(block), args))


def _round_up(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


def _place(events, offsets: dict, top: int) -> int:
    """Offsets (into ``offsets``, by slot index) of the intermediates from ``top`` up:
    the best-fitting hole freed buffers left, else at the end; the arena's size."""
    holes = []                                 # (offset, size), sorted by offset, coalesced
    for ev in events:
        kind, slot = ev[0], ev[1]
        if kind == "alloc":
            size = _round_up(slot.nbytes)
            best = None
            for i, (off, sz) in enumerate(holes):
                if sz >= size and (best is None or sz < holes[best][1]):
                    best = i
            if best is not None:
                off, sz = holes[best]
                if sz == size:
                    del holes[best]
                else:
                    holes[best] = (off + size, sz - size)
            elif holes and holes[-1][0] + holes[-1][1] == top:     # grow the last hole
                off = holes.pop()[0]
                top = off + size
            else:
                off = top
                top += size
            offsets[slot.index] = off
        elif kind == "free":
            holes.append((offsets[slot.index], _round_up(slot.nbytes)))
            holes.sort()
            merged = []
            for o, sz in holes:
                if merged and merged[-1][0] + merged[-1][1] == o:
                    merged[-1] = (merged[-1][0], merged[-1][1] + sz)
                else:
                    merged.append((o, sz))
            holes = merged
    return top


def _lifetimes(events, n_io: int) -> list:
    """Alloc and free events of the intermediates by use: each buffer is alive from the
    first launch passed it to the last (kernels touch only the buffers they are passed,
    and the host never reads an intermediate), which is never longer than the plan's
    allocation scope.  The buffers a launch is passed are alive together; one no launch
    is passed gets no bytes."""
    first, last, order = {}, {}, []
    launches = [ev for ev in events if ev[0] == "launch"]
    for i, ev in enumerate(launches):
        for a in ev[4]:
            if isinstance(a, _Slot) and a.index >= n_io:
                if a.index not in first:
                    first[a.index] = i
                    order.append(a)
                last[a.index] = i
    out = []
    starts = {}
    for s in order:
        starts.setdefault(first[s.index], []).append(s)
    ends = {}
    for s in order:
        ends.setdefault(last[s.index], []).append(s)
    for i in range(len(launches)):
        out.extend(("alloc", s) for s in starts.get(i, ()))
        out.extend(("free", s) for s in ends.get(i, ()))
    return out


def prepare_plan(program: CudaProgram, env: dict, io: dict, max_threads: int = 1024) -> PreparedPlan:
    """Trace ``program``'s host plan at the scalars ``env`` (``plan.bind_arguments``'s)
    into a :class:`PreparedPlan`.  ``io`` maps each input and output buffer name to
    ``(role, nbytes)``.  Raises what ``run_plan`` raises (a grid over CUDA's limits...)."""
    slots, handles = [], {}
    for name, (role, nbytes) in io.items():
        handles[name] = _Slot(len(slots), name, role, max(1, int(nbytes)))
        slots.append(handles[name])
    tracer = _Tracer(slots)
    run_plan(program, env, dict(handles), tracer, max_threads)
    offsets, top = {}, 0
    for s in slots[:len(io)]:                  # alive the whole realize: the arena's bottom
        offsets[s.index] = top
        top += _round_up(s.nbytes)
    allocated = peak = live = 0
    for ev in tracer.events:
        if ev[0] == "alloc":
            allocated += ev[1].nbytes
            live += ev[1].nbytes
            peak = max(peak, live)
        elif ev[0] == "free":
            live -= ev[1].nbytes
    top = _place(_lifetimes(tracer.events, len(io)), offsets, top)
    buffers = tuple(PlanBuffer(s.name, s.role, s.nbytes, offsets.get(s.index, 0)) for s in slots)
    launches = []
    for ev in tracer.events:
        if ev[0] != "launch":
            continue
        _, k, grid, block, args = ev
        values, pointers = [], []
        for i, (p, a) in enumerate(zip(k.params, args)):
            if p.kind == "buffer":
                values.append(None)
                pointers.append((i, a.index, p.name))
            else:
                values.append(np.asarray(a).astype(p.type.dtype).item())
        launches.append(PreparedLaunch(k.name, tuple(int(v) for v in grid),
                                       tuple(int(v) for v in block), k.shared_bytes,
                                       arg_format(k), tuple(values), tuple(pointers)))
    role_of = lambda r: tuple((n, offsets[handles[n].index])  # noqa: E731
                              for n, (role, _) in io.items() if role == r)
    return PreparedPlan(program.name, tuple(launches), buffers, max(top, ALIGN),
                        role_of("input"), role_of("output"), allocated, peak)
