"""Per-Func profiling compiled into the generated code (``ts.compile(..., profile=True)``).

What is measured
----------------
* each Func: the time spent in its ``produce`` regions (``ProducerConsumer`` nodes with
  ``is_producer``), *excluding* the producers nested in it (their time counts for the
  inner Func only), and how many times a produce region was entered;
* each parallel loop (a "region"): its wall time, the busy time of the workers (the
  time each thread spent in the outlined body) and the thread *utilization*,
  ``busy / (wall x team size)``;
* the whole call of the kernel (the "run").

Time inside a parallel region is counted in *wall-clock shares*: a thread of a team of
T threads that spends d ticks in Func f adds ``d / T`` to f. Every worker's time lies
within the region's wall time, so the shares of a region sum to at most its wall time;
the rest (threads idle, waiting at the join, starting up) is the region's *idle* time.
So the Funcs, the idle time of the regions and "(other)" (the run outside every produce
region: unpacking arguments, allocations) add up to the run's wall time, and a
parallel Func's figure reads like its serial one.

The timer
---------
A timer read costs a few nanoseconds and no call into Python: on x86 hosts whose
time-stamp counter runs at a constant rate (``constant_tsc`` in ``/proc/cpuinfo``) it is
``llvm.readcyclecounter`` (the ``rdtsc`` instruction), converted to seconds with a
frequency measured once per process against ``time.perf_counter``; elsewhere it is the C
library's ``clock_gettime(CLOCK_MONOTONIC)`` in nanoseconds. Each profiled module
defines ``<entry>.ticks`` (the timer, inlined at every use) and exports it, so the
calibration reads the very timer the code uses.

Where the counters live
-----------------------
An ``int64`` array per ``realize`` call, zeroed, whose address goes in the ``scalars``
slot after the Params (and after a checked build's three fault slots): element 0 is the
number of rows, then one row of :attr:`ProfileLayout.stride` counters per thread of the
team (a multiple of 8 counters: rows never share a cache line). A thread adds only to
its own row (``min(thread number, rows - 1)``), so no counter needs an atomic update.
:mod:`.profile_report` sums the rows after the call and accumulates them in the
``CompiledPipeline`` (``profile()``, ``profile_report()``).

A module generated without ``profile=True`` contains none of this: the instrumentation
is emitted only through a :class:`ProfileContext`, which exists only in profiled builds.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...lower import ir as L

__all__ = ["ProfileLayout", "ProfileContext", "plan", "define_ticks", "host_timer",
           "HEADER", "OTHER", "RUN", "FUNC_SLOTS", "REGION_SLOTS"]

I32 = ir.IntType(32)
I64 = ir.IntType(64)

HEADER = 8                  # counters before row 0: [rows, unused...]
OTHER, RUN = 0, 1           # per row: self time outside every producer; the run's ticks
FUNC_SLOTS = 2              # per Func: self ticks (shares), entries
REGION_SLOTS = 5            # per region: idle (shares), wall, busy, capacity, entries
CLOCK_MONOTONIC = 1         # Linux's value


def host_timer(triple: str) -> str:
    """``"rdtsc"`` on x86 hosts with a constant-rate time-stamp counter, else
    ``"clock_gettime"``."""
    arch = triple.split("-", 1)[0]
    if arch in ("x86_64", "i386", "i686", "x86"):
        try:
            with open("/proc/cpuinfo") as f:
                if "constant_tsc" in f.read():
                    return "rdtsc"
        except OSError:
            pass
    return "clock_gettime"


@dataclass(frozen=True)
class ProfileLayout:
    """Where each Func's and each parallel region's counters are in a row, and the timer.

    ``funcs``: the produced Funcs, in program order; ``regions``: ``(loop name, the Func
    whose produce region holds the loop, or None)``; ``stride``: counters per row."""

    funcs: tuple
    regions: tuple
    timer: str
    ticks_symbol: str
    stride: int

    def func_slot(self, name: str) -> int:
        return 2 + FUNC_SLOTS * self.funcs.index(name)

    def region_slot(self, loop: str) -> int:
        k = [r[0] for r in self.regions].index(loop)
        return 2 + FUNC_SLOTS * len(self.funcs) + REGION_SLOTS * k

    def size(self, rows: int) -> int:
        """The number of int64 counters of a call with ``rows`` thread rows."""
        return HEADER + max(1, rows) * self.stride


def plan(lowered: L.LoweredPipeline, entry: str, timer: str) -> ProfileLayout:
    """The layout for ``lowered``: every producer and every parallel loop in the program
    (a loop that ends up running serially, nested in another, keeps a slot unused)."""
    funcs: list[str] = []
    regions: dict[str, str | None] = {}
    stack = [(lowered.body, None)]
    while stack:                    # iterative: programs may nest deeply
        s, owner = stack.pop()
        if isinstance(s, L.ProducerConsumer) and s.is_producer:
            if s.name not in funcs:
                funcs.append(s.name)
            owner = s.name
        elif isinstance(s, L.For) and s.kind == "parallel" and s.name not in regions:
            regions[s.name] = owner
        stack.extend((c, owner) for c in reversed(L.stmt_children(s)))
    n = 2 + FUNC_SLOTS * len(funcs) + REGION_SLOTS * len(regions)
    return ProfileLayout(tuple(funcs), tuple(regions.items()), timer, entry + ".ticks",
                         -(-n // 8) * 8)


def define_ticks(module: ir.Module, layout: ProfileLayout) -> ir.Function:
    """Define the exported ``i64 <entry>.ticks()``: the timer of ``layout``."""
    fn = ir.Function(module, ir.FunctionType(I64, []), layout.ticks_symbol)
    fn.attributes.add("nounwind")
    fn.attributes.add("alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if layout.timer == "rdtsc":
        rdtsc = ir.Function(module, ir.FunctionType(I64, []), "llvm.readcyclecounter")
        b.ret(b.call(rdtsc, []))
        return fn
    ts_ty = ir.LiteralStructType([I64, I64])
    cg = ir.Function(module, ir.FunctionType(I32, [I32, ts_ty.as_pointer()]), "clock_gettime")
    ts = b.alloca(ts_ty)
    b.call(cg, [ir.Constant(I32, CLOCK_MONOTONIC), ts])
    zero = ir.Constant(I32, 0)
    sec = b.load(b.gep(ts, [zero, zero]))
    nsec = b.load(b.gep(ts, [zero, ir.Constant(I32, 1)]))
    b.ret(b.add(b.mul(sec, ir.Constant(I64, 10 ** 9)), nsec))
    return fn


class ProfileContext:
    """The instrumentation state of one LLVM function being emitted: the counters row of
    the thread running it, the weight of its time (None: 1; else the team size, an i64
    value), and the static stack of the timed slots around the code being emitted (the
    innermost is charged the time not claimed by the regions nested in it)."""

    def __init__(self, layout: ProfileLayout, module: ir.Module, base, row, weight, stack):
        self.layout, self.module = layout, module
        self.base, self.row, self.weight = base, row, weight
        self.stack = list(stack)

    @classmethod
    def for_entry(cls, layout, module, builder, base) -> "ProfileContext":
        """The context of the impl function (the calling thread: row 0, weight 1)."""
        row = builder.gep(base, [ir.Constant(I32, HEADER)], inbounds=True, name="prof.row")
        return cls(layout, module, base, row, None, [OTHER])

    # -- primitives --------------------------------------------------------------------
    def ticks(self, b: ir.IRBuilder) -> ir.Value:
        return b.call(self.module.globals[self.layout.ticks_symbol], [])

    def _add(self, b, slot: int, value, row=None) -> None:
        p = b.gep(self.row if row is None else row, [ir.Constant(I32, slot)], inbounds=True)
        b.store(b.add(b.load(p), value), p)

    def _share(self, b, ticks):
        return ticks if self.weight is None else b.udiv(ticks, self.weight)

    def _claim(self, b, slot: int, ticks) -> None:
        """``slot`` gets ``ticks`` (a share), taken from the slot around it."""
        share = self._share(b, ticks)
        self._add(b, slot, share)
        self._add(b, self.stack[-1], b.sub(ir.Constant(I64, 0), share))

    # -- the run -----------------------------------------------------------------------
    def begin_run(self, b):
        return self.ticks(b)

    def end_run(self, b, t0) -> None:
        d = b.sub(self.ticks(b), t0)
        self._add(b, RUN, d)
        self._add(b, OTHER, d)

    # -- produce regions -----------------------------------------------------------------
    def enter_produce(self, b, name: str):
        slot = self.layout.func_slot(name)
        self._add(b, slot + 1, ir.Constant(I64, 1))
        self.stack.append(slot)
        return slot, self.ticks(b)

    def exit_produce(self, b, token) -> None:
        slot, t0 = token
        d = b.sub(self.ticks(b), t0)
        self.stack.pop()
        self._claim(b, slot, d)

    # -- parallel regions ----------------------------------------------------------------
    def enter_parallel(self, b, loop: str):
        """At the call site (the thread that starts the team)."""
        return self.layout.region_slot(loop), self.ticks(b)

    def exit_parallel(self, b, token, team) -> None:
        """``team``: the i32 team size the call site asked for (1 when it ran serially)."""
        slot, t0 = token
        d = b.sub(self.ticks(b), t0)
        self._claim(b, slot, d)                       # idle: the wall time ...
        self._add(b, slot + 1, self._share(b, d))     # ... minus the workers' shares
        self._add(b, slot + 3, b.mul(d, b.sext(team, I64)))
        self._add(b, slot + 4, ir.Constant(I64, 1))

    def worker_hooks(self, loop: str, capture_index: int):
        """``(enter, exit, contexts)`` for ``emit_parallel_for(around=...)``: each call of
        the outlined body finds its thread's row and team size, times itself, and charges
        its share to the Func around the loop (the region's idle time gives it up).
        ``contexts`` receives the body's :class:`ProfileContext` (for the producers
        nested in the loop); the counters' base pointer is capture ``capture_index``."""
        layout, module = self.layout, self.module
        region = layout.region_slot(loop)
        owner = self.stack[-1]
        contexts: list[ProfileContext] = []

        def enter(b, caps):
            from .parallel import emit_num_threads, emit_thread_num
            base = caps[capture_index]
            rows = b.load(base)
            tid = b.sext(emit_thread_num(b), I64)
            last = b.sub(rows, ir.Constant(I64, 1))
            r = b.select(b.icmp_signed("<", tid, rows), tid, last)
            off = b.add(b.mul(r, ir.Constant(I64, layout.stride)), ir.Constant(I64, HEADER))
            row = b.gep(base, [off], inbounds=True, name="prof.row")
            team = b.sext(emit_num_threads(b), I64)
            team = b.select(b.icmp_signed("<", team, ir.Constant(I64, 1)),
                            ir.Constant(I64, 1), team)
            ctx = ProfileContext(layout, module, base, row, team, [owner])
            contexts.append(ctx)
            return ctx, self.ticks(b)

        def exit_(b, caps, state):
            ctx, t0 = state
            d = b.sub(ctx.ticks(b), t0)
            ctx._add(b, region + 2, d)                 # busy: raw thread ticks
            share = ctx._share(b, d)                   # the Func's share, from idle
            ctx._add(b, owner, share)
            ctx._add(b, region, b.sub(ir.Constant(I64, 0), share))

        return enter, exit_, contexts
