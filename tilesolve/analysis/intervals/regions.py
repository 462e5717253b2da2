"""Required regions: which points of every Func and input a pipeline reads.

* ``boxes_required(expr, scope)``: for each Func/input called in ``expr`` (not
  through the callees' own definitions), the Box of arguments it is called
  with while the variables range over ``scope`` (numeric or symbolic).
* ``required_regions(pipeline, sizes)``: the concrete region of every Func and
  input needed to compute the outputs over ``[0, size-1]``.
* ``func_value_bounds(pipeline)``: the value range of every Func (for lookups:
  ``lut[inp[x]]`` used as an index).

A Func's region is the union of what its consumers read (every definition,
pure and update; a consumer's pure Vars range over the consumer's own region,
RVars over the RDom), what its own updates write (computed sites like
``hist[clamp(inp[r.x], 0, 255)]``) and what its updates read of itself
(``f[r] = f[r - 1] + ...``).  Update definitions are applied with their pure
Vars ranging over the Func's whole region.
"""
from __future__ import annotations

from ...errors import BoundsError, RealizeError
from ...model import expr as E
from ...model.evaluate import extent_key
from ...model.func import Func
from ...model.pipeline import definition_exprs
from ...model.visit import children, walk
from .bounds import INDEX_LIMIT, Bounder, as_interval, type_interval
from .interval import Box, Interval, is_num

__all__ = ["boxes_required", "required_regions", "func_value_bounds", "INDEX_LIMIT", "MAX_POINTS",
           "check_region_sizes", "rdom_bounds"]

MAX_POINTS = 2 ** 31 - 1     # per Func: coordinates and flat indices are int32


def check_region_sizes(regions: dict) -> None:
    """``RealizeError`` for a Func whose region has more than ``MAX_POINTS`` points."""
    for name, region in regions.items():
        points = 1
        for d, (lo, hi) in enumerate(region):
            points *= max(0, hi - lo + 1)
            if points > MAX_POINTS:
                raise RealizeError(
                    f"realize(): {name} would be computed over {region}, which is too large: "
                    f"more than 2**31 - 1 = {MAX_POINTS} points by dimension {d} (the sizes "
                    "asked for are too large)")


def boxes_required(expr, scope: dict | None = None, *, func_bounds=None,
                   symbolic: bool = False) -> dict[str, Box]:
    """Boxes of the arguments of every call in ``expr`` (keyed by callee name)."""
    b = Bounder(scope, func_bounds=func_bounds, symbolic=symbolic)
    out: dict[str, Box] = {}
    _collect(E.as_expr(expr), b, out, {})
    return out


def _collect(e, bounder: Bounder, out: dict, seen: dict, calls=None):
    """Add the boxes of every call in ``e`` to ``out`` (``calls`` also gets the nodes)."""
    stack = [(e, bounder)]
    while stack:
        n, bd = stack.pop()
        key = (id(n), id(bd))
        if key in seen:
            continue
        seen[key] = n
        if isinstance(n, E.Let):
            stack.append((n.value, bd))
            stack.append((n.body, bd.child(n.name, bd.bounds(n.value))))
            continue
        if isinstance(n, E.Call):
            box = Box(bd.bounds(a) for a in n.args)
            name = n.target.name
            out[name] = out[name].union(box) if name in out else box
            if calls is not None:
                calls.append((n, box))
        for c in children(n):
            stack.append((c, bd))


# -- value bounds of Funcs -----------------------------------------------------------------
class _ValueBounds:
    """Lazily computed value bounds of Funcs (a mapping name -> Interval)."""

    def __init__(self, pipeline, scope):
        self.pipeline = pipeline
        self.scope = scope
        self.done: dict[str, Interval] = {}
        self.busy: set[str] = set()

    def get(self, name, default=None):
        if name in self.done:
            return self.done[name]
        if name not in self.pipeline.funcs or self.busy:
            return default
        # producers first, in topological order: no deep recursion on long chains
        self.busy.add(name)
        try:
            for n in self.pipeline.order():
                if n not in self.done:
                    self.done[n] = self._compute(self.pipeline.funcs[n])
                if n == name:
                    break
        finally:
            self.busy.discard(name)
        return self.done[name]

    def _compute(self, f: Func) -> Interval:
        t = f.type
        full = type_interval(t)
        cur = Bounder(self.scope, func_bounds=self).bounds(f.pure.value)
        if not f.updates:
            return cur
        for _ in range(3):
            prev = cur
            for d in f.updates:
                scope = dict(self.scope)
                if d.rdom is not None:
                    try:
                        scope.update(_rdom_scope(d.rdom, self.scope, f.name))
                    except BoundsError:
                        pass
                own = _Own(self, f.name, cur)
                cur = cur.union(Bounder(scope, func_bounds=own).bounds(d.value))
            if cur == prev:
                return cur
        # still growing (an accumulation): widen to the type's range
        return full


