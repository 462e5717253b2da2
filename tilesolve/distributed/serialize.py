"""Pipelines as plain data, to ship them to Dask workers.

A Pipeline cannot go through ``pickle`` as it is: a Func holds its definitions, the
definitions hold Calls of the Func (updates read it), and building a Call needs the
callee's type, i.e. its pure definition, which pickle restores only afterwards.  Here
the pipeline becomes a table of nodes plus, for every Func (producers first), the node
ids of its definitions; :func:`decode` defines each Func's pure definition before it
builds anything that calls it.

    blob = encode(pipe)          # tuples, lists, strings, numbers, ts types: picklable
    same = decode(blob)          # a new, equivalent Pipeline (same names)
"""
from __future__ import annotations

from ..model import expr as E
from ..model.func import Definition, Func
from ..model.params import ImageParam
from ..model.pipeline import Pipeline
from ..model.rdom import RDom

__all__ = ["encode", "decode"]

FORMAT = "tilesolve.pipeline/1"
_CLASSES = {c.__name__: c for c in (E.Const, E.Var, E.RVar, E.Param, E.BufferExtent, E.Cast,
                                    E.BinOp, E.Not, E.Select, E.Call, E.Intrinsic, E.Let)}


class _Encoder:
    def __init__(self):
        self.nodes: list = []          # (class name, fields)
        self.ids: dict[int, int] = {}
        self.rdoms: list = []
        self.rdom_ids: dict[int, int] = {}
        self.keep: list = []           # keeps encoded objects alive (ids stay unique)

    def expr(self, e) -> int:
        hit = self.ids.get(id(e))
        if hit is not None:
            return hit
        cls = type(e).__name__
        if cls not in _CLASSES:
            raise TypeError(f"cannot encode expression node {cls} ({e})")
        fields = tuple(self.field(getattr(e, f)) for f in e._fields)
        self.ids[id(e)] = len(self.nodes)
        self.keep.append(e)
        self.nodes.append((cls, fields))
        return len(self.nodes) - 1

    def field(self, v):
        if isinstance(v, E.Expr):
            return ("e", self.expr(v))
        if isinstance(v, Func):
            return ("f", v.name)
        if isinstance(v, ImageParam):
            return ("i", v.name)
        if isinstance(v, RDom):
            return ("r", self.rdom(v))
        if isinstance(v, tuple):
            return ("t", tuple(self.field(x) for x in v))
        return ("v", v)

    def rdom(self, r: RDom) -> int:
        hit = self.rdom_ids.get(id(r))
        if hit is not None:
            return hit
        k = len(self.rdoms)
        self.rdom_ids[id(r)] = k
        self.keep.append(r)
        self.rdoms.append(None)       # predicates may name the RDom's own RVars
        self.rdoms[k] = (r.name, tuple(self.expr(m) for m in r.mins),
                         tuple(self.expr(x) for x in r.extents),
                         tuple(self.expr(p) for p in r.predicates))
        return k

    def definition(self, d: Definition) -> tuple:
        return (tuple(self.expr(a) for a in d.args), self.expr(d.value),
                None if d.rdom is None else self.rdom(d.rdom))


def encode(pipeline: Pipeline) -> tuple:
    """The pipeline as nested tuples of plain values (see the module docstring)."""
    enc = _Encoder()
    funcs = []
    for name in pipeline.order():
        f = pipeline.funcs[name]
        funcs.append((name, enc.definition(f.pure), tuple(enc.definition(u) for u in f.updates)))
    images = tuple((n, img.type, img.dims) for n, img in pipeline.images.items())
    return (FORMAT, images, tuple(funcs), tuple(enc.nodes), tuple(enc.rdoms),
            pipeline.output_names)


class _Decoder:
    def __init__(self, nodes, rdoms, funcs: dict, images: dict):
        self.nodes, self.rdom_specs = nodes, rdoms
        self.funcs, self.images = funcs, images
        self.memo: dict[int, E.Expr] = {}
        self.rdoms: dict[int, RDom] = {}

    def expr(self, i: int):
        hit = self.memo.get(i)
        if hit is not None:
            return hit
        cls, fields = self.nodes[i]
        node = _CLASSES[cls](*(self.field(f) for f in fields))    # hash-consed again
        self.memo[i] = node
        return node

    def field(self, v):
        tag, x = v
        if tag == "e":
            return self.expr(x)
        if tag == "f":
            return self.funcs[x]
        if tag == "i":
            return self.images[x]
        if tag == "r":
            return self.rdom(x)
        if tag == "t":
            return tuple(self.field(y) for y in x)
        return x

    def rdom(self, k: int) -> RDom:
        r = self.rdoms.get(k)
        if r is None:
            name, mins, exts, preds = self.rdom_specs[k]
            r = object.__new__(RDom)
            r.name, r.predicates = name, ()
            r.mins = tuple(self.expr(m) for m in mins)
            r.extents = tuple(self.expr(m) for m in exts)
            self.rdoms[k] = r
            r.predicates = tuple(self.expr(p) for p in preds)
        return r

    def definition(self, d) -> Definition:
        args, value, rdom = d
        return Definition(tuple(self.expr(a) for a in args), self.expr(value),
                          None if rdom is None else self.rdom(rdom))


def decode(blob) -> Pipeline:
    """The Pipeline :func:`encode` described (new Func, ImageParam and RDom objects)."""
    fmt, images, funcs, nodes, rdoms, outputs = blob
    if fmt != FORMAT:
        raise ValueError(f"not an encoded tilesolve pipeline (format {fmt!r}, expected {FORMAT!r})")
    imgs = {n: ImageParam(t, dims, n) for n, t, dims in images}
    fs = {name: Func(name) for name, _, _ in funcs}
    dec = _Decoder(nodes, rdoms, fs, imgs)
    for name, pure, updates in funcs:       # producers first; a Func's pure part first
        f = fs[name]
        f._pure = dec.definition(pure)
        f._updates = [dec.definition(u) for u in updates]
    return Pipeline([fs[n] for n in outputs])
