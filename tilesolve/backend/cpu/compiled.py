"""``CompiledPipeline``: native code for one Pipeline + Schedule, callable with numpy arrays.

``realize(sizes, *, out=None, **inputs_and_params)`` checks everything the generated
code relies on *before* it runs, so bad arguments raise :class:`RealizeError` (naming the
input, dimension, region needed and shape given) and never crash the process:

* arguments: every input and Param bound, no unknown keyword, exact dtypes and ranks,
  sizes positive ints of the right count (the same rules as ``reference.realize``);
* regions: each input covers the region the compiled code may read from it (the
  lowering's ``input_regions``, evaluated for these sizes; the interval analysis's
  ``required_regions`` if lowering gave none);
* memory: inputs are passed zero-copy (strides in elements; an array whose rows are not
  dense (last axis stride != itemsize), whose strides are not multiples of its itemsize,
  or which overlaps an output, is copied first: the code is specialized for stride 1 in
  dimension 0); ``out=``
  arrays must have the exact shape and dtype, be writeable, have dense rows and
  non-negative whole-element strides (C-contiguous, or a window of a larger array: the
  code addresses outputs through their strides as it does inputs) and not overlap each
  other; every flat index must fit in int32.

A call keeps no state in the object apart from memos filled atomically: the regions read
for given argument shapes, and the packed arguments of a call that passed every check,
kept under its signature (``call_plan.py``: a repeated call with the same shapes and
Params runs without checking again what cannot have changed).  So several Python
threads may realize the same CompiledPipeline at once (ctypes releases the GIL while
native code runs).

Profiled builds (``ts.compile(..., profile=True)``): each call fills its own counters
and adds them to the object's totals (``profile()``, ``profile_report()``,
``reset_profile()``; see ``profile.py`` and ``profile_report.py``).
"""
from __future__ import annotations

import numpy as np

from ...errors import LoweringError, RealizeError, TilesolveError
from ...lower.regions import RegionCheck
from .codegen import GeneratedModule
from .codegen_memory import ERR_ALLOC, ERR_BOUNDS
from .call_plan import MISS, CallPlan, signature
from .runtime import NativeKernel

__all__ = ["CompiledPipeline"]

_INT32_MAX = 2 ** 31 - 1


