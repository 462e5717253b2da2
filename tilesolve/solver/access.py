"""How a vectorized stage touches memory, per point: what the cost model's
``strided`` and scatter costs need (``cost_terms``).

``schedule_gen`` vectorizes a pure definition along its first pure Var and an
update along its ``vector_dim``; the CPU code generator then loads a read that
follows the vectorized Var in the callee's innermost dimension densely (a vector
load, a shuffle for short strides and halves) and a read uniform across the lanes
as a scalar.  Two kinds of access go lane by lane and are priced:

* **transposed**: the index follows the vectorized Var in another dimension than
  the callee's innermost (``out(x, y) = f(y, x)``): each lane in its own row;
* **scattered**: an update's write at a place computed from data that varies
  across the lanes (a histogram's ``h(bin(x)) += 1``).

Other gathered reads (long strides, divisions, lane-varying lookups) are not
priced: priced per point, they made the solvers fuse pyramids whose recompute the
model prices too low (``docs/cost_params.md``).
"""
from __future__ import annotations

from ..model import expr as E
from ..model.visit import walk


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


def stage_accesses(problem, name: str, d, vector_var: str | None):
    """(transposed, scatters) of one definition ``d`` of ``name`` vectorized along
    ``vector_var`` (None, or a region shorter than the lanes: scalar, nothing goes
    lane by lane): the ``(callee, dim, inner)`` of each distinct transposed read
    (``dim``: the callee's dimension the vectorized Var moves; ``inner``: the index of
    the pure Var that moves the callee's innermost one, or None), and the number of
    scattered writes (0 or 1)."""
    if vector_var is None:
        return (), 0
    pure = [v.name for v in problem.func(name).pure.args]
    region = problem.regions.get(name)
    if region is not None:
        lo, hi = region[pure.index(vector_var)]
        if hi - lo + 1 < problem.spec.vector_lanes(problem.bytes_per_point(name)):
            return (), 0       # too short to vectorize: scalar code
    transposed = {}
    for c in walk(d.value):
        if not isinstance(c, E.Call) or c.target.name == name:
            continue
        key = (c.target.name, tuple(map(str, c.args)))
        if key in transposed:
            continue
        dims = [k for k, a in enumerate(c.args) if follows(a, vector_var)]
        if dims and dims[0] > 0:
            inner = next((i for i, v in enumerate(pure) if c.args and follows(c.args[0], v)),
                         None)
            transposed[key] = (c.target.name, dims[0], inner)
    scatters = int(any(_data_varying(a, vector_var) for a in d.args))
    return tuple(transposed.values()), scatters
