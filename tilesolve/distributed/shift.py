"""Rewrite a pipeline so that compiled code computes one chunk of it, in the true image's
coordinates.

Compiled code realizes its outputs over ``[0, size-1]`` and reads its inputs from index
0; boundary conditions clamp at the extents of the arrays it is given.  A chunk task has
an output box ``[o, o + size - 1]`` and a *slice* of each input starting at ``m``.  The
rewrite makes the pipeline compute exactly what the whole-image pipeline computes there,
with no assumption about translation invariance:

* every definition of an output ``f`` reads ``f'(v) = f(v + o)``: its pure Vars are
  replaced by ``v + o`` (``o``: int32 Params, one per dimension), and reads of ``f`` at
  ``a`` become reads of ``f'`` at ``a - o``;
* every read of an input ``p`` at ``a`` becomes a read of the slice at ``a - m``;
* ``p.extent(d)`` (boundary conditions, normalizations) becomes a Param holding the
  extent of the *whole* input, so edges are handled at the true image edges;
* intermediate Funcs are untouched: they are computed at absolute coordinates, so Vars
  used as values (``f[x, y] = x + y``) keep their meaning.

With all Params at 0 and the extents of the whole images the rewritten pipeline is the
original one.  Two further options serve the tree reductions of :mod:`.reduce`: Funcs
replaced by inputs (``as_images``), and one update's RDom restricted to a tile given by
Params, whose Func then starts from the reduction's identity except in the first tile.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import types as T
from ..model.func import Definition, Func
from ..model.params import ImageParam
from ..model.pipeline import Pipeline
from ..model.rdom import RDom
from ..model.visit import mutate, substitute_names

__all__ = ["Rewritten", "rewrite", "param_name", "FIRST", "identity", "associative_op"]

FIRST = "_ts_first"


def param_name(kind: str, owner: str, d: int) -> str:
    """Names of the added Params: kind "o" (output origin), "m" (input slice min),
    "n" (whole input extent), "rm"/"rn" (RDom tile min/extent; owner: the Func)."""
    return f"_ts_{kind}_{owner.replace('.', '_')}_{d}"


def identity(op: str, t: T.Type):
    """The identity element of ``op`` in type ``t`` (a Python number)."""
    return {"add": 0, "mul": 1, "max": t.min_value() if not t.is_float() else float("-inf"),
            "min": t.max_value() if not t.is_float() else float("inf")}[op]


def associative_op(f: Func, k: int) -> str | None:
    """``"add"``, ``"mul"``, ``"max"`` or ``"min"`` when update ``k`` of ``f`` is
    ``f[s] = f[s] op e`` (or ``e op f[s]``) with the same site ``s`` on both sides and
    ``e`` not reading ``f``; else None."""
    d = f.updates[k]
    v = d.value
    if not isinstance(v, E.BinOp) or v.op not in ("add", "mul", "max", "min"):
        return None
    for own, other in ((v.a, v.b), (v.b, v.a)):
        if isinstance(own, E.Call) and own.target is f and \
                all(a is b for a, b in zip(own.args, d.args)) and not _reads(other, f):
            return v.op
    return None


def _reads(e, f) -> bool:
    from ..model.visit import walk
    return any(isinstance(n, E.Call) and n.target is f for n in walk(e))


@dataclass
class Rewritten:
    """The rewritten ``pipeline`` and the names of the Params it added."""
    pipeline: Pipeline
    origins: dict = field(default_factory=dict)      # output -> [Param name per dim]
    mins: dict = field(default_factory=dict)         # input -> [Param name per dim]
    extents: dict = field(default_factory=dict)      # input -> [Param name per dim]
    tile: tuple | None = None                        # (Func, [min names], [extent names])


def _p(name: str) -> E.Param:
    return E.Param(T.int32, name)


def _minus(a: E.Expr, o) -> E.Expr:
    """``a - o``, undoing a ``+ o`` that the Var substitution put there."""
    if isinstance(o, int):
        return a if o == 0 else E.binop("sub", a, o)
    if isinstance(a, E.BinOp) and a.op == "add" and a.b is o:
        return a.a
    return E.binop("sub", a, o)


def _regular(a: E.Expr) -> bool:
    """Whether lowering bounds index ``a`` tightly: affine in Vars and Params, with
    min/max (clamps) and division by constants; no select, %, call or math."""
    from ..model.visit import walk
    for n in walk(a):
        if isinstance(n, (E.Select, E.Call, E.Intrinsic, E.Let, E.Not)):
            return False
        if isinstance(n, E.BinOp) and (n.op == "mod" or (n.op == "div" and
                                                         not isinstance(n.b, E.Const))):
            return False
    return True


def _inner_name(name: str, pipeline) -> str:
    base = f"{name}_ts_inner"
    n, k = base, 1
    while n in pipeline.funcs or n in pipeline.images or n in pipeline.params:
        k += 1
        n = f"{base}{k}"
    return n


def rewrite(pipeline: Pipeline, *, outputs=None, as_images: dict | None = None,
            tile: tuple | None = None, slice_clamps: bool = False) -> Rewritten:
    """The chunk form of ``pipeline`` (see the module docstring).

    ``outputs``: names of the Funcs to compute (default: the pipeline's outputs).
    ``as_images``: Func name -> (ImageParam, region min per dim): reads of that Func at
    ``a`` become reads of the ImageParam at ``a - min``.  ``tile``: (Func name, update
    index, op): that update's RDom gets Param bounds and the Func's pure definition
    yields ``op``'s identity unless the Param ``_ts_first`` is nonzero.

    ``slice_clamps``: clamp each irregular index (select, %, data-dependent) into the
    slice actually passed (``[0, extent - 1]`` of the array).  Bounds inference proves
    that the points a chunk needs read inside the slice, so the clamp changes no value
    the outputs use; it lets lowering (whose input regions ``realize`` checks) bound
    indices it cannot narrow itself, e.g. those of ``mirror_image``.  Regular indices
    are left alone (a clamp there would stop vector loads).
    """
    as_images = dict(as_images or {})
    out_names = list(outputs or pipeline.output_names)
    res = Rewritten(pipeline=None)
    for n in out_names:
        res.origins[n] = [param_name("o", n, d) for d in range(pipeline.func(n).dimensions())]
    images = dict(pipeline.images)
    images.update({n: img for n, (img, _) in as_images.items()})
    for n, img in images.items():
        res.mins[n] = [param_name("m", n, d) for d in range(img.dims)]
        res.extents[n] = [param_name("n", n, d) for d in range(img.dims)]
    new = {n: Func(n) for n in pipeline.funcs if n not in as_images}
    # an output that other Funcs read, or whose updates write sites other than its pure
    # Vars (scans, histograms), keeps the whole image's coordinates in an inner Func;
    # the output (same name, so its schedule applies) reads it at v + o
    reach, stack = set(), list(out_names)
    while stack:
        n = stack.pop()
        if n not in reach and n in new:
            reach.add(n)
            stack.extend(pipeline.producers(n))
    inner = {n: Func(_inner_name(n, pipeline)) for n in out_names
             if any(c != n and c in reach for c in pipeline.consumers(n))
             or any(not isinstance(a, E.Var) for u in pipeline.func(n).updates for a in u.args)}
    rdoms: dict[int, RDom] = {}
    tile_rdom = None
    if tile is not None:
        tname, tk, _ = tile
        tile_rdom = pipeline.func(tname).updates[tk].rdom
        k = len(tile_rdom.mins)
        res.tile = (tname, [param_name("rm", tname, d) for d in range(k)],
                    [param_name("rn", tname, d) for d in range(k)])

    def image_call(name, args, const_min=None):
        img = images[name]
        ms = res.mins[name]
        out = []
        for d, a in enumerate(args):
            if const_min is not None:
                a = _minus(a, int(const_min[d]))
            shifted = _minus(a, _p(ms[d]))
            if slice_clamps and not _regular(a):
                shifted = E.clamp(shifted, 0, E.BufferExtent(name, d) - 1)
            out.append(shifted)
        return E.Call(img, tuple(out))

    def fn(n):
        if isinstance(n, E.Call):
            args = tuple(mutate(a, fn, memo) for a in n.args)
            t = n.target
            if isinstance(t, ImageParam):
                return image_call(t.name, args)
            if t.name in as_images:
                return image_call(t.name, args, as_images[t.name][1])
            if t.name in inner:
                return E.Call(inner[t.name], args)
            if t.name in res.origins:
                args = tuple(_minus(a, _p(o)) for a, o in zip(args, res.origins[t.name]))
            return E.Call(new[t.name], args)
        if isinstance(n, E.BufferExtent):
            return _p(res.extents[n.image][n.dim])
        if isinstance(n, E.RVar):
            return E.RVar(new_rdom(n.rdom), n.index)
        return None

    def new_rdom(r: RDom) -> RDom:
        hit = rdoms.get(id(r))
        if hit is not None:
            return hit
        nr = object.__new__(RDom)
        nr.name, nr.predicates = r.name, ()
        rdoms[id(r)] = nr
        if r is tile_rdom:
            nr.mins = tuple(_p(m) for m in res.tile[1])
            nr.extents = tuple(_p(x) for x in res.tile[2])
        else:
            nr.mins = tuple(mutate(m, fn, memo) for m in r.mins)
            nr.extents = tuple(mutate(x, fn, memo) for x in r.extents)
        nr.predicates = tuple(mutate(p, fn, memo) for p in r.predicates)
        return nr

    memo: dict = {}
    for name, f in pipeline.funcs.items():
        if name not in new:
            continue
        shift = None
        if name in res.origins and name not in inner:
            shift = {v.name: E.binop("add", v, _p(o)) for v, o in zip(f.args, res.origins[name])}
        nf = inner.get(name, new[name])
        nf._updates = []
        for i, d in enumerate(f.definitions()):
            value, args = d.value, d.args
            if shift is not None:
                value = substitute_names(value, shift)
                args = tuple(a if isinstance(a, E.Var) else substitute_names(a, shift)
                             for a in args)
            saved = memo
            if shift is not None:
                memo = {}                       # Vars mean something else here
            value = mutate(value, fn, memo)
            if shift is not None:
                args = tuple(a if isinstance(a, E.Var) else
                             _minus(mutate(a, fn, memo), _p(o))
                             for a, o in zip(args, res.origins[name]))
            else:
                args = tuple(mutate(a, fn, memo) for a in args)
            memo = saved
            if i == 0:
                if tile is not None and name == tile[0]:
                    ident = E.as_expr(identity(tile[2], value.type), value.type)
                    value = E.select(_p(FIRST) != 0, value, ident)
                nf._pure = Definition(args, value, None)     # before updates call nf
            else:
                nf._updates.append(Definition(args, value, new_rdom(d.rdom) if d.rdom else None))
    for name, fi in inner.items():
        wrapper = new[name]
        vs = fi.args
        wrapper._pure = Definition(vs, E.Call(fi, tuple(
            E.binop("add", v, _p(o)) for v, o in zip(vs, res.origins[name]))), None)
        wrapper._updates = []
    res.pipeline = Pipeline([new[n] for n in out_names])
    # drop the names of inputs the new pipeline no longer reads
    for d in (res.mins, res.extents):
        for n in list(d):
            if n not in res.pipeline.images:
                del d[n]
    return res
