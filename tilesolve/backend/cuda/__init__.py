"""CUDA backend: loop IR -> CUDA C kernels + a host launch plan; nvcc; pycuda; CPU emulation.

    from tilesolve.backend.cuda import compile_cuda, build_cuda, emulate_cuda
    fast = compile_cuda(pipe, sched, load_spec("h100"))    # needs pycuda + a GPU (+ nvcc)
    b = build_cuda(pipe, sched, load_spec("h100"))         # source, plan, cubin, ptxas report
    emu = emulate_cuda(pipe, sched)                        # the same kernels on the CPU shim
    emu = emulate_cuda(pipe, sched, count_sectors=True)    # ... and their 32-byte sectors
    host = noop_cuda(pipe, sched)                          # the host side on a no-op device

Modules: ``cexpr`` (expressions as C), ``kernels`` (one GPU loop nest -> one
kernel), ``codegen`` (host/device split, ``generate``), ``plan`` (launch plan,
its interpreter, argument binding), ``prepared`` (the plan compiled per sizes and
Params: prepared launches, one device arena), ``nvcc`` (compile, ptxas report, spec
limits), ``emulate`` (g++ + shim), ``drivers`` (pycuda, the no-op device),
``runtime`` (the compiled pipeline: plan cache, device pool, timing), ``sectors``
(the emulation's memory report: sectors per launch and buffer).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import LoweringError, SpecError
from .codegen import generate
from .plan import CudaProgram

__all__ = ["compile_cuda", "build_cuda", "build_program", "emulate_cuda", "noop_cuda", "lower_cuda",
           "generate", "check_program", "CudaBuild", "CudaProgram"]


@dataclass(frozen=True)
class CudaBuild:
    """A compiled program: what a GPU machine needs to run it (picklable)."""

    program: CudaProgram
    cubin: bytes
    arch: str
    resources: dict           # kernel name -> nvcc.KernelResources
    defaults: dict            # Param name -> default value


def _gpu_spec(spec):
    """A GPU HardwareSpec from a spec, a spec name or a YAML path (None: h100)."""
    from ...specs import load_spec
    if spec is None:
        spec = load_spec("h100")
    elif isinstance(spec, (str, os.PathLike)):
        spec = load_spec(spec)
    if not getattr(spec, "is_gpu", False):
        raise SpecError(f"spec {getattr(spec, 'name', spec)!r} is not a GPU spec; target 'cuda' "
                        "needs one such as load_spec('h100')")
    return spec


def lower_cuda(pipeline, schedule):
    """Lower ``schedule`` of ``pipeline`` for target "cuda" (the lowering phase's ``lower``)."""
    from ...lower import lower
    return lower(pipeline, schedule, target="cuda")


def check_program(program: CudaProgram, spec) -> None:
    """Limits checkable without nvcc: threads and static shared memory per block."""
    for k in program.kernels:
        if k.block_const is not None:
            n = k.block_const[0] * k.block_const[1] * k.block_const[2]
            if n > spec.max_threads_per_block:
                raise LoweringError(f"kernel {k.name}: {'x'.join(map(str, k.block_const))} = {n} "
                                    f"threads per block, over {spec.name}'s limit of "
                                    f"{spec.max_threads_per_block}; use smaller GPU tiles")
        if k.shared_bytes > spec.shared_mem_per_block_bytes:
            raise LoweringError(f"kernel {k.name}: {k.shared_bytes} bytes of shared memory per "
                                f"block, over {spec.name}'s limit of "
                                f"{spec.shared_mem_per_block_bytes}; use smaller GPU tiles")


def _defaults(pipeline) -> dict:
    return {n: p.default for n, p in pipeline.params.items() if p.default is not None}


def _fmad(schedule, fmad: bool | None) -> bool:
    """nvcc's ``--fmad`` and the code generator's ``fast_math`` (a division by a constant
    as a multiplication by its reciprocal): ``fmad`` when given, else the schedule's
    ``fma`` option."""
    return bool(schedule.codegen.get("fma", False)) if fmad is None else bool(fmad)


def build_cuda(pipeline, schedule, spec=None, fmad: bool | None = None) -> CudaBuild:
    """Lower, generate and compile to a cubin for ``spec`` (no GPU needed), checking the
    kernels against the spec's limits (``fmad``: contract to FMA; None: the schedule's
    ``set_codegen(fma=...)``, off by default)."""
    spec = _gpu_spec(spec)
    fast = _fmad(schedule, fmad)
    program = generate(lower_cuda(pipeline, schedule), fast)
    check_program(program, spec)
    return build_program(program, spec, _defaults(pipeline), fast)


def build_program(program: CudaProgram, spec, defaults: dict | None = None,
                  fmad: bool = False) -> CudaBuild:
    """Compile a generated program to a cubin with nvcc and check ptxas's report."""
    from .nvcc import arch_of, check_resources, compile_cuda_source
    res = compile_cuda_source(program.source, spec, "cubin", fmad=fmad, name=program.name)
    check_resources(res, spec, program)
    return CudaBuild(program, res.binary, arch_of(spec), res.kernels, dict(defaults or {}))


def compile_cuda(pipeline, schedule, spec=None, fmad: bool | None = None, *,
                 interpreted: bool = False):
    """``ts.compile`` for target "cuda": a ``runtime.CudaPipeline`` ready to ``realize``
    (``interpreted``: the host plan interpreted on every realize, as before prepared
    plans; for comparison).

    Raises ``runtime.CudaUnavailableError`` (a TilesolveError) when pycuda or a GPU
    is missing: ``build_cuda`` still compiles there, ``emulate_cuda`` runs the
    same kernels on the CPU and ``noop_cuda`` the host side on a no-op device.
    """
    from .runtime import CudaPipeline, CudaUnavailableError, availability
    spec = _gpu_spec(spec)
    fast = _fmad(schedule, fmad)
    program = generate(lower_cuda(pipeline, schedule), fast)
    check_program(program, spec)
    reason = availability()
    if reason is not None:
        raise CudaUnavailableError(
            f"ts.compile(target='cuda') for pipeline {program.name}: running CUDA code needs pycuda "
            f"and an NVIDIA GPU, and here {reason}. Without a GPU, "
            "tilesolve.backend.cuda.build_cuda() still generates and compiles the kernels (nvcc) "
            "and emulate_cuda() runs them on the CPU.")
    build = build_program(program, spec, _defaults(pipeline), fast)
    return CudaPipeline(build.program, build.cubin, spec, build.defaults, pipeline,
                        interpreted=interpreted)


def noop_cuda(pipeline, schedule, spec=None, *, interpreted: bool = False, driver=None):
    """The pipeline compiled for a device that does nothing (``drivers.NoopDriver``, or
    ``driver``): no nvcc, no GPU.  ``realize`` runs the whole host side (plan cache,
    device pool, launches) and returns uninitialized outputs; ``benchmark`` times the
    host side (``kernel_ms`` None); ``launch_records`` lists the launches."""
    from .drivers import NoopDriver
    from .runtime import CudaPipeline
    spec = _gpu_spec(spec)
    program = generate(lower_cuda(pipeline, schedule), _fmad(schedule, None))
    check_program(program, spec)
    return CudaPipeline(program, None, spec, _defaults(pipeline), pipeline,
                        driver=driver if driver is not None else NoopDriver(),
                        interpreted=interpreted)


def emulate_cuda(pipeline, schedule, *, count_sectors: bool = False):
    """The pipeline's CUDA kernels run on the CPU (g++ + the shim): ``.realize`` as usual
    (``count_sectors``: each realize leaves a ``sectors.MemoryReport`` in ``last_report``)."""
    from .emulate import EmulatedPipeline
    program = generate(lower_cuda(pipeline, schedule), _fmad(schedule, None))
    return EmulatedPipeline(program, _defaults(pipeline), pipeline, count_sectors=count_sectors)
