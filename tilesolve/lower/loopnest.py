"""``Schedule.loop_nest(sizes)``: the loops of the lowered program, with concrete bounds.

Like Halide's ``print_loop_nest``, read from the loop IR that lowering produces (the
code that runs), not from a second model of the schedule::

    produce blur_y:
      parallel y.yo in [0, 149]:
        for x.xo in [0, 24]:
          produce blur_x:
            for y in [-1, 32]:
              ...
          consume blur_x:
            ...

The program is walked with the sizes given: every let and loop bound is evaluated, a
loop shows its first and last value, and what is inside a loop is shown for the loop's
*first* iteration (a Func computed at a consumer's loop shows the region of that first
tile).  A condition that the sizes decide (the version of a loop nest for outputs wide
enough to vectorize, a partitioned boundary) shows only the branch taken; one they do
not decide shows both.  A loop is named by its variable without the ``func.sK.``
prefix and split path (``yo``; an RVar keeps its RDom: ``r.y``), a loop with no
iterations at these sizes is left out, and a store shows the Func's left side
(``blur_x(x, y) = ...``, ``# update k`` for an update).  Allocations, frees and barriers are not shown.
"""
from __future__ import annotations

from ..errors import TilesolveError
from ..model import expr as E
from ..model.evaluate import eval_scalar
from ..model.printer import expr_str
from . import ir as L
from .lower import lower

_KIND_WORD = {"serial": "for", "parallel": "parallel", "vectorized": "vectorized",
              "unrolled": "unrolled", "gpu_block": "gpu_block", "gpu_thread": "gpu_thread"}


def _sizes_env(pipeline, sizes, input_sizes, params) -> dict:
    env = {}
    for o in pipeline.outputs:
        s = sizes.get(o.name) if isinstance(sizes, dict) else sizes
        if s is None:
            raise TilesolveError(f"loop_nest: no sizes for output {o.name}")
        s = [1] if o.is_scalar and not list(s) else list(s)
        for d, v in enumerate(s):
            env[f"{o.name}.extent.{d}"] = int(v)
            env[f"{o.name}.min.{d}"] = 0
    for name, img in pipeline.images.items():
        s = (input_sizes or {}).get(name)
        if s is None:
            continue
        for d, v in enumerate(s):
            env[f"{name}.extent.{d}"] = int(v)
    for name, p in pipeline.params.items():
        v = (params or {}).get(name, p.estimate)
        if v is not None:
            env[name] = v
    return env


class _Printer:
    def __init__(self, pipeline, env):
        self.pipeline, self.lines = pipeline, []
        self.env = dict(env)
        self.stage = 0             # the stage of the loops around (``func.sK.var``)
        self.rdoms = frozenset(d.rdom.name for f in pipeline.funcs.values()
                               for d in f.updates if d.rdom is not None)

    def value(self, e):
        try:
            return eval_scalar(e, self.env)
        except Exception:          # a name the sizes do not give: shown as an Expr
            return None

    def stmt(self, s, depth, env):
        pad = "  " * depth
        saved, self.env = self.env, env
        try:
            self._stmt(s, depth, pad)
        finally:
            self.env = saved

    def _stmt(self, s, depth, pad):
        if isinstance(s, L.Block):
            for x in s.stmts:
                self.stmt(x, depth, self.env)
        elif isinstance(s, L.LetStmt):
            env = dict(self.env)
            v = self.value(s.value)
            if v is not None:
                env[s.name] = v
            self.stmt(s.body, depth, env)
        elif isinstance(s, L.For):
            lo, n = self.value(s.min), self.value(s.extent)
            name = _short(s.name, self.rdoms)
            word = _KIND_WORD.get(s.kind, s.kind)
            if n is not None and n <= 0:
                return                 # no iterations at these sizes
            if lo is None or n is None:
                self.lines.append(f"{pad}{word} {name} in [{expr_str(s.min)}, "
                                  f"{expr_str(s.min)} + {expr_str(s.extent)} - 1]:")
            else:
                self.lines.append(f"{pad}{word} {name} in [{int(lo)}, {int(lo) + int(n) - 1}]:")
            env = dict(self.env)
            if lo is not None:
                env[s.name] = lo
            before, self.stage = self.stage, _stage_of(s.name)
            self.stmt(s.body, depth + 1, env)
            self.stage = before
        elif isinstance(s, L.IfThenElse):
            c = self.value(s.cond)
            if c is not None:
                taken = s.then_case if c else s.else_case
                if taken is not None:
                    self.stmt(taken, depth, self.env)
                return
            self.lines.append(f"{pad}if {expr_str(s.cond)}:")
            self.stmt(s.then_case, depth + 1, self.env)
            if s.else_case is not None:
                self.lines.append(f"{pad}else:")
                self.stmt(s.else_case, depth + 1, self.env)
        elif isinstance(s, L.ProducerConsumer):
            self.lines.append(f"{pad}{'produce' if s.is_producer else 'consume'} {s.name}:")
            self.stmt(s.body, depth + 1, self.env)
        elif isinstance(s, L.Allocate):
            self.stmt(s.body, depth, self.env)
        elif isinstance(s, L.Store):
            self.lines.append(f"{pad}{self.store(s)} = ...{self.stage_note(s)}")

    def store(self, s) -> str:
        f = self.pipeline.funcs.get(s.buffer)
        if f is None:
            return f"{s.buffer}[...]"
        d = f.definitions()[min(self.stage, len(f.definitions()) - 1)]
        return f"{s.buffer}({', '.join(expr_str(a) for a in d.args)})"

    def stage_note(self, s) -> str:
        return f"  # update {self.stage - 1}" if self.stage else ""


def _short(name: str, rdoms=frozenset()) -> str:
    """The loop's own name: ``blur_y.s0.y.yo`` -> ``yo``, ``hist.s1.r.y`` -> ``r.y``, a
    partitioned loop's steady part ``f.s0.x.x.steady`` -> ``x (steady)``."""
    parts = name.split(".")
    for i, p in enumerate(parts):
        if len(p) > 1 and p[0] == "s" and p[1:].isdigit():
            parts = parts[i + 1:] or parts
            break
    if parts[-1] == "steady" and len(parts) > 1:
        return f"{parts[-2]} (steady)"
    if len(parts) == 2 and parts[0] in rdoms:      # an RVar: r.x
        return ".".join(parts)
    return parts[-1]


def _stage_of(name: str) -> int:
    for p in name.split("."):
        if len(p) > 1 and p[0] == "s" and p[1:].isdigit():
            return int(p[1:])
    return 0


def loop_nest(s, sizes, *, input_sizes=None, params=None) -> str:
    """The loop nest of Schedule ``s`` with concrete bounds for output sizes ``sizes``
    (innermost first, or a dict by output name); ``input_sizes`` and ``params`` give
    what the bounds read of the inputs and Params (Params default to their estimates).
    ``s.loop_nest(...)`` calls it."""
    lowered = lower(s.pipeline, s, target=s.target)
    p = _Printer(s.view, _sizes_env(s.pipeline, sizes, input_sizes, params))
    p.stmt(lowered.body, 0, p.env)
    return "\n".join(p.lines) + "\n"
