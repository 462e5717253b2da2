"""Native parallel-for for generated code: a thread pool underneath, no Python on the hot path.

Runtime ABI
-----------
Generated IR never names a threading library directly. It calls four tilesolve runtime
symbols, which :func:`install_runtime` binds process-wide with ``llvm.add_symbol`` before
any code is loaded (``JitModule`` calls it for you)::

    void ts_rt_parallel(void (*worker)(i8*), i8* data, i32 num_threads, i32 flags)
    i32  ts_rt_thread_num()       i32 ts_rt_num_threads()       i32 ts_rt_in_parallel()

Three runtimes can back them, chosen once per process (``install_runtime(kind)``):

* ``"pool"`` (the default): tilesolve's own pthread pool (``pool.py``), whose parallel
  regions wait only for the threads that joined them, so a worker that a busy machine
  has not scheduled yet never holds a loop up;
* ``"gomp"``: libgomp (found with ``ctypes.util.find_library("gomp")`` and loaded with
  ``llvm.load_library_permanently``): the symbols are *the addresses of*
  ``GOMP_parallel``, ``omp_get_thread_num``, ``omp_get_num_threads`` and
  ``omp_in_parallel``; its regions end with a barrier over the whole team;
* ``"serial"``: a tiny runtime compiled from IR in this module (``ts_rt_parallel`` just
  calls ``worker(data)``; the thread is 0 of 1), used with a ``RuntimeWarning`` when
  neither of the others can be.

The choice is recorded in :func:`runtime_info`. Since the names are indirect, objects in
the disk cache are valid under any runtime.

What :func:`emit_parallel_for` generates for ``for i in [0, n): body(i, captured...)``
-------------------------------------------------------------------------------------
::

    internal void @P.body(i32 lo, i32 hi, T0 c0, T1 c1, ...)     ; the outlined loop
        for i in [lo, hi): <body_fn_builder(builder, i, (c0, c1, ...))>
    internal void @P.worker(i8* data)                            ; run by each thread
        cl = (closure*) data; load n and the captured values
        static:  t = thread_num(), T = num_threads();  body(n*t/T, n*(t+1)/T, c...)
        dynamic: loop { s = atomicrmw add cl->next, chunk; if s >= n break;
                        body(s, min(s + chunk, n), c...) }
        (generated code uses dynamic, chunk = max(1, n / (T x CHUNKS_PER_THREAD)))
    ; at the call site, in the caller:
        closure = alloca {i32 n, i64 next, T0, T1, ...}   ; in the entry block
        store n, 0, captured values
        if n > 0:
            if in_parallel() or num_threads == 1:  body(0, n, c...)        ; serial
            else: ts_rt_parallel(@P.worker, closure, min(num_threads, n), 0)

Captured values are passed to the outlined body as *arguments*, so pointer arguments can
carry ``noalias`` (``noalias=`` flags) and LLVM's vectorizer sees the same facts it would
in the caller. ``num_threads`` is a runtime i32: ``0`` (or ``None``) lets the runtime decide
(``OMP_NUM_THREADS`` or the number of cores); the backend's entry point resolves the count
with :func:`resolve_num_threads` and passes it in.

Nesting: a parallel loop reached while already inside an active parallel region runs
*serially* in the calling thread (checked with ``omp_in_parallel``), so nested parallel
schedules are always safe and never oversubscribe. Several Python threads may call
compiled parallel code at once: under libgomp each becomes the master of its own team;
the pool serves one at a time and runs the other's loop serially.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import llvmlite.binding as llvm
from llvmlite import ir

from .target import LLVM_LOCK, host_target, runtime_engine

__all__ = ["RT_PARALLEL", "RT_THREAD_NUM", "RT_NUM_THREADS", "RT_IN_PARALLEL",
           "RuntimeInfo", "install_runtime", "runtime_info", "resolve_num_threads",
           "emit_parallel_for", "emit_thread_num", "emit_num_threads"]

# Generated parallel loops are dynamic with this many grabs per thread: a thread that
# the OS takes away (a loaded machine) then delays the loop by one grab, not by its
# whole static share, while the atomic counter costs a few grabs per thread.
CHUNKS_PER_THREAD = 8

RT_PARALLEL = "ts_rt_parallel"
RT_THREAD_NUM = "ts_rt_thread_num"
RT_NUM_THREADS = "ts_rt_num_threads"
RT_IN_PARALLEL = "ts_rt_in_parallel"

_GOMP_NAMES = {RT_PARALLEL: "GOMP_parallel", RT_THREAD_NUM: "omp_get_thread_num",
               RT_NUM_THREADS: "omp_get_num_threads", RT_IN_PARALLEL: "omp_in_parallel"}

I8P = ir.IntType(8).as_pointer()
I32 = ir.IntType(32)
I64 = ir.IntType(64)
WORKER_TYPE = ir.FunctionType(ir.VoidType(), [I8P])


@dataclass(frozen=True)
class RuntimeInfo:
    """Which parallel runtime backs the ``ts_rt_*`` symbols in this process."""

    kind: str                 # "pool", "gomp" or "serial"
    library: str | None       # the libgomp that was loaded, if any


_rt_lock = threading.Lock()
_runtime: RuntimeInfo | None = None
_serial_engine = None          # keeps the serial fallback's code alive


def runtime_info() -> RuntimeInfo | None:
    """The installed runtime, or None if :func:`install_runtime` has not run yet."""
    return _runtime


RUNTIMES = ("pool", "gomp", "serial")


def install_runtime(kind: str = "pool") -> RuntimeInfo:
    """Bind the ``ts_rt_*`` symbols once per process; later calls return the first choice
    (call it before the first compile to choose).  ``kind``: ``"pool"`` (falls back to
    libgomp, then serial), ``"gomp"`` (falls back to serial) or ``"serial"``."""
    global _runtime
    if kind not in RUNTIMES:
        raise ValueError(f"parallel runtime must be one of {RUNTIMES}, got {kind!r}")
    if _runtime is not None:
        return _runtime
    with _rt_lock:
        if _runtime is None:
            if kind == "pool" and _bind_pool():
                _runtime = RuntimeInfo("pool", None)
            else:
                lib = _find_gomp() if kind != "serial" else None
                if lib is not None and _bind_gomp(lib):
                    _runtime = RuntimeInfo("gomp", lib)
                else:
                    if kind != "serial":
                        warnings.warn("tilesolve: no thread pool and no libgomp; parallel "
                                      "loops will run serially", RuntimeWarning, stacklevel=2)
                    _bind_serial()
                    _runtime = RuntimeInfo("serial", None)
    return _runtime


def _bind_pool() -> bool:
    from . import pool
    try:
        with LLVM_LOCK:
            addrs = pool.install(host_target(), resolve_num_threads({}))
    except RuntimeError:           # no pthreads to resolve in this process
        return False
    if not addrs:
        return False
    for ours, name in ((RT_PARALLEL, "parallel"), (RT_THREAD_NUM, "thread_num"),
                       (RT_NUM_THREADS, "num_threads"), (RT_IN_PARALLEL, "in_parallel")):
        llvm.add_symbol(ours, addrs[name])
    return True


def _find_gomp() -> str | None:
    name = ctypes.util.find_library("gomp")
    candidates = [name] if name else []
    candidates.append("libgomp.so.1")
    for cand in candidates:
        try:
            with LLVM_LOCK:
                llvm.load_library_permanently(cand)
        except RuntimeError:
            continue
        if llvm.address_of_symbol("GOMP_parallel"):
            return cand
    return None


def _bind_gomp(lib: str) -> bool:
    addrs = {ours: llvm.address_of_symbol(theirs) for ours, theirs in _GOMP_NAMES.items()}
    if not all(addrs.values()):
        return False          # an incomplete libgomp: use the serial runtime instead
    for ours, addr in addrs.items():
        llvm.add_symbol(ours, addr)
    return True


_SERIAL_IR = """
define void @ts_rt_serial_parallel(void (i8*)* %fn, i8* %data, i32 %n, i32 %flags) {
  call void %fn(i8* %data)
  ret void
}
define i32 @ts_rt_serial_zero() {
  ret i32 0
}
define i32 @ts_rt_serial_one() {
  ret i32 1
}
"""


def _bind_serial() -> None:
    global _serial_engine
    with LLVM_LOCK:
        engine = runtime_engine(_SERIAL_IR)
        addr = engine.get_function_address
        llvm.add_symbol(RT_PARALLEL, addr("ts_rt_serial_parallel"))
        llvm.add_symbol(RT_THREAD_NUM, addr("ts_rt_serial_zero"))
        llvm.add_symbol(RT_NUM_THREADS, addr("ts_rt_serial_one"))
        llvm.add_symbol(RT_IN_PARALLEL, addr("ts_rt_serial_zero"))
        _serial_engine = engine


def resolve_num_threads(environ: Mapping[str, str], spec_cores: int | None = None) -> int:
    """Thread count for a call: ``TILESOLVE_NUM_THREADS``, else the spec's cores, else the
    CPUs this process may run on. Pure apart from the CPU query; the caller passes environ."""
    raw = environ.get("TILESOLVE_NUM_THREADS", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"TILESOLVE_NUM_THREADS must be a positive integer, got {raw!r}")
        if value < 1:
            raise ValueError(f"TILESOLVE_NUM_THREADS must be a positive integer, got {raw!r}")
        return value
    if spec_cores:
        return int(spec_cores)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


# ----------------------------------------------------------------------------- emission

def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(module, fnty, name)
    fn.attributes.add("nounwind")
    return fn


def _rt_query(builder: ir.IRBuilder, name: str) -> ir.Value:
    fn = _declare(builder.module, name, ir.FunctionType(I32, []))
    return builder.call(fn, [])


def emit_thread_num(builder: ir.IRBuilder) -> ir.Value:
    """i32 number of the calling thread in the current team (0 outside parallel loops)."""
    return _rt_query(builder, RT_THREAD_NUM)


def emit_num_threads(builder: ir.IRBuilder) -> ir.Value:
    """i32 size of the current team (1 outside parallel loops)."""
    return _rt_query(builder, RT_NUM_THREADS)


def _as_i32(value) -> ir.Value:
    if isinstance(value, int):
        return ir.Constant(I32, value)
    if value.type != I32:
        raise TypeError(f"expected an i32 value, got {value.type}")
    return value


BodyBuilder = Callable[[ir.IRBuilder, ir.Value, Sequence[ir.Value]], None]


def emit_parallel_for(builder: ir.IRBuilder, module: ir.Module, n_iterations,
                      body_fn_builder: BodyBuilder, captured_values: Sequence[ir.Value] = (),
                      num_threads_value=None, *, name: str = "par",
                      schedule: str = "static", chunk: int = 1,
                      noalias: Sequence[bool] | None = None, around=None,
                      team_out: list | None = None) -> ir.Function:
    """Emit ``for i in [0, n_iterations): body`` run by a team of threads.

    ``body_fn_builder(builder, i, captured)`` emits one iteration into the outlined body
    function: ``i`` is the i32 index, ``captured`` the body's own copies of
    ``captured_values`` (in order). It must leave ``builder`` at the end of an
    unterminated block. ``n_iterations`` and ``num_threads_value`` are i32 values or Python
    ints; ``num_threads_value`` None or 0 means the runtime default. ``schedule`` is
    ``"static"`` (one contiguous range per thread) or ``"dynamic"`` (threads grab ``chunk``
    iterations at a time from an atomic counter; ``chunk=0``: ``n / (threads x
    CHUNKS_PER_THREAD)``, at least 1, computed at run time). ``noalias[k]`` marks pointer capture k
    ``noalias`` in the body. Leaves ``builder`` after the loop; returns the body function.

    Profiling hooks (``backend/cpu/profile.py``; nothing is emitted without them):
    ``around = (enter, exit)`` wraps each call of the outlined body, ``state =
    enter(builder, captured)`` at its start and ``exit(builder, captured, state)`` at its
    end; ``team_out`` (a list) receives the i32 team size the call site asked for (1 when
    the loop ran serially, 0 when it had no iterations or left the size to the runtime).
    """
    if schedule not in ("static", "dynamic"):
        raise ValueError(f"schedule must be 'static' or 'dynamic', got {schedule!r}")
    if chunk < 0:
        raise ValueError(f"chunk must be >= 1 (or 0: about {CHUNKS_PER_THREAD} per thread), "
                         f"got {chunk}")
    captured_values = tuple(captured_values)
    n = _as_i32(n_iterations)
    nthreads = _as_i32(0 if num_threads_value is None else num_threads_value)
    base = module.get_unique_name(name)
    cap_types = [v.type for v in captured_values]
    closure_ty = ir.LiteralStructType([I32, I64] + cap_types)

    body = _emit_body(module, base, cap_types, body_fn_builder, noalias, around)
    worker = _emit_worker(module, base, closure_ty, body, len(cap_types), schedule, chunk)
    _emit_call_site(builder, module, closure_ty, n, nthreads, captured_values, body, worker,
                    team_out)
    return body


def _emit_body(module, base, cap_types, body_fn_builder, noalias, around=None) -> ir.Function:
    fnty = ir.FunctionType(ir.VoidType(), [I32, I32] + cap_types)
    fn = ir.Function(module, fnty, f"{base}.body")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    lo, hi = fn.args[0], fn.args[1]
    lo.name, hi.name = "lo", "hi"
    caps = tuple(fn.args[2:])
    for k, arg in enumerate(caps):
        arg.name = f"cap{k}"
        if noalias and k < len(noalias) and noalias[k]:
            if not isinstance(arg.type, ir.PointerType):
                raise TypeError(f"noalias on non-pointer capture {k} ({arg.type})")
            arg.add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    state = around[0](b, caps) if around is not None else None
    b.cbranch(b.icmp_signed("<", lo, hi), loop, done)
    b.position_at_end(loop)
    i = b.phi(I32, "i")
    i.add_incoming(lo, entry)
    body_fn_builder(b, i, caps)
    if b.block.is_terminated:
        raise ValueError("body_fn_builder must leave the builder in an open block")
    nxt = b.add(i, ir.Constant(I32, 1), "i.next", flags=("nsw",))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, hi), loop, done)
    b.position_at_end(done)
    if around is not None:
        around[1](b, caps, state)
    b.ret_void()
    return fn


def _emit_worker(module, base, closure_ty, body, ncap, schedule, chunk) -> ir.Function:
    fn = ir.Function(module, WORKER_TYPE, f"{base}.worker")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    cl = b.bitcast(fn.args[0], closure_ty.as_pointer(), "closure")
    zero = ir.Constant(I32, 0)

    def field(k):
        return b.gep(cl, [zero, ir.Constant(I32, k)], inbounds=True)

    n = b.load(field(0), "n")
    caps = [b.load(field(2 + k)) for k in range(ncap)]
    if schedule == "static":
        t = b.sext(emit_thread_num(b), I64)
        nt = b.sext(emit_num_threads(b), I64)
        n64 = b.sext(n, I64)
        lo = b.sdiv(b.mul(n64, t, flags=("nsw",)), nt)
        t1 = b.add(t, ir.Constant(I64, 1), flags=("nsw",))
        hi = b.sdiv(b.mul(n64, t1, flags=("nsw",)), nt)
        b.call(body, [b.trunc(lo, I32), b.trunc(hi, I32)] + caps)
        b.ret_void()
        return fn
    # dynamic: grab [s, s + chunk) from the shared i64 counter until it passes n
    counter = field(1)
    n64 = b.sext(n, I64)
    if chunk == 0:      # auto: about CHUNKS_PER_THREAD grabs per thread
        nt = b.sext(emit_num_threads(b), I64)
        per = b.sdiv(n64, b.mul(nt, ir.Constant(I64, CHUNKS_PER_THREAD), flags=("nsw",)))
        step = b.select(b.icmp_signed(">", per, ir.Constant(I64, 1)), per, ir.Constant(I64, 1))
    else:
        step = ir.Constant(I64, chunk)
    grab = fn.append_basic_block("grab")
    run = fn.append_basic_block("run")
    done = fn.append_basic_block("done")
    b.branch(grab)
    b.position_at_end(grab)
    start = b.atomic_rmw("add", counter, step, "monotonic")
    b.cbranch(b.icmp_signed(">=", start, n64), done, run)
    b.position_at_end(run)
    end = b.add(start, step, flags=("nsw",))
    end = b.select(b.icmp_signed("<", end, n64), end, n64)
    b.call(body, [b.trunc(start, I32), b.trunc(end, I32)] + caps)
    b.branch(grab)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _emit_call_site(builder, module, closure_ty, n, nthreads, captured, body, worker,
                    team_out=None):
    # The closure lives in the caller's entry block so loops around us reuse one slot.
    # llvmlite builders track their position as an index into the block, so a second
    # builder inserting into the same block would desynchronize this one: move this
    # builder there and back instead (it must be at the end of its block, as usual).
    here = builder.block
    builder.position_at_start(builder.function.blocks[0])
    closure = builder.alloca(closure_ty, name="closure")
    builder.position_at_end(here)

    zero = ir.Constant(I32, 0)

    def field(k):
        return builder.gep(closure, [zero, ir.Constant(I32, k)], inbounds=True)

    builder.store(n, field(0))
    builder.store(ir.Constant(I64, 0), field(1))
    for k, v in enumerate(captured):
        builder.store(v, field(2 + k))

    fn = builder.function
    go = fn.append_basic_block("par.go")
    serial = fn.append_basic_block("par.serial")
    team = fn.append_basic_block("par.team")
    after = fn.append_basic_block("par.after")
    start = builder.block
    builder.cbranch(builder.icmp_signed(">", n, zero), go, after)

    builder.position_at_end(go)
    nested = builder.icmp_signed("!=", _rt_query(builder, RT_IN_PARALLEL), zero)
    one = builder.icmp_signed("==", nthreads, ir.Constant(I32, 1))
    builder.cbranch(builder.or_(nested, one), serial, team)

    builder.position_at_end(serial)
    builder.call(body, [zero, n] + list(captured))
    builder.branch(after)

    builder.position_at_end(team)
    # <= 0 means "runtime default" (0); never ask for more threads than rows.
    nt = builder.select(builder.icmp_signed("<", nthreads, zero), zero, nthreads)
    nt = builder.select(builder.icmp_signed(">", nt, n), n, nt)
    par_ty = ir.FunctionType(ir.VoidType(), [WORKER_TYPE.as_pointer(), I8P, I32, I32])
    rt_parallel = _declare(module, RT_PARALLEL, par_ty)
    builder.call(rt_parallel, [worker, builder.bitcast(closure, I8P), nt, zero])
    builder.branch(after)

    builder.position_at_end(after)
    if team_out is not None:
        size = builder.phi(I32, name="par.team_size")
        size.add_incoming(zero, start)
        size.add_incoming(ir.Constant(I32, 1), serial)
        size.add_incoming(nt, team)
        team_out.append(size)
