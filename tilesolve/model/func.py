"""Funcs: a pure definition plus any number of update definitions.

    f = ts.Func("f")
    f[x, y] = inp[x, y] * 2          # pure definition: the args are distinct Vars
    f[x, 0] = f[x, 0] + 1            # update (a constant site)
    f[r.x, y] += g[r.x, y]           # update over an RDom (``+=`` reads then writes)
    hist[ts.clamp(inp[r.x], 0, 255)] += 1    # update with a computed site

Halide's rules for updates: each pure Var an update uses must appear on its
left side at the same position as in the pure definition; RVars may come from
one RDom per update; the value's type must be the Func's type.

A Tuple-valued Func (``f[x, y] = (a, b)``, read as ``f[x, y][0]``) holds one
component Func per value (``f_0``, ``f_1``, see ``model/tuples.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import PipelineError
from . import expr as E
from . import types as T
from .params import index_args
from .rdom import RDom
from .visit import walk

_names = [0]
# a zero-dimensional Func (``f[()] = v``) is held as one dimension of extent 1: its pure
# Var, and the one site its updates and calls name; realize takes ``[]`` as its sizes and
# gives it back as a 0-d array
SCALAR_VAR = E.Var("_scalar")
SCALAR_SITE = E.Const(T.int32, 0)


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition of a Func: ``args`` (left side), ``value``, its RDom."""

    args: tuple
    value: E.Expr
    rdom: RDom | None = None