class CompiledPipeline:
    """The result of ``ts.compile``.  Attributes: ``pipeline``, ``schedule``, ``lowered``
    (the loop IR), ``num_threads``, ``compile_seconds`` (lowering + code generation +
    LLVM, or the cache load), ``cache_hit``, ``notes`` (remarks from lowering and code
    generation, e.g. loops that could not be vectorized), ``profiled``."""

    def __init__(self, pipeline, schedule, lowered, generated: GeneratedModule,
                 kernel: NativeKernel, num_threads: int, compile_seconds: float):
        self.pipeline = pipeline
        self.schedule = schedule
        self.lowered = lowered
        self.generated = generated
        self._kernel = kernel
        self.num_threads = int(num_threads)
        self.compile_seconds = compile_seconds
        self.cache_hit = kernel.jit.cache_hit
        self.notes = tuple(lowered.notes) + tuple(generated.notes)
        self._regions = RegionCheck.of(lowered, pipeline)   # memoizes per shapes
        # a build lowered with buffer_mins takes each buffer's mins as scalar arguments
        self._takes_mins = any(a.name.endswith(".min.0") for a in generated.scalar_args)
        self._build_shifted = None       # set by ts.compile: the build that takes mins
        self._shifted = None
        self._profiler = None
        self._plans: dict = {}           # call signature -> CallPlan (call_plan.py)
        if generated.profile is not None:
            from .profile_report import Profiler
            self._profiler = Profiler(lowered.name, generated.profile,
                                      kernel.jit.address(generated.profile.ticks_symbol),
                                      self.num_threads)

    # -- inspection --------------------------------------------------------------------
    def llvm_ir(self) -> str:
        """The optimized LLVM IR."""
        return self._kernel.jit.llvm_ir()

    def assembly(self) -> str:
        """The host assembly of the optimized IR."""
        return self._kernel.jit.assembly()

    def loop_ir(self) -> str:
        """The lowered loop IR, as text."""
        return str(self.lowered)

    # -- profiling ---------------------------------------------------------------------
    @property
    def profiled(self) -> bool:
        """Whether the code records a profile (``ts.compile(..., profile=True)``)."""
        return self._profiler is not None

    def _need_profile(self, what: str):
        if self._profiler is None:
            raise TilesolveError(f"{what}: {self.lowered.name} was compiled without profiling; "
                                 "compile it with ts.compile(..., profile=True)")
        return self._profiler

    def profile(self) -> dict:
        """The profile summed over every ``realize`` since the compile (or
        ``reset_profile()``): ``total_ms`` (the kernel's wall time), ``funcs`` (name ->
        ``ms``, ``entries``), ``parallel`` (loop -> ``func``, ``wall_ms``, ``busy_ms``,
        ``idle_ms``, ``utilization``, ``entries``), ``other_ms``, ``runs``,
        ``num_threads``, ``timer``, ``ticks_per_second``, and ``last`` (the same
        figures for the last call).  Needs ``profile=True``."""
        return self._need_profile("profile()").data()

    def profile_report(self) -> str:
        """The profile as a table: Func, total ms, % of the run, entries; parallel
        regions with their idle time, wall time and thread utilization."""
        return self._need_profile("profile_report()").report()

    def reset_profile(self) -> None:
        """Zero the profile's totals."""
        self._need_profile("reset_profile()").reset()

    def __repr__(self) -> str:
        return (f"<CompiledPipeline {self.lowered.name}: {len(self.generated.buffer_args)} "
                f"buffers, {self.num_threads} threads, cache_hit={self.cache_hit}>")

    # -- running -----------------------------------------------------------------------
    def realize(self, sizes, *, out=None, mins=None, **inputs_and_params):
        """Run the pipeline.  ``sizes``: innermost first (or a dict by output name), as in
        ``reference.realize``.  Returns one array, or a tuple in output order, each of shape
        ``reversed(sizes)``; with ``out=`` (an array, or a sequence in output order) the
        results are written there and the same arrays are returned.

        Buffers need not start at 0, as in Halide: an input passed as ``ts.Buffer(array,
        mins=[...])`` has its first element at ``mins``; ``mins=`` (or ``out=`` /
        ``sizes`` given as a ``ts.Buffer``) computes the outputs over ``[min, min +
        size)``.  Such a call runs a second build of the pipeline whose code takes the
        mins as arguments (compiled on first use)."""
        key = None
        if mins is None and self._profiler is None:
            key = signature(sizes, out, inputs_and_params)
            plan = self._plans.get(key) if key is not None else None
            if plan is not None:
                outs, bufs = plan.arrays(out, inputs_and_params)
                if outs is not MISS:
                    fault = [0, 0, 0]
                    rc = self._kernel.call([b.ctypes.data for b in bufs], plan.cdims,
                                           plan.cscal, self.num_threads, fault)
                    if rc:
                        names = [a.name for a in self.generated.buffer_args]
                        self._raise_for(rc, fault, dict(zip(names, bufs)))
                    return plan.shaped(outs)
        from ...reference import (Buffer, bind_arguments, output_mins, output_sizes,
                                  split_buffers)
        if isinstance(sizes, Buffer) or (isinstance(sizes, (list, tuple)) and sizes and
                                         all(isinstance(b, Buffer) for b in sizes)):
            if out is not None:
                raise RealizeError("realize(): the output buffers are given twice (as sizes "
                                   "and as out=)")
            out = sizes
            bufs = [sizes] if isinstance(sizes, Buffer) else list(sizes)
            sizes = dict(zip(self.pipeline.output_names, (list(b.extents) for b in bufs)))
        out_list = [out] if isinstance(out, (np.ndarray, Buffer)) else (
            None if out is None else list(out))
        if out_list is not None and any(isinstance(b, Buffer) for b in out_list):
            if mins is not None:
                raise RealizeError("realize(): the output mins are given twice (as mins= "
                                   "and by the out= buffers)")
            mins = {n: b.mins for n, b in zip(self.pipeline.output_names, out_list)
                    if isinstance(b, Buffer)}
            out_list = [b.array if isinstance(b, Buffer) else b for b in out_list]
        inputs_and_params, in_mins = split_buffers(inputs_and_params)
        images, params = bind_arguments(self.pipeline, inputs_and_params, in_mins)
        out_sizes = output_sizes(self.pipeline, sizes)
        all_mins = {**in_mins, **output_mins(self.pipeline, mins, out_sizes)}
        if all_mins:
            build = self if self._takes_mins else self._shifted_build()
            return build._run(out_sizes, out_list, images, params, all_mins)
        return self._run(out_sizes, out_list, images, params, all_mins, key)

    def _shifted_build(self) -> "CompiledPipeline":
        if self._shifted is None:
            if self._build_shifted is None:
                raise RealizeError(f"{self.lowered.name}: this build runs only buffers that "
                                   "start at 0 (it was made from loop IR with compile_lowered); "
                                   "ts.compile makes builds that take any mins")
            self._shifted = self._build_shifted()
        return self._shifted

    def _run(self, out_sizes, out, images, params, mins, key=None):
        """Check the regions, run the code; keep a ``CallPlan`` under ``key`` (the call's
        signature) when the call succeeds and passed its inputs as they were."""
        from ...reference import shaped_outputs
        if self._takes_mins:
            params = dict(params)
            for a in self.generated.buffer_args:
                m = mins.get(a.name, (0,) * a.dims)
                for d in range(a.dims):
                    params[f"{a.name}.min.{d}"] = np.int32(m[d])
        outputs = self._outputs(out_sizes, out)
        views = {n: self._input_view(n, a, outputs) for n, a in images.items()}
        if any(views[n] is not a for n, a in images.items()):
            key = None                   # a copied input: this call's plan does not apply
        images = views
        arrays = {**images, **outputs}
        self._regions(out_sizes, images, arrays, params, mins)
        bufs = []
        for a in self.generated.buffer_args:
            if a.name not in arrays:
                raise LoweringError(f"compiled code takes a buffer {a.name!r} that is neither "
                                    "an input nor an output of the pipeline")
            arr = arrays[a.name]
            _check_int32_span(a.name, arr)
            bufs.append(arr)
        scalars = [params[a.name] for a in self.generated.scalar_args]
        fault = [0, 0, 0]
        counters = (self._profiler.counters(self.num_threads) if self._profiler is not None
                    else None)
        cdims, cscal = self._kernel.pack(bufs, scalars, counters)
        rc = self._kernel.call([b.ctypes.data for b in bufs], cdims, cscal,
                               self.num_threads, fault)
        if counters is not None:
            self._profiler.record(counters)
        if rc:
            self._raise_for(rc, fault, arrays)
        names = self.pipeline.output_names
        if key is not None:
            if len(self._plans) > 64:
                self._plans.clear()
            self._plans[key] = CallPlan(
                [a.name for a in self.generated.buffer_args], images, outputs, names,
                [self.pipeline.func(n).is_scalar for n in names], cdims, cscal)
        return shaped_outputs(self.pipeline, [outputs[n] for n in names])

    def _raise_for(self, rc: int, fault, arrays: dict) -> None:
        """The error for the code's return code ``rc`` (not 0)."""
        if rc == ERR_BOUNDS and self.generated.checked:
            raise RealizeError(_fault_message(self.lowered.name, self.generated.fault_names,
                                              fault, arrays, self.pipeline))
        if rc == ERR_ALLOC:
            raise MemoryError(f"{self.lowered.name}: a heap allocation failed in the compiled "
                              "code; the outputs are incomplete")
        raise RealizeError(f"{self.lowered.name}: the compiled code returned error {rc}")

    def _outputs(self, out_sizes: dict, out) -> dict:
        names = self.pipeline.output_names
        types = {n: self.pipeline.func(n).type for n in names}
        if out is None:
            return {n: np.empty(tuple(reversed(s)), types[n].dtype) for n, s in out_sizes.items()}
        arrays = [out] if isinstance(out, np.ndarray) else list(out)
        if len(arrays) != len(names):
            raise RealizeError(f"realize(): out= has {len(arrays)} arrays but the pipeline has "
                               f"{len(names)} outputs ({', '.join(names)})")
        result = {}
        for n, arr in zip(names, arrays):
            shape = tuple(reversed(out_sizes[n]))
            if not isinstance(arr, np.ndarray):
                raise RealizeError(f"realize(): out= for output {n} must be a numpy array, "
                                   f"got {type(arr).__name__}")
            if arr.shape != shape:
                raise RealizeError(f"realize(): out= for output {n} has shape {arr.shape}; "
                                   f"sizes {out_sizes[n]} need shape {shape}")
            if arr.dtype != types[n].dtype:
                raise RealizeError(f"realize(): out= for output {n} has dtype {arr.dtype}; "
                                   f"expected {types[n].dtype}")
            if not arr.flags.writeable:
                raise RealizeError(f"realize(): out= for output {n} is not writeable")
            if (arr.ndim and arr.shape[-1] > 1 and arr.strides[-1] != arr.itemsize) or \
                    any(st % arr.itemsize or st < 0 for st in arr.strides):
                raise RealizeError(
                    f"realize(): out= for output {n} has strides {arr.strides}: it needs dense "
                    f"rows (last axis stride {arr.itemsize}) and other strides that are "
                    f"non-negative multiples of {arr.itemsize} (a window of a larger array "
                    f"is fine; use np.ascontiguousarray otherwise)")
            for m, other in result.items():
                if np.may_share_memory(arr, other):
                    raise RealizeError(f"realize(): the out= arrays of outputs {m} and {n} "
                                       "overlap")
            result[n] = arr
        return result

    @staticmethod
    def _input_view(name: str, arr: np.ndarray, outputs: dict) -> np.ndarray:
        """The array to pass for an input: zero-copy unless its strides are not whole
        elements or it overlaps an output (then a private copy)."""
        inner = arr.strides[-1] if arr.ndim and arr.shape[-1] > 1 else arr.itemsize
        if inner != arr.itemsize or any(s % arr.itemsize for s in arr.strides) or \
                any(np.may_share_memory(arr, o) for o in outputs.values()):
            return np.ascontiguousarray(arr).copy()
        return arr


