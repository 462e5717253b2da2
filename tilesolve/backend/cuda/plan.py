"""What the CUDA code generator returns: kernel source text plus a host *launch plan*.

The host side of a lowered pipeline (loops around kernels, lets, device
allocations of compute_root intermediates, kernel launches) is not C++: it is a
small tree of ``Host*`` steps that Python interprets with ``model.evaluate``
(so host arithmetic has the model's exact semantics).  One interpreter,
``run_plan``, drives both executors: the pycuda runtime (``runtime.py``) and
the CPU emulation of the kernels (``emulate.py``); each supplies a *device*
with ``alloc(name, type, count)``, ``free(handle)`` and
``launch(kernel, grid, block, args)``.

    plan := HostSeq(steps) | HostLet(name, value, body) | HostFor(name, min, extent, body)
          | HostIf(cond, then, else) | HostAlloc(name, type, extents, body) | Launch(kernel)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import RealizeError
from ...model import expr as E
from ...model.evaluate import evaluate
from ...model.types import Type

# CUDA's launch limits (the same for every compute capability we target)
MAX_GRID = (2 ** 31 - 1, 65535, 65535)


@dataclass(frozen=True, slots=True)
class KernelParam:
    """One parameter of a kernel: ``cname`` in the C signature, ``name`` in the IR."""

    cname: str
    name: str
    kind: str          # "buffer" (a device pointer) or "scalar"
    type: Type
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class Kernel:
    """A ``__global__`` function and how to launch it.

    ``grid`` and ``block`` are three host Exprs each (x, y, z), evaluated at
    launch time in the plan's scope; ``block_const`` holds the block size when
    it is known at compile time.  ``shared_bytes`` is the static shared memory
    the code generator declared.
    """

    name: str
    params: tuple
    grid: tuple
    block: tuple
    block_const: tuple | None
    shared_bytes: int
    funcs: tuple = ()          # Funcs produced inside (for messages)


@dataclass(frozen=True, slots=True)
class HostSeq:
    steps: tuple


@dataclass(frozen=True, slots=True)
class HostLet:
    name: str
    value: E.Expr
    body: object


@dataclass(frozen=True, slots=True)
class HostFor:
    name: str
    min: E.Expr
    extent: E.Expr
    body: object


@dataclass(frozen=True, slots=True)
class HostIf:
    cond: E.Expr
    then_case: object
    else_case: object | None


@dataclass(frozen=True, slots=True)
class HostAlloc:
    name: str
    type: Type
    extents: tuple
    body: object


@dataclass(frozen=True, slots=True)
class Launch:
    kernel: str


@dataclass(frozen=True)
class CudaProgram:
    """Everything needed to run a lowered pipeline on a GPU (or the CPU shim)."""

    name: str
    source: str                      # CUDA C: prelude + kernels, no host code
    kernels: tuple                   # of Kernel, in source order
    plan: object                     # the host plan
    args: tuple                      # of lower.ir.Argument, calling order
    notes: tuple = field(default=())
    regions: tuple = field(default=((), ()))   # the lowered program's (input, output-read)
                                               # region Exprs: what RegionCheck checks

    def plan_str(self) -> str:
        return plan_str(self.plan)


# ---------------------------------------------------------------------------
# Interpretation
# ---------------------------------------------------------------------------
def _scalar(e: E.Expr, env: dict):
    return np.asarray(evaluate(e, env)).item()


def launch_dims(kernel: Kernel, env: dict, max_threads: int = 1024):
    """``(grid, block)`` tuples of ints for ``kernel`` in scope ``env``; ``None`` if empty.

    A grid dimension <= 0 means no block runs; a block dimension is at least 1
    (thread loops of extent <= 0 are guarded off inside the kernel).
    """
    grid = tuple(int(_scalar(g, env)) for g in kernel.grid)
    if min(grid) <= 0:
        return None
    block = tuple(max(1, int(_scalar(b, env))) for b in kernel.block)
    for axis, (g, lim) in enumerate(zip(grid, MAX_GRID)):
        if g > lim:
            raise RealizeError(f"kernel {kernel.name}: grid dimension {'xyz'[axis]} is {g}, over "
                               f"CUDA's limit {lim}; use fewer, larger tiles for that loop")
    if block[0] * block[1] * block[2] > max_threads:
        raise RealizeError(f"kernel {kernel.name}: {block[0]}x{block[1]}x{block[2]} threads per "
                           f"block is over the limit of {max_threads}")
    return grid, block


def run_plan(program: CudaProgram, env: dict, buffers: dict, device, max_threads: int = 1024):
    """Interpret ``program.plan``: ``env`` maps scalar names to numpy scalars,
    ``buffers`` maps buffer names to device handles (inputs and outputs).  Iterative:
    an explicit stack of (step, scope) visits and allocation exits."""
    kernels = {k.name: k for k in program.kernels}
    work = [(program.plan, dict(env))]
    allocated = []                        # device handles to free, innermost last
    try:
        while work:
            step, env = work.pop()
            if step is None:                               # leaving an allocation
                name, handle = env
                del buffers[name]
                allocated.remove((name, handle))
                device.free(handle)
            elif isinstance(step, HostSeq):
                work.extend((s, env) for s in reversed(step.steps))
            elif isinstance(step, HostLet):
                inner = dict(env)
                while isinstance(step, HostLet):
                    inner[step.name] = np.asarray(evaluate(step.value, inner)).astype(
                        step.value.type.dtype)[()]
                    step = step.body
                work.append((step, inner))
            elif isinstance(step, HostFor):
                lo, n = int(_scalar(step.min, env)), int(_scalar(step.extent, env))
                for i in reversed(range(max(n, 0))):
                    work.append((step.body, {**env, step.name: np.int32(lo + i)}))
            elif isinstance(step, HostIf):
                if bool(_scalar(step.cond, env)):
                    work.append((step.then_case, env))
                elif step.else_case is not None:
                    work.append((step.else_case, env))
            elif isinstance(step, HostAlloc):
                count = 1
                for e in step.extents:
                    count *= max(0, int(_scalar(e, env)))
                handle = device.alloc(step.name, step.type, count)
                buffers[step.name] = handle
                allocated.append((step.name, handle))
                work.append((None, (step.name, handle)))
                work.append((step.body, env))
            elif isinstance(step, Launch):
                _launch(kernels[step.kernel], env, buffers, device, max_threads)
            else:
                raise TypeError(f"unknown plan step {step!r}")
    finally:
        for name, handle in reversed(allocated):           # after an error: free the rest
            buffers.pop(name, None)
            device.free(handle)


def _launch(k: Kernel, env: dict, buffers: dict, device, max_threads: int) -> None:
    dims = launch_dims(k, env, max_threads)
    if dims is None:
        return
    args = []
    for p in k.params:
        if p.kind == "buffer":
            args.append(buffers[p.name])
        else:
            args.append(np.asarray(env[p.name]).astype(p.type.dtype)[()])
    device.launch(k, dims[0], dims[1], args)


def plan_str(step, indent: int = 0) -> str:
    """Readable text of a plan (for debugging and the docs); iterative."""
    lines, work = [], [(step, indent)]
    while work:
        step, indent = work.pop()
        pad = "  " * indent
        if isinstance(step, str):                          # a line queued in order
            lines.append(step)
        elif isinstance(step, HostSeq):
            if not step.steps:
                lines.append(f"{pad}(nothing)")
            work.extend((s, indent) for s in reversed(step.steps))
        elif isinstance(step, HostLet):
            lines.append(f"{pad}let {step.name} = {step.value}")
            work.append((step.body, indent))
        elif isinstance(step, HostFor):
            lines.append(f"{pad}for {step.name} in [{step.min}, {step.min} + {step.extent}):")
            work.append((step.body, indent + 1))
        elif isinstance(step, HostIf):
            lines.append(f"{pad}if {step.cond}:")
            if step.else_case is not None:
                work.append((step.else_case, indent + 1))
                work.append((f"{pad}else:", indent))
            work.append((step.then_case, indent + 1))
        elif isinstance(step, HostAlloc):
            exts = " x ".join(str(e) for e in step.extents)
            lines.append(f"{pad}device allocate {step.name}[{step.type} * {exts}]")
            work.append((step.body, indent))
        elif isinstance(step, Launch):
            lines.append(f"{pad}launch {step.kernel}")
        else:
            lines.append(f"{pad}<{type(step).__name__}>")
    return "\n".join(lines)


class _LaunchCounter:
    """A device that runs nothing and counts the launches asked of it."""

    def __init__(self):
        self.launches = 0

    def alloc(self, name, type_, count):
        return object()

    def free(self, handle):
        pass

    def launch(self, kernel, grid, block, args):
        self.launches += 1


def count_launches(program: CudaProgram, sizes, inputs: dict, defaults: dict | None = None) -> int:
    """How many kernel launches one realize of ``program`` makes at ``sizes`` with
    ``inputs`` (the host plan run against a device that only counts; no GPU needed).
    A loop left on the host around a kernel shows here as one launch per iteration."""
    env, arrays, _ = bind_arguments(program.args, sizes, inputs, defaults)
    dev = _LaunchCounter()
    run_plan(program, env, {n: object() for n in arrays}, dev)
    return dev.launches


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
def extent_name(buf: str, d: int) -> str:
    return f"{buf}.extent.{d}"


def stride_name(buf: str, d: int) -> str:
    return f"{buf}.stride.{d}"


def bind_arguments(args: tuple, sizes, inputs: dict, defaults: dict | None = None):
    """Check realize() arguments against the program's ``args``.

    Returns ``(env, arrays, outputs)``: scalar values by IR name (extents,
    strides, Params), C-contiguous numpy arrays by buffer name (outputs newly
    allocated, uninitialized) and the output names in order.  ``sizes`` is a
    list innermost first (every output gets it) or a dict by output name.
    """
    defaults = defaults or {}
    shifted = [k for k, v in inputs.items() if k == "mins" or hasattr(v, "mins")]
    if shifted:
        raise RealizeError(f"realize(): {shifted[0]!r}: the CUDA backend runs buffers that "
                           "start at 0; inputs or outputs with other mins (ts.Buffer(..., "
                           "mins=...), mins=...) run on the CPU backend")
    unknown = sorted(set(inputs) - {a.name for a in args if not a.is_output})
    if unknown:
        raise RealizeError(f"realize(): unknown argument {unknown[0]!r}; this pipeline takes: "
                           f"{', '.join(a.name for a in args if not a.is_output) or '(nothing)'}")
    env, arrays, outputs = {}, {}, []
    for a in args:
        if a.kind == "scalar":
            v = inputs.get(a.name, defaults.get(a.name))
            if v is None:
                raise RealizeError(f"realize(): missing param {a.name!r} ({a.type}), which has no default")
            env[a.name] = np.asarray(v).astype(a.type.dtype)[()]
            continue
        if a.is_output:
            s = sizes.get(a.name) if isinstance(sizes, dict) else sizes
            if s is None:
                raise RealizeError(f"realize(): no sizes given for output {a.name!r}")
            s = [int(s)] if np.isscalar(s) else [int(v) for v in s]
            if len(s) != a.dims or min(s) < 1:
                raise RealizeError(f"realize(): output {a.name} has {a.dims} dimensions; sizes {s} "
                                   "must be that many positive ints")
            arr = np.empty(tuple(reversed(s)), dtype=a.type.dtype)
            outputs.append(a.name)
        else:
            if a.name not in inputs:
                raise RealizeError(f"realize(): missing input {a.name!r} (a {a.dims}-D {a.type} array)")
            arr = inputs[a.name]
            if not isinstance(arr, np.ndarray) or arr.ndim != a.dims or arr.dtype != a.type.dtype:
                got = (f"{arr.ndim}-D {arr.dtype}" if isinstance(arr, np.ndarray)
                       else type(arr).__name__)
                raise RealizeError(f"realize(): input {a.name!r} must be a {a.dims}-D numpy array of "
                                   f"dtype {a.type.dtype}, got {got}")
            arr = np.ascontiguousarray(arr)
        arrays[a.name] = arr
        stride = 1
        for d in range(a.dims):
            ext = arr.shape[a.dims - 1 - d]
            env[extent_name(a.name, d)] = np.int32(ext)
            env[stride_name(a.name, d)] = np.int32(stride)
            stride *= ext
    return env, arrays, outputs
