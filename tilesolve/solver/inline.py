"""Which Funcs to inline before grouping (Mullapudi 2016 §4.3, simplified).

A Func is inlined into all of its consumers, or into none.  Funcs are decided
consumers first, so when ``f`` is decided we know which of its consumers are
themselves inlined.  We inline ``f`` when it is not an output, has no update
definitions, is read by pure definitions only (not as an update's
data-dependent site), and one of:

* it is data movement: one load plus at most ``data_movement_ops`` of index
  arithmetic (a boundary condition, a crop, a transpose);
* it is trivial: at most ``trivial_ops`` arithmetic operations per point
  (casts, small pointwise maps), where recomputing is cheaper than a store
  and a load; a load at a data-dependent index counts ``gather_ops`` (a gather
  in vector code: a Func that applies a lookup table is inlined only where it
  is read once per point).  A trivial Func that reads two or more points of its
  producers is inlined only where its final consumers read it at no more than
  ``max_trivial_stencil_sites`` distinct points: through a chain of stencils
  an inlined value grows with the square of the chain's length;
* every consumer reads it through an *injective* index (each argument is
  ``v``, ``v + c`` or ``k*v + c`` of a distinct consumer Var) and inlining
  costs no more than computing it once (``inlining_pays``).  Inlining a
  stencil multiplies its work by the consumer's footprint: what counts is
  the number of distinct points of ``f`` read per point of each *final*
  consumer (``_Sites``), composed through inlined consumers.  A pointwise
  consumer that is itself inlined into a 3x3 stencil reads ``f`` at 9
  points, so ``f`` is evaluated 9 times per output point (harris: the Sobel
  derivatives ``Ix``/``Iy`` behind the products inlined into the 3x3 sums
  must be computed once per point, not nine times).

A Func read through a data-dependent index (a lookup table) is never inlined:
it is usually small and read many times.  The limits are the spec's
``cost_params`` (``specs/cost_params.py``).
"""
from __future__ import annotations

from ..model import expr as E
from ..model.func import Func
from ..model.pipeline import Pipeline
from ..model.visit import walk

def data_dependent(call: E.Call) -> bool:
    """Whether ``call`` reads at an index computed from another load (``lut[f(x)]``)."""
    return any(isinstance(m, E.Call) for a in call.args for m in walk(a))


def _gathers(e) -> int:
    """Loads of ``e`` at a data-dependent index: a gather each, in vector code."""
    return sum(1 for n in walk(e) if isinstance(n, E.Call) and data_dependent(n))


def _variant_ops(e) -> int:
    """Arithmetic of the parts of ``e`` that depend on a loop variable
    (loop-invariant parts, such as ``input.extent(0) - 1``, are hoisted)."""
    from ..analysis.costs import node_cost
    varying: dict = {}

    def dep(n) -> bool:
        hit = varying.get(id(n))
        if hit is None:
            hit = isinstance(n, (E.Var, E.RVar, E.Call)) or any(dep(c) for c in _kids(n))
            varying[id(n)] = hit
        return hit
    return sum(node_cost(n) for n in walk(e) if dep(n))


def _moves_only(e) -> bool:
    """Whether ``e`` computes nothing from its loaded value but chooses it (a boundary
    condition, a crop, a transpose, a constant exterior's select): every operation that
    takes the load as an operand is a select."""
    loads = {id(n) for n in walk(e) if isinstance(n, E.Call)}
    reads: dict = {}

    def reads_load(n) -> bool:
        hit = reads.get(id(n))
        if hit is None:
            hit = id(n) in loads or (not isinstance(n, E.Call)
                                     and any(reads_load(c) for c in _kids(n)))
            reads[id(n)] = hit
        return hit
    return not any(reads_load(n) and not isinstance(n, (E.Call, E.Select))
                   for n in walk(e) if not isinstance(n, (E.Var, E.Const)))


def _kids(n):
    from ..model.visit import children
    return children(n)


