"""Update definitions in the reference evaluator, with Halide's semantics.

An update ``f[args] = value`` (optionally over an RDom ``r``) runs the loop
nest: the pure Vars that appear on its left side (outermost = the last one),
then the RDom lexicographically with ``r.x`` fastest, innermost.  At each
point where every ``r.where`` predicate holds, the site and the value are
evaluated (reading the current state of ``f``) and the value is stored.

The result is always that of this serial nest; three strategies reach it:

(a) **Reductions into f** -- ``value`` is ``f[args] op e`` (op one of + - *
    min max; ``e op f[args]`` too for + *, and min max on integers) where
    nothing but that one call reads ``f``: all sites and values are computed vectorized
    (in chunks, in loop order) and applied with ``np.add.at`` & co., which
    apply each element in order, so results are exact and integers wrap.
(b) **Independent slices** -- a loop dimension is *independent* when its
    variable sits bare at some position ``i`` of the left side and every read
    of ``f`` has that same variable at position ``i``: points that differ in
    it touch disjoint slices of ``f``, so they commute.  The independent
    dimensions are vectorized and the others looped over in order.
(c) **Scalar loop** -- (b) with no independent dimension: every point of the
    nest in order.

(a) is used when it applies and (b) would loop over many points.
Every store is checked to lie in the Func's computed region.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .model import expr as E
from .model.evaluate import eval_scalar, evaluate
from .model.visit import find

__all__ = ["run_update", "plan_update"]

_AT_UFUNC = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum,
             "sub": np.subtract}
_CHUNK = 1 << 22          # elements evaluated at once in strategy (a)


class _Dim:
    """One loop of the update's nest: a pure Var or an RVar over ``[lo, hi]``."""

    __slots__ = ("var", "lo", "hi")

    def __init__(self, var, lo: int, hi: int):
        self.var, self.lo, self.hi = var, lo, hi

    @property
    def size(self) -> int:
        return max(0, self.hi - self.lo + 1)


def _reads_of(f, exprs) -> list:
    return [c for e in exprs for c in find(e, E.Call) if c.target is f]


def _loop_dims(f, d, buf, env) -> list[_Dim]:
    """The update's loop nest, outermost first."""
    dims = []
    pure = f.args
    region = buf.region()
    for i in reversed(range(len(pure))):
        if d.args[i] is pure[i]:
            dims.append(_Dim(pure[i], *region[i]))
    if d.rdom is not None:
        r = d.rdom
        for j in reversed(range(r.dimensions)):
            lo = int(eval_scalar(r.mins[j], env))
            ext = int(eval_scalar(r.extents[j], env))
            dims.append(_Dim(r[j], lo, lo + ext - 1))
    return dims


def _independent(dim: _Dim, d, reads) -> bool:
    """True when points differing only in ``dim`` touch disjoint slices of the Func."""
    for i, a in enumerate(d.args):
        if a is dim.var and all(c.args[i] is dim.var for c in reads):
            return True
    return False


def _reduction(f, d):
    """``(op, e)`` when the update is ``f[args] op e`` with ``e`` not reading f, else None."""
    v = d.value
    if not isinstance(v, E.BinOp) or v.op not in _AT_UFUNC:
        return None
    others = [d.args, d.rdom.predicates if d.rdom is not None else ()]
    if _reads_of(f, [a for grp in others for a in grp]):
        return None
    sides = [(v.a, v.b)]
    # ``e op f[...]`` is the same number for + and *, and for integer min/max
    # (float min/max may differ in the sign of a zero or a NaN's payload).
    if v.op in ("add", "mul") or (v.op in ("min", "max") and not v.type.is_float()):
        sides.append((v.b, v.a))
    for mine, e in sides:
        if (isinstance(mine, E.Call) and mine.target is f
                and all(a is b for a, b in zip(mine.args, d.args)) and not _reads_of(f, [e])):
            return v.op, e
    return None


def plan_update(f, d, buf, env):
    """``(strategy, dims, vector_dims, reduction)``; strategy is 'at', 'slices' or 'scalar'."""
    dims = _loop_dims(f, d, buf, env)
    preds = d.rdom.predicates if d.rdom is not None else ()
    reads = _reads_of(f, [d.value, *d.args, *preds])
    vec = [x for x in dims if _independent(x, d, reads)]
    red = _reduction(f, d)
    total = math.prod(x.size for x in dims)
    looped = math.prod(x.size for x in dims if x not in vec)
    if red is not None and looped > 16 and looped * 4096 > total:
        return "at", dims, vec, red
    return ("slices" if vec else "scalar"), dims, vec, red


