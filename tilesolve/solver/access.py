"""How a vectorized stage touches memory, per point: what the cost model's
``strided`` and gather costs need (``cost_terms``).

``schedule_gen`` vectorizes a pure definition along its first pure Var and an
update along its ``vector_dim``; the CPU code generator then loads a read whose
index is ``x + c`` in the callee's innermost dimension as one dense vector, a
read at ``k x + c`` (``|k|`` up to 4: downsampling) or ``(x + c) / 2``
(upsampling) as a dense load and a shuffle, and a read uniform across the lanes
as a scalar.  Every other access goes lane by lane:

* **transposed**: the index follows the vectorized Var in another dimension than
  the callee's innermost (``out(x, y) = f(y, x)``): each lane in its own row;
* **gathered**: any other lane-varying index, a long stride (``f(8 x + r)``), a
  division (``f(x / 8)``), or one computed from data that varies with the lanes
  (``f(lut(x))``, not ``f(x, lut(r))``); and an update's write at such a place
  (a histogram's), with the read of its accumulator there.

Strides are found by evaluating an index at consecutive values of the vectorized
Var, with the other Vars at the middle of their region.
"""
from __future__ import annotations

import numpy as np

from ..model import expr as E
from ..analysis.footprint import estimate_env
from ..model.evaluate import evaluate
from ..model.visit import walk

PROBE_LANES = 16
DENSE_STRIDE_MAX = 4    # the code generator loads strides up to 4 densely, then shuffles


def _has_call(e) -> bool:
    return any(isinstance(n, E.Call) for n in walk(e))


def _mentions(e, var: str) -> bool:
    return any(isinstance(n, E.Var) and n.name == var for n in walk(e))


def _data_varying(index, var: str) -> bool:
    """An index computed from data that changes across the lanes of ``var``."""
    return _has_call(index) and _mentions(index, var)


def follows(index: E.Expr, var: str) -> bool:
    """Whether an index expression (with no Call in it) moves with Var ``var``."""
    return not _has_call(index) and _mentions(index, var)


def probe_env(problem, name: str, scope: dict) -> dict:
    """Values for a probe of ``name``'s indices: its pure Vars at the middle of its
    region (even, so that halves line up), RVars at their minimum (``scope``), the
    Params and input extents the problem assumes."""
    env = estimate_env(problem)
    pure = [v.name for v in problem.func(name).pure.args]
    for v, (lo, hi) in zip(pure, problem.regions.get(name, ())):
        env[v] = (lo + (hi - lo) // 2) & ~(PROBE_LANES - 1) if hi - lo >= PROBE_LANES else lo
    for r, iv in scope.items():
        env[r] = iv.lo
    return env


def lane_pattern(index: E.Expr, var: str, env: dict) -> str:
    """``'uniform'``, ``'dense'`` (a constant stride of 1 to ``DENSE_STRIDE_MAX``, or
    reversed), ``'halves'`` (``(x + c) / 2``) or
    ``'gather'``: how an index with no Call in it varies over the lanes of ``var``."""
    if not follows(index, var):
        return "uniform"
    base = int(env[var])
    lanes = np.arange(base, base + PROBE_LANES, dtype=np.int64)
    try:
        got = np.asarray(evaluate(index, {**env, var: lanes}), dtype=np.int64)
    except Exception:          # an index the probe cannot evaluate: assume the worst
        return "gather"
    d = np.diff(np.broadcast_to(got, lanes.shape))
    if (d == d[0]).all() and 1 <= abs(int(d[0])) <= DENSE_STRIDE_MAX:
        return "dense"
    if (d == 0).all():
        return "uniform"
    if set(d.tolist()) <= {0, 1} and abs(int(d.sum()) - PROBE_LANES // 2) <= 1:
        return "halves"
    return "gather"


def stage_accesses(problem, name: str, d, vector_var: str | None, scope: dict):
    """(transposed, gathers, scatters) of one definition ``d`` of ``name`` vectorized
    along ``vector_var`` (None, or a region shorter than the lanes: scalar, nothing
    goes lane by lane): the ``(callee, dim, inner)`` of each distinct transposed read
    (``dim``: the callee's dimension the vectorized Var moves; ``inner``: the index of
    the pure Var that moves the callee's innermost one, or None), the
    number of other gathered reads per point, and of scattered writes (0 or 1)."""
    if vector_var is None:
        return (), 0, 0
    pure = [v.name for v in problem.func(name).pure.args]
    region = problem.regions.get(name)
    if region is not None:
        lo, hi = region[pure.index(vector_var)]
        if hi - lo + 1 < problem.spec.vector_lanes(problem.bytes_per_point(name)):
            return (), 0, 0    # too short to vectorize: scalar code
    env = probe_env(problem, name, scope)
    transposed, gathers, seen = {}, 0, set()
    for c in walk(d.value):
        if not isinstance(c, E.Call):
            continue
        key = (c.target.name, tuple(map(str, c.args)))
        if key in seen:
            continue
        seen.add(key)
        dims = [k for k, a in enumerate(c.args) if follows(a, vector_var)]
        if c.target.name != name and dims and dims[0] > 0:
            inner = next((i for i, v in enumerate(pure) if c.args and follows(c.args[0], v)),
                         None)
            transposed[key] = (c.target.name, dims[0], inner)
        elif any(_data_varying(a, vector_var) for a in c.args) or (
                c.args and lane_pattern(c.args[0], vector_var, env) == "gather"):
            gathers += 1
    scatters = int(any(_data_varying(a, vector_var) for a in d.args))
    return tuple(transposed.values()), gathers, scatters
