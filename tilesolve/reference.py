"""The reference evaluator: plain numpy evaluation straight from the algorithm.

    out = ts.reference.realize(pipe, [W, H], input=arr, k=2.0)

This is the test oracle every compiled result is compared with, so it depends
only on the model (and on the interval analysis for the regions to compute),
never on lowering or a backend.

How it works:

1. The arguments are checked (every input and Param bound, dtypes and ranks
   exact, no unknown names) and the region each Func and input must cover is
   found with ``required_regions``.  An input smaller than the region read
   from it is a ``RealizeError``.
2. Each Func, in topological order, is computed over its region into a numpy
   array with an offset (the region's mins may be negative).  The pure
   definition is one vectorized ``evaluate`` call with the pure Vars bound to
   broadcastable ``np.arange`` grids (the innermost Var on the last numpy
   axis); calls to Funcs and inputs already computed gather with fancy
   indexing after checking that every index lies in what was computed.
3. The update definitions run in order with Halide's semantics (see
   ``reference_updates``).
"""
from __future__ import annotations

import math

import numpy as np

from .analysis.intervals.regions import MAX_POINTS, check_region_sizes
from .errors import BoundsError, RealizeError
from .model.evaluate import evaluate, extent_key
from .model.pipeline import Pipeline

__all__ = ["realize", "evaluate_pipeline", "Buffer", "bind_arguments", "param_value", "output_sizes"]


class Buffer:
    """An array over a region that need not start at 0: ``array`` covers ``mins[d] ..
    mins[d] + extents[d] - 1`` (``mins`` and ``extents`` innermost first, ``array``'s axes
    reversed), as Halide's buffers do.

    ``ts.Buffer(arr, mins=[10, 20])`` passes an input whose first element is at (10, 20);
    ``ts.Buffer(ts.int32, [5, 7], mins=[100, 50])`` is a zeroed output buffer over x in
    [100, 105), y in [50, 57), to pass as ``out=`` (or give ``mins=`` to ``realize``).
    The reference also holds each computed Func in one.
    """

    __slots__ = ("name", "array", "mins", "extents")

    def __init__(self, array, sizes=None, *, mins=None, name: str = ""):
        from .model.types import Type
        if isinstance(array, Type):                 # Buffer(type, sizes, mins=...)
            if isinstance(sizes, (int, np.integer)):
                sizes = [sizes]
            if not isinstance(sizes, (list, tuple)) or not all(
                    isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
                    for v in sizes):
                raise RealizeError(f"ts.Buffer({array}, sizes, mins=...): sizes must be a list "
                                   f"of positive ints, innermost first, got {sizes!r}")
            array = np.zeros(tuple(reversed([int(v) for v in sizes])), array.dtype)
        elif sizes is not None:
            raise RealizeError("ts.Buffer(array, mins=[...]): give the mins by keyword (sizes "
                               "come only with a type: ts.Buffer(ts.int32, [W, H], mins=...))")
        if not isinstance(array, np.ndarray):
            raise RealizeError(f"ts.Buffer: expected a numpy array (or a type and sizes), got "
                               f"{type(array).__name__}")
        mins = [0] * array.ndim if mins is None else list(mins)
        if len(mins) != array.ndim or not all(
                isinstance(m, (int, np.integer)) and not isinstance(m, bool) for m in mins):
            raise RealizeError(f"ts.Buffer: mins must be {array.ndim} ints (innermost first), "
                               f"got {mins!r}")
        self.name = name
        self.array = array
        self.mins = tuple(int(m) for m in mins)
        self.extents = tuple(reversed(array.shape))

    def __repr__(self) -> str:
        return f"Buffer({self.array.dtype}, extents={list(self.extents)}, mins={list(self.mins)})"

    def region(self) -> list[tuple[int, int]]:
        """``[(lo, hi), ...]`` innermost first."""
        return [(m, m + e - 1) for m, e in zip(self.mins, self.extents)]

    def check_indices(self, idx, what: str) -> None:
        """Raise ``BoundsError`` unless every index array lies in this buffer's region."""
        for d, a in enumerate(idx):
            a = np.asarray(a)
            if a.size == 0:
                continue
            lo, hi = int(a.min()), int(a.max())
            m, e = self.mins[d], self.extents[d]
            if lo < m or hi > m + e - 1:
                raise BoundsError(
                    f"internal error in the reference: {what} {self.name} outside its computed "
                    f"region: dimension {d} needs [{lo}, {hi}] but [{m}, {m + e - 1}] was "
                    "computed (the required regions are too small)")

    def offsets(self, idx) -> tuple:
        """numpy index tuple (axes reversed) for checked index arrays."""
        return tuple(np.asarray(a).astype(np.intp, copy=False) - m
                     for a, m in zip(reversed(idx), reversed(self.mins)))

    def gather(self, idx) -> np.ndarray:
        """Values at broadcastable index arrays ``idx`` (one per dimension, innermost first)."""
        shape = np.broadcast_shapes(*(np.shape(a) for a in idx))
        if 0 in shape:
            return np.zeros(shape, dtype=self.array.dtype)
        self.check_indices(idx, "reading")
        return self.array[self.offsets(idx)]


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
def split_buffers(kwargs: dict) -> tuple[dict, dict]:
    """``kwargs`` with each ``ts.Buffer`` replaced by its array, and ``{name: mins}`` of the
    Buffers whose mins are not all 0."""
    plain, mins = {}, {}
    for k, v in kwargs.items():
        if isinstance(v, Buffer):
            plain[k] = v.array
            if any(v.mins):
                mins[k] = v.mins
        else:
            plain[k] = v
    return plain, mins


