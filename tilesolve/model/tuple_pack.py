"""Packed Tuple Funcs: the exact form of Tuple updates whose values read each other.

Halide computes every value of a Tuple update from the values before that update, at
each point of its iteration, then stores them all.  Held as one Func per value, value
``i`` would see value ``j`` only after all of ``j``'s updates, so the first such update
(``f[()] = (select(img[r] > f[()][1], r, f[()][0]), max(img[r], f[()][1]))``, a swap
``f[x] = (f[x][1], f[x][0])``, a complex recurrence) turns the Tuple into one hidden
Func ``f_packed`` holding the values' bits:

* ``f_packed[x..., c]`` has one more, outermost, dimension ``c`` over ``[0, 2n)`` for
  ``n`` values, of the unsigned type as wide as the widest value: ``c = i`` holds the
  bits of value ``i`` (``reinterpret``, zero-extended; a bool as 0 or 1), ``c = n + i``
  is scratch.  Its pure definition packs the values as they stand (their definitions
  so far, moved to Funcs named ``f_<i>_init``).
* Each update from then on becomes an update of ``f_packed``.  One whose values read
  each other runs over an RDom ``k`` (innermost, the fastest) followed by its own RDom
  (with its ``where`` predicates): at each point, ``k < n`` writes value ``k``, computed
  from slots ``0 .. n-1``, to scratch slot ``n + k``, and ``k >= n`` copies scratch slot
  ``k`` back to slot ``k - n``.  So every value is computed from the values before the
  update at that point, as in Halide, also when the values read other points (scans).
  That RDom is named ``<r>_<f>`` (``<f>_slots`` for an update without one), ``k`` being
  its ``.x``.  An update whose values each read only their own value becomes one update
  of ``f_packed`` per value, at slot ``i``, with no scratch.
* The Tuple's value Funcs (``f_0``, ``f_1``: the same Func objects, so calls made
  before the update see the final values too) become pure views ``f_i[x...] =
  reinterpret(t_i, f_packed[x..., i])``; every later layer sees plain Funcs.

An update whose values read each other and whose left side or RDom predicate reads
the Tuple itself is refused: its site could move between computing and storing.
"""
from __future__ import annotations

from ..errors import PipelineError
from . import expr as E
from . import types as T
from .func import Definition, Func
from .rdom import RDom
from .visit import mutate, walk

_UNSIGNED = {8: T.uint8, 16: T.uint16, 32: T.uint32, 64: T.uint64}


def word_type(types) -> T.Type:
    """The unsigned type that holds the bits of the widest of ``types`` (bool: 8)."""
    return _UNSIGNED[max(8 if t.is_bool() else t.bits for t in types)]


def pack(v: E.Expr, word: T.Type) -> E.Expr:
    """The bits of ``v`` as a ``word``, zero-extended."""
    if v.type.is_bool():
        return E.cast(word, v)
    return E.cast(word, E.reinterpret(_UNSIGNED[v.type.bits], v))


def unpack(w: E.Expr, t: T.Type) -> E.Expr:
    """The value of type ``t`` whose bits ``pack`` stored in ``w``."""
    if t.is_bool():
        return E.binop("ne", w, E.Const(w.type, 0))
    return E.reinterpret(t, E.cast(_UNSIGNED[t.bits], w))


def _slot_var(args) -> E.Var:
    names = {a.name for a in args}
    name, k = "_slot", 1
    while name in names:
        k += 1
        name = f"_slot{k}"
    return E.Var(name)


def _copy_rdom(r: RDom | None, rewrite, name: str | None = None, first=None):
    """``(rdom, move)``: ``r`` with ``rewrite`` applied to its predicates, copied when
    they change or when ``first`` (a ``(min, extent)`` range) goes before its dimensions
    (its RVars then move up one); ``move`` sends ``r``'s RVars to the copy's."""
    preds = [rewrite(p) for p in (r.predicates if r is not None else ())]
    if first is None and (r is None or all(p is q for p, q in zip(preds, r.predicates))):
        return r, lambda e: e
    ranges = ([first] if first is not None else []) + (
        list(zip(r.mins, r.extents)) if r is not None else [])
    new = RDom(*ranges, name=name or r.name)
    shift = 1 if first is not None else 0

    def move(e):
        def fn(n):
            if isinstance(n, E.RVar) and n.rdom is r:
                return new[n.index + shift]
            return None
        return mutate(e, fn)
    for p in preds:
        new.where(move(p))
    return new, move


def _rebuild(d: Definition, rewrite) -> Definition:
    """``d`` with ``rewrite`` applied to every Expr (its RDom copied when needed)."""
    rdom, move = _copy_rdom(d.rdom, rewrite)
    return Definition(tuple(move(rewrite(a)) for a in d.args), move(rewrite(d.value)), rdom)


