"""The regions of the inputs a lowered program reads.

``input_region_exprs`` (at lowering time, before flattening) walks the whole
program and keeps, for every input, the box of what it reads as Exprs of
argument names (``out.extent.d``, ``in.extent.d``) and Params.  Conditions
on those names alone (the shift-inward ``if extent >= factor``) stay as
``select``s, so each version of a nest counts only what it reads.  For
``shift_inward``/``guard_with_if`` schedules this is the same region as
``analysis.intervals.required_regions``; ``round_up`` reads more.

``input_regions(lowered, buffers_or_sizes, params)`` evaluates them for
concrete sizes.  ``RegionCheck`` is the one check every runtime makes before a
program runs (the CPU runtime, the CUDA runtime, its CPU emulation, and, through
``check_inputs``, the interpreter): inputs against the lowered program's regions,
outputs against what the program and the algorithm touch of them.
"""
from __future__ import annotations

import numpy as np

from ..analysis.intervals.interval import is_num
from ..analysis.intervals.regions import check_input, check_region_sizes
from ..analysis.simplify import simplify
from ..errors import BoundsError, RealizeError
from ..model import expr as E
from ..model import types as T
from ..model.evaluate import eval_scalar
from ..model.visit import walk
from . import bounds as B
from . import ir as L
from .flatten import Flattener


def input_region_exprs(body: L.Stmt, inputs, buffer_args: set, known: dict | None = None,
                       func_bounds: dict | None = None, loop_names=frozenset()) -> tuple:
    """``((name, ((min, extent), ...)), ...)`` for each input (unflattened ``body``).

    The lets at the top of the program (the hoisted regions of root-level
    Funcs) stay symbolic in the walk, and each Expr carries the ones it needs
    as ``Let`` nodes: the Exprs stay small however long the pipeline."""
    fl = Flattener(buffer_args)
    names = B.Names()
    top, rest = [], body
    while isinstance(rest, L.LetStmt):
        top.append((rest.name, rest.value))
        rest = rest.body
    out = []
    for img in inputs:
        box = B.box_of(rest, img.name, writes=False, known=known, func_bounds=func_bounds,
                       names=names, loop_names=loop_names)
        if box is None:
            out.append((img.name, tuple((E.Const(T.int32, 0), E.Const(T.int32, 0))
                                        for _ in range(img.dims))))
            continue
        dims = []
        for d, (lo, hi) in enumerate(box):
            if lo is None or hi is None:
                raise BoundsError(f"the region of input {img.name} read by the program is "
                                  f"unbounded in dimension {d}; clamp the indices that read it")
            dims.append((_with_lets(fl.expr(lo), top, fl), _with_lets(fl.expr(hi - lo + 1), top, fl)))
        out.append((img.name, tuple(dims)))
    return tuple(out)


def _with_lets(e: E.Expr, top: list, fl) -> E.Expr:
    """``e`` wrapped in ``Let`` nodes for the top-level lets it uses (transitively)."""
    e = simplify(e)
    need = {n.name for n in walk(e) if isinstance(n, E.Var)}
    used = []
    for name, value in reversed(top):
        if name in need:
            used.append((name, value))
            need |= {n.name for n in walk(value) if isinstance(n, E.Var)}
    for name, value in used:
        e = E.Let(name, simplify(fl.expr(value)), e)
    return e


def _defaults(lowered) -> dict:
    """Param defaults, from the Param nodes the region Exprs hold."""
    out = {}
    for _, dims in lowered.input_regions:
        for pair in dims:
            for e in pair:
                out.update({n.name: n.default for n in walk(e) if isinstance(n, E.Param)})
    return out


def _env(lowered, buffers: dict, params: dict | None) -> dict:
    env = {}
    defaults = None
    for a in lowered.args:
        if a.kind == "scalar":
            v = (params or {}).get(a.name)
            if v is None:
                defaults = _defaults(lowered) if defaults is None else defaults
                v = defaults.get(a.name)
            if v is not None:
                env[a.name] = np.asarray(v, dtype=a.type.dtype)
            continue
        v = buffers.get(a.name)
        if v is None:
            continue
        sizes = list(reversed(v.shape)) if hasattr(v, "shape") else list(v)
        for d, e in enumerate(sizes):
            env[f"{a.name}.extent.{d}"] = np.int32(e)
    return env