def output_mins(pipeline: Pipeline, mins, out_sizes: dict) -> dict:
    """``realize(..., mins=)`` checked: ``{output: mins}`` of the outputs that do not start
    at 0 (``mins``: one list for every output, innermost first, or a dict by name)."""
    if mins is None:
        return {}
    by_name = pipeline.expand_names(mins) if isinstance(mins, dict) else {
        n: mins for n in out_sizes}
    out = {}
    for n, m in by_name.items():
        if n not in out_sizes:
            raise RealizeError(f"realize(): mins given for {n!r}, which is not an output "
                               f"(outputs: {', '.join(out_sizes)})")
        m = [m] if isinstance(m, (int, np.integer)) else m
        if not isinstance(m, (list, tuple)) or len(m) != len(out_sizes[n]) or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in m):
            raise RealizeError(f"realize(): the mins of output {n} must be "
                               f"{len(out_sizes[n])} ints (innermost first), got {m!r}")
        if any(m):
            out[n] = tuple(int(v) for v in m)
    return out


def bind_arguments(pipeline: Pipeline, kwargs: dict, mins: dict | None = None):
    """Check ``kwargs`` against the pipeline: ``(images, params)`` dicts.  ``mins``: the
    inputs' mins (``split_buffers``), which bind the ``img.dim(d).min()`` Params."""
    mins = mins or {}
    auto = pipeline.buffer_min_params()
    given = sorted(set(kwargs) & set(auto))
    if given:
        img, d = auto[given[0]]
        raise RealizeError(f"realize(): {given[0]!r} is the min of dimension {d} of input "
                           f"{img!r}; it comes from the buffer passed (ts.Buffer(array, "
                           "mins=[...])), not as an argument")
    if auto:
        kwargs = dict(kwargs, **{p: mins.get(img, (0,) * 8)[d] for p, (img, d) in auto.items()})
    valid = list(pipeline.images) + list(pipeline.params)
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise RealizeError(
            f"realize(): unknown argument {unknown[0]!r}; this pipeline's inputs and params "
            f"are: {', '.join(valid) if valid else '(none)'}")
    images = {}
    for name, img in pipeline.images.items():
        if name not in kwargs:
            raise RealizeError(
                f"realize(): missing input {name!r} (a {img.dims}-D {img.type} numpy array)")
        arr = kwargs[name]
        if not isinstance(arr, np.ndarray):
            raise RealizeError(
                f"realize(): input {name!r} must be a numpy array, got {type(arr).__name__}")
        if arr.ndim != img.dims:
            raise RealizeError(
                f"realize(): input {name!r} has rank {arr.ndim} (shape {arr.shape}) but the "
                f"pipeline expects rank {img.dims}")
        if arr.dtype != img.type.dtype:
            raise RealizeError(
                f"realize(): input {name!r} has dtype {arr.dtype} but the pipeline expects "
                f"dtype {img.type.dtype} ({img.type}); convert it with .astype(np.{img.type.dtype})")
        images[name] = arr
    params = {}
    for name, p in pipeline.params.items():
        if name in kwargs:
            v = kwargs[name]
        elif p.default is not None:
            v = p.default
        else:
            raise RealizeError(f"realize(): missing param {name!r} ({p.type}), which has no default")
        params[name] = param_value(p, v)
    return images, params


