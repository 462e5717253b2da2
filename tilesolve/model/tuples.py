"""Tuple-valued Funcs: ``f[x, y] = (a, b)``, read as ``f[x, y][0]`` and ``f[x, y][1]``.

A Tuple Func holds one component Func per value, named ``f_0``, ``f_1``, ... (made
unique by the Pipeline like any name); everything after the language (the reference,
bounds, the solvers, lowering, every backend, the Halide bridge, the schedule JSON)
sees only those Funcs.  ``Pipeline(f)`` has the components as its outputs, so
``realize`` returns one array per value; ``Schedule[f]`` applies each directive to
every component; estimates and sizes given under ``f``'s name apply to each.

Values of a pure definition are independent, so holding them apart is exact.  An
update's values are computed from the values before the update; held apart, value
``i`` of an update sees value ``j`` only after all of ``j``'s updates.  So an update
may read only its own value of the Func it updates (``f[r] = (f[r][0] + 1,
f[r][1] * 2)``); an update whose value ``i`` reads value ``j`` is refused with an
error.  The common case of that form, the index and value of an extremum, is
``ts.argmax`` / ``ts.argmin`` (``model/reductions.py``).  ``ts.undef(type)`` leaves a
value unchanged by an update, as in Halide.
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
    from .func import Func
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
    for i, v in enumerate(values):
        if isinstance(v, Undef):
            continue
        exprs = [E.as_expr(v)] + [E.as_expr(a) for a in args if not isinstance(a, E.Var)]
        for e in exprs:
            for n in walk(e):
                if isinstance(n, E.Call) and n.target in comps and n.target is not comps[i]:
                    j = comps.index(n.target)
                    raise PipelineError(
                        f"Func {name}: value {i} of this Tuple update reads value {j} "
                        f"({name}[...][{j}]); each value of a Tuple is computed as its own "
                        "Func, so an update may read only its own value (for the index of a "
                        "maximum or minimum use ts.argmax / ts.argmin)")
    for c, v in zip(comps, values):
        if not isinstance(v, Undef):
            c[args] = v
