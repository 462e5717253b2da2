"""The frozen values a Schedule is made of (what lowering and the solvers read).

A ``Schedule`` (``schedule.py``) is a builder: ``s[f].split(...)`` records a
directive and replaces the Func's ``FuncSchedule`` by a new frozen value.
``s.func_schedule(name)`` hands that value out.  Everything here is a frozen
dataclass holding tuples, strings and ints, so values compare and hash
structurally and can be shared freely.

Names.  Loops are named by strings: a pure Var's name (``"x"``), an RVar's name
(``"r.x"``) or a name introduced by a directive (``"xo"``).  Within one stage
the names of the current loops (``dims``) are distinct.  A ``Split`` may give
its outer (or inner) loop the name of the loop it splits (Halide's
``split(x, x, xi, 8)``); a ``Fuse`` may give the fused loop the name of one of
its two loops.  A transform's names therefore refer to the loop of that name
*at that point* of the ``transforms`` sequence; apply them in order.

Implicit names.  ``vectorize(x, 16)`` is ``split(x, x, x_v, 16)`` followed by
``vectorize(x_v)``; ``unroll(x, 4)`` splits into ``x`` and ``x_u`` and unrolls
``x_u``; ``parallel(y, 8)`` splits into ``y`` and ``y_t`` (the task) and
parallelizes the outer ``y`` (Halide keeps the old name for the outer loop too;
it names the inner one with a fresh Var).  Dots become underscores (RVar
``r.x`` gives ``r_x_u``); if the name is taken in the stage, ``2``, ``3``...
is appended (``x_v2``).  See ``implicit_inner_name``.
"""
from __future__ import annotations

from dataclasses import dataclass

TAIL_STRATEGIES = ("auto", "shift_inward", "guard_with_if", "round_up")
LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "gpu_block", "gpu_thread")
MEMORY_KINDS = ("auto", "heap", "stack", "shared", "register")
TARGETS = ("cpu", "cuda")

# Suffix of the inner loop a directive with a factor creates (see module doc).
IMPLICIT_SUFFIX = {"vectorize": "_v", "unroll": "_u", "parallel": "_t"}


@dataclass(frozen=True, slots=True)
class LoopLevel:
    """Where a Func is computed or stored.

    ``kind``: ``"inline"`` (substituted into its consumers; no loops, no
    storage), ``"root"`` (outside every loop: a whole-region buffer) or
    ``"at"`` (inside loop ``var`` of Func ``func``'s *pure* stage, i.e. once per
    iteration of that loop).  ``func`` and ``var`` are ``""`` unless
    ``kind == "at"``; ``var`` names a loop of the consumer's stage ``stage``
    (0: the pure stage, ``k``: update ``k - 1``) after its splits and fuses
    (one of ``func_schedule(func).stages[stage].dims``).  A Func read only by
    an update of its consumer may be computed inside that update's loops
    (Halide's ``LoopLevel(f, v, stage_index)``): max_filter computes its
    column scan per strip of the output's max-over-dx update.
    """

    kind: str
    func: str = ""
    var: str = ""
    stage: int = 0

    @staticmethod
    def inline() -> "LoopLevel":
        return LoopLevel("inline")

    @staticmethod
    def root() -> "LoopLevel":
        return LoopLevel("root")

    @staticmethod
    def at(func: str, var: str, stage: int = 0) -> "LoopLevel":
        return LoopLevel("at", func, var, stage)

    def is_inline(self) -> bool:
        return self.kind == "inline"

    def is_root(self) -> bool:
        return self.kind == "root"

    def is_at(self) -> bool:
        return self.kind == "at"

    def __str__(self) -> str:
        if self.kind != "at":
            return self.kind
        return f"{self.func}.{self.var}" if not self.stage else \
            f"{self.func}.update({self.stage - 1}).{self.var}"


@dataclass(frozen=True, slots=True)
class Split:
    """Split loop ``old`` into ``outer`` (``ceil(extent / factor)`` iterations)
    and ``inner`` (``factor`` iterations): ``old = outer * factor + inner``
    (before the tail adjustment).

    ``tail`` says what happens when ``factor`` does not divide the extent:
    ``"guard_with_if"`` (skip the points past the end), ``"shift_inward"``
    (the last tile is moved back to end at the end, recomputing a few points;
    legal only where recomputation is harmless: pure stages), ``"round_up"``
    (compute past the end; the buffer is rounded up; pure stages of Funcs that
    are not outputs only) or ``"auto"`` (decided by lowering with ``resolve_tail``).
    """

    old: str
    outer: str
    inner: str
    factor: int
    tail: str = "auto"


@dataclass(frozen=True, slots=True)
class Fuse:
    """Fuse loop ``inner`` and the loop just outside it, ``outer``, into one
    loop ``fused`` of ``extent(inner) * extent(outer)`` iterations with
    ``inner = fused % extent(inner)``, ``outer = fused / extent(inner)``."""

    inner: str
    outer: str
    fused: str


