"""The builder handles: ``s[f]`` (a ``FuncHandle``) and ``s[f].update(i)``.

Every method validates its arguments, computes the new frozen
``FuncSchedule``, checks it against the rest of the schedule, and only then
commits it and records a ``Directive``; a call that raises changes nothing.
Methods return the handle, so calls chain as in Halide.
"""
from __future__ import annotations

import numbers
from dataclasses import replace

from ..errors import ScheduleError
from . import expr as E
from . import schedule_stage as S
from .schedule_types import MEMORY_KINDS, TAIL_STRATEGIES, Bound, Directive, LoopLevel, implicit_inner_name


def _var(v) -> str:
    if isinstance(v, (E.Var, E.RVar)):
        return v.name
    if isinstance(v, str):
        return v
    raise ScheduleError(f"expected a Var, an RVar or a loop name, got {v!r}")


def _int(v, what: str, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ScheduleError(f"{where}: {what} must be an int, got {v!r}")
    return int(v)


def _func_name(f) -> str:
    if getattr(f, "components", None) is not None:
        raise ScheduleError(
            f"Func {f.name} is a Tuple; each of its values is its own Func with its own loops: "
            f"name one of {', '.join(c.name for c in f.components)}")
    name = getattr(f, "name", f)
    if not isinstance(name, str):
        raise ScheduleError(f"expected a Func or a Func name, got {f!r}")
    return name


class StageHandle:
    """Loop directives on one stage of a Func (``s[f]`` or ``s[f].update(i)``)."""

    __slots__ = ("_s", "_func", "_stage")

    def __init__(self, schedule, func: str, stage: int):
        self._s, self._func, self._stage = schedule, func, stage

    def __repr__(self) -> str:
        up = "" if self._stage == 0 else f".update({self._stage - 1})"
        return f"s[{self._func}]{up}"

    @property
    def _facts(self):
        return self._s._stage_facts(self._func)[self._stage]

    def _record(self, method, args, kwargs=()) -> Directive:
        return Directive(self._func, self._stage, method, tuple(args),
                         tuple((k, v) for k, v in kwargs if v is not None))

    def _stage_op(self, method, args, kwargs, fn):
        facts = self._facts
        fs = self._s._funcs[self._func]
        stages = list(fs.stages)
        stages[self._stage] = fn(facts, stages[self._stage])
        d = self._record(method, args, kwargs)
        self._s._commit(self._func, replace(fs, stages=tuple(stages)), d)
        return self

    @staticmethod
    def _tail(tail):
        return None if tail == "auto" else ("str", tail)

    # -- splitting and ordering -------------------------------------------------
    def split(self, old, outer, inner, factor, tail="auto"):
        """``old`` becomes ``outer`` (outside) and ``inner`` (``factor`` iterations)."""
        o, a, b = _var(old), _var(outer), _var(inner)
        f = _int(factor, "split factor", self._facts.where)
        return self._stage_op(
            "split", [("var", o), ("var", a), ("var", b), ("int", f)], [("tail", self._tail(tail))],
            lambda fa, st: S.split(fa, st, o, a, b, f, tail))

    def tile(self, *args, tail="auto"):
        """``tile(x, y, xo, yo, xi, yi, fx, fy)``: split x and y, then order the
        loops ``xi, yi, xo, yo`` (innermost first).  ``tile(x, y, xi, yi, fx, fy)``
        keeps ``x`` and ``y`` as the outer names (as Halide)."""
        where = self._facts.where
        if len(args) == 8:
            x, y, xo, yo, xi, yi = (_var(a) for a in args[:6])
        elif len(args) == 6:
            x, y, xi, yi = (_var(a) for a in args[:4])
            xo, yo = x, y
        else:
            raise ScheduleError(f"{where}: tile takes (x, y, xo, yo, xi, yi, fx, fy) or "
                                f"(x, y, xi, yi, fx, fy), got {len(args)} arguments")
        fx = _int(args[-2], "tile factor", where)
        fy = _int(args[-1], "tile factor", where)
        rec = [("var", _var(a)) for a in args[:-2]] + [("int", fx), ("int", fy)]

        def fn(fa, st):
            st = S.split(fa, st, x, xo, xi, fx, tail)
            st = S.split(fa, st, y, yo, yi, fy, tail)
            return S.reorder(fa, st, (xi, yi, xo, yo), f"tile({x}, {y}, ...)")
        return self._stage_op("tile", rec, [("tail", self._tail(tail))], fn)

    def reorder(self, *vars):
        """Reorder the listed loops, innermost first, within their current slots."""
        if len(vars) == 1 and isinstance(vars[0], (list, tuple)):
            vars = tuple(vars[0])
        names = [_var(v) for v in vars]
        return self._stage_op("reorder", [("var", n) for n in names], [],
                              lambda fa, st: S.reorder(fa, st, names))

    def fuse(self, inner, outer, fused):
        """Fuse ``inner`` and the loop just outside it, ``outer``, into ``fused``."""
        a, b, c = _var(inner), _var(outer), _var(fused)
        return self._stage_op("fuse", [("var", a), ("var", b), ("var", c)], [],
                              lambda fa, st: S.fuse(fa, st, a, b, c))

    # -- marking loops -------------------------------------------------------------
    def _split_mark(self, method, var, factor, tail, kind, mark_inner):
        v = _var(var)
        args = [("var", v)]
        if tail not in TAIL_STRATEGIES:       # checked here too: without a factor no split does
            raise ScheduleError(f"{self._facts.where}: {method}({v}): tail must be one of "
                                f"{TAIL_STRATEGIES}, got {tail!r}")

        def fn(fa, st):
            if factor is None:
                return S.mark(fa, st, v, kind, f"{method}({v})")
            S.find_loop(fa, st, v, method)
            inner = implicit_inner_name(method, v, S.seen_names(fa, st))
            st = S.split(fa, st, v, v, inner, factor, tail)
            return S.mark(fa, st, inner if mark_inner else v, kind, f"{method}({v}, {factor})")
        if factor is not None:
            args.append(("int", factor))
        return self._stage_op(method, args, [("tail", self._tail(tail))], fn)

    def vectorize(self, var, width=None, tail="auto"):
        """Mark ``var`` vectorized; with ``width``, split it by ``width`` first
        (``split(var, var, var_v, width)``) and vectorize the inner ``var_v``."""
        if width is not None:
            width = _int(width, "vector width", self._facts.where)
            if width < 2 or width > 64 or width & (width - 1):
                raise ScheduleError(f"{self._facts.where}: vectorize({_var(var)}, {width}): the "
                                    "width must be a power of two from 2 to 64")
        return self._split_mark("vectorize", var, width, tail, "vectorized", True)

    def unroll(self, var, factor=None, tail="auto"):
        """Mark ``var`` unrolled; with ``factor``, split into ``var`` and
        ``var_u`` (``factor`` iterations) and unroll ``var_u``."""
        if factor is not None:
            factor = _int(factor, "unroll factor", self._facts.where)
        return self._split_mark("unroll", var, factor, tail, "unrolled", True)

    def parallel(self, var, task_size=None, tail="auto"):
        """Run ``var`` in parallel; with ``task_size``, split into ``var`` and
        ``var_t`` (``task_size`` iterations per task) and parallelize ``var``."""
        if task_size is not None:
            task_size = _int(task_size, "task size", self._facts.where)
        return self._split_mark("parallel", var, task_size, tail, "parallel", False)

    def serial(self, var):
        """Run ``var`` as a plain loop (undoes parallel/vectorize/unroll marks)."""
        return self._split_mark("serial", var, None, "auto", "serial", False)

    def _need_gpu(self, method):
        if self._s.target != "cuda":
            raise ScheduleError(f"{self._facts.where}: {method} needs a GPU target; this "
                                f"schedule's target is {self._s.target!r} "
                                "(ts.Schedule(pipe, target='cuda'))")

    def _gpu_mark(self, method, kind, vars):
        self._need_gpu(method)
        names = [_var(v) for v in vars]
        if not 1 <= len(names) <= 3:
            raise ScheduleError(f"{self._facts.where}: {method} takes 1 to 3 loops, got {len(names)}")

        def fn(fa, st):
            for n in names:
                st = S.mark(fa, st, n, kind, f"{method}({', '.join(names)})")
            return st
        return self._stage_op(method, [("var", n) for n in names], [], fn)

    def gpu_blocks(self, *vars):
        """Map the loops to GPU blocks (x, y, z: innermost first)."""
        return self._gpu_mark("gpu_blocks", "gpu_block", vars)

    def gpu_threads(self, *vars):
        """Map the loops to GPU threads within a block (must be inside block loops)."""
        return self._gpu_mark("gpu_threads", "gpu_thread", vars)

    def gpu_tile(self, *args, tail="auto"):
        """``gpu_tile(x, xo, xi, tx)`` or ``gpu_tile(x, y, xo, yo, xi, yi, tx, ty)``:
        split/tile, then the outer loops are blocks and the inner ones threads."""
        self._need_gpu("gpu_tile")
        where = self._facts.where
        if len(args) not in (4, 8):
            raise ScheduleError(f"{where}: gpu_tile takes (x, xo, xi, tx) or "
                                f"(x, y, xo, yo, xi, yi, tx, ty), got {len(args)} arguments")
        n = len(args) // 4
        names = [_var(a) for a in args[:3 * n]]
        facs = [_int(a, "gpu_tile size", where) for a in args[3 * n:]]
        rec = [("var", a) for a in names] + [("int", f) for f in facs]
        act = f"gpu_tile({', '.join(names)}, ...)"

        def fn(fa, st):
            if n == 1:
                x, xo, xi = names
                st = S.split(fa, st, x, xo, xi, facs[0], tail)
                outer, inner = [xo], [xi]
            else:
                x, y, xo, yo, xi, yi = names
                st = S.split(fa, st, x, xo, xi, facs[0], tail)
                st = S.split(fa, st, y, yo, yi, facs[1], tail)
                st = S.reorder(fa, st, (xi, yi, xo, yo), act)
                outer, inner = [xo, yo], [xi, yi]
            for v in outer:
                st = S.mark(fa, st, v, "gpu_block", act)
            for v in inner:
                st = S.mark(fa, st, v, "gpu_thread", act)
            return st
        return self._stage_op("gpu_tile", rec, [("tail", self._tail(tail))], fn)


class FuncHandle(StageHandle):
    """``s[f]``: the pure stage's loop directives plus the Func-wide ones."""

    __slots__ = ()

    def __init__(self, schedule, func: str):
        super().__init__(schedule, func, 0)

    def update(self, i: int = 0) -> StageHandle:
        """The handle of update definition ``i`` (``s[f].update(0).vectorize(x)``)."""
        n = len(self._s._funcs[self._func].stages) - 1
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
            raise ScheduleError(f"Func {self._func} has {n} update definition(s); "
                                f"there is no update {i!r}")
        return StageHandle(self._s, self._func, i + 1)

    def _level(self, method, args, level: LoopLevel, store: bool, kwargs=()):
        s, name = self._s, self._func
        act = f"{method}({', '.join([str(v) for _, v in args] + [f'{k}={v[1]}' for k, v in kwargs])})"
        where = f"Func {name} (pure stage): {act}"
        if s.pipeline.is_output(name) and (level.kind != "root"):
            raise ScheduleError(f"{where}: {name} is an output of the pipeline; outputs are "
                                "computed and stored at root")
        fs = s._funcs[name]
        if level.kind == "inline" and len(fs.stages) > 1:
            raise ScheduleError(f"{where}: {name} has update definitions, so it cannot be inlined")
        if level.kind == "inline" and name in s._explicit_store:
            raise ScheduleError(f"{where}: {name} has a storage level "
                                f"({s._explicit_store[name]}); an inlined Func has no storage")
        if level.kind == "at":
            from .schedule_levels import check_target
            check_target(s.view, s._funcs, name, level, act)
        explicit = dict(s._explicit_store)
        if store:
            explicit[name] = level
            new = replace(fs, store=level)
        else:
            new = replace(fs, compute=level, store=explicit.get(name, level))
        from .schedule_levels import check_store
        check_store({**s._funcs, name: new}, name, new, where)
        s._commit(name, new, self._record(method, args, kwargs), explicit_store=explicit)
        return self

    def compute_inline(self):
        """Substitute the Func into its consumers (the default for non-outputs)."""
        return self._level("compute_inline", [], LoopLevel.inline(), False)

    def compute_root(self):
        """Compute the whole required region once, before its consumers."""
        return self._level("compute_root", [], LoopLevel.root(), False)

    def compute_at(self, consumer, var, update=None):
        """Compute the region needed by one iteration of loop ``var`` of
        ``consumer``'s pure stage, inside that loop::

            for y: for x: blur_y(x, y)     ->   for y:
                                                  for x': blur_x(x', y-1..y+1)
                                                  for x: blur_y(x, y)

        ``consumer`` may be an update's handle (``s[c].update(i)``), or
        ``update=i`` given: the loop is then one of that update stage's, and
        only that stage (and later ones inside the loop) may read the Func.
        """
        return self._at("compute_at", consumer, var, update, False)

    def store_at(self, consumer, var, update=None):
        """Allocate the buffer at loop ``var`` of ``consumer`` (at or outside
        the compute level; ``consumer``/``update`` as in ``compute_at``)."""
        return self._at("store_at", consumer, var, update, True)

    def _at(self, method, consumer, var, update, store):
        if isinstance(consumer, StageHandle):
            if update is not None:
                raise ScheduleError(f"Func {self._func} (pure stage): {method}: give the "
                                    "update as a handle or as update=, not both")
            c, stage = consumer._func, consumer._stage
        else:
            c = _func_name(consumer)
            if update is None:
                stage = 0
            else:
                stage = _int(update, "update", f"Func {self._func} (pure stage): {method}") + 1
                n = len(self._s._funcs[c].stages) - 1 if c in self._s._funcs else 0
                if not 0 < stage <= n:
                    raise ScheduleError(f"Func {self._func} (pure stage): {method}: Func {c} "
                                        f"has {n} update definition(s); there is no update "
                                        f"{update!r}")
        v = _var(var)
        kwargs = () if stage == 0 else (("update", ("int", stage - 1)),)
        return self._level(method, [("func", c), ("var", v)], LoopLevel.at(c, v, stage), store,
                           kwargs)

    def store_root(self):
        """Allocate the buffer outside every loop."""
        return self._level("store_root", [], LoopLevel.root(), True)

    def store_in(self, memory: str):
        """The buffer's memory space: one of auto, heap, stack, shared, register."""
        where = f"Func {self._func} (pure stage): store_in({memory!r})"
        if memory not in MEMORY_KINDS:
            raise ScheduleError(f"{where}: memory must be one of {MEMORY_KINDS}")
        if memory == "shared" and self._s.target != "cuda":
            raise ScheduleError(f"{where}: shared memory needs the 'cuda' target")
        fs = self._s._funcs[self._func]
        self._s._commit(self._func, replace(fs, memory=memory),
                        self._record("store_in", [("str", memory)]))
        return self

    def bound(self, var, min, extent):  # noqa: A002 - Halide's name
        """Compute the Func exactly over ``[min, min + extent)`` in pure Var ``var``."""
        v = _var(var)
        where = f"Func {self._func} (pure stage): bound({v}, {min}, {extent})"
        lo, ext = _int(min, "bound min", where), _int(extent, "bound extent", where)
        pure = [a.name for a in self._s.view.func(self._func).pure.args]
        if v not in pure:
            raise ScheduleError(f"{where}: {v} is not a pure Var of {self._func}; its Vars are "
                                f"{', '.join(pure)}")
        if ext <= 0:
            raise ScheduleError(f"{where}: the extent must be positive")
        fs = self._s._funcs[self._func]
        if any(b.var == v for b in fs.bounds):
            raise ScheduleError(f"{where}: {v} already has a bound")
        self._s._commit(self._func, replace(fs, bounds=fs.bounds + (Bound(v, lo, ext),)),
                        self._record("bound", [("var", v), ("int", lo), ("int", ext)]))
        return self
