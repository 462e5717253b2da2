"""A Pipeline: the outputs, the DAG of Funcs, its inputs and params.

``Pipeline(out)`` or ``Pipeline([out1, out2])`` walks every definition
(values, update sites, RDom bounds and predicates) to find the Funcs,
ImageParams and Params reached, checks them, and builds a networkx DiGraph
with an edge producer -> consumer.
"""
from __future__ import annotations

import networkx as nx

from ..errors import PipelineError
from . import expr as E
from .func import Definition, Func
from .params import ImageParam
from .visit import walk


def definition_exprs(d: Definition):
    """Every Expr a definition evaluates: its value, its left side, its RDom."""
    yield d.value
    yield from d.args
    if d.rdom is not None:
        yield from d.rdom.mins
        yield from d.rdom.extents
        yield from d.rdom.predicates


class Pipeline:
    tuple_outputs: dict = {}

    def __init__(self, outputs):
        if isinstance(outputs, Func):
            outputs = [outputs]
        try:
            outputs = list(outputs)
        except TypeError:
            raise PipelineError(f"Pipeline needs a Func or a list of Funcs (the outputs), got "
                                f"{type(outputs).__name__} {outputs!r}") from None
        if not outputs:
            raise PipelineError("a Pipeline needs at least one output Func")
        for o in outputs:
            if not isinstance(o, Func):
                raise PipelineError(f"Pipeline outputs must be Funcs, got {o!r}")
            o._need_defined()
        if len({id(o) for o in outputs}) != len(outputs):
            raise PipelineError("the same Func is listed twice as an output")
        tuples = [o for o in outputs if o.components is not None]
        self.outputs: tuple[Func, ...] = tuple(p for o in outputs for p in o.parts())
        self._build()
        # a Tuple output's name -> its values' Funcs (names as the pipeline knows them)
        self.tuple_outputs: dict[str, tuple[str, ...]] = {
            o.name: tuple(c.name for c in o.components) for o in tuples}

    def buffer_min_params(self) -> dict:
        """``{Param name: (input name, dimension)}`` for the inputs' ``dim(d).min()`` Params
        the algorithm reads (bound from the buffers at run time); found once, as the
        pipeline does not change after it is built."""
        out = self.__dict__.get("_buffer_min_params")
        if out is None:
            out = {}
            for name, img in self.images.items():
                for d in range(img.dims):
                    p = img.min_param(d)
                    if self.params.get(p.name) is p:
                        out[p.name] = (name, d)
            self._buffer_min_params = out
        return out

    def expand_names(self, by_name: dict) -> dict:
        """``by_name`` (sizes or estimates keyed by name) with a Tuple output's name
        replaced by each of its values' Funcs."""
        out = {}
        for k, v in by_name.items():
            for n in self.tuple_outputs.get(k, (k,)):
                out[n] = v
        return out

    # -- construction --------------------------------------------------------------
    def _build(self):
        funcs: dict[str, Func] = {}
        images: dict[str, ImageParam] = {}
        params: dict[str, E.Param] = {}
        graph = nx.DiGraph()
        claimed: dict[str, Func] = {}

        def claim(f: Func) -> str:
            """``f``'s name, made unique first: two different Funcs of one name (a helper
            that builds its Funcs, called twice) become ``name`` and ``name_2``, as Halide
            makes its names unique.  The first Func reached from the outputs keeps it."""
            if claimed.get(f.name, f) is not f:
                k = 2
                while f"{f.name}_{k}" in claimed:
                    k += 1
                f.name = f"{f.name}_{k}"
            claimed[f.name] = f
            return f.name

        for o in self.outputs:
            claim(o)
        stack = list(self.outputs)
        while stack:
            f = stack.pop()
            if f.name in funcs:
                continue
            f._need_defined()
            funcs[f.name] = f
            graph.add_node(f.name)
            for d in f.definitions():
                for e in definition_exprs(d):
                    for n in walk(e):
                        if isinstance(n, E.Call):
                            t = n.target
                            if isinstance(t, Func):
                                if not t.defined():
                                    raise PipelineError(f"Func {t.name} is called by {f.name} but never defined")
                                if len(n.args) != t.dimensions():
                                    raise PipelineError(
                                        f"Func {t.name} has {t.dimensions()} dimensions but {f.name} calls it "
                                        f"with {len(n.args)} arguments")
                                if t is not f:
                                    graph.add_edge(claim(t), f.name)
                                    stack.append(t)
                            else:
                                self._add_image(images, t, f.name)
                                graph.add_node(t.name)
                                graph.add_edge(t.name, f.name)
                        elif isinstance(n, E.Param):
                            old = params.get(n.name)
                            if old is not None and old is not n:
                                raise PipelineError(
                                    f"two Params named {n.name!r} with types {old.type} and {n.type}")
                            params[n.name] = n
                        elif isinstance(n, E.BufferExtent):
                            if n.image not in images:
                                images.setdefault(n.image, None)  # resolved below
        for name, img in list(images.items()):
            if img is None:
                raise PipelineError(
                    f"the extent of input {name!r} is used but {name!r} itself is never read")
        clash = set(funcs) & (set(images) | set(params)) | (set(images) & set(params))
        if clash:
            raise PipelineError(f"the name {sorted(clash)[0]!r} is used by more than one Func/input/Param")
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle:
            path = " -> ".join([cycle[0][0]] + [v for _, v in cycle])
            raise PipelineError(f"the pipeline has a cycle: {path}")
        self.graph = graph
        self._output_names = tuple(o.name for o in self.outputs)   # as the graph knows them
        order = list(nx.lexicographical_topological_sort(graph))
        self.funcs: dict[str, Func] = {n: funcs[n] for n in order if n in funcs}
        self.images: dict[str, ImageParam] = dict(sorted(images.items()))
        self.params: dict[str, E.Param] = dict(sorted(params.items()))

    @staticmethod
    def _add_image(images, img, user):
        old = images.get(img.name)
        if old is not None and old is not img:
            raise PipelineError(f"two different inputs are named {img.name!r} (read by {user})")
        images[img.name] = img

    # -- queries -------------------------------------------------------------------
    @property
    def output_names(self) -> tuple[str, ...]:
        return self._output_names

    def func(self, name: str) -> Func:
        try:
            return self.funcs[name]
        except KeyError:
            raise PipelineError(f"no Func named {name!r} in this pipeline") from None

    def order(self) -> list[str]:
        """Func names in topological order (producers first, deterministic)."""
        return list(self.funcs)

    def producers(self, name: str) -> list[str]:
        """Funcs and inputs that ``name`` reads (not itself)."""
        return sorted(self.graph.predecessors(name))

    def consumers(self, name: str) -> list[str]:
        return sorted(self.graph.successors(name))

    def is_output(self, name: str) -> bool:
        return name in self.output_names

    def __repr__(self) -> str:
        return f"Pipeline(outputs={list(self.output_names)}, funcs={len(self.funcs)})"

    def __str__(self) -> str:
        return "\n".join(str(self.funcs[n]) for n in self.order())
