"""Wrapper Funcs (Halide's ``f.in(g)``): the view of a Pipeline a Schedule lowers.

``Schedule.wrap(source, consumers)`` adds a Func ``w(v...) = source(v...)`` and
redirects the calls to ``source`` made by ``consumers`` to ``w``; ``w`` is then
scheduled like any other producer (computed per GPU block in shared memory, say).
The user's Pipeline never changes: ``with_wrapper`` builds a new Pipeline, the
*view*, in which ``w`` exists.  Each Func whose definitions change is copied (same
name, schedule-relevant structure and estimates), and so, transitively, is every
Func that calls a copied one, since a Call holds its target Func object.  Funcs that
do not reach a copied one are shared with the user's Pipeline.
"""
from __future__ import annotations

from ..errors import PipelineError, ScheduleError
from . import expr as E
from .boundary import dim_vars
from .func import Definition, Func
from .pipeline import Pipeline
from .rdom import RDom
from .visit import mutate


def wrapper_name(source: str, consumers) -> str:
    """The default name: ``<source>_in`` (every caller) or ``<source>_in_<c1>_<c2>...``."""
    if consumers is None:
        return f"{source}_in"
    return f"{source}_in_" + "_".join(c.replace(".", "_") for c in consumers)


def _wrapper_func(src, name: str) -> Func:
    if isinstance(src, Func):
        vs = src.pure.args
    else:
        vs = dim_vars(src.dims)
    w = Func(name)
    w[vs] = src[vs]
    return w


def _copy_func(f: Func) -> Func:
    g = object.__new__(Func)
    g.__dict__.update(f.__dict__)
    return g


class _Rewriter:
    """Rewrites one Func's definitions: calls to rebuilt Funcs go to their copies, and
    (``redirect``) calls to the source go to the wrapper; an RDom with predicates is
    copied with them, its RVars mapped to the copy's."""

    def __init__(self, new_funcs: dict, source, wrapper, redirect: bool):
        self.new_funcs, self.source, self.wrapper = new_funcs, source, wrapper
        self.redirect = redirect
        self.rdoms: dict = {}            # id(old RDom) -> new RDom
        self.memo: dict = {}

    def expr(self, e: E.Expr) -> E.Expr:
        return mutate(e, self._node, self.memo)

    def _node(self, n):
        if isinstance(n, E.Call):
            t = n.target
            if self.redirect and t is self.source:
                t = self.wrapper
            else:
                t = self.new_funcs.get(id(t), t)
            args = tuple(self.expr(a) for a in n.args)
            if t is n.target and all(a is b for a, b in zip(args, n.args)):
                return n
            return E.Call(t, args)
        if isinstance(n, E.RVar):
            r = self.rdoms.get(id(n.rdom))
            return n if r is None else E.RVar(r, n.index)
        return None

    def rdom(self, r: RDom | None) -> RDom | None:
        """An RDom with predicates (which may call the source or a copied Func) is
        copied with them; its RVars become the copy's everywhere in this Func."""
        if r is None or not r.predicates:
            return r
        hit = self.rdoms.get(id(r))
        if hit is not None:
            return hit
        new = object.__new__(RDom)
        new.name, new.mins, new.extents, new.predicates = r.name, r.mins, r.extents, ()
        self.rdoms[id(r)] = new
        self.memo = {}                   # RVars of ``r`` map to the copy's from now on
        new.predicates = tuple(self.expr(p) for p in r.predicates)
        return new

    def definition(self, d: Definition) -> Definition:
        rdom = self.rdom(d.rdom)
        args = tuple(self.expr(a) for a in d.args)
        value = self.expr(d.value)
        if rdom is d.rdom and value is d.value and all(a is b for a, b in zip(args, d.args)):
            return d
        return Definition(args, value, rdom)


def with_wrapper(view: Pipeline, source: str, consumers: tuple, name: str) -> Pipeline:
    """``view`` with wrapper Func ``name`` of ``source`` (a Func or input of ``view``)
    called by ``consumers`` (Funcs of ``view`` that call ``source``) instead of it."""
    src = view.funcs.get(source) or view.images[source]
    wrapper = _wrapper_func(src, name)
    changed = set(consumers)
    for c in consumers:
        changed |= _descendants(view, c)
    new_funcs: dict = {}                 # id(old Func) -> its copy
    for n in view.order():
        if n in changed:
            new_funcs[id(view.funcs[n])] = _copy_func(view.funcs[n])
    for n in view.order():
        if n not in changed:
            continue
        old = view.funcs[n]
        g = new_funcs[id(old)]
        rw = _Rewriter(new_funcs, src, wrapper, n in consumers)
        g._pure = rw.definition(old._pure)
        g._updates = [rw.definition(u) for u in old._updates]
    outs = [new_funcs.get(id(o), o) for o in view.outputs]
    try:
        out = Pipeline(outs)
    except PipelineError as e:  # pragma: no cover - the copies are the same algorithm
        raise ScheduleError(f"wrap({source}): the wrapped pipeline does not build: {e}") from None
    out.tuple_outputs = dict(view.tuple_outputs)
    for n, f in out.funcs.items():      # no Func of the user's pipeline was renamed
        if n != f.name or (n in view.funcs and n not in changed and view.funcs[n] is not f):
            raise ScheduleError(f"wrap({source}): Func {n} is not rebuilt consistently")
    return out


