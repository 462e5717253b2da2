"""A scheduling problem: pipeline + hardware spec + estimates, preprocessed.

Preprocessing (Mullapudi 2016 §4.1 and §4.3), done once and shared by every
solver:

1. estimates are checked (missing ones raise ``SolverError`` listing exactly
   which are needed) and concrete bounds inferred for every Func and input;
2. inlining: trivial and pointwise-consumed Funcs are inlined when that adds
   no redundant work (see ``choose_inlined``);
3. per remaining Func: its definitions with inlined calls substituted, its
   arithmetic cost per point, and its consumers among the remaining Funcs.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..analysis.costs import expr_cost
from ..analysis.intervals import required_regions
from ..errors import BoundsError, PipelineError, SolverError
from ..model import expr as E
from ..model.func import Definition, Func
from ..model.pipeline import Pipeline
from ..model.inline import Inliner
from ..model.visit import walk
from .inline import choose_inlined


def _box_bounds(box) -> tuple:
    """A concrete Box as a tuple of (lo, hi) int pairs."""
    out = []
    for iv in box:
        lo, hi = iv.lo, iv.hi
        if lo is None or hi is None or not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
            raise SolverError(f"a region has no concrete bounds ({box}); give estimates")
        out.append((int(lo), int(hi)))
    return tuple(out)


class Problem:
    """Everything a solver needs to know about (pipeline, spec, estimates)."""

    def __init__(self, pipeline: Pipeline, spec, estimates: dict | None, *, inline: bool = True,
                 params: dict | None = None, inlined: frozenset | None = None,
                 fixed=None):
        """``params``: the Param values the analysis assumes (default: their defaults);
        ``inlined``: the inlining choices to keep (default: chosen here); ``fixed``: a
        Schedule of this pipeline whose scheduled Funcs keep their schedule (``keep``:
        never inlined, never fused with another Func; ``keep_inlined``: inlined)."""
        self.pipeline = pipeline
        self.spec = spec
        self.estimates = normalize_estimates(pipeline, estimates)
        self.param_values = (dict(params) if params is not None else
                             param_estimates(pipeline, estimates))
        out_sizes = {o: self.estimates[o] for o in pipeline.output_names}
        input_sizes = {n: self.estimates[n] for n in pipeline.images if n in self.estimates}
        try:
            try:
                regions = required_regions(pipeline, out_sizes, input_sizes=input_sizes,
                                           params=self.param_values)
            except BoundsError:
                guessed = inputs_like_outputs(pipeline, self.estimates)
                if not guessed:
                    raise
                self.estimates.update(guessed)       # an input's extent read: as the output
                input_sizes.update(guessed)
                regions = required_regions(pipeline, out_sizes, input_sizes=input_sizes,
                                           params=self.param_values)
        except BoundsError as e:
            missing = [n for n in pipeline.images if n not in self.estimates]
            hint = f" (estimates are missing for inputs: {', '.join(missing)})" if missing else ""
            unknown = [n for n in pipeline.params if n not in self.param_values]
            if unknown:
                hint += (f" (Params with no default and no estimate: {', '.join(unknown)}; give "
                         f"each one: estimates={{'{unknown[0]}': value}}, "
                         f"{unknown[0]}.set_estimate(value) or a default)")
            raise SolverError(f"cannot infer concrete bounds from the estimates{hint}: {e}") from e
        self.regions = {n: _box_bounds(b) for n, b in regions.items()}
        if inlined is None:
            inlined = (choose_inlined(pipeline, self.regions, spec.cost_params) if inline
                       else frozenset())
        self.fixed = fixed
        pinned = {d.func for d in fixed.directives} if fixed is not None else set()
        self.keep_inlined: frozenset = frozenset(
            n for n in pinned if fixed.func_schedule(n).is_inline())
        self.keep: frozenset = frozenset(pinned) - self.keep_inlined
        self.inlined: frozenset = (frozenset(inlined) - self.keep) | self.keep_inlined
        self.funcs: tuple = tuple(n for n in pipeline.order() if n not in self.inlined)
        self._outputs = frozenset(pipeline.output_names)
        self._bpp: dict = {}
        self._points: dict = {}
        self._moved: dict = {}
        self._memos: dict = {}   # memo(name): analyses' results

    def moved(self, k: int) -> "Problem":
        """The same problem where every run-time value has moved (memoized per ``k``):
        each estimate ``s * k + k - 1`` and each Param's value moved (floats scaled by
        1 + 0.85 (k - 1), integers plus k), with this problem's inlining choices.
        Comparing tile facts in two moved copies shows which regions depend on run-time
        values (what no constant-size GPU buffer can hold)."""
        if k not in self._moved:
            est = {n: [v * k + k - 1 for v in sizes] for n, sizes in self.estimates.items()}
            params = {n: v * (1 + 0.85 * (k - 1)) if isinstance(v, float) else v + k
                      for n, v in self.param_values.items()}
            self._moved[k] = Problem(self.pipeline, self.spec, est, params=params,
                                     inlined=self.inlined, fixed=self.fixed)
        return self._moved[k]

    # -- scopes for the interval analysis -----------------------------------------
    @cached_property
    def base_scope(self) -> dict:
        """Params (their defaults) and input extents (from the regions) as intervals."""
        from ..analysis.intervals import Interval
        from ..model.evaluate import extent_key
        scope = {n: Interval.point(v) for n, v in self.param_values.items()}
        for img in self.pipeline.images:
            box = self.regions.get(img)
            if box is None:
                continue
            sizes = self.estimates.get(img) or [hi + 1 for _, hi in box]
            for d, n in enumerate(sizes):
                scope[extent_key(img, d)] = Interval.point(int(n))
        return scope

    @cached_property
    def value_bounds(self) -> dict:
        """Value range of every Func (bounds data-dependent indices, e.g. LUTs)."""
        from ..analysis.intervals.regions import func_value_bounds
        params = self.param_values
        sizes = {img: self.estimates.get(img) or [hi + 1 for _, hi in self.regions[img]]
                 for img in self.pipeline.images if img in self.regions}
        return func_value_bounds(self.pipeline, params=params, input_sizes=sizes)

    @cached_property
    def fast_value_bounds(self) -> dict:
        return self.value_bounds

    # -- per-Func facts ------------------------------------------------------------
    def func(self, name: str) -> Func:
        return self.pipeline.funcs[name]

    @cached_property
    def definitions(self) -> dict:
        """Func name -> its definitions with calls to inlined Funcs substituted."""
        return {n: tuple(self._inline_def(d) for d in self.func(n).definitions()) for n in self.funcs}

    def _inline_def(self, d: Definition) -> Definition:
        args = tuple(self.inline_expr(a) for a in d.args)
        return Definition(args, self.inline_expr(d.value), d.rdom)

    @cached_property
    def _inliner(self) -> Inliner:
        return Inliner({n: self.func(n) for n in self.inlined})

    def inline_expr(self, e: E.Expr) -> E.Expr:
        return self._inliner.expr(e)

    @cached_property
    def point_costs(self) -> dict:
        """Func -> [(ops, loads) per point of each definition] after inlining."""
        out = {}
        for n, defs in self.definitions.items():
            costs = []
            for d in defs:
                ops, loads = expr_cost(d.value)
                for a in d.args:
                    if not isinstance(a, E.Var):
                        o, l_ = expr_cost(a)
                        ops, loads = ops + o, loads + l_
                costs.append((ops, loads))
            out[n] = costs
        return out

    @cached_property
    def stage_info(self) -> dict:
        """Func -> (pure ``(ops, loads)``, [UpdateInfo per update definition]):
        what the cost model's lane, register and reduction terms need."""
        from ..analysis.footprint import rdom_scope
        from .cost_terms import rdom_loop_ops
        from .register_block import accumulation_chain, block_info
        out = {}
        for n, defs in self.definitions.items():
            pure = [v.name for v in self.func(n).pure.args]
            ups = []
            for d, (ops, loads) in zip(defs[1:], self.point_costs[n][1:]):
                rs = rdom_scope(self, d)
                rpts = 1
                for iv in rs.values():
                    rpts *= iv.hi - iv.lo + 1
                dims = [pure.index(a.name) for a in d.args
                        if isinstance(a, E.Var) and a.name in pure]
                inner = rs[d.rdom[0].name] if d.rdom is not None else None
                selfs = {id(c): c for e in (d.value,) + tuple(d.args) for c in walk(e)
                         if isinstance(c, E.Call) and c.target.name == n}
                in_place = all(tuple(c.args) == tuple(d.args) for c in selfs.values())
                chain = accumulation_chain(self.func(n), d)
                n_inner = inner.hi - inner.lo + 1 if inner is not None else 1
                loop_ops = rdom_loop_ops(self.spec.cost_params, n_inner, rpts)
                ups.append(UpdateInfo(ops, loads, rpts, tuple(dims), dims[0] if dims else None,
                                      dims[-1] if len(dims) > 1 else None,
                                      n_inner,
                                      block_info(self.spec.cost_params, self.func(n), d, pure,
                                                 chain, loop_ops, {
                                          v: hi - lo + 1 for v, (lo, hi) in
                                          zip(pure, self.regions.get(n, ()))}),
                                      len(selfs), in_place, d.rdom is not None, chain))
            out[n] = (self.point_costs[n][0], tuple(ups))
        return out

    @cached_property
    def accesses(self) -> dict:
        """Func -> per definition (the pure one first), ``(transposed, scatters)`` as
        vectorized by ``schedule_gen`` (``access.stage_accesses``)."""
        from .access import stage_accesses
        out = {}
        for n, defs in self.definitions.items():
            pure = [v.name for v in self.func(n).pure.args]
            ups = self.stage_info[n][1]
            per_def = []
            for i, d in enumerate(defs):
                vd = 0 if i == 0 else ups[i - 1].vector_dim
                var = pure[vd] if vd is not None and pure else None
                per_def.append(stage_accesses(self, n, d, var))
            out[n] = tuple(per_def)
        return out

    @cached_property
    def callees(self) -> dict:
        """Func -> names of non-inlined Funcs and inputs its definitions read."""
        out = {}
        for n, defs in self.definitions.items():
            names = set()
            for d in defs:
                for e in (d.value,) + tuple(d.args):
                    for c in walk(e):
                        if isinstance(c, E.Call) and c.target.name != n:
                            names.add(c.target.name)
            out[n] = frozenset(names)
        return out

    @cached_property
    def consumers(self) -> dict:
        """Func -> non-inlined Funcs that read it (outputs have an implicit
        consumer outside the pipeline: see ``is_output``)."""
        out = {n: set() for n in self.funcs}
        for n, cs in self.callees.items():
            for c in cs:
                if c in out:
                    out[c].add(n)
        return {n: frozenset(v) for n, v in out.items()}

    @cached_property
    def update_readers(self) -> dict:
        """Func -> the Funcs whose update definitions read it (after inlining; in the
        value, the args, or the RDom's bounds and predicates)."""
        out: dict = {}
        for n, defs in self.definitions.items():
            for d in defs[1:]:
                read = set()
                for e in (d.value,) + tuple(d.args):
                    read |= {c.target.name for c in walk(e)
                             if isinstance(c, E.Call) and c.target.name != n}
                if d.rdom is not None:
                    for e in d.rdom.mins + d.rdom.extents + d.rdom.predicates:
                        read |= {c.target.name for c in walk(self.inline_expr(e))
                                 if isinstance(c, E.Call)}
                for c in read:
                    out.setdefault(c, set()).add(n)
        return {c: frozenset(v) for c, v in out.items()}

    def can_join_group(self, name: str, output: str) -> bool:
        """May ``name`` be computed per tile of the group whose output is ``output``?

        Not an output itself.  A Func that the output's pure stage reaches (directly or
        through other Funcs) is computed at the pure stage's tile loop, so no update of
        ``output`` may read it directly: a group output's updates run at root, after its
        tiles (``schedule_gen``).  A Func that only the output's update reaches, where
        that update can be tiled as the pure stage is (``tiled_update``), is computed at
        the update's tile loop instead (max_filter's column scan, per strip of the
        max-over-dx update); then every Func it reads must be reached only through that
        update too, so that nothing computed at the pure stage's tiles reads it.
        Members compute all their stages per tile, so a Func their updates read may
        join with them."""
        if self.is_output(name):
            return False
        k = self.member_stage(name, output)
        if k == 0:
            return output not in self.update_readers.get(name, ())
        if self.is_scan(name):
            return False
        stages = self.output_stages(output)
        return all(stages.get(p, frozenset({k})) == frozenset({k})
                   for p in self.producers_closure(name))

    def is_scan(self, name: str) -> bool:
        """Whether an update of ``name`` writes at arguments other than its pure Vars
        (``f(x, r) = f(x, r - 1) + ...``): the region it writes is the RDom's, whatever
        the tile, so computing it per tile repeats the whole scan."""
        f = self.func(name)
        return not all(_at_pure_vars(f, u) for u in f.updates)

    def member_stage(self, name: str, output: str) -> int:
        """The stage of ``output`` whose tile loop computes member ``name``: the tileable
        update (``tiled_update``) when only that update reaches ``name``, else 0 (the
        pure stage)."""
        st = self.output_stages(output).get(name)
        k = self.tiled_update(output)
        return k if k is not None and st == frozenset({k}) else 0

    def tiled_update(self, output: str) -> int | None:
        """The stage index of ``output``'s update that ``schedule_gen`` may tile like its
        pure stage (CPU only): the output has exactly one update, whose arguments are
        its pure Vars in order (``out(x, y) = max(out(x, y), g(x + r, y))``)."""
        if self.spec.is_gpu:
            return None
        f = self.func(output)
        return 1 if len(f.updates) == 1 and _at_pure_vars(f, f.updates[0]) else None

    def memo(self, name: str) -> dict:
        """The dict in which the analyses of this problem named ``name`` keep their
        results (a Problem does not change once built).  What is kept there must not
        depend on the spec's ``cost_params``: ``robust.py``'s copies that change them
        share these dicts."""
        return self._memos.setdefault(name, {})

    def output_stages(self, output: str) -> dict:
        """Func -> the stages of ``output`` that read it, directly or through other
        (non-output) Funcs (memoized per output)."""
        memo = self.memo("output_stages")
        hit = memo.get(output)
        if hit is not None:
            return hit
        direct: dict = {}
        f = self.func(output)
        for k, d in enumerate(self.definitions[output]):
            exprs = [d.value, *d.args]
            if k > 0 and f.definitions()[k].rdom is not None:
                r = f.definitions()[k].rdom
                exprs += [self.inline_expr(e) for e in r.mins + r.extents + r.predicates]
            for e in exprs:
                for c in walk(e):
                    if isinstance(c, E.Call) and c.target.name != output:
                        direct.setdefault(c.target.name, set()).add(k)
        out: dict = {}
        for n in reversed(self.funcs):
            if n == output:
                continue
            st = set(direct.get(n, ()))
            for c in self.consumers.get(n, ()):
                if c != output and not self.is_output(c):
                    st |= out.get(c, frozenset())
            if st:
                out[n] = frozenset(st)
        memo[output] = out
        return out

    def producers_closure(self, name: str) -> frozenset:
        """The non-inlined Funcs ``name`` reads, directly or through others."""
        seen, stack = set(), [name]
        while stack:
            for c in self.callees.get(stack.pop(), ()):
                if c in self.callees and c not in seen:
                    seen.add(c)
                    stack.append(c)
        return frozenset(seen)

    def is_output(self, name: str) -> bool:
        return name in self._outputs

    def bytes_per_point(self, name: str) -> int:
        hit = self._bpp.get(name)
        if hit is None:
            if name in self.pipeline.images:
                hit = self.pipeline.images[name].type.bytes
            else:
                hit = self.func(name).type.bytes
            self._bpp[name] = hit
        return hit

    def region_points(self, name: str) -> int:
        hit = self._points.get(name)
        if hit is None:
            hit = 1
            for lo, hi in self.regions[name]:
                hit *= max(0, hi - lo + 1)
            self._points[name] = hit
        return hit

    def has_updates(self, name: str) -> bool:
        return bool(self.func(name).updates)