@dataclass(frozen=True, slots=True)
class Dim:
    """One loop of a stage: its name, how it runs, and whether it iterates an
    RDom (``is_rvar``: the loop is an RVar or was split/fused from one).

    ``kind``: ``"serial"``, ``"parallel"`` (CPU threads), ``"vectorized"``
    (one SIMD vector of the loop's extent), ``"unrolled"``, ``"gpu_block"`` or
    ``"gpu_thread"``.
    """

    var: str
    kind: str = "serial"
    is_rvar: bool = False


@dataclass(frozen=True, slots=True)
class StageSchedule:
    """The loops of one stage (the pure definition or one update).

    ``transforms``: the Splits and Fuses, in the order they apply, starting
    from the stage's original loops (the pure stage: the Func's pure Vars; an
    update: its RVars then the pure Vars on its left side).
    ``dims``: the resulting loops, innermost first (Halide's order), each
    named and marked.  The default pure stage has ``dims`` = the Func's pure
    Vars in order; the default update stage has the RDom's RVars (``r.x``
    innermost) then the update's pure Vars (pure Vars outer, RVars inner).
    """

    transforms: tuple = ()
    dims: tuple = ()

    def loop_names(self) -> tuple:
        """Loop names innermost first."""
        return tuple(d.var for d in self.dims)

    def dim(self, name: str) -> Dim | None:
        for d in self.dims:
            if d.var == name:
                return d
        return None

    def index(self, name: str) -> int:
        """Position of loop ``name`` in ``dims`` (0 = innermost), or -1."""
        for i, d in enumerate(self.dims):
            if d.var == name:
                return i
        return -1


@dataclass(frozen=True, slots=True)
class Bound:
    """``bound(var, min, extent)``: the Func is computed exactly over
    ``[min, min + extent - 1]`` in pure dimension ``var`` (a pure Var name)."""

    var: str
    min: int
    extent: int


@dataclass(frozen=True, slots=True)
class FuncSchedule:
    """Everything the schedule says about one Func.

    ``compute``: where it is computed (inline / root / at a consumer loop).
    ``store``: where its buffer is allocated; equal to ``compute`` unless
    ``store_at``/``store_root`` moved it outward (always at or outside
    ``compute``; ``inline`` when the Func is inlined).
    ``memory``: the buffer's memory space, one of ``MEMORY_KINDS``.
    ``stages``: ``stages[0]`` the pure definition, ``stages[i + 1]`` update i.
    ``bounds``: ``Bound`` values from ``bound()``, in call order.
    """

    compute: LoopLevel
    store: LoopLevel
    memory: str = "auto"
    stages: tuple = ()
    bounds: tuple = ()

    def is_inline(self) -> bool:
        return self.compute.kind == "inline"

    def is_root(self) -> bool:
        return self.compute.kind == "root"

    def stage(self, i: int) -> StageSchedule:
        return self.stages[i]


def implicit_inner_name(method: str, var: str, taken) -> str:
    """The inner loop's name for ``vectorize``/``unroll``/``parallel`` with a
    factor: ``<var>_v`` / ``<var>_u`` / ``<var>_t`` (dots replaced by ``_``),
    with ``2``, ``3``... appended while the name is in ``taken``."""
    base = var.replace(".", "_") + IMPLICIT_SUFFIX[method]
    name, k = base, 2
    while name in taken:
        name = f"{base}{k}"
        k += 1
    return name


def resolve_tail(tail: str, *, is_update: bool, is_rvar: bool, is_output: bool) -> str:
    """The concrete tail strategy for ``"auto"`` (others are returned as is).

    RVars guard with if (recomputing or rounding up a reduction point changes
    the result); pure stages shift inward.  Pure Vars of updates guard with if
    too: an update is not idempotent, so neither recomputing points
    (``shift_inward``) nor updating points past the region (``round_up``: they
    may belong to another iteration's region, with ``store_root``) is legal
    there, as in Halide; both are refused by name.
    """
    if tail != "auto":
        return tail
    if is_rvar or is_update:
        return "guard_with_if"
    return "shift_inward"


@dataclass(frozen=True, slots=True)
class Directive:
    """One recorded builder call: ``s[func]`` (``stage == 0``) or
    ``s[func].update(stage - 1)``, then ``.method(*args, **dict(kwargs))``.

    Each argument is a pair ``(kind, value)``: ``("var", "xo")`` a loop name,
    ``("func", "blur_y")`` a Func name, ``("int", 16)`` or ``("str", "heap")``.
    ``kwargs`` holds ``(name, arg)`` pairs, only those that differ from the
    default.  Replaying the directives in order rebuilds the schedule exactly.
    """

    func: str
    stage: int
    method: str
    args: tuple = ()
    kwargs: tuple = ()
