"""``ts.compile(pipeline, schedule=None, ...)``: lower, generate LLVM IR, JIT, wrap.

::

    fast = ts.compile(pipe, sched)              # or ts.compile(pipe) for the default schedule
    out = fast.realize([6400, 4800], input=img)

Steps: ``lower(pipeline, schedule, target="cpu")`` -> ``codegen.generate`` -> the JIT with
the on-disk object cache -> :class:`~tilesolve.backend.cpu.compiled.CompiledPipeline`.

The environment is read here and only here: ``TILESOLVE_CACHE_DIR`` (the cache directory
when ``cache_dir`` is not given; default ``~/.cache/tilesolve/llvm``) and
``TILESOLVE_NUM_THREADS`` (the thread count when ``num_threads`` is not given; default:
the cores this process may use).
"""
from __future__ import annotations

import os
import time

from ..errors import PipelineError, ScheduleError, TilesolveError
from ..model.pipeline import Pipeline
from ..model.schedule_classes import SizeClasses
from .dispatch import compile_classes

__all__ = ["compile", "compile_lowered"]


def _route(schedule, target):
    """``("cpu", None)`` or ``("cuda", spec_or_None)`` from the schedule's target and
    ``target`` (None, "cpu"/"host", "cuda", a spec name or a HardwareSpec)."""
    sched_target = getattr(schedule, "target", "cpu") if schedule is not None else "cpu"
    spec = None
    if target is None or target in ("cpu", "host"):
        kind = "cpu"
    elif target == "cuda":
        kind = "cuda"
    else:
        if isinstance(target, str):
            from ..specs import load_spec
            target = load_spec(target)
        kind = getattr(target, "kind", None)
        if kind not in ("cpu", "gpu"):
            raise TilesolveError(f"ts.compile: target must be 'cpu', 'cuda', a spec name or a "
                                 f"HardwareSpec, got {target!r}")
        kind = "cuda" if kind == "gpu" else "cpu"
        spec = target if kind == "cuda" else None
    if sched_target == "cuda":
        if kind == "cpu" and target not in (None,):
            raise TilesolveError(f"ts.compile: the schedule targets 'cuda' but target {target!r} "
                                 "is a CPU")
        kind = "cuda"
    elif kind == "cuda" and schedule is not None:
        raise TilesolveError("ts.compile: a GPU target needs a schedule made for it "
                             "(Schedule(pipe, target='cuda'), or solve_schedule with a GPU spec)")
    return kind, spec


def _check_arguments(pipeline, schedule) -> None:
    """The project's errors (not AttributeError deep inside lowering) for a wrong
    ``pipeline`` or ``schedule`` argument."""
    from ..model.func import Func
    from ..model.schedule import Schedule
    if not isinstance(pipeline, Pipeline):
        hint = " (wrap it: ts.Pipeline(f))" if isinstance(pipeline, Func) else ""
        raise PipelineError(f"ts.compile: the first argument must be a Pipeline, got "
                            f"{type(pipeline).__name__}{hint}")
    if schedule is None:
        return
    if not isinstance(schedule, Schedule):
        hint = (f"; to name a target, pass target={schedule!r}" if isinstance(schedule, str)
                else "")
        raise ScheduleError(f"ts.compile: the schedule argument must be a ts.Schedule (or None "
                            f"for the default schedule), got {type(schedule).__name__} "
                            f"{schedule!r}{hint}")
    if schedule.pipeline is not pipeline:
        raise ScheduleError("ts.compile: the schedule was made for a different Pipeline")