def _affine_var(a) -> E.Var | None:
    """The Var of ``v``, ``v + c``, ``v - c``, ``k*v (+ c)`` (k != 0), else None."""
    if isinstance(a, E.Var):
        return a
    if isinstance(a, E.BinOp) and a.op in ("add", "sub") and isinstance(a.b, E.Const):
        return _affine_var(a.a)
    if isinstance(a, E.BinOp) and a.op == "mul":
        if isinstance(a.b, E.Const) and a.b.value != 0:
            return _affine_var(a.a)
        if isinstance(a.a, E.Const) and a.a.value != 0:
            return _affine_var(a.b)
    return None


def _injective(args) -> bool:
    vs = [_affine_var(a) for a in args]
    if any(v is None for v in vs):
        return False
    return len({id(v) for v in vs}) == len(vs)


def _all_call_sites(pipeline: Pipeline) -> dict:
    """callee name -> [(consumer, definition index, call, in an update site)]."""
    out: dict = {}
    for cname, c in pipeline.funcs.items():
        for i, d in enumerate(c.definitions()):
            for e in (d.value,) + tuple(d.args):
                is_site = e is not d.value
                for n in walk(e):
                    if isinstance(n, E.Call) and n.target.name != cname:
                        out.setdefault(n.target.name, []).append((cname, i, n, is_site))
    return out


def _form(a, pure: list):
    """An index argument as a linear form (var, k, c) over the consumer's pure
    Vars (var None: a constant), or None when it is not one."""
    from ..analysis.intervals.linear import var_form
    lin = var_form(a)
    if lin is None or (lin[0] is not None and lin[0] not in pure):
        return None
    return lin


class _Sites:
    """Distinct points of a Func read per point of each *final* consumer (a
    consumer that is not inlined), through chains of inlined consumers.

    A site is a tuple of per-dimension linear forms ``(var, k, c)`` over the
    final consumer's pure Vars; a non-linear index is a token naming the index
    node and the path composed onto it (two tokens are equal only for the same
    node along the same path, which may count one point twice: conservative)."""

    def __init__(self, pipeline: Pipeline, all_sites: dict):
        self.pipeline = pipeline
        self.direct: dict = {}          # f -> {consumer: set of sites}
        self.final: dict = {}           # inlined f -> {final consumer: set of sites}
        for callee, sites in all_sites.items():
            per: dict = {}
            for cname, _i, call, _is_site in sites:
                pure = [v.name for v in pipeline.funcs[cname].pure.args]
                per.setdefault(cname, set()).add(self._site(call.args, pure))
            self.direct[callee] = per

    def _site(self, args, pure) -> tuple:
        out = []
        for a in args:
            f = _form(a, pure)
            out.append(f if f is not None else ("?", id(a)))
        return tuple(out)

    def _compose(self, site, outer, cvars) -> tuple:
        """``site`` (over the consumer's Vars ``cvars``) with the consumer's Vars
        replaced by the forms of ``outer`` (a site of the consumer)."""
        out = []
        for form in site:
            if form[0] == "?":
                out.append(("?", (form, outer)))
                continue
            var, k, c = form
            if var is None:
                out.append((None, 0, c))
                continue
            o = outer[cvars.index(var)]
            if o[0] == "?":
                out.append(("?", (form, o)))
                continue
            ov, ok, oc = o
            out.append((ov, k * ok, k * oc + c) if ov is not None else (None, 0, k * oc + c))
        return tuple(out)

    def in_finals(self, name: str, inlined) -> dict:
        out: dict = {}
        for c, sites in self.direct.get(name, {}).items():
            if c not in inlined:
                out.setdefault(c, set()).update(sites)
                continue
            cvars = [v.name for v in self.pipeline.funcs[c].pure.args]
            for d, outer_sites in self.final[c].items():
                for o in outer_sites:
                    for s_ in sites:
                        out.setdefault(d, set()).add(self._compose(s_, o, cvars))
        return out


def _points(regions, name) -> int:
    n = 1
    for lo, hi in regions.get(name, ()):
        n *= max(0, hi - lo + 1)
    return n


