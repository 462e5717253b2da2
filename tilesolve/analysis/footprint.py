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

from dataclasses import dataclass, field

from ..analysis.intervals import Interval
from ..analysis.intervals.spans import CallSpans
from ..model import expr as E


@dataclass(frozen=True)
class TileFacts:
    """Concrete facts for one tile of a group."""

    member_regions: dict     # member name -> ((lo, hi), ...) computed per tile
    input_regions: dict      # outside name -> ((lo, hi), ...) read per tile
    member_points: dict      # member name -> points computed per tile (all stages)
    member_update_points: dict  # member name -> points of update domains per tile


def estimate_env(problem) -> dict:
    """Values of the Params and input extents the problem assumes, for evaluating
    expressions of them."""
    from ..model.evaluate import extent_key
    env = dict(problem.param_values)
    for img, sizes in problem.estimates.items():
        if img in problem.pipeline.images:
            for i, s in enumerate(sizes):
                env[extent_key(img, i)] = s
    return env


def rdom_scope(problem, d) -> dict:
    """Concrete intervals of a definition's RVars (from params and estimates)."""
    from ..model.evaluate import eval_scalar
    env = estimate_env(problem)
    scope = {}
    if d.rdom is None:
        return scope
    for i, (mn, ext) in enumerate(zip(d.rdom.mins, d.rdom.extents)):
        lo = int(eval_scalar(mn, env))
        n = int(eval_scalar(ext, env))
        scope[d.rdom[i].name] = Interval(lo, lo + n - 1)
    return scope


_SPANS: dict = {}          # analysed call boxes, shared by problems (see _spans)
_SPANS_LIMIT = 4096


def _spans(problem, name: str, i: int, own: bool = False) -> CallSpans:
    """The boxes of the calls in definition ``i`` of ``name`` (``own``: its value and the
    sites it writes), symbolic in ``name``'s pure Vars.  Analysed once per definition
    and numeric scope: problems that share a definition's Exprs (other inlining
    choices, other solvers of the same pipeline) share its analysis."""
    d = problem.definitions[name][i]
    rdom = rdom_scope(problem, d) if i > 0 else {}
    varying = tuple(v.name for v in problem.func(name).pure.args)
    key = (id(d.value), tuple(id(a) for a in d.args), own, varying, _scope_key(problem),
           tuple((n, iv.lo, iv.hi) for n, iv in rdom.items()))
    hit = _SPANS.get(key)
    if hit is not None and hit[0] is d.value and all(a is b for a, b in zip(hit[1], d.args)):
        return hit[2]
    exprs = (d.value, _write_site(problem, name, d)) if own else (d.value,) + tuple(d.args)
    scope = dict(problem.base_scope)
    scope.update(rdom)
    spans = CallSpans(exprs, scope, varying, problem.fast_value_bounds)
    if len(_SPANS) >= _SPANS_LIMIT:
        _SPANS.clear()
    _SPANS[key] = (d.value, d.args, spans)
    return spans


def _scope_key(problem) -> tuple:
    """What a problem's analyses of call boxes depend on besides the definition: its
    Params and input extents, and the value bounds of its Funcs."""
    hit = problem.__dict__.get("_spans_scope_key")
    if hit is None:
        def ends(scope):
            return tuple(sorted((n, num(iv.lo), num(iv.hi)) for n, iv in scope.items()))

        def num(v):
            return v if isinstance(v, (int, float)) else None
        hit = problem.__dict__["_spans_scope_key"] = (ends(problem.base_scope),
                                                      ends(problem.fast_value_bounds))
    return hit


def _write_site(problem, name: str, d):
    """A call of ``name`` at the arguments of its definition ``d``: the sites it writes."""
    return E.Call(problem.func(name), tuple(d.args))


def tile_facts(problem, group, tile_box) -> TileFacts:
    """Regions of members and outside reads for the output tile ``tile_box``: the
    facts of ``MenuFacts`` for that one tile, as ints (its analyses of members are
    shared by the groups of one output, memoized on the problem)."""
    menus = problem.memo("tile_menus")
    key = (group.output, tuple(tile_box))
    mf = menus.get(key) or menus.setdefault(key, MenuFacts(problem, group.output, tiles=[tile_box]))
    f = mf.group(frozenset(group.members))

    def box(b):
        return tuple((int(lo[0]), int(-hi[0])) for lo, hi in zip(b[0], b[1]))
    return TileFacts({n: box(b) for n, b in f.member_regions.items()},
                     {n: box(b) for n, b in f.input_regions.items()},
                     {n: int(p[0]) for n, p in f.member_points.items()},
                     {n: int(_np().ravel(u)[0]) for n, u in f.member_update_points.items()})


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


