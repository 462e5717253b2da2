"""``Schedule.loop_nest(sizes)``: the loops a schedule makes, with concrete bounds.

Like Halide's ``print_loop_nest``::

    produce blur_y:
      parallel yo in [0, 149]:
        for xo in [0, 24]:
          produce blur_x:
            for y in [-1, 32]:
              ...
          consume blur_x:
            ...

A loop that is one of the definition's own variables shows the values it
takes (``for y in [-1, 32]``); a loop made by ``split``/``fuse`` shows its
iteration count (``for yo in [0, 149]``: 150 iterations).  A Func computed at
a consumer's loop shows the region it computes in the *first* iteration of
that loop (and of every loop outside it).  Regions come from the interval
engine (``analysis.intervals``); tails are not shown (a split's inner loop
always shows ``[0, factor - 1]``).  Inlined Funcs do not appear.
"""
from __future__ import annotations

from ..errors import BoundsError, ScheduleError
from ..model import expr as E
from ..model.evaluate import extent_key
from ..model.pipeline import definition_exprs
from ..model.schedule_types import Split
from . import intervals

_KIND_WORD = {"serial": "for", "parallel": "parallel", "vectorized": "vectorized",
              "unrolled": "unrolled", "gpu_block": "gpu_block", "gpu_thread": "gpu_thread"}


