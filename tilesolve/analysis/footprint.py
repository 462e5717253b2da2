"""Facts about one tile of a group: regions, footprints, points computed.

For a group (an output Func plus producers computed per tile of it) and a
tile of the output, we infer — with the same interval analysis lowering uses —
the region of every member needed for that tile (overlapped tiling: members
are recomputed at tile borders) and the region of every Func or input read
from outside the group.  The tile analysed is an interior one, at the middle
of the output's region, so boundary clamping does not shrink it; regions of
stencils are translation invariant, so that tile stands for all of them.

Everything here is a pure function of (problem, group, tile) and memoized by
the caller (``solver.cost.CostModel``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.intervals import Interval
from .fastbounds import _pair, calls_boxes
from ..model import expr as E


@dataclass(frozen=True)
class TileFacts:
    """Concrete facts for one tile of a group."""

    member_regions: dict     # member name -> ((lo, hi), ...) computed per tile
    input_regions: dict      # outside name -> ((lo, hi), ...) read per tile
    member_points: dict      # member name -> points computed per tile (all stages)
    member_update_points: dict  # member name -> points of update domains per tile


def _size(box) -> int:
    p = 1
    for lo, hi in box:
        p *= max(0, hi - lo + 1)
    return p


def _union(a, b):
    if a is None:
        return b
    return tuple((min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b))


def _num(v, default):
    return default if v is None or not isinstance(v, (int, float)) else v


def rdom_scope(problem, d) -> dict:
    """Concrete intervals of a definition's RVars (from params and estimates)."""
    from ..model.evaluate import eval_scalar, extent_key
    env = {n: p.default for n, p in problem.pipeline.params.items() if p.default is not None}
    for img, sizes in problem.estimates.items():
        if img in problem.pipeline.images:
            for i, s in enumerate(sizes):
                env[extent_key(img, i)] = s
    scope = {}
    if d.rdom is None:
        return scope
    for i, (mn, ext) in enumerate(zip(d.rdom.mins, d.rdom.extents)):
        lo = int(eval_scalar(mn, env))
        n = int(eval_scalar(ext, env))
        scope[d.rdom[i].name] = Interval(lo, lo + n - 1)
    return scope


def _reads(problem, name, region, defs) -> tuple[dict, int]:
    """Boxes each callee is read over when computing ``name`` over ``region``;
    also the number of update-domain points.  Memoized on the problem: a
    member's reads depend only on its own region, so growing a group by one
    producer re-analyses only the new member."""
    cache = problem.__dict__.setdefault("_reads_cache", {})
    key = (name, region)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = _reads_uncached(problem, name, region, defs)
    return hit


def _reads_uncached(problem, name, region, defs) -> tuple[dict, int]:
    f = problem.func(name)
    base = problem.__dict__.get("_fast_base")
    if base is None:
        base = {k: _pair(iv) for k, iv in problem.base_scope.items()}
        problem.__dict__["_fast_base"] = base
    pure_scope = dict(base)
    pure_scope.update({v.name: (lo, hi) for v, (lo, hi) in zip(f.pure.args, region)})
    need: dict = {}
    upd_points = 0
    for k, d in enumerate(defs):
        scope = pure_scope
        if k > 0:
            rs = {n: (iv.lo, iv.hi) for n, iv in rdom_scope(problem, d).items()}
            scope = dict(pure_scope)
            scope.update(rs)
            pts = 1
            for lo, hi in rs.values():
                pts *= hi - lo + 1
            for a in d.args:
                if isinstance(a, E.Var):
                    lo, hi = pure_scope[a.name]
                    pts *= hi - lo + 1
            upd_points += pts
        boxes = calls_boxes((d.value,) + tuple(d.args), scope, problem.fast_value_bounds)
        for callee, box in boxes.items():
            if callee == name:
                continue
            b = tuple((int(max(lo, -2**31)), int(min(hi, 2**31 - 1))) for lo, hi in box)
            need[callee] = _union(need.get(callee), b)
    return need, upd_points


def tile_facts(problem, group, tile_box) -> TileFacts:
    """Regions of members and outside reads for the output tile ``tile_box``."""
    regions = {group.output: tuple(tile_box)}
    outside: dict = {}
    upd: dict = {}
    order = [n for n in reversed(problem.funcs) if n in group.members]
    for name in order:
        region = regions.get(name)
        if region is None:
            continue            # not read by this tile (can't happen for a legal group)
        # the pure stage also covers sites the updates write: clip to the full region
        need, up = _reads(problem, name, region, problem.definitions[name])
        upd[name] = up
        for callee, box in need.items():
            if callee in group.members:
                full = problem.regions[callee]
                box = tuple((max(lo, flo), min(hi, fhi)) for (lo, hi), (flo, fhi) in zip(box, full))
                regions[callee] = _union(regions.get(callee), box)
            else:
                full = problem.regions.get(callee)
                if full is not None:
                    box = tuple((max(lo, flo), min(hi, fhi)) for (lo, hi), (flo, fhi) in zip(box, full))
                outside[callee] = _union(outside.get(callee), box)
    points = {n: _size(r) for n, r in regions.items()}
    return TileFacts(regions, outside, points, upd)


def interior_tile(region, sizes) -> tuple:
    """An output tile of ``sizes`` (None = whole extent) in the middle of ``region``."""
    box = []
    for (lo, hi), t in zip(region, sizes):
        ext = hi - lo + 1
        if t is None or t >= ext:
            box.append((lo, hi))
        else:
            k = (ext // t) // 2
            start = lo + k * t
            box.append((start, start + t - 1))
    return tuple(box)


def box_size(box) -> int:
    return _size(box)