# ---------------------------------------------------------------------------
# Every tiling of a menu at once (numpy): what the solvers use
# ---------------------------------------------------------------------------
# A box over K tilings is one float64 array of shape (2, dims, K): row 0 the
# lower bounds, row 1 the *negated* upper bounds, so the union of boxes is one
# np.minimum and clipping to a region one np.maximum.
_I32 = (-2.0 ** 31, 2.0 ** 31 - 1)


def _np():
    import numpy as np
    return np


def box_points(box):
    """Points of a (2, dims, K) box, per tiling (float64 array of K)."""
    np = _np()
    return np.prod(np.maximum(0.0, 1.0 - box[1] - box[0]), axis=0)


def box_extents(box):
    """Extent of each dimension of a (2, dims, K) box: an array (dims, K)."""
    return 1.0 - box[1] - box[0]


def _bound_box(region):
    """A concrete region as a (2, dims, 1) clip bound."""
    np = _np()
    return np.array([[[float(lo)] for lo, _ in region], [[-float(hi)] for _, hi in region]])


class MenuFacts:
    """``tile_facts`` for every tiling of a menu at once, for groups with output
    ``output``: boxes are (2, dims, K) arrays (see above), one column per tiling.

    Facts are shared between groups: the region of a member depends only on
    which of its consumers are in the group (for a legal group: all of them),
    and a member's reads only on its region, so groups that differ by one
    member re-analyse only that member.  ``group(members)`` gives, per tiling,
    the regions, points and outside reads that ``tile_facts`` gives for one.
    """

    def __init__(self, problem, output: str, sizes_list=(), tiles=None):
        """``tiles``: the output tiles themselves, instead of their ``sizes_list``."""
        np = _np()
        self.problem = problem
        self.output = output
        region = problem.regions[output]
        tiles = tiles or [interior_tile(region, s) for s in sizes_list]
        self.k = len(tiles)
        self.tile = np.array([[[float(t[d][0]) for t in tiles] for d in range(len(region))],
                              [[-float(t[d][1]) for t in tiles] for d in range(len(region))]])
        self._regions: dict = {}
        self._reads: dict = {}
        self._points: dict = {}
        self._outside: dict = {}
        self._bounds: dict = {}

    def clip_bound(self, name):
        b = self._bounds.get(name)
        if b is None:
            full = self.problem.regions.get(name)
            b = self._bounds[name] = None if full is None else _bound_box(full)
        return b

    def key(self, name, members):
        """What the facts of member ``name`` depend on: its consumers in the group."""
        if name == self.output:
            return (name, None)
        return (name, self.problem.consumers[name] & members)

    def region(self, name, members):
        """Box of ``name`` computed per tile when the group is ``members``
        (None when no member reads it)."""
        np = _np()
        key = self.key(name, members)
        if key in self._regions:
            return self._regions[key]
        if key[1] is None:
            box = self.tile
        else:
            box = None
            for c in sorted(key[1]):
                need = self.reads(c, members)[0].get(name)
                if need is not None:
                    box = need if box is None else np.minimum(box, need)
            if box is not None:
                box = np.maximum(box, self.clip_bound(name))
                if self.problem.has_updates(name):
                    own = _own_sites_vec(self.problem, name, box, self.k)
                    if own is not None:
                        box = np.minimum(box, own)
        self._regions[key] = box
        return box

    def points(self, name, members):
        key = self.key(name, members)
        hit = self._points.get(key)
        if hit is None:
            box = self.region(name, members)
            hit = self._points[key] = box_points(box) if box is not None else None
        return hit

    def reads(self, name, members):
        """(callee -> box read, update-domain points) for computing ``name``
        over its region."""
        key = self.key(name, members)
        hit = self._reads.get(key)
        if hit is None:
            region = self.region(name, members)
            hit = self._reads[key] = _reads_vec(self.problem, name, region, self.k)
        return hit

    def outside(self, callee, reader_keys: tuple, members):
        """(box, points) of ``callee`` read by the members with keys ``reader_keys``,
        clipped to its region."""
        np = _np()
        key = (callee, reader_keys)
        hit = self._outside.get(key)
        if hit is None:
            box = None
            for name, _ in reader_keys:
                b = self.reads(name, members)[0][callee]
                box = b if box is None else np.minimum(box, b)
            bound = self.clip_bound(callee)
            if bound is not None:
                box = np.maximum(box, bound)
            hit = self._outside[key] = (box, box_points(box))
        return hit

    def group(self, members: frozenset) -> "GroupFactsVec":
        regions, points, upd, readers, keys = {}, {}, {}, {}, {}
        for m in sorted(members):
            box = self.region(m, members)
            if box is None:
                continue
            regions[m] = box
            points[m] = self.points(m, members)
            need, up = self.reads(m, members)
            upd[m] = up
            key = keys[m] = self.key(m, members)
            for callee in need:
                if callee not in members:
                    readers.setdefault(callee, []).append(key)
        outside, outside_points = {}, {}
        for callee, reader_keys in readers.items():
            outside[callee], outside_points[callee] = self.outside(callee, tuple(reader_keys),
                                                                   members)
        return GroupFactsVec(regions, outside, points, upd, outside_points, keys)