class _Nest:
    """Loop ranges of one stage: forward extents, backward value ranges."""

    def __init__(self, transforms, ranges: dict):
        # nodes: name, extent; ``cur`` maps current loop names to node ids
        self.ext, self.cur, self.steps = [], {}, []
        for n, (lo, hi) in ranges.items():
            self.cur[n] = len(self.ext)
            self.ext.append(hi - lo + 1)
        for t in transforms:
            if isinstance(t, Split):
                old = self.cur.pop(t.old)
                o, i = len(self.ext), len(self.ext) + 1
                self.ext += [-(-self.ext[old] // t.factor), t.factor]
                self.cur[t.outer], self.cur[t.inner] = o, i
                self.steps.append(("split", old, o, i, t.factor))
            else:
                i, o = self.cur.pop(t.inner), self.cur.pop(t.outer)
                fused = len(self.ext)
                self.ext.append(self.ext[i] * self.ext[o])
                self.cur[t.fused] = fused
                self.steps.append(("fuse", fused, o, i, self.ext[i]))

    def relative(self, fixed) -> dict:
        """Ranges (relative to each original min) of the original loops when the
        loops in ``fixed`` sit at their first iteration and the others run fully."""
        rng = {nid: ((0, 0) if name in fixed else (0, self.ext[nid] - 1))
               for name, nid in self.cur.items()}
        for kind, a, o, i, f in reversed(self.steps):
            if kind == "split":
                (olo, ohi), (ilo, ihi) = rng.pop(o), rng.pop(i)
                rng[a] = (olo * f + ilo, min(ohi * f + ihi, self.ext[a] - 1))
            else:
                lo, hi = rng.pop(a)
                if hi - lo + 1 >= f:
                    rng[i] = (0, f - 1)
                else:
                    rng[i] = (lo % f, hi % f)
                rng[o] = (lo // f, hi // f)
        return rng


def _num(v):
    if v is None or isinstance(v, E.Expr):
        raise BoundsError(f"loop_nest needs concrete bounds, got {v}")
    return v


class _Printer:
    def __init__(self, s, sizes, input_sizes, params):
        iv = intervals
        self.iv, self.s, self.p = iv, s, s.pipeline
        self.funcs = s.func_schedules()
        self.roots = iv.required_regions(self.p, sizes, input_sizes=input_sizes, params=params)
        self.values = iv.func_value_bounds(self.p, params=params, input_sizes=input_sizes)
        scope: dict = {}
        for name, prm in self.p.params.items():
            val = (params or {}).get(name, prm.default)
            if val is not None:
                scope[name] = iv.Interval.point(val)
        for name, szs in (input_sizes or {}).items():
            for d, n in enumerate(szs):
                scope[extent_key(name, d)] = iv.Interval.point(int(n))
        self.scope0 = scope
        self.lines: list = []

    # -- ranges --------------------------------------------------------------------
    def rdom_ranges(self, rdom) -> dict:
        out = {}
        for k, (mn, ext) in enumerate(zip(rdom.mins, rdom.extents)):
            lo = self.iv.bounds_of(mn, self.scope0)
            n = self.iv.bounds_of(ext, self.scope0)
            if not (lo.is_single_point() and n.is_single_point()):
                raise BoundsError(f"loop_nest: the bounds of RDom {rdom.name} are not known; "
                                  "pass input_sizes=... or params=...")
            out[rdom[k].name] = (_num(lo.lo), _num(lo.lo) + _num(n.lo) - 1)
        return out

    def stage_ranges(self, name, k, region) -> dict:
        """Original loop name -> (lo, hi) for stage ``k`` of ``name`` over ``region``."""
        d = self.p.func(name).definitions()[k]
        out = self.rdom_ranges(d.rdom) if d.rdom is not None else {}
        for i, a in enumerate(d.args):
            if isinstance(a, E.Var):
                out[a.name] = (_num(region[i].lo), _num(region[i].hi))
        return out

    def inside(self, name, c, v, k) -> bool:
        """Whether Func ``name`` is computed within loop ``v`` of stage ``k`` of ``c``."""
        st = self.funcs[c].stages[k]
        lvl = self.funcs[name].compute
        while lvl.kind == "at":
            if lvl.func == c:
                return lvl.stage == k and 0 <= st.index(lvl.var) <= st.index(v)
            lvl = self.funcs[lvl.func].compute
        return False

    def regions_within(self, c, v, region, k) -> dict:
        """Regions of the Funcs computed inside loop ``v`` of stage ``k`` of ``c``
        (first iteration)."""
        st = self.funcs[c].stages[k]
        ranges = self.stage_ranges(c, k, region)
        nest = _Nest(st.transforms, ranges)
        rel = nest.relative(set(st.loop_names()[st.index(v):]))
        # the original loops are nodes 0..n-1, in the order of ``ranges``
        scope = dict(self.scope0)
        scope.update({n: self.iv.Interval(lo + rel[i][0], lo + rel[i][1])
                      for i, (n, (lo, _)) in enumerate(ranges.items())})
        need: dict = {}
        self._add_reads(c, k, scope, need)
        for name in reversed(self.p.order()):
            if name not in need or name == c:
                continue
            fs = self.funcs[name]
            if not (fs.compute.kind == "inline" or self.inside(name, c, v, k)):
                continue
            for j in range(len(fs.stages)):
                scope = dict(self.scope0)
                scope.update({n: self.iv.Interval(lo, hi)
                              for n, (lo, hi) in self.stage_ranges(name, j, need[name]).items()})
                self._add_reads(name, j, scope, need)
        return need

    def _add_reads(self, name, k, scope, need) -> None:
        d = self.p.func(name).definitions()[k]
        for e in definition_exprs(d):
            for callee, b in self.iv.boxes_required(e, scope, func_bounds=self.values).items():
                if callee in self.funcs and callee != name:
                    need[callee] = need[callee].union(b) if callee in need else b

    # -- printing ------------------------------------------------------------------
    def emit_func(self, name, region, ind):
        fs = self.funcs[name]
        self.lines.append("  " * ind + f"produce {name}:")
        for k, st in enumerate(fs.stages):
            ranges = self.stage_ranges(name, k, region)
            nest = _Nest(st.transforms, ranges)
            depth = ind + 1
            for d in reversed(st.dims):
                nid = nest.cur[d.var]
                lo, hi = ranges[d.var] if nid < len(ranges) else (0, nest.ext[nid] - 1)
                self.lines.append("  " * depth + f"{_KIND_WORD[d.kind]} {d.var} in [{lo}, {hi}]:")
                depth += 1
                depth = self.emit_children(name, d.var, region, depth, k)
            if k == 0 and not st.dims:
                depth = self.emit_children(name, None, region, depth, 0)
            args = ", ".join(str(a) for a in self.p.func(name).definitions()[k].args)
            self.lines.append("  " * depth + f"{name}({args}) = ..."
                              + ("" if k == 0 else f"  # update {k - 1}"))

    def emit_children(self, c, v, region, depth, k) -> int:
        """Produce blocks of the Funcs computed at loop ``v`` of stage ``k`` of ``c``;
        returns the indentation of the consumer's body."""
        kids = [n for n in self.p.order()
                if self.funcs[n].compute == self.funcs[n].compute.at(c, v, k)]
        if not kids:
            return depth
        need = self.regions_within(c, v, region, k)
        for n in kids:
            if n not in need:
                raise ScheduleError(f"Func {n} is computed at {c}.{v} but nothing inside that "
                                    "loop reads it")
            self.emit_func(n, need[n], depth)
            self.lines.append("  " * depth + f"consume {n}:")
            depth += 1
        return depth

    def run(self) -> str:
        depth = 0
        roots = [n for n in self.p.order() if self.funcs[n].compute.kind == "root"]
        for n in roots:
            self.emit_func(n, self.roots[n], depth)
            if not self.p.is_output(n) or n != roots[-1]:
                self.lines.append("  " * depth + f"consume {n}:")
                depth += 1
        return "\n".join(self.lines) + "\n"


def loop_nest(s, sizes, *, input_sizes=None, params=None) -> str:
    """The loop nest of Schedule ``s`` with concrete bounds for output sizes ``sizes``
    (like Halide's ``print_loop_nest``); ``s.loop_nest(...)`` calls it."""
    s.validate()
    return _Printer(s, sizes, input_sizes, params).run()
