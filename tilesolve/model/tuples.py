"""Tuple-valued Funcs: ``f[x, y] = (a, b)``, read as ``f[x, y][0]`` and ``f[x, y][1]``.

A Tuple Func holds one component Func per value, named ``f_0``, ``f_1``, ... (made
unique by the Pipeline like any name); everything after the language (the reference,
bounds, the solvers, lowering, every backend, the Halide bridge, the schedule JSON)
sees only plain Funcs.  ``Pipeline(f)`` has the components as its outputs, so
``realize`` returns one array per value; estimates and sizes given under ``f``'s name
apply to each.

An update is Halide's: at each point of its iteration every value is computed from
the values before the update, then all are stored; an update runs every value over its
one RDom.  Values of a pure definition are independent, and so are those of an update
whose value ``i`` reads only value ``i`` (``f[r] = (f[r][0] + 1, f[r][1] * 2)``):
such updates go to each component Func apart, which is exact.  The first update whose
values read each other (Halide's hand-written argmax, a swap ``f[x] = (f[x][1],
f[x][0])``, a complex recurrence) packs the Tuple into one hidden Func ``f_packed``
with a dimension for the values (``model/tuple_pack.py``); the components become pure
views of it, and it takes that update and every later one.

``ts.undef(type)`` leaves a value unchanged by an update, as in Halide.

``Schedule[f]`` applies each directive to every component Func.  For a packed Tuple,
the compute and store levels (``compute_root``, ``compute_at``, ``store_root``,
``store_at``) apply to ``f_packed`` too, so the updates run where the values are
computed; its loops (``update(i)``) are scheduled by its own name,
``s["f_packed"]``, and the solvers schedule it like any Func.
"""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from .visit import walk


class Undef:
    """``ts.undef(t)``: in an update of a Tuple Func, this value is left unchanged."""

    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t

    def _as_expr(self):
        raise PipelineError("ts.undef(...) may only stand for one value of a Tuple update "
                            "(f[x] = (ts.undef(ts.int32), e)); it is not an expression")

    def _refuse(self, *_):
        self._as_expr()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __rtruediv__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse

    def __repr__(self) -> str:
        return f"undef({self.type})"


def undef(t) -> Undef:
    """A value that an update of a Tuple Func leaves unchanged."""
    return Undef(t)


def define_tuple(func, args: tuple, value) -> None:
    """``func[args] = value`` where ``value`` is a Tuple or ``func`` already is one."""
    from .func import SCALAR_SITE, Definition, Func
    name = func.name
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not values:
        raise PipelineError(f"Func {name}: a Tuple needs at least one value")
    if func.components is None:
        if func.defined():
            raise PipelineError(f"Func {name} holds one value; an update cannot give it a "
                                f"Tuple of {len(values)}")
        if len(values) == 1:
            func[args] = values[0]
            return
        for i, v in enumerate(values):
            if isinstance(v, Undef):
                raise PipelineError(f"Func {name}: value {i} of the pure definition is undef; "
                                    "only updates may leave a value unchanged")
        comps = tuple(Func(f"{name}_{i}") for i in range(len(values)))
        for c, v in zip(comps, values):
            c[args] = v
        func.components = comps
        func.is_scalar = comps[0].is_scalar
        return
    comps = func.components
    if len(values) != len(comps):
        raise PipelineError(f"Func {name} is a Tuple of {len(comps)} values but this update "
                            f"gives {len(values)}")
    if args == () and comps[0].is_scalar:
        args = (SCALAR_SITE,)
    defs = {i: c.check_update(args, v) for i, (c, v) in enumerate(zip(comps, values))
            if not isinstance(v, Undef)}
    if not defs:
        return                               # every value undef: nothing changes
    rdoms = {id(d.rdom): d.rdom for d in defs.values() if d.rdom is not None}
    if len(rdoms) > 1:
        raise PipelineError(f"Func {name}: the values of a Tuple update may use one RDom, "
                            f"got {sorted(r.name for r in rdoms.values())}")
    rdom = next(iter(rdoms.values()), None)
    shared = [a for a in next(iter(defs.values())).args if not isinstance(a, E.Var)]
    shared += rdom.predicates if rdom is not None else ()
    cross = any(_reads_other(comps, i, [d.value, *shared]) for i, d in defs.items())
    if cross or func.packed is not None:
        from .tuple_pack import packed_update
        packed_update(func, {i: Definition(d.args, d.value, rdom) for i, d in defs.items()},
                      cross)
        return
    for i, d in defs.items():
        comps[i]._updates.append(Definition(d.args, d.value, rdom))


def _reads_other(comps, i: int, exprs) -> bool:
    """True when ``exprs`` read a value of the Tuple other than value ``i``."""
    others = {id(c) for j, c in enumerate(comps) if j != i}
    return any(isinstance(n, E.Call) and id(n.target) in others
               for e in exprs for n in walk(e))