class Func:
    """A function over an integer grid, defined by assignment."""

    def __init__(self, name: str | None = None):
        if name is None:
            _names[0] += 1
            name = f"f{_names[0]}"
        if not isinstance(name, str) or not name.replace(".", "_").isidentifier():
            raise PipelineError(f"Func name must be an identifier, got {name!r}")
        self.name = name
        self._pure: Definition | None = None
        self._updates: list[Definition] = []
        self.is_scalar = False       # zero-dimensional: f[()] = ...
        self.estimates: list | None = None     # set_estimates: sizes the solver assumes
        self.components: tuple | None = None   # a Tuple-valued Func: one Func per value
        self.packed: "Func | None" = None      # a Tuple whose values an update reads across

    # -- introspection ---------------------------------------------------------
    def defined(self) -> bool:
        return self._pure is not None or self.components is not None

    @property
    def type(self) -> T.Type:
        if self.components is not None:
            raise PipelineError(f"Func {self.name} is a Tuple of {len(self.components)} values; "
                                f"its types are {self.name}.types")
        self._need_defined()
        return self._pure.value.type

    @property
    def types(self) -> tuple:
        """The type of each value (one for a Func that is not a Tuple)."""
        return tuple(c.type for c in self.parts())

    def parts(self) -> tuple:
        """The Funcs that hold this Func's values: its components, or itself."""
        return self.components if self.components is not None else (self,)

    @property
    def args(self) -> tuple:
        """The pure Vars, innermost first."""
        if self.components is not None:
            return self.components[0].args
        self._need_defined()
        return self._pure.args

    def dimensions(self) -> int:
        return len(self.args)

    @property
    def pure(self) -> Definition:
        if self.components is not None:
            raise PipelineError(
                f"Func {self.name} is a Tuple: its definitions are those of its values' Funcs "
                f"{', '.join(c.name for c in self.components)}")
        self._need_defined()
        return self._pure

    @property
    def value(self) -> E.Expr:
        return self.pure.value

    @property
    def updates(self) -> tuple:
        return tuple(self._updates)

    def definitions(self) -> tuple:
        return (self.pure,) + tuple(self._updates)

    def set_estimates(self, sizes) -> "Func":
        """The sizes the solver assumes for this Func as an output when the estimates
        passed to it do not name it (innermost first; ``[]`` for a zero-dimensional
        Func)."""
        if not isinstance(sizes, (list, tuple)) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
            raise PipelineError(f"Func {self.name}: set_estimates takes a list of positive "
                                f"ints (innermost first), got {sizes!r}")
        self.estimates = list(sizes)
        for c in self.components or ():
            c.estimates = list(sizes)
        return self

    def _need_defined(self):
        if self._pure is None and self.components is None:
            raise PipelineError(f"Func {self.name} is called but never defined; give it a "
                                f"pure definition first ({self.name}[x, ...] = ...)")

    # -- calls -------------------------------------------------------------------
    def __getitem__(self, args) -> E.Call:
        if self.components is not None:
            return TupleRef(self, tuple(c[args] for c in self.components))
        if self._pure is None:
            return _Undefined(self, args if isinstance(args, tuple) else (args,))
        if self.is_scalar and args == ():
            args = (SCALAR_SITE,)
        return E.Call(self, index_args(f"Func {self.name}", args, len(self._pure.args)))

    def __call__(self, *args) -> E.Call:
        return self[args]

    # -- definitions -------------------------------------------------------------
    def __setitem__(self, args, value) -> None:
        if not isinstance(args, tuple):
            args = (args,)
        if isinstance(value, (tuple, list)) or self.components is not None:
            from .tuples import define_tuple
            define_tuple(self, args, value)
            return
        if isinstance(value, _Implicit):
            value = value.define(self, args)
        if args == () and (self._pure is None or self.is_scalar):
            # zero-dimensional: one point, held as dimension 0 of extent 1 (SCALAR_VAR)
            args = (SCALAR_VAR,) if self._pure is None else (SCALAR_SITE,)
            self.is_scalar = True
        if self._pure is None:
            self._define_pure(args, value)
        else:
            self._define_update(args, value)

    def _define_pure(self, args, value):
        name = self.name
        if not args:
            raise PipelineError(f"Func {name}: a definition needs at least one dimension")
        for i, a in enumerate(args):
            if not isinstance(a, E.Var):
                raise PipelineError(
                    f"Func {name}: argument {i} of the pure definition is {a!r}; the first "
                    "definition's arguments must be Vars (define it for all points first, then "
                    "add updates)")
        names = [a.name for a in args]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise PipelineError(f"Func {name}: Var {sorted(dup)[0]} appears twice in the pure definition")
        value = E.as_expr(value)
        for n in walk(value):
            if isinstance(n, E.Var) and n.name not in names:
                raise PipelineError(
                    f"Func {name}: the pure definition uses Var {n.name}, which is not one of its "
                    f"arguments ({', '.join(names)})")
            if isinstance(n, E.RVar):
                raise PipelineError(
                    f"Func {name}: the pure definition uses RDom variable {n.name}; use an update "
                    "definition or an inline reduction (ts.sum, ts.maximum, ...)")
            if isinstance(n, E.Call) and n.target is self:
                raise PipelineError(f"Func {name}: the pure definition calls {name} itself")
        self._pure = Definition(tuple(args), value, None)

    def _define_update(self, args, value):
        self._updates.append(self.check_update(args, value))

    def check_update(self, args, value) -> Definition:
        """The update ``self[args] = value`` checked with Halide's rules (left side, type,
        one RDom, pure Vars in place), as a Definition; it is not added."""
        name = self.name
        pure_args = self._pure.args
        if len(args) != len(pure_args):
            raise PipelineError(
                f"Func {name} has {len(pure_args)} dimensions but the update has {len(args)} arguments")
        args = index_args(f"Func {name}", args, len(pure_args))
        value = E.as_expr(value, self.type)
        if value.type != self.type:
            raise PipelineError(
                f"Func {name}: update value {value} has type {value.type} but {name} is "
                f"{self.type}; cast it (ts.cast({self.type}, ...))")
        rdoms: dict[int, RDom] = {}
        nodes = list(walk(value))
        for a in args:
            nodes.extend(walk(a))
        for n in nodes:
            if isinstance(n, E.RVar):
                rdoms.setdefault(id(n.rdom), n.rdom)
        if len(rdoms) > 1:
            raise PipelineError(f"Func {name}: an update may use one RDom, got "
                                f"{sorted(r.name for r in rdoms.values())}")
        rdom = next(iter(rdoms.values())) if rdoms else None
        if rdom is not None:                 # a where() may use the update's pure Vars
            for p in rdom.predicates:
                nodes.extend(walk(p))
        # Pure Vars must sit at their pure-definition position on the left side.
        for n in nodes:
            if isinstance(n, E.Var):
                if n not in pure_args:
                    raise PipelineError(
                        f"Func {name}: the update uses Var {n.name}, which is not in its pure "
                        f"definition ({', '.join(a.name for a in pure_args)})")
                i = pure_args.index(n)
                if args[i] is not n:
                    raise PipelineError(
                        f"Func {name}: the update uses pure Var {n.name}, so it must appear as "
                        f"argument {i} of the update's left side (got {args[i]})")
        return Definition(args, value, rdom)

    def __repr__(self) -> str:
        return f"Func({self.name!r})"

    def __str__(self) -> str:
        if self.components is not None:
            return "\n".join(str(c) for c in self.components)
        if self._pure is None:
            return f"{self.name} (undefined)"
        lines = [f"{self.name}[{', '.join(map(str, d.args))}] = {d.value}" for d in self.definitions()]
        return "\n".join(lines)