def _fault_message(pipeline_name: str, names, fault, arrays: dict, pipeline) -> str:
    """A checked build's first fault, as the Func (or input), coordinate and range."""
    which, index, last = fault
    name = names[which] if 0 <= which < len(names) else f"#{which}"
    head = f"{pipeline_name} (checked build): "
    arr = arrays.get(name)
    if arr is None:
        return (f"{head}Func {name} is accessed at element {index} of its allocation, "
                f"outside [0, {last}] (the elements allocated); its allocation is smaller than "
                "what the program touches, a lowering bug: please report it with the schedule")
    what = "output" if name in pipeline.output_names else "input"
    strides = [s // arr.itemsize for s in reversed(arr.strides)]
    shape = list(reversed(arr.shape))
    coord, rest = [0] * len(shape), index
    for d in sorted(range(len(shape)), key=lambda d: -abs(strides[d])):
        coord[d], rest = divmod(rest, strides[d]) if strides[d] else (0, rest)
    span = ", ".join(f"[0, {n - 1}]" for n in shape)
    return (f"{head}{what} {name} is accessed at {tuple(coord)} (element {index}), outside "
            f"the coordinates it has ({span}, innermost first): the compiled program "
            "touches memory it does not own, a lowering bug: please report it with the "
            "schedule")


def _check_int32_span(name: str, arr: np.ndarray) -> None:
    span = sum((e - 1) * abs(s // arr.itemsize) for e, s in zip(arr.shape, arr.strides) if e > 0)
    if span > _INT32_MAX:
        raise RealizeError(f"realize(): array {name!r} (shape {arr.shape}) spans {span + 1} "
                           "elements; compiled code indexes with int32 (at most 2**31 - 1)")
