"""``to_dask(compiled, sizes, chunks, **inputs)``: a compiled pipeline as a lazy Dask array.

    fast = ts.compile(pipe, sched)
    img = da.from_zarr("in.zarr")                        # numpy axis order, as always
    out = ts.distributed.to_dask(fast, [W, H], chunks=(2048, 2048), input=img)
    out.to_zarr("out.zarr")                              # runs on the current Client

Each output chunk is one task that runs the compiled pipeline on the input region bounds
inference gives for that chunk (see :mod:`.shift` for how the chunk keeps the whole
image's coordinates, so boundary conditions apply at the true image edges only).
Workers get the pipeline and its schedule, compile once per process and reuse the
on-disk compile cache.  Reductions over the whole input become tree reductions when
associative (:mod:`.reduce`), else :class:`~tilesolve.errors.ChunkingError`.
"""
from __future__ import annotations

import operator
import uuid
import warnings
import weakref

import numpy as np

from ..analysis.intervals import required_regions
from ..errors import ChunkingError, ChunkingWarning, RealizeError
from ..reference import output_sizes, param_value
from .chunking import auto_chunks
from .graph import BoxGraph, InGraphArray, block_boxes
from .plan import ChunkPlan
from .reduce import overreads, plan_reduction, tile_params
from .worker import ShippedPipeline, combine, compiled_for, process_stats

__all__ = ["to_dask", "chunk_regions", "chunk_plan", "warm_up"]

_PLANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FANIN = 4


def _dask():
    try:
        import dask.array as da
        from dask.base import tokenize
        from dask.highlevelgraph import HighLevelGraph
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("tilesolve.distributed needs Dask: pip install 'tilesolve[dask]'") \
            from None
    return da, tokenize, HighLevelGraph


def chunk_plan(compiled, num_threads=1, **kw) -> ChunkPlan:
    """The ChunkPlan of ``compiled`` for these options (memoized per compiled object)."""
    memo = _PLANS.setdefault(compiled, {})
    key = (num_threads, repr(sorted((k, repr(v)) for k, v in kw.items())))
    plan = memo.get(key)
    if plan is None:
        plan = memo[key] = ChunkPlan(compiled.pipeline, compiled.schedule,
                                     num_threads=num_threads, **kw)
    return plan


def _bind(pipeline, kwargs, da):
    valid = list(pipeline.images) + list(pipeline.params)
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise RealizeError(f"to_dask(): unknown argument {unknown[0]!r}; this pipeline's inputs "
                           f"and params are: {', '.join(valid) if valid else '(none)'}")
    images, params = {}, {}
    for name, img in pipeline.images.items():
        if name not in kwargs:
            raise RealizeError(f"to_dask(): missing input {name!r} (a {img.dims}-D {img.type} "
                               "numpy or Dask array)")
        arr = kwargs[name]
        if not (isinstance(arr, np.ndarray) or isinstance(arr, da.Array)):
            raise RealizeError(f"to_dask(): input {name!r} must be a numpy or Dask array, got "
                               f"{type(arr).__name__}")
        if arr.ndim != img.dims:
            raise RealizeError(f"to_dask(): input {name!r} has rank {arr.ndim} (shape "
                               f"{arr.shape}) but the pipeline expects rank {img.dims}")
        if np.dtype(arr.dtype) != img.type.dtype:
            raise RealizeError(f"to_dask(): input {name!r} has dtype {arr.dtype} but the "
                               f"pipeline expects {img.type.dtype}")
        if any(isinstance(s, float) and np.isnan(s) for s in arr.shape):
            raise RealizeError(f"to_dask(): input {name!r} has unknown chunk sizes; call "
                               ".compute_chunk_sizes() first")
        images[name] = arr
    for name, p in pipeline.params.items():
        if name in kwargs:
            params[name] = param_value(p, kwargs[name])
        elif p.default is not None:
            params[name] = p.default
        else:
            raise RealizeError(f"to_dask(): missing param {name!r} ({p.type}), which has no "
                               "default")
    return images, params