def _at_pure_vars(f: Func, u: Definition) -> bool:
    """Whether update ``u`` of ``f`` writes at ``f``'s pure Vars, in order."""
    pure = f.pure.args
    return len(u.args) == len(pure) and all(
        isinstance(a, E.Var) and a.name == v.name for a, v in zip(u.args, pure))


@dataclass(frozen=True)
class UpdateInfo:
    """One update definition of a Func, as the cost model sees it."""

    ops: int                # arithmetic per update point
    loads: int              # loads per update point (the accumulator's own included)
    rdom_points: int        # points of its RDom
    pure_dims: tuple        # the Func's pure dimensions the update's args are Vars of
    vector_dim: int | None  # the dimension schedule_gen vectorizes (first pure Var arg)
    parallel_dim: int | None  # the one it runs in parallel at root (last, if >= 2)
    inner_extent: int       # extent of the innermost RDom loop (1 without an RDom)
    block: object = None    # register_block.BlockInfo when the update can be register-blocked
    self_loads: int = 0     # distinct reads of the Func itself (the accumulator)
    in_place: bool = False  # it reads itself only at the point it writes
    has_rdom: bool = False
    chain: tuple = (0.0, 0.0)  # register_block.accumulation_chain: (latency, issue) a step


def param_estimates(pipeline: Pipeline, estimates) -> dict:
    """Param name -> the value the analysis assumes: ``estimates[name]``, else the Param's
    estimate (``set_estimate``), else its default; Params with none are left out."""
    out = {n: p.estimate for n, p in pipeline.params.items() if p.estimate is not None}
    for k, v in (estimates or {}).items():
        if k in pipeline.params:
            out[k] = v
    return out