def site_evaluations(finals: dict, regions: dict, pure: dict) -> float:
    """How many times the inlined Func is evaluated: per final consumer ``d``
    and distinct site, once per iteration of the loops the site depends on and
    those outside them (``pure[d]``: d's Vars, innermost first); a compiler
    hoists a site out of the inner loops it does not depend on (a site in
    ``t`` alone is evaluated once per ``t``).  A non-linear index is taken to
    depend on every loop."""
    total = 0.0
    for d, sites in finals.items():
        ext = [max(0, hi - lo + 1) for lo, hi in regions.get(d, ())]
        names = pure.get(d, [])
        for site in sites:
            used = set()
            for form in site:
                if form[0] == "?":
                    used.add(0)
                elif form[0] is not None:
                    used.add(names.index(form[0]) if form[0] in names else 0)
            n = 1
            for e in (ext[min(used):] if used else ()):
                n *= e
            total += n
    return float(total)


def inlining_pays(work: float, points: int, evals: float) -> tuple[bool, float]:
    """Whether inlining a Func is no more work than computing it once.

    ``work``: operations per point of the Func (loads of its own inputs
    counted as cached loads); ``evals``: its evaluations once inlined
    (``site_evaluations``).  Computed at root (or per tile) instead, it is
    evaluated ``points`` times, stored once and loaded ``evals`` times.
    Returns (pays, evals / points)."""
    factor = evals / points if points else 1.0
    return evals * work <= points * (work + 1.0) + evals, factor


def choose_inlined(pipeline: Pipeline, regions: dict, params) -> frozenset:
    """The Funcs to inline, decided consumers first (see the module docstring;
    ``params``: the spec's CostParams)."""
    inlined = set()
    all_sites = _all_call_sites(pipeline)
    sites = _Sites(pipeline, all_sites)
    pure = {n: [v.name for v in f.pure.args] for n, f in pipeline.funcs.items()}
    for name in reversed(pipeline.order()):
        f: Func = pipeline.funcs[name]
        if pipeline.is_output(name) or f.updates:
            continue
        direct = all_sites.get(name, [])
        if not direct:
            continue
        if any(is_site for _, _, _, is_site in direct):
            continue
        ops = _variant_ops(f.pure.value) + params.gather_ops * _gathers(f.pure.value)
        n_calls = sum(1 for n in walk(f.pure.value) if isinstance(n, E.Call))

        def trivial() -> bool:
            return ops <= params.trivial_ops and (n_calls < 2 or sum(map(len, sites.in_finals(
                name, inlined).values())) <= params.max_trivial_stencil_sites)
        ok = False
        if n_calls == 1 and ops <= params.data_movement_ops and _moves_only(f.pure.value):
            ok = True
        elif any(not _injective(call.args) for _, _, call, _ in direct):
            # data-dependent or many-to-one reads: only trivial Funcs, and never LUTs
            data_dep = any(data_dependent(call) for _, _, call, _ in direct)
            ok = not data_dep and trivial()
        elif ops <= params.trivial_ops:
            ok = trivial()
        else:
            evals = site_evaluations(sites.in_finals(name, inlined), regions, pure)
            ok = inlining_pays(ops + n_calls, _points(regions, name), evals)[0]
        if ok:
            inlined.add(name)
            sites.final[name] = sites.in_finals(name, inlined)
    return frozenset(inlined)


def recompute_factors(pipeline: Pipeline, regions: dict, inlined, names) -> dict:
    """name -> evaluations per point of each Func in ``names`` if it were inlined too
    (``site_evaluations`` over its points), with the Funcs ``inlined`` already
    inlined; what ``inline_refine`` screens its trials with."""
    sites = _Sites(pipeline, _all_call_sites(pipeline))
    pure = {n: [v.name for v in f.pure.args] for n, f in pipeline.funcs.items()}
    done: set = set()
    for name in reversed(pipeline.order()):
        if name in inlined:
            done.add(name)
            sites.final[name] = sites.in_finals(name, done)
    out = {}
    for name in names:
        evals = site_evaluations(sites.in_finals(name, done), regions, pure)
        pts = _points(regions, name)
        out[name] = evals / pts if pts else float("inf")
    return out