def input_regions(lowered: L.LoweredPipeline, buffers: dict, params: dict | None = None) -> dict:
    """``{input: [(lo, hi), ...]}`` (innermost first) the program reads, for the
    arrays (or sizes, innermost first) in ``buffers`` (outputs and inputs by
    name) and the Param values ``params`` (their defaults where missing).
    ``hi < lo`` means nothing is read."""
    env = _env(lowered, buffers, params)
    out = {}
    for name, dims in lowered.input_regions:
        region = []
        for mn, ext in dims:
            lo = int(eval_scalar(mn, env))
            region.append((lo, lo + int(eval_scalar(ext, env)) - 1))
        out[name] = region
    return out


def check_inputs(lowered: L.LoweredPipeline, buffers: dict, params: dict | None = None) -> None:
    """``RealizeError`` unless every array in ``buffers`` (inputs and outputs by name)
    covers the region the program reads of it: ``RegionCheck`` without a pipeline."""
    outs = {a.name for a in lowered.args if a.kind != "scalar" and a.is_output}
    arrays = {n: np.asarray(a) for n, a in buffers.items()}
    out_sizes = {n: list(reversed(a.shape)) for n, a in arrays.items() if n in outs}
    images = {n: a for n, a in arrays.items() if n not in outs}
    env = _env(lowered, buffers, params)
    scalars = {a.name: env[a.name] for a in lowered.args if a.kind == "scalar" and a.name in env}
    RegionCheck.of(lowered)(out_sizes, images, arrays, scalars)


# -- the one check before a lowered program runs (CPU, CUDA, emulation, interpreter) ----
_OUTPUTS = "<outputs>"


class RegionCheck:
    """What a lowered program touches, checked before it runs, for every runtime.

    ``check(out_sizes, images, arrays, params)``: every input covers the region the
    *lowered program* reads of it (``round_up`` loops included), and every output the
    region the program reads or writes of it (its own updates, other Funcs reading
    it: the algorithm's regions from the interval analysis, joined with what the
    program reads).  An access no bound can be given raises ``BoundsError``, as the
    reference does; a region past an array raises ``RealizeError`` naming it.  The
    regions are memoized per argument shapes and Params (evaluating the region Exprs
    costs more than a small realize).  ``pipeline`` may be None (the interpreter of
    bare loop IR): then only the program's own regions are checked."""

    def __init__(self, pipeline, input_regions: tuple, output_read_regions: tuple = ()):
        self.pipeline = pipeline
        self.input_regions = tuple(input_regions)
        self.output_read_regions = tuple(output_read_regions)
        self._memo: dict = {}

    @classmethod
    def of(cls, lowered: L.LoweredPipeline, pipeline=None) -> "RegionCheck":
        return cls(pipeline, lowered.input_regions,
                   getattr(lowered, "output_read_regions", ()))

    def __call__(self, out_sizes: dict, images: dict, arrays: dict, params: dict,
                 mins: dict | None = None) -> None:
        """``mins``: buffer name -> where its first element sits (0s when absent)."""
        mins = mins or {}
        needed = self.regions(out_sizes, images, arrays, params, mins)
        for name, box in needed[_OUTPUTS].items():       # outputs first, as the reference
            m = mins.get(name, (0,) * len(box))
            for d, ((lo, hi), n, mn) in enumerate(zip(box, out_sizes[name], m)):
                if lo < mn or hi >= mn + n:
                    raise RealizeError(
                        f"realize(): output {name} would be accessed over [{lo}, {hi}] in "
                        f"dimension {d} but its size there is {n} (coordinates {mn} to "
                        f"{mn + n - 1}): the pipeline reads or updates {name} beyond the size "
                        f"asked for; realize a larger {name}")
        for name, rs in needed.items():
            if name in images:
                check_input(name, images[name], rs, mins.get(name))

    def regions(self, out_sizes: dict, images: dict, arrays: dict, params: dict,
                mins: dict | None = None) -> dict:
        """``{input: [(lo, hi) or None, ...], "<outputs>": {output: [(lo, hi), ...]}}``."""
        env = {k: np.asarray(v).item() if hasattr(v, "dtype") else v for k, v in params.items()}
        out_mins = {n: m for n, m in (mins or {}).items() if n in out_sizes}
        for name, arr in arrays.items():
            for d, (ext, st) in enumerate(zip(reversed(arr.shape), reversed(arr.strides))):
                env[f"{name}.extent.{d}"] = ext
                env[f"{name}.stride.{d}"] = st // arr.itemsize
        key = (tuple(sorted(env.items())), tuple(sorted(out_mins.items())))
        needed = self._memo.get(key)
        if needed is not None:
            return needed
        needed = {_OUTPUTS: ({} if self.pipeline is None else
                             _output_regions(self.pipeline, out_sizes, images, params,
                                             out_mins))}
        env = {k: (np.int32(v) if isinstance(v, int) and not isinstance(v, bool) else v)
               for k, v in env.items()}
        for name, dims in self.input_regions + self.output_read_regions:
            rs = []
            for lo_e, ext_e in dims:
                lo, ext = _eval_int(lo_e, env), _eval_int(ext_e, env)
                rs.append((lo, lo + ext - 1) if ext > 0 else None)
            if name in out_sizes:
                if all(r is not None for r in rs):       # read by the program itself
                    needed[_OUTPUTS][name] = [
                        (min(lo, a), max(hi, b)) for (lo, hi), (a, b)
                        in zip(rs, needed[_OUTPUTS].get(name, rs))]
            else:
                needed[name] = rs
        if not self.input_regions and images and self.pipeline is not None:
            _check_with_analysis(self.pipeline, out_sizes, images, params, mins or {})
        if len(self._memo) > 256:
            self._memo.clear()
        self._memo[key] = needed          # one assignment: safe for concurrent callers
        return needed