def compile(pipeline, schedule=None, *, target=None, num_threads=None, cache_dir=None,  # noqa: A001
            checked=False, profile=False):
    """Compile ``pipeline`` under ``schedule`` (None: the default schedule, every Func
    inlined or computed at root as lowering decides) for the host CPU, or with the
    CUDA backend when the schedule targets "cuda" or ``target`` is a GPU.

    ``target``: None, ``"cpu"``, ``"cuda"``, a spec name or a ``HardwareSpec`` (CPU code
    is always generated for the host CPU's features).  ``num_threads``: the thread team for parallel loops.
    ``cache_dir``: where compiled objects are cached (``False`` disables the cache).
    ``checked``: a checked build (CPU): every load and store is tested against the buffer
    it accesses, and an access outside raises ``RealizeError`` naming the Func, the
    coordinate and the range allowed (slower: for debugging and fuzzing).
    ``profile``: (CPU) code that times each Func's produce regions and each parallel
    loop; read with ``compiled.profile()`` / ``compiled.profile_report()``.  Without it
    the generated code contains no profiling at all.
    """
    from .cpu.jit import DiskCache, default_cache_dir
    from .cpu.parallel import resolve_num_threads

    if isinstance(schedule, SizeClasses):           # a schedule for a range of sizes
        if schedule.pipeline is not pipeline:
            raise ScheduleError("ts.compile: the schedule was made for a different Pipeline")
        return compile_classes(compile, schedule, target=target, num_threads=num_threads,
                               cache_dir=cache_dir, checked=checked, profile=profile)
    _check_arguments(pipeline, schedule)
    kind, spec = _route(schedule, target)
    if kind == "cuda" and checked:
        raise TilesolveError("ts.compile: checked=True is for CPU code; the CUDA backend's "
                             "emulate_cuda runs the same kernels on the CPU for debugging")
    if kind == "cuda" and profile:
        raise TilesolveError("ts.compile: profile=True is for CPU code; time CUDA kernels "
                             "with the CUDA profiler (nsys, ncu)")
    if kind == "cuda":
        # The CUDA backend: without pycuda and a GPU this raises CudaUnavailableError,
        # naming build_cuda (compile only) and emulate_cuda (run on the CPU) instead.
        from .cuda import compile_cuda
        return compile_cuda(pipeline, schedule, spec)
    if num_threads is None:
        try:
            num_threads = resolve_num_threads(os.environ)
        except ValueError as e:          # a bad TILESOLVE_NUM_THREADS
            raise TilesolveError(f"ts.compile: {e}") from None
    elif isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise TilesolveError(f"ts.compile: num_threads must be a positive int, got "
                             f"{num_threads!r}")
    if cache_dir not in (None, False) and not isinstance(cache_dir, (str, os.PathLike)):
        raise TilesolveError(f"ts.compile: cache_dir must be a path, None or False, got "
                             f"{cache_dir!r}")
    if cache_dir is False:
        cache = None
    else:
        cache = DiskCache(cache_dir if cache_dir is not None else default_cache_dir(os.environ))

    from ..lower import lower
    t0 = time.perf_counter()
    lowered = lower(pipeline, schedule, target="cpu")
    compiled = compile_lowered(pipeline, lowered, schedule=schedule, num_threads=num_threads,
                               cache=cache, checked=checked, _t0=t0, profile=profile)
    compiled._build_shifted = lambda: compile_lowered(    # buffers that do not start at 0
        pipeline, lower(pipeline, schedule, target="cpu", buffer_mins=True), schedule=schedule,
        num_threads=num_threads, cache=cache, checked=checked, profile=profile)
    return compiled


def compile_lowered(pipeline, lowered, *, schedule=None, num_threads: int = 1, cache=None,
                    checked: bool = False, _t0=None, profile: bool = False):
    """The back half of :func:`compile`: generate and JIT an already lowered pipeline
    (``cache``: a ``DiskCache`` or None; its key includes ``profile``).  For tests and
    tools that build loop IR by hand."""
    from .cpu.codegen import generate
    from .cpu.compiled import CompiledPipeline
    from .cpu.runtime import NativeKernel
    from .cpu.target import host_target, window_lanes

    t0 = time.perf_counter() if _t0 is None else _t0
    tgt = host_target()
    codegen = {} if schedule is None else schedule.codegen
    generated = generate(lowered, tgt.info.triple, tgt.info.data_layout, checked=bool(checked),
                         profile=bool(profile), fma=bool(codegen.get("fma", False)),
                         window_gathers=window_lanes(tgt.info)
                         if codegen.get("window_gathers", True) else 0)
    unroll = codegen.get("unroll_threshold")
    kernel = NativeKernel(generated, tgt, cache, unroll=unroll)
    seconds = time.perf_counter() - t0
    return CompiledPipeline(pipeline, schedule, lowered, generated, kernel, num_threads, seconds)