@dataclass(frozen=True)
class GroupFactsVec:
    """``TileFacts`` of one group for every tiling of a menu (arrays per tiling), and
    the members' keys in their ``MenuFacts``: within one menu, a member's box and points
    are the same arrays in every group where its key is the same (its consumers in the
    group, ``MenuFacts.key``), so what is computed from them may be kept under it."""

    member_regions: dict     # member -> (2, dims, K) box computed per tile
    input_regions: dict      # outside name -> (2, dims, K) box read per tile
    member_points: dict      # member -> points computed per tile (array of K)
    member_update_points: dict  # member -> update-domain points per tile (array or 0)
    input_points: dict       # outside name -> points read per tile (array of K)
    member_keys: dict = field(default_factory=dict)  # member -> MenuFacts.key


def _vec_scope(problem, name, region) -> dict:
    """``name``'s pure Vars over a (2, dims, K) box of regions, as ``CallSpans`` takes them."""
    return {v.name: (region[0][d], -region[1][d])
            for d, v in enumerate(problem.func(name).pure.args)}


def _vec_box(box):
    """``CallSpans.boxes``' per-dimension arrays as a (2, dims, K) box, clipped to int32."""
    np = _np()
    return np.array([[np.clip(lo, *_I32) for lo, _ in box], [-np.clip(hi, *_I32) for _, hi in box]])


def _reads_vec(problem, name, region, k: int):
    np = _np()
    values = _vec_scope(problem, name, region)
    need: dict = {}
    upd = 0.0
    for i, d in enumerate(problem.definitions[name]):
        if i > 0:
            pts = 1.0
            for iv in rdom_scope(problem, d).values():
                pts *= iv.hi - iv.lo + 1
            for a in d.args:
                if isinstance(a, E.Var):
                    lo, hi = values[a.name]
                    pts = pts * (hi - lo + 1)
            upd = upd + pts
        for callee, box in _spans(problem, name, i).boxes(values, k).items():
            if callee == name:
                continue
            b = _vec_box(box)
            old = need.get(callee)
            need[callee] = b if old is None else np.minimum(old, b)
    return need, upd


def _own_sites_vec(problem, name, region, k: int):
    """Box of the sites the updates of ``name`` read of itself or write, when its pure
    stage covers ``region``, for every tiling at once: a (2, dims, K) box, or None
    without updates.  Lowering computes the pure stage over ``region`` grown by it (a
    scan's update writes rows no consumer reads)."""
    np = _np()
    values = _vec_scope(problem, name, region)
    out = None
    for i in range(1, len(problem.definitions[name])):
        box = _spans(problem, name, i, own=True).boxes(values, k).get(name)
        if box is None:
            continue
        b = _vec_box(box)
        out = b if out is None else np.minimum(out, b)
    return out