def run_update(f, k: int, d, buf, env: dict, call) -> None:
    """Apply update number ``k`` (Definition ``d``) of Func ``f`` to ``buf`` in place."""
    strategy, dims, vec, red = plan_update(f, d, buf, env)
    if any(x.size == 0 for x in dims):
        return
    what = f"update {k} of {f.name}"
    if strategy == "at":
        _run_at(f, d, buf, env, call, dims, red, what)
    else:
        _run_slices(f, d, buf, env, call, dims, vec, what)


def _grids(dims, env, ranges) -> dict:
    """``env`` plus each dim's Var bound to an arange along its own axis."""
    local = dict(env)
    n = len(dims)
    for ax, (x, (lo, hi)) in enumerate(zip(dims, ranges)):
        s = [1] * n
        s[ax] = hi - lo + 1
        local[x.var.name] = np.arange(lo, hi + 1, dtype=np.int32).reshape(s)
    return local


def _mask(d, local, call, memo, shape):
    if d.rdom is None or not d.rdom.predicates:
        return None
    m = np.ones(shape, dtype=bool)
    for p in d.rdom.predicates:
        m &= np.broadcast_to(np.asarray(evaluate(p, local, call, memo), dtype=bool), shape)
    return m


def _select(arrays, mask, shape):
    """Broadcast each to ``shape`` and keep the points where ``mask`` holds (1-D, loop order)."""
    out = []
    for a in arrays:
        a = np.broadcast_to(np.asarray(a), shape)
        out.append(a.reshape(-1) if mask is None else a[mask])
    return out


def _store_sites(buf, d, local, call, memo, shape, mask, what):
    sites = [evaluate(a, local, call, memo) for a in d.args]
    sites = _select(sites, mask, shape)
    buf.check_indices(sites, f"{what} writes")
    return buf.offsets(sites)


def _run_at(f, d, buf, env, call, dims, red, what):
    """Strategy (a): vectorized sites and values, applied in loop order with ufunc.at."""
    op, e = red
    ufunc = _AT_UFUNC[op]
    dtype = buf.array.dtype
    for ranges in _chunks([(x.lo, x.hi) for x in dims], _CHUNK):
        shape = tuple(hi - lo + 1 for lo, hi in ranges)
        local = _grids(dims, env, ranges)
        memo: dict = {}
        mask = _mask(d, local, call, memo, shape)
        if mask is not None and not mask.any():
            continue
        vals = evaluate(e, local, call, memo)
        where = _store_sites(buf, d, local, call, memo, shape, mask, what)
        (vals,) = _select([vals], mask, shape)
        ufunc.at(buf.array, where, vals.astype(dtype, copy=False))


def _run_slices(f, d, buf, env, call, dims, vec, what):
    """Strategies (b) and (c): vectorize ``vec`` dims, loop over the others in order."""
    loops = [x for x in dims if x not in vec]
    local = _grids(vec, env, [(x.lo, x.hi) for x in vec])
    shape = tuple(x.size for x in vec)
    dtype = buf.array.dtype
    for point in itertools.product(*(range(x.lo, x.hi + 1) for x in loops)):
        for x, v in zip(loops, point):
            local[x.var.name] = np.int32(v)
        memo: dict = {}
        mask = _mask(d, local, call, memo, shape)
        if mask is not None and not mask.any():
            continue
        # Read everything (sites and value) before storing anything.
        where = _store_sites(buf, d, local, call, memo, shape, mask, what)
        (vals,) = _select([evaluate(d.value, local, call, memo)], mask, shape)
        buf.array[where] = vals.astype(dtype, copy=False)


def _chunks(ranges, limit):
    """Split a box (outermost range first) into sub-boxes of <= ``limit`` points, in order."""
    if not ranges:
        yield []
        return
    (lo, hi), rest = ranges[0], ranges[1:]
    inner = math.prod(h - l_ + 1 for l_, h in rest)
    if inner <= limit:
        step = max(1, limit // max(inner, 1))
        for s in range(lo, hi + 1, step):
            yield [(s, min(hi, s + step - 1))] + list(rest)
    else:
        for s in range(lo, hi + 1):
            for sub in _chunks(rest, limit):
                yield [(s, s)] + sub