def _retarget(mapping: dict):
    """An Expr rewrite that sends calls of the Funcs in ``mapping`` (by identity) to
    their images."""
    def rewrite(e):
        def fn(n):
            if isinstance(n, E.Call) and id(n.target) in mapping:
                return E.Call(mapping[id(n.target)], tuple(rewrite(a) for a in n.args))
            return None
        return mutate(e, fn)
    return rewrite


def convert(func: Func) -> Func:
    """Turn Tuple ``func`` into its packed form (see the module docstring); the packed
    Func."""
    name, comps = func.name, func.components
    inits = []
    for i, c in enumerate(comps):
        init = Func(f"{name}_{i}_init")
        init.is_scalar = c.is_scalar
        inits.append(init)
    rewrite = _retarget({id(c): init for c, init in zip(comps, inits)})
    for c, init in zip(comps, inits):
        init._pure = Definition(c._pure.args, c._pure.value, None)
        for d in c._updates:
            init._updates.append(_rebuild(d, rewrite))
    types = tuple(c.type for c in comps)
    word = word_type(types)
    args = comps[0]._pure.args
    slot = _slot_var(args)
    packed = Func(f"{name}_packed")
    value = E.Const(word, 0)
    for i in reversed(range(len(comps))):
        value = E.select(E.binop("eq", slot, E.Const(T.int32, i)),
                         pack(inits[i][args], word), value)
    packed[args + (slot,)] = value
    for i, (c, t) in enumerate(zip(comps, types)):
        c._pure = Definition(c._pure.args, unpack(packed[args + (E.Const(T.int32, i),)], t))
        c._updates = []
    func.packed = packed
    return packed


def _reads_of_tuple(func: Func):
    """An Expr rewrite that replaces each read ``f[q][j]`` of Tuple ``func`` with the
    value unpacked from ``f_packed[q..., j]``."""
    comps, packed = func.components, func.packed
    index = {id(c): j for j, c in enumerate(comps)}

    def rewrite(e):
        def fn(n):
            if isinstance(n, E.Call) and id(n.target) in index:
                j = index[id(n.target)]
                site = tuple(rewrite(a) for a in n.args) + (E.Const(T.int32, j),)
                return unpack(packed[site], comps[j].type)
            return None
        return mutate(e, fn)
    return rewrite


def _reads_tuple(func: Func, exprs) -> bool:
    comps = {id(c) for c in func.components}
    return any(isinstance(n, E.Call) and id(n.target) in comps
               for e in exprs for n in walk(e))


def packed_update(func: Func, defs: dict, cross: bool) -> None:
    """Add an update of Tuple ``func`` to its packed form, converting it first.
    ``defs``: value index -> the checked Definition of that value (the values left
    undef are absent; all share the update's RDom); ``cross``: some value reads
    another."""
    name, comps = func.name, func.components
    n = len(comps)
    packed = func.packed or convert(func)
    word = packed.type
    first = next(iter(defs.values()))
    args, rdom = first.args, first.rdom
    rewrite = _reads_of_tuple(func)
    if not cross:
        for i, d in defs.items():
            d = _rebuild(Definition(d.args, pack(d.value, word), rdom), rewrite)
            _add_update(packed, d.args + (E.Const(T.int32, i),), d.value, d.rdom)
        return
    sites = [a for a in args if not isinstance(a, E.Var)]
    if _reads_tuple(func, [*sites, *(rdom.predicates if rdom is not None else ())]):
        raise PipelineError(
            f"Func {name}: the values of this Tuple update read each other and its left "
            f"side or its RDom's where() reads {name} too; such an update is not supported "
            "(the site could move between computing the values and storing them)")
    rdom, move = _copy_rdom(rdom, rewrite, f"{rdom.name}_{name}" if rdom else f"{name}_slots",
                            (0, 2 * n))
    k, nn = rdom[0], E.Const(T.int32, n)
    site = tuple(move(rewrite(a)) for a in args)
    mux = None
    for i in reversed(range(n)):
        # value i's new bits, or (undef) its old bits
        vi = (move(rewrite(pack(defs[i].value, word))) if i in defs
              else packed[site + (E.Const(T.int32, i),)])
        mux = vi if mux is None else E.select(E.binop("eq", k, E.Const(T.int32, i)), vi, mux)
    value = E.select(E.binop("lt", k, nn), mux, packed[site + (k,)])
    _add_update(packed, site + ((k + nn) % E.Const(T.int32, 2 * n),), value, rdom)


def _add_update(f: Func, args: tuple, value: E.Expr, rdom) -> None:
    """Add the update ``f[args] = value`` over ``rdom`` (which a value need not name: a
    Tuple update runs every value over the update's one RDom)."""
    d = f.check_update(args, value)
    f._updates.append(Definition(d.args, d.value, rdom))
