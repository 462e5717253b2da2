"""``lower(pipeline, schedule)``: Pipeline + Schedule -> LoweredPipeline.

The passes, in order (each a function IR -> IR that returns unchanged
subtrees as the same objects)::

    plan     = make_plan(pipeline, schedule)         # resolve levels, inline set
    nests    = build_stage_nests(plan)               # 1+2: inlining, loops per stage
    body     = place_realizations(plan, nests)       # 4: compute/store levels + bounds
    regions  = input_region_exprs(body, ...)         #    inputs' regions (needs Calls)
    body     = flatten_storage(body, ...)            # 5: Calls/Provides -> Loads/Stores
    body     = partition_loops(body, target)         #    clamp-free steady states (CPU
                                                     #    loops; GPU: a branch per block)
    body     = simplify_stmt(body)                   # 6
    body     = promote_accumulators(body)            #    CPU: a reduction's register tile local
    check_lanes(body)                                # 3: vector/unroll extents constant
    body     = free_early(body)                      #    CPU: Free after each buffer's last use
    verify(lowered)                                  # 7

Arguments of the result, in calling order: the inputs (sorted by name), the
outputs (pipeline order), the Params (sorted by name).
"""
from __future__ import annotations

from ..errors import BoundsError, ScheduleError
from ..model import expr as E
from ..model import types as T
from ..model.pipeline import Pipeline
from . import ir as L
from .accumulate import promote_accumulators
from .flatten import flatten_storage
from .free import free_early
from .inline import Inliner
from .partition import partition_loops
from .plan import make_plan
from .realize import func_value_bounds_for, place_realizations
from .regions import input_region_exprs
from .simplify_stmt import simplify_stmt
from .stages import build_stage, nest_names
from .verify import verify


class _Named:
    """An output as ``input_region_exprs`` sees it: a name and a rank."""

    def __init__(self, name: str, dims: int):
        self.name, self.dims = name, dims


def build_stage_nests(plan) -> dict:
    """``{func: [StageNest per stage]}`` for every realized Func.  Inlined
    Funcs are substituted into the definitions as the nests are built."""
    inliner = Inliner(plan.inlined)
    nests = {}
    for name in plan.realized():
        f = plan.func(name)
        stages = plan.stages[name]
        nests[name] = [build_stage(f, k, stages[k], is_output=name in plan.outputs,
                                   inliner=inliner)
                       for k in range(len(f.definitions()))]
    return nests


def check_lanes(body: L.Stmt) -> None:
    """Vectorized and unrolled loops need constant extents (known only now)."""
    for s in L.walk_stmts(body):
        if isinstance(s, L.For) and s.kind in ("vectorized", "unrolled") \
                and not isinstance(s.extent, E.Const):
            func = s.name.split(".s")[0]
            loop = s.name.rsplit(".", 1)[-1]
            what = "vectorize" if s.kind == "vectorized" else "unroll"
            raise ScheduleError(
                f"Func {func}: loop {loop} is {s.kind} but its extent {s.extent} is not a "
                f"constant; give a width ({what}({loop}, 8)) or split it first")


def arguments(pipeline: Pipeline) -> tuple:
    args = [L.Argument(n, "buffer", img.type, img.dims, False) for n, img in pipeline.images.items()]
    args += [L.Argument(o.name, "buffer", o.type, o.dimensions(), True) for o in pipeline.outputs]
    args += [L.Argument(n, "scalar", p.type) for n, p in pipeline.params.items()]
    return tuple(args)


def lower(pipeline: Pipeline, schedule=None, *, target: str | None = None,
          check: bool = True, buffer_mins: bool = False) -> L.LoweredPipeline:
    """Lower ``pipeline`` with ``schedule`` (None: every Func computed at root,
    serial) to the loop IR.  ``target`` defaults to the schedule's target
    ("cpu" without a schedule).  ``check`` runs the verifier.  ``buffer_mins``: every
    input and output buffer starts at a run-time min per dimension (the scalar
    arguments ``<buffer>.min.<d>``) instead of 0, and the outputs are computed over
    ``[min, min + extent)``."""
    return _lower(pipeline, schedule, target, check, buffer_mins)


def min_arguments(args) -> tuple:
    """The ``<buffer>.min.<d>`` scalar arguments of a build with ``buffer_mins``."""
    return tuple(L.Argument(f"{a.name}.min.{d}", "scalar", T.int32)
                 for a in args if a.kind == "buffer" for d in range(a.dims))


def _lower(pipeline, schedule, target, check, buffer_mins=False):
    plan = make_plan(pipeline, schedule, target)
    pipeline = plan.pipeline            # the schedule's view: with its wrapper Funcs
    plan.buffer_mins = buffer_mins
    nests = build_stage_nests(plan)
    # Bounds inference reads the Calls, so it runs before flattening.
    body = place_realizations(plan, nests)
    args = arguments(pipeline)
    buffer_args = {a.name for a in args if a.kind == "buffer"}
    if buffer_mins:
        args += min_arguments(args)
    known = {k: v for ns in nests.values() for n in ns for k, v in n.ranges.items()}
    loop_names = frozenset().union(*(nest_names(n.stmt) for ns in nests.values() for n in ns))
    value_bounds = func_value_bounds_for(pipeline)
    regions = input_region_exprs(body, list(pipeline.images.values()), buffer_args, known,
                                 value_bounds, loop_names)
    outs = [_Named(f.name, len(f.args)) for f in pipeline.outputs]
    try:
        out_reads = input_region_exprs(body, outs, buffer_args, known, value_bounds,
                                       loop_names)
    except BoundsError:
        out_reads = ()      # unbounded: the algorithm's regions (checked at realize) say so
    body = flatten_storage(body, buffer_args, buffer_mins)
    body = partition_loops(body, plan.target)
    # Simplify after flattening, so the index arithmetic folds too.
    body = simplify_stmt(body)
    passes = {} if schedule is None else schedule.codegen     # CPU passes a schedule leaves out
    if plan.target == "cpu" and passes.get("accumulator_tiles", True):
        body = promote_accumulators(body)
    check_lanes(body)
    if plan.target == "cpu" and passes.get("free_early", True):
        body = free_early(body)
    lowered = L.LoweredPipeline(pipeline.outputs[0].name, args, body, plan.target,
                                tuple(plan.notes), regions, out_reads)
    if check:
        verify(lowered)
    return lowered