def _analysis_regions(pipeline, out_sizes, images, params, names, unbounded,
                      out_mins=None) -> dict:
    """``{name: [(lo, hi), ...]}`` for ``names`` from the interval analysis (the
    algorithm's regions); ``unbounded(name, d, lo, hi)`` makes the error for a region
    with no usable bound."""
    from ..analysis.intervals import required_regions
    firsts = list(out_sizes.values())
    sizes = firsts[0] if all(s == firsts[0] for s in firsts) else dict(out_sizes)
    input_sizes = {n: list(reversed(a.shape)) for n, a in images.items()}
    boxes = required_regions(pipeline, sizes, input_sizes=input_sizes, params=params,
                             mins=out_mins)
    finite = {n: [(iv.lo, iv.hi) for iv in box] for n, box in boxes.items()
              if all(is_num(iv.lo) and is_num(iv.hi) and np.isfinite(float(iv.lo))
                     and np.isfinite(float(iv.hi)) for iv in box)}
    check_region_sizes(finite)     # int32 coordinates: as the reference refuses
    out = {}
    for name in names:
        box = boxes.get(name)
        if box is None:
            continue
        rs = []
        for d, iv in enumerate(box):
            lo, hi = iv.lo, iv.hi
            if lo is None or hi is None or not np.isfinite(float(lo)) or \
                    not np.isfinite(float(hi)):
                raise unbounded(name, d, lo, hi)
            rs.append((int(np.floor(float(lo))), int(np.ceil(float(hi)))))
        out[name] = rs
    return out


def _output_regions(pipeline, out_sizes, images, params, out_mins=None) -> dict:
    """The region of each output the pipeline touches (its own updates, other Funcs
    reading it), from the interval analysis.  ``BoundsError`` when an access has no
    usable bound (a data-dependent index that nothing clamps): compiled code could
    write anywhere, so it does not run, and the reference raises the same error."""
    return _analysis_regions(pipeline, out_sizes, images, params, out_sizes, lambda n, d, lo, hi: (
        BoundsError(f"realize(): output {n} is accessed in dimension {d} over [{lo}, {hi}], "
                    "which has no usable bound; clamp the coordinates that read or write it")),
        out_mins)


def _eval_int(e, env) -> int:
    return int(e) if isinstance(e, (int, np.integer)) else int(eval_scalar(e, env))


def _check_with_analysis(pipeline, out_sizes, images, params, mins) -> None:
    """Input regions from the interval analysis, for a program that recorded none."""
    regions = _analysis_regions(pipeline, out_sizes, images, params, images, lambda n, d, lo, hi: (
        BoundsError(f"the region of input {n} read in dimension {d} is unbounded "
                    f"([{lo}, {hi}]); clamp the indices that read it")),
        {n: m for n, m in mins.items() if n in out_sizes})
    for name, needed in regions.items():
        check_input(name, images[name], needed, mins.get(name))