def _check_whole(pipeline, out_sizes, extents, params):
    """What realize() would check for the whole image: every input covers its region."""
    first = next(iter(out_sizes.values()))
    boxes = required_regions(pipeline, first, input_sizes=extents, params=params)
    for name, ext in extents.items():
        box = boxes.get(name)
        if box is None:
            continue
        for d, (iv, e) in enumerate(zip(box, ext)):
            if iv.is_empty():
                break
            if float(iv.lo) < 0 or float(iv.hi) > e - 1:
                raise RealizeError(
                    f"to_dask(): input {name!r} is too small: dimension {d} must cover "
                    f"[{iv.lo}, {iv.hi}] but the array has extent {e} there; add a boundary "
                    "condition or pass a larger input")


def _nominal_chunks(arr, like_chunks):
    """Chunks for a numpy input (they only tile reductions over it): the output's first
    chunk sizes where the ranks match, else Dask's "auto"."""
    from dask.array.core import normalize_chunks
    chunks = tuple(min(c[0], s) if c else s for c, s in zip(like_chunks, arr.shape)) \
        if len(like_chunks) == arr.ndim else "auto"
    return normalize_chunks(chunks, arr.shape, dtype=arr.dtype)


def _source(name, arr, da, like_chunks):
    """A Dask input as it is; a numpy input as one key of the graph, under a fresh name
    (no hash of its data is computed: each call makes new keys)."""
    if isinstance(arr, da.Array):
        return arr
    key = f"tilesolve-array-{name}-{uuid.uuid4().hex}"
    return InGraphArray(key, arr, _nominal_chunks(arr, like_chunks))


def _prepare(compiled, sizes, chunks, num_threads, inputs_and_params):
    da, tokenize, HighLevelGraph = _dask()
    pipe = compiled.pipeline
    images, params = _bind(pipe, inputs_and_params, da)
    out_sizes = output_sizes(pipe, sizes)
    firsts = list(out_sizes.values())
    if any(s != firsts[0] for s in firsts):
        raise ChunkingError(f"to_dask(): the outputs {', '.join(out_sizes)} have different "
                            "sizes; chunked outputs must share one chunk grid")
    sizes0 = list(firsts[0])
    shape = tuple(reversed(sizes0))
    dtypes = [pipe.func(n).type.dtype for n in pipe.output_names]
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        itemsize = sum(np.dtype(t).itemsize for t in dtypes)
        chunks = auto_chunks(shape, itemsize, like=[a for a in images.values()
                                                    if isinstance(a, da.Array)])
    chunks = da.core.normalize_chunks(chunks, shape, dtype=dtypes[0])
    extents = {n: list(reversed(a.shape)) for n, a in images.items()}
    _check_whole(pipe, out_sizes, extents, params)
    sources = {n: _source(n, a, da, chunks) for n, a in images.items()}
    token = tokenize(compiled.pipeline.output_names, id(compiled), sizes0, chunks,
                     {n: a.name for n, a in sources.items()}, sorted(params.items()),
                     num_threads)
    job = _Job(compiled, num_threads, pipe, out_sizes, extents, params, sources, chunks, token)
    job.resolve_reductions()
    job.build(da, HighLevelGraph, dtypes)
    return job


def to_dask(compiled, sizes, chunks=None, *, num_threads: int = 1, **inputs_and_params):
    """The outputs of ``compiled`` over ``sizes`` (innermost first) as lazy Dask arrays in
    numpy axis order, one task per chunk.

    ``chunks``: output chunks in numpy axis order, anything ``dask.array`` accepts, used
    as given; None or "auto": a few large row bands, about one per worker thread of the
    current Client (see :mod:`.chunking`).  Inputs: numpy arrays (one key of the graph;
    tasks read views of them) or Dask arrays (e.g. ``da.from_zarr``); Params: numbers.  ``num_threads``: the
    threads of each task's compiled code (1: Dask's workers provide the parallelism).
    Returns one array, or a tuple in output order for several outputs (which must have
    the same sizes)."""
    job = _prepare(compiled, sizes, chunks, num_threads, inputs_and_params)
    return job.arrays[0] if len(job.arrays) == 1 else tuple(job.arrays)


def warm_up(client, *arrays) -> dict:
    """Compile, on every worker of ``client``, each pipeline the graphs of ``arrays``
    (from :func:`to_dask`) will run, so that timings and memory measured afterwards
    exclude compilation.  Returns worker address -> the pipelines it holds."""
    shipped: dict = {}
    for arr in arrays:
        for v in dict(arr.__dask_graph__()).values():
            _find_shipped(v, shipped)
    for s in shipped.values():
        client.run(_compile_only, s)
    return {w: st["pipelines"] for w, st in client.run(process_stats).items()}