class TupleRef(tuple):
    """``f[x, y]`` of a Tuple-valued Func: the Calls of its values, in order.  Index it
    (``f[x, y][0]``), unpack it, or assign it whole to another Func; arithmetic on the
    whole Tuple is an error that says so."""

    def __new__(cls, func, calls):
        obj = super().__new__(cls, calls)
        obj.func = func
        return obj

    def _as_expr(self):
        raise PipelineError(f"Func {self.func.name} is a Tuple of {len(self)} values; pick one "
                            f"with {self.func.name}[...][i] (i < {len(self)})")

    def _refuse(self, *_):
        self._as_expr()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __rtruediv__ = __floordiv__ = __mod__ = __pow__ = __neg__ = __lt__ = __le__ = _refuse
    __gt__ = __ge__ = __and__ = __or__ = __xor__ = __invert__ = _refuse


class _Undefined:
    """``f[args]`` of a Func with no definition yet: only ``f[args] += e`` (and ``-= *=
    /=``) may use it, which first defines ``f`` everywhere as the operation's identity
    (0, or 1 for ``*`` and ``/``) in the type of ``e``, as in Halide."""

    def __init__(self, func: Func, args: tuple):
        self.func, self.args = func, args

    def _as_expr(self):
        self.func._need_defined()          # raises: called but never defined

    def __add__(self, e): return _Implicit(self, "add", e)
    def __sub__(self, e): return _Implicit(self, "sub", e)
    def __mul__(self, e): return _Implicit(self, "mul", e)
    def __truediv__(self, e): return _Implicit(self, "div", e)


class _Implicit:
    def __init__(self, ref: _Undefined, op: str, e):
        self.ref, self.op, self.e = ref, op, E.as_expr(e)

    def _as_expr(self):
        self.ref._as_expr()

    def define(self, func: Func, args: tuple):
        """Give ``func`` its implicit pure definition; the update's value."""
        if func is not self.ref.func or args != self.ref.args or func.defined():
            self.ref._as_expr()
        pure = tuple(a if isinstance(a, E.Var) else E.Var(f"_{i}") for i, a in enumerate(args))
        if len({v.name for v in pure}) != len(pure):
            raise PipelineError(f"Func {func.name}: an update of a Func with no pure "
                                "definition uses one Var at two positions")
        identity = 1 if self.op in ("mul", "div") else 0
        func[pure] = E.Const(self.e.type, identity)
        return E.binop(self.op, func[args], self.e)