# Sizes assumed for an output given no estimate: a 2048 x 2048 image (the first two
# dimensions) of 3 channels (every further dimension).  Over the 15 apps, greedy's
# schedules solved so cost 1.003x (geomean; at most 1.04x, local_laplacian) the model's
# cost of those solved for the paper sizes, at the paper sizes (1536 x 1536 x 4: 1.012x,
# unsharp 1.14x; benchmarks/results/README.md; `benchmarks/ab.py --set estimates=none`
# times them)
DEFAULT_EXTENT = 2048
DEFAULT_INNER_EXTENT = 3


def default_sizes(dims: int) -> list:
    return [DEFAULT_EXTENT if d < 2 else DEFAULT_INNER_EXTENT for d in range(dims)]


def inputs_like_outputs(pipeline: Pipeline, estimates: dict) -> dict:
    """Sizes for the inputs with no estimate, for a pipeline that reads their extents
    (a boundary condition): the first output's sizes in the dimensions they share, the
    default beyond (an input as large as the output is what a boundary condition is
    for)."""
    out = estimates[pipeline.output_names[0]]
    return {n: [out[d] if d < len(out) else default_sizes(img.dims)[d] for d in range(img.dims)]
            for n, img in pipeline.images.items() if n not in estimates}


def normalize_estimates(pipeline: Pipeline, estimates) -> dict:
    """Check estimates; an output with none gets ``default_sizes`` (input sizes are
    inferred when possible, else taken from the outputs: ``inputs_like_outputs``).
    Estimates of Params (one number each) are checked and left out of the result (see
    ``param_estimates``)."""
    estimates = pipeline.expand_names(dict(estimates or {}))
    for k, v in list(estimates.items()):
        if k in pipeline.params:
            p = pipeline.params[k]
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise SolverError(f"estimate for Param {k!r} must be one number, got {v!r}")
            try:
                E.param_value(p.type, k, v)             # the checks of a Param's default
            except PipelineError as e:
                raise SolverError(f"estimate for Param {k!r}: {e}") from None
            del estimates[k]
            continue
        if k not in pipeline.funcs and k not in pipeline.images:
            raise SolverError(f"estimate for unknown name {k!r}; outputs: "
                              f"{list(pipeline.output_names)}, inputs: {list(pipeline.images)}, "
                              f"params: {list(pipeline.params)}")
        if not isinstance(v, (list, tuple, np.ndarray)) or not all(
                isinstance(s, numbers.Integral) and not isinstance(s, bool)
                or isinstance(s, float) and s.is_integer() for s in v):
            raise SolverError(f"estimate for {k!r} must be a list of int sizes (innermost "
                              f"first), got {v!r}")
        sizes = [int(s) for s in v]
        if not sizes and k in pipeline.funcs and pipeline.funcs[k].is_scalar:
            sizes = [1]                  # a zero-dimensional Func: its one point
        if any(s <= 0 for s in sizes):
            raise SolverError(f"estimate for {k!r} has a non-positive size: {sizes}")
        dims = (pipeline.images[k].dims if k in pipeline.images else pipeline.funcs[k].dimensions())
        if len(sizes) != dims:
            raise SolverError(f"estimate for {k!r} has {len(sizes)} sizes but it has {dims} dimensions")
        estimates[k] = sizes
    for o in pipeline.output_names:
        if o not in estimates:
            f = pipeline.funcs[o]
            estimates[o] = ([1] if f.is_scalar else list(f.estimates) if f.estimates
                            else default_sizes(f.dimensions()))
    return estimates
