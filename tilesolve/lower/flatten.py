"""Storage flattening: multi-dimensional Calls and Provides become flat Loads
and Stores.

* a Func ``P`` with an ``Allocate``: dense, indexed relative to the buffer's
  mins: ``sum_d (a_d - P.buf.min.d) * stride_d`` with ``stride_0 = 1`` and
  ``stride_d = stride_{d-1} * P.buf.extent.{d-1}``;
* a buffer argument ``b`` (input or output, origin 0):
  ``a_0 + sum_{d >= 1} a_d * b.stride.d``.  As in Halide, the innermost
  stride of every buffer argument is 1 (the runtime passes arrays that are
  contiguous in their last numpy axis), so vector loads stay dense; lowered with
  ``buffer_mins``, each ``a_d`` is taken relative to ``Var("b.min.d")`` first;
* ``BufferExtent(img, d)`` becomes ``Var("img.extent.d")``.
"""
from __future__ import annotations

from ..model import expr as E
from ..model import types as T
from ..model.func import Func
from ..model.visit import mutate
from . import ir as L
from .realize import buffer_names


def _arg_index(name: str, args, shifted: bool = False) -> E.Expr:
    if shifted:                   # relative to the buffer's run-time mins
        args = tuple(a - E.Var(f"{name}.min.{d}") for d, a in enumerate(args))
    idx = args[0]
    for d in range(1, len(args)):
        idx = idx + args[d] * E.Var(f"{name}.stride.{d}")
    return idx


def _alloc_index(name: str, args) -> E.Expr:
    idx, stride = None, None
    for d, a in enumerate(args):
        mn, ext = buffer_names(name, d)
        term = a - E.Var(mn)
        term = term if stride is None else term * stride
        idx = term if idx is None else idx + term
        stride = E.Var(ext) if stride is None else stride * E.Var(ext)
    return idx


class Flattener:
    def __init__(self, buffer_args: set, shifted: bool = False):
        """``buffer_args``: names of the inputs and outputs (origin-0 arguments, or at
        their ``<name>.min.<d>`` with ``shifted``)."""
        self.args = buffer_args
        self.shifted = shifted
        self.memo: dict = {}
        self._alive: list = []    # the memo is keyed by id: keep the keys alive

    def index(self, name: str, args) -> E.Expr:
        args = tuple(E.cast(T.int32, a) for a in args)
        return (_arg_index(name, args, self.shifted) if name in self.args
                else _alloc_index(name, args))

    def _fn(self, n):
        if isinstance(n, E.Call):
            args = tuple(self.expr(a) for a in n.args)
            t = n.target
            if not isinstance(t, Func) and t.name not in self.args:  # pragma: no cover
                raise AssertionError(f"input {t.name} is not an argument")
            return L.Load(t.name, self.index(t.name, args), n.type)
        if isinstance(n, E.BufferExtent):
            return E.Var(f"{n.image}.extent.{n.dim}")
        return None

    def expr(self, e: E.Expr) -> E.Expr:
        self._alive.append(e)
        return mutate(e, self._fn, self.memo)

    def stmt(self, s: L.Stmt) -> L.Stmt:
        def fs(x):
            if isinstance(x, L.Provide):
                args = tuple(self.expr(a) for a in x.args)
                return L.Store(x.func, self.index(x.func, args), self.expr(x.value))
            return None
        return L.map_stmt(s, fs, self.expr)


def flatten_storage(body: L.Stmt, buffer_args: set, shifted: bool = False) -> L.Stmt:
    """Replace Calls, Provides and BufferExtents (see the module docstring)."""
    return Flattener(buffer_args, shifted).stmt(body)