def _descendants(view: Pipeline, name: str) -> set:
    import networkx as nx
    return {n for n in nx.descendants(view.graph, name) if n in view.funcs}


def _name_of(x, what: str) -> str:
    if getattr(x, "components", None) is not None:
        raise ScheduleError(f"wrap: Func {x.name} is a Tuple; wrap one of its values' Funcs "
                            f"({', '.join(c.name for c in x.components)})")
    name = getattr(x, "name", x)
    if not isinstance(name, str):
        raise ScheduleError(f"wrap: the {what} must be a Func, an ImageParam or a name, "
                            f"got {x!r}")
    return name


def _check_object(s, x, name: str, what: str) -> None:
    """A Func or ImageParam object must be the one of that name (in the user's pipeline
    or the schedule's view)."""
    if isinstance(x, str):
        return
    known = [p.funcs.get(name) or p.images.get(name) for p in (s.pipeline, s.view)]
    if all(k is not x for k in known):
        raise ScheduleError(f"wrap: the {what} {name} is not the Func or input of that name "
                            "in this pipeline")


def resolve(s, source, consumers, name) -> tuple:
    """Check ``s.wrap(source, consumers, name)`` against Schedule ``s``: ``(source name,
    consumer names, wrapper name, given)`` where ``given`` is the consumers as recorded
    (None: every caller)."""
    view = s.view
    src = _name_of(source, "source")
    _check_object(s, source, src, "source")
    if src in view.tuple_outputs or src in s.pipeline.tuple_outputs:
        raise ScheduleError(f"wrap: Func {src} is a Tuple; wrap one of its values' Funcs")
    if src not in view.funcs and src not in view.images:
        raise ScheduleError(f"wrap: no Func or input named {src!r} in this pipeline; Funcs: "
                            f"{', '.join(view.funcs)}; inputs: {', '.join(view.images)}")
    if src in view.funcs and view.funcs[src].components is not None:
        raise ScheduleError(f"wrap: Func {src} is a Tuple; wrap one of its values' Funcs")
    if consumers is None:
        given = None
        own = {w for w, (ws, _) in s.wrappers.items() if ws == src}
        cons = tuple(c for c in view.consumers(src) if c in view.funcs and c not in own)
        if not cons:
            raise ScheduleError(f"wrap: no Func calls {src} (other than its wrappers "
                                f"{', '.join(sorted(own))})" if own else
                                f"wrap: no Func calls {src}")
    else:
        if isinstance(consumers, (str, Func)) or not isinstance(consumers, (list, tuple)):
            consumers = [consumers]
        cons = []
        for c in consumers:
            cn = _name_of(c, "consumer")
            _check_object(s, c, cn, "consumer")
            if cn in cons:
                raise ScheduleError(f"wrap({src}): consumer {cn} is listed twice")
            cons.append(cn)
        cons = given = tuple(cons)
        if not cons:
            raise ScheduleError(f"wrap({src}): the list of consumers is empty (None: every "
                                "Func that calls it)")
    wname = wrapper_name(src, given) if name is None else name
    if not isinstance(wname, str) or not wname.isidentifier():
        raise ScheduleError(f"wrap({src}): the wrapper's name must be an identifier, got "
                            f"{wname!r}")
    for w, (ws, wc) in s.wrappers.items():
        if ws == src and s.wrapper_request(w) == given:
            if w == wname:
                return src, wc, w, given
            raise ScheduleError(f"wrap({src}): {src} is already wrapped for these consumers "
                                f"as {w}; it cannot be wrapped again as {wname}")
    if given is not None:
        for c in cons:
            if c not in view.funcs:
                what = "an input" if c in view.images else "not a Func of this pipeline"
                raise ScheduleError(f"wrap({src}): consumer {c} is {what}; Funcs: "
                                    f"{', '.join(view.funcs)}")
            if not view.graph.has_edge(src, c):
                raise ScheduleError(f"wrap({src}): Func {c} does not call {src}; the Funcs "
                                    f"that call it: {', '.join(view.consumers(src)) or 'none'}")
    if wname in view.funcs or wname in view.images or wname in view.params:
        raise ScheduleError(f"wrap({src}): the name {wname} is already a Func, input or "
                            "Param of this pipeline; pass another name=")
    return src, cons, wname, given