def param_value(p, v):
    """A Python number of Param ``p``'s kind, checked."""
    t = p.type
    if isinstance(v, np.generic):
        v = v.item()
    if t.is_bool():
        if not isinstance(v, bool):
            raise RealizeError(f"realize(): param {p.name!r} is bool, got {v!r}")
        return v
    if t.is_integral():
        if isinstance(v, float) or not isinstance(v, int):
            raise RealizeError(f"realize(): param {p.name!r} is {t}, got {v!r} ({type(v).__name__})")
        if not t.can_represent(v):
            raise RealizeError(f"realize(): param {p.name!r} is {t}; {v} does not fit")
        return int(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RealizeError(f"realize(): param {p.name!r} is {t}, got {v!r} ({type(v).__name__})")
    v = float(v)
    # A finite value past the type's range is an error (not silently inf): the largest
    # float32 is about 3.4e38.  inf and nan are passed as they are, by both the reference
    # and compiled code.
    with np.errstate(over="ignore"):
        narrowed = np.float64(v).astype(t.dtype)
    if math.isfinite(v) and not np.isfinite(narrowed):
        raise RealizeError(f"realize(): param {p.name!r} is {t}; {v!r} is out of its range "
                           f"(the largest finite {t} is {float(np.finfo(t.dtype).max):.8g})")
    return v




def output_sizes(pipeline: Pipeline, sizes) -> dict[str, list[int]]:
    """Normalize ``sizes`` (a list innermost first, or a dict by output name)."""
    names = pipeline.output_names
    if isinstance(sizes, dict):
        sizes = pipeline.expand_names(sizes)
        extra = sorted((k for k in sizes if k not in names), key=str)
        if extra:
            raise RealizeError(f"realize(): sizes given for {extra[0]!r}, which is not an output "
                               f"(outputs: {', '.join(names)})")
        missing = [n for n in names if n not in sizes]
        if missing:
            raise RealizeError(f"realize(): no sizes given for output {missing[0]!r}")
        out = {n: sizes[n] for n in names}
    else:
        out = {n: sizes for n in names}
    for n, s in out.items():
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            s = [s]
        if not isinstance(s, (list, tuple, np.ndarray)):
            raise RealizeError(
                f"realize(): the sizes of output {n} must be a list of positive ints, innermost "
                f"first (or a dict output name -> list), got {s!r}")
        s = list(s)
        if pipeline.func(n).is_scalar and not s:
            s = [1]                      # a zero-dimensional output: its one point
        dims = pipeline.func(n).dimensions()
        if len(s) != dims:
            raise RealizeError(
                f"realize(): output {n} has {dims} dimensions but {len(s)} sizes were given ({s})")
        points = 1
        for d, v in enumerate(s):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise RealizeError(
                    f"realize(): size {d} of output {n} must be a positive int, got {v!r}")
            if v > MAX_POINTS:
                raise RealizeError(
                    f"realize(): size {d} of output {n} is {v}, which is too large: a size "
                    f"is at most 2**31 - 1 = {MAX_POINTS} (coordinates are int32)")
            points *= int(v)
            if points > MAX_POINTS:
                raise RealizeError(
                    f"realize(): output {n} is too large: sizes {[int(v) for v in s]} make "
                    f"{math.prod(int(v) for v in s)} points, past the limit of 2**31 - 1 = "
                    f"{MAX_POINTS} at dimension {d} (flat indices are int32)")
        out[n] = [int(v) for v in s]
    return out


# ---------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------
def _bounds_of(iv, what: str, d: int) -> tuple[int, int]:
    lo, hi = iv.lo, iv.hi
    for v in (lo, hi):
        if v is None or not np.isfinite(float(v)):       # None: unbounded
            raise BoundsError(f"the required region of {what} is unbounded in dimension {d} "
                              f"([{lo}, {hi}]); clamp the indices that read it")
    return int(np.floor(float(lo))), int(np.ceil(float(hi)))


def _required_regions(pipeline, out_sizes, images, params,
                      out_mins=None) -> dict[str, list[tuple[int, int]]]:
    """Concrete regions (innermost first) of every Func and input, via the interval analysis."""
    from .analysis.intervals import required_regions
    firsts = list(out_sizes.values())
    sizes = firsts[0] if all(s == firsts[0] for s in firsts) else dict(out_sizes)
    input_sizes = {n: list(reversed(a.shape)) for n, a in images.items()}
    boxes = required_regions(pipeline, sizes, input_sizes=input_sizes, params=params,
                             mins=out_mins)
    regions = {}
    for name, box in boxes.items():
        regions[name] = [_bounds_of(iv, name, d) for d, iv in enumerate(box)]
    return regions


def check_output_region(name: str, region, sizes, mins=None) -> None:
    """``RealizeError`` when the pipeline reads or writes output ``name`` outside the
    region asked for (``[min, min + size - 1]`` per dimension, min 0 by default), as
    compiled code (and Halide) do: an output's buffer is exactly what the caller asked
    for."""
    mins = mins or (0,) * len(sizes)
    for d, ((lo, hi), n, m) in enumerate(zip(region, sizes, mins)):
        if lo < m or hi > m + n - 1:
            at, what = ((lo, f"before the min ({m})") if lo < m else
                        (hi, f"beyond the max ({m + n - 1})"))
            raise RealizeError(
                f"realize(): output {name} is accessed at {at}, which is {what} in dimension "
                f"{d}: the pipeline (its updates, or Funcs reading {name}) accesses it over "
                f"[{lo}, {hi}], but its size there is {n} (coordinates {m} to {m + n - 1}); "
                f"realize a larger {name}, or clamp the coordinates")


def check_input_regions(pipeline: Pipeline, images: dict, regions: dict,
                        mins: dict | None = None) -> None:
    """``RealizeError`` for an input smaller than the region the pipeline reads
    (``mins[name]``: where its first element sits, default 0)."""
    from .analysis.intervals.regions import check_input
    mins = mins or {}
    for name in pipeline.images:
        region = regions.get(name)
        if region is None or any(hi < lo for lo, hi in region):
            continue         # nothing is read
        check_input(name, images[name], region, mins.get(name))


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------
def base_env(pipeline: Pipeline, images: dict, params: dict) -> dict:
    """Input extents and Param values (numpy scalars of their type), for ``evaluate``."""
    env = {n: np.asarray(v, dtype=pipeline.params[n].type.dtype) for n, v in params.items()}
    for name, arr in images.items():
        for d in range(arr.ndim):
            env[extent_key(name, d)] = np.int32(arr.shape[arr.ndim - 1 - d])
    return env


def evaluate_pipeline(pipeline: Pipeline, regions: dict, images: dict,
                      params: dict | None = None, mins: dict | None = None) -> dict[str, Buffer]:
    """Compute every Func of ``pipeline`` over ``regions[name]`` (``[(lo, hi)]`` innermost first).

    ``images`` maps input names to (already checked) arrays, whose first elements sit at
    ``mins[name]`` (default 0); ``params`` maps Param names to values.  Returns a Buffer
    per Func and input.
    """
    from .reference_updates import run_update
    params = params or {}
    env = base_env(pipeline, images, params)
    mins = mins or {}
    buffers: dict[str, Buffer] = {n: Buffer(a, mins=mins.get(n), name=n)
                                  for n, a in images.items()}

    def call(target, idx):
        buf = buffers.get(target.name)
        if buf is None:
            raise BoundsError(f"internal error in the reference: {target.name} is read before "
                              "it is computed")
        return buf.gather(idx)

    for name, f in pipeline.funcs.items():
        if name not in regions:
            raise BoundsError(f"internal error in the reference: no region for Func {name}")
        region = [(int(lo), int(hi)) for lo, hi in regions[name]]
        buf = _compute_pure(f, region, env, call)
        buffers[name] = buf
        for k, d in enumerate(f.updates):
            run_update(f, k, d, buf, env, call)
    return buffers


def _compute_pure(f, region, env, call) -> Buffer:
    n = len(region)
    if n != f.dimensions():
        raise BoundsError(f"internal error in the reference: region of {f.name} has {n} "
                          f"dimensions, the Func has {f.dimensions()}")
    shape = tuple(max(0, hi - lo + 1) for lo, hi in reversed(region))
    mins = [lo for lo, _ in region]
    dtype = f.type.dtype
    if 0 in shape:
        return Buffer(np.zeros(shape, dtype=dtype), mins=mins, name=f.name)
    local = dict(env)
    for i, (v, (lo, hi)) in enumerate(zip(f.args, region)):
        s = [1] * n
        s[n - 1 - i] = hi - lo + 1
        local[v.name] = np.arange(lo, hi + 1, dtype=np.int32).reshape(s)
    val = evaluate(f.value, local, call)
    arr = np.array(np.broadcast_to(np.asarray(val), shape), dtype=dtype)
    return Buffer(arr, mins=mins, name=f.name)


def realize(pipeline: Pipeline, sizes, *, mins=None, **inputs_and_params):
    """Evaluate ``pipeline`` with numpy; the oracle for every compiled result.

    ``sizes`` is a list innermost first (every output gets it) or a dict
    output name -> sizes.  Inputs are numpy arrays passed by ImageParam name
    (dtype must match exactly), Params by name (their default is used when
    omitted).  Returns one array, or a tuple in ``pipeline.outputs`` order; an
    output of sizes ``[W, H]`` has shape ``(H, W)``.  An input whose first element is
    not at 0 is passed as ``ts.Buffer(array, mins=[...])``; ``mins`` realizes the
    outputs over ``[min, min + size)`` (one list for every output, or a dict by name).
    """
    if not isinstance(pipeline, Pipeline):
        raise RealizeError(f"realize(): expected a Pipeline, got {type(pipeline).__name__}")
    inputs_and_params, in_mins = split_buffers(inputs_and_params)
    images, params = bind_arguments(pipeline, inputs_and_params, in_mins)
    out_sizes = output_sizes(pipeline, sizes)
    out_mins = output_mins(pipeline, mins, out_sizes)
    regions = _required_regions(pipeline, out_sizes, images, params, out_mins)
    for name, s in out_sizes.items():
        m = out_mins.get(name, (0,) * len(s))
        asked = [(lo, lo + v - 1) for lo, v in zip(m, s)]
        check_output_region(name, regions.get(name) or asked, s, m)
        regions[name] = asked
    check_input_regions(pipeline, images, regions, in_mins)
    check_region_sizes(regions)
    buffers = evaluate_pipeline(pipeline, regions, images, params, in_mins)
    outs = []
    for name, s in out_sizes.items():
        buf = buffers[name]
        m = out_mins.get(name, (0,) * len(s))
        sl = tuple(slice(a - b, a - b + v) for a, b, v in
                   zip(reversed(m), reversed(buf.mins), reversed(s)))
        outs.append(np.ascontiguousarray(buf.array[sl]))
    return shaped_outputs(pipeline, outs)


def shaped_outputs(pipeline: Pipeline, arrays):
    """The outputs as ``realize`` returns them: one array or a tuple in output order, a
    zero-dimensional output as a 0-d array."""
    outs = [a.reshape(()) if pipeline.func(n).is_scalar else a
            for n, a in zip(pipeline.output_names, arrays)]
    return outs[0] if len(outs) == 1 else tuple(outs)