class _Own:
    def __init__(self, vb, name, cur):
        self.vb, self.name, self.cur = vb, name, cur

    def get(self, name, default=None):
        return self.cur if name == self.name else self.vb.get(name, default)


def func_value_bounds(pipeline, *, params: dict | None = None,
                      input_sizes: dict | None = None) -> dict[str, Interval]:
    """The value range of every Func (pure Vars unbounded; params fixed if given)."""
    vb = _ValueBounds(pipeline, _base_scope(pipeline, params, input_sizes))
    return {name: vb.get(name) for name in pipeline.order()}


# -- required regions ----------------------------------------------------------------------
def _base_scope(pipeline, params, input_sizes) -> dict:
    scope: dict = {}
    for name, p in pipeline.params.items():
        if params and name in params:
            scope[name] = as_interval(params[name])
        elif p.default is not None:
            scope[name] = Interval.point(p.default)
    for name, sizes in (input_sizes or {}).items():
        for d, s in enumerate(sizes):
            scope[extent_key(name, d)] = Interval.point(int(s))
    return scope


def _rdom_scope(rdom, scope, fname) -> dict:
    """RVar name -> Interval; BoundsError if the RDom's bounds are not known numbers."""
    b = Bounder(scope)
    out = {}
    for i, (mn, ext) in enumerate(zip(rdom.mins, rdom.extents)):
        lo, n = b.bounds(mn), b.bounds(ext)
        if not (lo.is_single_point() and n.is_single_point() and is_num(lo.lo) and is_num(n.lo)):
            missing = sorted({_describe(x) for e in (mn, ext) for x in walk(e)
                              if isinstance(x, (E.Param, E.BufferExtent))
                              and not Bounder(scope).bounds(x).is_single_point()})
            raise BoundsError(
                f"Func {fname}: the bounds of RDom {rdom.name} (dimension {i}: min {mn}, "
                f"extent {ext}) are not known; they need {', '.join(missing) or 'values'} "
                "(a Param's default or estimate, an input's size)")
        out[rdom[i].name] = Interval(lo.lo, lo.lo + n.lo - 1)
    return out


def rdom_bounds(pipeline, rdom, fname, params=None, input_sizes=None) -> dict:
    """RVar name -> Interval of ``rdom`` (an RDom of Func ``fname``) with ``params`` and
    ``input_sizes`` fixed; ``BoundsError`` if they leave its bounds unknown."""
    return _rdom_scope(rdom, _base_scope(pipeline, params, input_sizes), fname)


def _describe(x) -> str:
    if isinstance(x, E.Param):
        return f"Param {x.name}"
    return f"the extent of input {x.image} in dimension {x.dim}"


def _check_box(consumer: str, call: E.Call, box: Box, scope: dict, verb: str = "reads"):
    for d, (arg, iv) in enumerate(zip(call.args, box)):
        for x in walk(arg):
            if isinstance(x, E.BufferExtent) and extent_key(x.image, x.dim) not in scope:
                raise BoundsError(
                    f"Func {consumer} {verb} {call.name} in dimension {d} at {arg}, which depends "
                    f"on the extent of input {x.image} in dimension {x.dim}; that extent is not "
                    f"known: pass input_sizes={{'{x.image}': [...]}}")
        if iv.lo is None or iv.hi is None or iv.lo <= -INDEX_LIMIT - 1 or iv.hi >= INDEX_LIMIT:
            data = any(isinstance(x, E.Call) for x in walk(arg))
            if is_num(iv.lo) and is_num(iv.hi) and not data:
                # bounded by the sizes (no data-dependent part), but past int32
                end = iv.hi if iv.hi >= INDEX_LIMIT else iv.lo
                raise BoundsError(
                    f"Func {consumer} {verb} {call.name} in dimension {d} at the index {arg}, "
                    f"which reaches {end} (it spans {iv}): the sizes (or Param values) are too "
                    f"large; coordinates are int32 and indices must lie in "
                    f"[{-INDEX_LIMIT}, {INDEX_LIMIT - 1}]")
            raise BoundsError(
                f"Func {consumer} {verb} {call.name} in dimension {d} at the index {arg}, which "
                f"has no usable bound (it spans {iv}); bound it, e.g. with "
                f"ts.clamp({arg}, 0, n - 1)")


