"""The regions of the inputs a lowered program reads.

``input_region_exprs`` (at lowering time, before flattening) walks the whole
program and keeps, for every input, the box of what it reads as Exprs of
argument names (``out.extent.d``, ``in.extent.d``) and Params.  Conditions
on those names alone (the shift-inward ``if extent >= factor``) stay as
``select``s, so each version of a nest counts only what it reads.  For
``shift_inward``/``guard_with_if`` schedules this is the same region as
``analysis.intervals.required_regions``; ``round_up`` reads more.

``input_regions(lowered, buffers_or_sizes, params)`` evaluates them for
concrete sizes; ``check_inputs`` raises ``RealizeError`` for an array that
does not cover its region.
"""
from __future__ import annotations

import numpy as np

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
    """``RealizeError`` unless every input array covers the region the program reads."""
    regions = input_regions(lowered, buffers, params)
    for name, region in regions.items():
        arr = buffers[name]
        shape = arr.shape
        for d, (lo, hi) in enumerate(region):
            if hi < lo:
                break
            ext = shape[len(shape) - 1 - d]
            if lo < 0 or hi > ext - 1:
                raise RealizeError(
                    f"input {name!r} is too small: dimension {d} (numpy axis "
                    f"{len(shape) - 1 - d}) is read over [{lo}, {hi}] but the array has extent "
                    f"{ext} there (shape {shape})")