def _find_shipped(node, found: dict, depth: int = 0) -> None:
    """Add every ShippedPipeline inside one graph value (a task tuple, or Dask's Task
    and DataNode objects: each task carries its pipeline as an argument) to ``found``."""
    if isinstance(node, ShippedPipeline):
        found[node.key] = node
    elif depth < 3:
        if isinstance(node, (tuple, list)):
            kids = node
        else:
            kids = list(getattr(node, "args", ()) or ())
            if type(node).__name__ == "DataNode":
                kids.append(getattr(node, "value", None))
        for k in kids:
            _find_shipped(k, found, depth + 1)


def _compile_only(shipped) -> str:
    compiled_for(shipped)            # the CompiledPipeline stays here: it holds ctypes
    return shipped.key


def chunk_regions(compiled, sizes, chunks=None, *, num_threads: int = 1,
                  **inputs_and_params) -> dict:
    """What each task of ``to_dask`` reads: task key -> {input: [(lo, hi)] per dimension,
    innermost first, in the whole input's coordinates}.  Keys are ``(name, *block index)``
    for output chunks and ``(name, tile)`` for the partial results of reductions."""
    return _prepare(compiled, sizes, chunks, num_threads, inputs_and_params).read


class _Job:
    """The graph of one to_dask call: reductions first, then one task per chunk."""

    def __init__(self, compiled, num_threads, pipe, out_sizes, extents, params, sources,
                 chunks, token):
        self.compiled, self.num_threads, self.pipe = compiled, num_threads, pipe
        self.out_sizes, self.extents, self.params = out_sizes, extents, params
        self.sources, self.chunks, self.token = sources, chunks, token
        self.as_images: dict = {}
        self.layer: dict = {}
        self.reductions: list = []
        self.final_output = None
        self.read: dict = {}
        self.split: dict = {}        # task key -> its row bands, where cut (for tests)

    def _plan(self, **kw):
        return chunk_plan(self.compiled, self.num_threads, **kw)

    def _main_plan(self):
        return self._plan(as_images=self.as_images) if self.as_images else self._plan()

    def resolve_reductions(self):
        """Replace whole-input reductions by tree reductions until no chunk over-reads."""
        names = self.pipe.output_names
        for _ in range(len(self.pipe.funcs) + 1):
            plan = self._main_plan()
            # an interior chunk: edges may read more (e.g. a mirror's interval hull)
            mid = tuple(len(c) // 2 for c in self.chunks)
            _, origin_np, shape_np = next(b for b in block_boxes(self.chunks) if b[0] == mid)
            origin, csz = list(reversed(origin_np)), list(reversed(shape_np))
            try:
                regions = plan.regions({n: origin for n in names}, {n: csz for n in names},
                                       self.params, self.extents)
            except ChunkingError:
                if self.as_images or len(names) != 1 or not self.pipe.func(names[0]).updates:
                    raise
                regions = None           # maybe the output itself is a reduction
            if regions is None:
                over, soft = {img: float("inf") for img in self.pipe.images}, {}
            else:
                chunk_vol = {n: max(np.prod(b[2]) for b in block_boxes(a.chunks))
                             for n, a in self.sources.items()}
                over, soft = overreads(regions, self.extents, csz,
                                       list(reversed(self.chunks_shape)), chunk_vol)
            if not over and not soft:
                return
            image, amp = max((over or soft).items(), key=lambda kv: kv[1])
            red = plan_reduction(self.pipe, image, amp, self.out_sizes, self.extents,
                                 self.params, {n: a.chunks for n, a in self.sources.items()},
                                 done=tuple(self.as_images)) if over or regions is None else \
                self._soft_reduction(image, amp)
            if red is None:
                if over:
                    readers = ", ".join(self.pipe.consumers(image))
                    warnings.warn(
                        f"to_dask(): every output chunk reads {amp:.0f}x its share of input "
                        f"{image} (read by Func {readers}): halos are large for chunks of "
                        f"{tuple(shape_np)}; larger chunks read less of it twice", ChunkingWarning,
                        stacklevel=4)
                return
            key, arr_shape = self._tree(red)
            if red.func in names:
                if len(names) > 1:
                    raise ChunkingError(f"Func {red.func}: an output reduced over the whole "
                                        "input must be the pipeline's only output")
                self.final_output = (key, arr_shape)
                return
            self.as_images[red.func] = (red.image(self.pipe), [lo for lo, _ in red.region])
            self.extents[red.func] = [hi - lo + 1 for lo, hi in red.region]
            self.sources[red.func] = _KeySource(key, arr_shape, self.pipe.func(red.func))
        raise ChunkingError("to_dask(): could not remove the whole-input reads")  # pragma: no cover

    def _soft_reduction(self, image, amp):
        """A reduction for a task that reads many input chunks, only where one applies."""
        try:
            return plan_reduction(self.pipe, image, amp, self.out_sizes, self.extents,
                                  self.params, {n: a.chunks for n, a in self.sources.items()},
                                  done=tuple(self.as_images))
        except ChunkingError:
            return None

    @property
    def chunks_shape(self):
        return tuple(sum(c) for c in self.chunks)

    def _tree(self, red):
        """Partial results per RDom tile, combined by a tree: (final key, numpy shape)."""
        plan = self._plan(outputs=(red.func,), as_images=dict(self.as_images),
                          tile=(red.func, red.update, red.op))
        g = BoxGraph(plan, self._dask_sources(plan), self.extents, self.params,
                     f"{self.token}-{red.func}")
        origin = {red.func: [lo for lo, _ in red.region]}
        size = {red.func: [hi - lo + 1 for lo, hi in red.region]}
        name = f"tilesolve-partial-{red.func}-{self.token}"
        keys = [g.add_box((name, i), origin, size, tile_params(plan, t, i == 0))
                for i, t in enumerate(red.tiles)]
        g.finish()
        self.layer.update(g.layer)
        self.read.update(g.read)
        level = 0
        while len(keys) > 1:
            level += 1
            nxt = []
            for j in range(0, len(keys), _FANIN):
                k = (f"tilesolve-combine-{red.func}-{self.token}-{level}", j // _FANIN)
                self.layer[k] = (combine, red.op) + tuple(keys[j:j + _FANIN])
                nxt.append(k)
            keys = nxt
        final = (f"tilesolve-reduced-{red.func}-{self.token}",) + (0,) * len(red.region)
        self.layer[final] = keys[0]  # an alias
        self.reductions.append(red)
        return final, tuple(reversed(size[red.func]))

    def _dask_sources(self, plan):
        return {n: self.sources[n] for n in plan.rw.mins}

    def build(self, da, HighLevelGraph, dtypes):
        """The output arrays (``self.arrays``) from the reductions and one task per chunk."""
        deps = [s for s in self.sources.values() if isinstance(s, da.Array)]
        if self.final_output is not None:      # the only output is a reduction
            key, shape = self.final_output
            graph = HighLevelGraph.from_collections(key[0], self.layer, dependencies=deps)
            arr = da.Array(graph, key[0], tuple((s,) for s in shape), dtype=dtypes[0])
            self.arrays = [arr if arr.chunks == self.chunks else arr.rechunk(self.chunks)]
            return
        plan = self._main_plan()
        names = plan.output_names
        base = f"tilesolve-{'-'.join(names)}-{self.token}"
        g = BoxGraph(plan, self._dask_sources(plan), self.extents, self.params, self.token)
        for idx, origin_np, shape_np in block_boxes(self.chunks):
            origin, csz = list(reversed(origin_np)), list(reversed(shape_np))
            g.add_box((base,) + idx, {n: origin for n in names}, {n: csz for n in names})
        g.finish()
        self.layer.update(g.layer)
        self.read.update(g.read)
        self.split.update(g.split)
        if len(names) == 1:
            graph = HighLevelGraph.from_collections(base, self.layer, dependencies=deps)
            self.arrays = [da.Array(graph, base, self.chunks, dtype=dtypes[0])]
            return
        self.arrays = []
        for i, n in enumerate(names):
            nm = f"{base}-{n}"
            layer = dict(self.layer)
            for idx, _, _ in block_boxes(self.chunks):
                layer[(nm,) + idx] = (operator.getitem, (base,) + idx, i)
            graph = HighLevelGraph.from_collections(nm, layer, dependencies=deps)
            self.arrays.append(da.Array(graph, nm, self.chunks, dtype=dtypes[i]))


class _KeySource:
    """A reduction result inside the graph, seen as a one-chunk Dask-like array."""

    def __init__(self, key, shape, func):
        self.name = key[0]
        self.shape = shape
        self.chunks = tuple((s,) for s in shape)
        self.dtype = func.type.dtype