def required_regions(pipeline, sizes, *, input_sizes: dict | None = None,
                     params: dict | None = None, mins: dict | None = None) -> dict[str, Box]:
    """The numeric region of every Func and input needed to compute the outputs.

    ``sizes``: one list for every output (innermost first), or a dict output
    name -> sizes.  ``input_sizes``: input name -> sizes (needed when an index
    uses an input's extent, e.g. boundary conditions).  ``params``: Param name
    -> value (else the Param's default).  ``mins``: output name -> the min of its
    region in each dimension (default 0).
    """
    scope0 = _base_scope(pipeline, params, input_sizes)
    values = _ValueBounds(pipeline, scope0)
    need: dict[str, Box] = {}
    for o in pipeline.outputs:
        s = sizes.get(o.name) if isinstance(sizes, dict) else sizes
        if s is None:
            raise BoundsError(f"required_regions: no sizes given for output {o.name}")
        if len(s) != o.dimensions():
            raise BoundsError(f"required_regions: output {o.name} has {o.dimensions()} "
                              f"dimensions but {len(s)} sizes were given")
        m = (mins or {}).get(o.name)
        need[o.name] = (Box.from_sizes(s) if m is None else
                        Box(Interval(lo, lo + int(n) - 1) for lo, n in zip(m, s)))
    for name in reversed(pipeline.order()):
        f = pipeline.funcs[name]
        if name not in need:
            continue
        region = _close_updates(f, need[name], scope0, values)
        need[name] = region
        for d, scope in _definition_scopes(f, region, scope0):
            _reads(f.name, d, scope, values, need, skip=f.name)
    return need


def _definition_scopes(f, region: Box, scope0):
    """Each definition of ``f`` with the scope its variables range over."""
    for d in f.definitions():
        scope = dict(scope0)
        for i, a in enumerate(d.args):
            if isinstance(a, E.Var):
                scope[a.name] = region[i]
        if d.rdom is not None:
            rs = _rdom_scope(d.rdom, scope0, f.name)
            if any(iv.is_empty() for iv in rs.values()):
                continue            # an empty RDom: the update never runs
            scope.update(rs)
        yield d, scope


def _reads(fname, d, scope, values, need, skip=None):
    """Union into ``need`` the boxes every call of definition ``d`` reads."""
    bounder = Bounder(scope, func_bounds=values)
    calls: list = []
    out: dict = {}
    seen: dict = {}
    for e in definition_exprs(d):
        _collect(e, bounder, out, seen, calls)
    for call, box in calls:
        if call.target.name != skip:
            _check_box(fname, call, box, scope)
    for name, box in out.items():
        if name == skip:
            continue
        need[name] = need[name].union(box) if name in need else box
    return out


def _close_updates(f, region: Box, scope0, values) -> Box:
    """Grow ``region`` by the sites ``f``'s updates write and read of ``f`` itself."""
    if not f.updates:
        return region
    for _ in range(8):
        grown = region
        for d, scope in _definition_scopes(f, region, scope0):
            if d is f.pure:
                continue
            bounder = Bounder(scope, func_bounds=values)
            site = E.Call(f, d.args)
            box = Box(bounder.bounds(a) for a in d.args)
            _check_box(f.name, site, box, scope, verb="(in an update) writes")
            grown = grown.union(box)
            own = _reads(f.name, d, scope, values, {}, skip=None).get(f.name)
            if own is not None:
                grown = grown.union(own)
        if grown == region:
            return region
        region = grown
    raise BoundsError(
        f"Func {f.name}: an update reads or writes {f.name} at sites that move with its pure "
        f"Vars (e.g. {f.name}[x + 1, ...]), so its region grows without end")


def check_input(name: str, arr, needed, mins=None) -> None:
    """``needed[d]``: (lo, hi) read in dimension d (innermost first), or None (then
    nothing at all is read); ``mins``: where the array's first element sits (0s)."""
    shape = tuple(reversed(arr.shape))
    if any(r is None for r in needed):
        return                           # an empty region: nothing is read
    mins = mins or (0,) * len(shape)
    for d, ((lo, hi), m) in enumerate(zip(needed, mins)):
        if lo < m or hi >= m + shape[d]:
            where = (f"coordinates {m} to {m + shape[d] - 1}" if m else f"extent {shape[d]}")
            raise RealizeError(
                f"realize(): input {name!r} is too small: dimension {d} (numpy axis "
                f"{arr.ndim - 1 - d}) must cover [{lo}, {hi}] but the array has {where} "
                f"there (shape {arr.shape})")
