"""Heap allocations of generated code, with a small cache of large blocks.

Why: a pipeline that keeps a large intermediate at root (max_filter's 300 MB
``vert_log``, the pyramids of local_laplacian) asks the C library for it on every
``realize``. glibc serves blocks over 32 MB with a fresh ``mmap`` and returns them with
``munmap`` on ``free``, so every run faults the whole block in again, page by page: on
the development machine 73,000 faults a run of max_filter, about 30 % of its time (the
same in Halide's own runtime, which allocates the same way).

What: generated code calls two runtime symbols instead of ``aligned_alloc``/``free``::

    i8* ts_rt_alloc(i64 size)       64-byte aligned, or null when out of memory
    void ts_rt_free(i8* ptr)        null is ignored

Each block carries a 64-byte header holding its size. A freed block of at least
``MIN_CACHED_BYTES`` goes into one of ``SLOTS`` slots instead of back to the C library.
The bytes held stay within the limit (``TILESOLVE_HEAP_CACHE_MB``; by default
``DEFAULT_LIMIT_MB``, or an eighth of the machine's memory where that is less; 0 turns
the cache off): cached blocks are given back, first slots
first, to make room for the newest, and when every slot is taken the newest replaces
the block in a round-robin slot. A request of ``size`` bytes takes a cached block whose
size is between ``size`` and ``2 x size``. The slots are taken and filled
with atomic compare-and-swap, so worker threads of parallel loops, and several Python
threads running compiled code at once, never get the same block. Blocks keep the values
of their last use (like ``malloc``, generated code never reads what it did not write).

:func:`release` frees every cached block (``tilesolve.release_memory()`` calls it
through the registry of ``tilesolve/memory.py``, with the CUDA pipelines' device
pools); the cache holds at most the limit between realizations, and nothing when the
process is idle after ``release``. The runtime is compiled from IR once per process
and bound with ``llvm.add_symbol``, like the parallel runtime; :func:`install` is
idempotent.

Blocks under the cache's size (per-tile buffers of parallel loops, 64 KB to 1 MB) go
to the C library (an allocation inside a loop asks once per call of the generated
function, not once per iteration: ``codegen_memory`` reuses its block), and glibc decides by a threshold that moves at run time whether it
maps each one afresh (faulting its pages in on every tile) or serves it from the
threads' arenas: the same build ran in two modes from one process to the next
(unsharp 5.1 or 7.8 ms, harris 3.0 or 5.6 ms; the slow runs took 3,000-3,500 page
faults a run, the fast ones none).  :func:`install` therefore fixes glibc's
thresholds where it can (``mallopt``): blocks up to 32 MB (glibc's own upper bound
for the moving threshold) come from the arenas, and an arena gives memory back to
the system once 64 MB are free at its top.  Measured over the greedy schedules of
the 15 apps, three processes each: unsharp 4.4-4.8 ms (7.4-7.7 without), harris
3.0-3.2 (3.0-5.6), no app slower.  The environment variables ``MALLOC_MMAP_THRESHOLD_``
or ``MALLOC_TRIM_THRESHOLD_``, when set, are left to rule, as is
``TILESOLVE_MALLOC_TUNING=0``; :func:`release` also asks glibc to trim its arenas.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from ...heap_limit import DEFAULT_LIMIT_MB, default_limit, limit_from_env
from ...memory import register_releaser
from .target import LLVM_LOCK, runtime_engine

__all__ = ["RT_ALLOC", "RT_FREE", "SLOTS", "MIN_CACHED_BYTES", "DEFAULT_LIMIT_MB",
           "install", "release", "held_bytes", "set_limit", "limit_from_env", "default_limit",
           "tune_malloc"]

RT_ALLOC = "ts_rt_alloc"
RT_FREE = "ts_rt_free"
SLOTS = 8                   # a power of two (the round-robin slot is a mask)
MIN_CACHED_BYTES = 1 << 20
HEADER = 64
MMAP_THRESHOLD = 32 << 20   # glibc's M_MMAP_THRESHOLD: larger blocks are mapped afresh
TRIM_THRESHOLD = 64 << 20   # glibc's M_TRIM_THRESHOLD: free bytes an arena keeps at its top
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3

I8 = ir.IntType(8)
I8P = I8.as_pointer()
I64 = ir.IntType(64)
I32 = ir.IntType(32)

_lock = threading.Lock()
_engine = None
_calls: dict = {}


def _build_module() -> ir.Module:
    mod = ir.Module(name="tilesolve_heap")
    slots_ty = ir.ArrayType(I8P, SLOTS)
    slots = ir.GlobalVariable(mod, slots_ty, "ts_heap_slots")
    slots.initializer = ir.Constant(slots_ty, None)
    slots.linkage = "internal"
    slots.align = 64
    held = ir.GlobalVariable(mod, I64, "ts_heap_held_bytes")
    held.initializer = ir.Constant(I64, 0)
    held.linkage = "internal"
    limit = ir.GlobalVariable(mod, I64, "ts_heap_limit_bytes")
    limit.initializer = ir.Constant(I64, 0)
    limit.linkage = "internal"
    rr = ir.GlobalVariable(mod, I32, "ts_heap_turn")
    rr.initializer = ir.Constant(I32, 0)
    rr.linkage = "internal"
    c_alloc = ir.Function(mod, ir.FunctionType(I8P, [I64, I64]), "aligned_alloc")
    c_free = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P]), "free")
    null = ir.Constant(I8P, None)
    zero = ir.Constant(I32, 0)

    def slot(b, i):
        return b.gep(slots, [zero, ir.Constant(I32, i)], inbounds=True)

    def size_of(b, raw):
        return b.load(b.bitcast(raw, I64.as_pointer()), align=8)

    # i8* ts_rt_alloc(i64 size)
    fn = ir.Function(mod, ir.FunctionType(I8P, [I64]), RT_ALLOC)
    fn.return_value.add_attribute("noalias")
    size, = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fresh = fn.append_basic_block("fresh")
    big = b.icmp_unsigned(">=", size, ir.Constant(I64, MIN_CACHED_BYTES))
    nxt = fn.append_basic_block("slot0")
    b.cbranch(big, nxt, fresh)
    for i in range(SLOTS):
        b.position_at_end(nxt)
        nxt = fn.append_basic_block(f"slot{i + 1}") if i + 1 < SLOTS else fresh
        check = fn.append_basic_block(f"check{i}")
        take = fn.append_basic_block(f"take{i}")
        got = fn.append_basic_block(f"got{i}")
        s = slot(b, i)
        p = b.load_atomic(s, "monotonic", 8)
        b.cbranch(b.icmp_unsigned("!=", p, null), check, nxt)
        b.position_at_end(check)
        have = size_of(b, p)
        fits = b.and_(b.icmp_unsigned(">=", have, size),
                      b.icmp_unsigned("<=", b.sub(have, size), size))
        b.cbranch(fits, take, nxt)
        b.position_at_end(take)
        res = b.cmpxchg(s, p, null, "acq_rel", "monotonic")
        b.cbranch(b.extract_value(res, 1), got, nxt)
        b.position_at_end(got)
        b.atomic_rmw("sub", held, have, "monotonic")
        b.ret(b.gep(p, [ir.Constant(I64, HEADER)], inbounds=True))
    b.position_at_end(fresh)
    total = b.add(size, ir.Constant(I64, HEADER))
    ok = fn.append_basic_block("ok")
    fail = fn.append_basic_block("fail")
    b.cbranch(b.icmp_unsigned("<", total, size), fail, ok)          # size + header wraps
    b.position_at_end(ok)
    raw = b.call(c_alloc, [ir.Constant(I64, 64), total])
    stored = fn.append_basic_block("stored")
    b.cbranch(b.icmp_unsigned("==", raw, null), fail, stored)
    b.position_at_end(stored)
    b.store(size, b.bitcast(raw, I64.as_pointer()), align=8)
    b.ret(b.gep(raw, [ir.Constant(I64, HEADER)], inbounds=True))
    b.position_at_end(fail)
    b.ret(null)

    # void ts_rt_free(i8* ptr)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P]), RT_FREE)
    ptr, = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    body = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    plain = fn.append_basic_block("plain")

    def drop(b, p):
        """Give a cached block back to the C library (``p`` is not null)."""
        b.atomic_rmw("sub", held, size_of(b, p), "monotonic")
        b.call(c_free, [p])

    b.cbranch(b.icmp_unsigned("==", ptr, null), done, body)
    b.position_at_end(body)
    raw = b.gep(ptr, [ir.Constant(I64, -HEADER)], inbounds=True)
    have = size_of(b, raw)
    cap = b.load_atomic(limit, "monotonic", 8)
    counted = fn.append_basic_block("counted")
    keep = b.and_(b.icmp_unsigned(">=", have, ir.Constant(I64, MIN_CACHED_BYTES)),
                  b.icmp_unsigned("<=", have, cap))
    b.cbranch(keep, counted, plain)
    b.position_at_end(counted)
    b.atomic_rmw("add", held, have, "monotonic")
    # over the limit with this block: evict cached blocks, oldest slots first
    for i in range(SLOTS):
        over = b.icmp_unsigned(">", b.load_atomic(held, "monotonic", 8), cap)
        evict = fn.append_basic_block(f"evict{i}")
        dropped = fn.append_basic_block(f"dropped{i}")
        after = fn.append_basic_block(f"evicted{i}")
        b.cbranch(over, evict, after)
        b.position_at_end(evict)
        p = b.atomic_rmw("xchg", slot(b, i), null, "acq_rel")
        b.cbranch(b.icmp_unsigned("!=", p, null), dropped, after)
        b.position_at_end(dropped)
        drop(b, p)
        b.branch(after)
        b.position_at_end(after)
    nxt = fn.append_basic_block("put0")
    b.branch(nxt)
    for i in range(SLOTS):
        b.position_at_end(nxt)
        nxt = fn.append_basic_block(f"put{i + 1}" if i + 1 < SLOTS else "full")
        res = b.cmpxchg(slot(b, i), null, raw, "acq_rel", "monotonic")
        b.cbranch(b.extract_value(res, 1), done, nxt)
    # every slot taken: the newest block replaces the one in a round-robin slot
    b.position_at_end(nxt)
    turn = b.atomic_rmw("add", rr, ir.Constant(I32, 1), "monotonic")
    idx = b.and_(turn, ir.Constant(I32, SLOTS - 1))
    p = b.atomic_rmw("xchg", b.gep(slots, [zero, idx], inbounds=True), raw, "acq_rel")
    evicted = fn.append_basic_block("replaced")
    b.cbranch(b.icmp_unsigned("!=", p, null), evicted, done)
    b.position_at_end(evicted)
    drop(b, p)
    b.branch(done)
    b.position_at_end(plain)
    b.call(c_free, [raw])
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()

    # i64 ts_heap_release(): free every cached block; the bytes freed
    fn = ir.Function(mod, ir.FunctionType(I64, []), "ts_heap_release")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    freed = ir.Constant(I64, 0)
    for i in range(SLOTS):
        p = b.atomic_rmw("xchg", slot(b, i), null, "acq_rel")
        yes = fn.append_basic_block(f"free{i}")
        after = fn.append_basic_block(f"after{i}")
        here = b.block
        b.cbranch(b.icmp_unsigned("!=", p, null), yes, after)
        b.position_at_end(yes)
        have = size_of(b, p)
        b.atomic_rmw("sub", held, have, "monotonic")
        b.call(c_free, [p])
        added = b.add(freed, have)
        b.branch(after)
        b.position_at_end(after)
        phi = b.phi(I64)
        phi.add_incoming(freed, here)
        phi.add_incoming(added, yes)
        freed = phi
    b.ret(freed)

    for name, ret, body_value in (("ts_heap_held", I64, held), ("ts_heap_limit_get", I64, limit)):
        fn = ir.Function(mod, ir.FunctionType(ret, []), name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.load_atomic(body_value, "monotonic", 8))
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64]), "ts_heap_set_limit")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.store_atomic(fn.args[0], limit, "monotonic", 8)
    b.ret_void()
    return mod


def install() -> None:
    """Compile the runtime once per process and bind ``ts_rt_alloc``/``ts_rt_free``."""
    global _engine
    if _engine is not None:
        return
    with _lock:
        if _engine is not None:
            return
        with LLVM_LOCK:
            engine = runtime_engine(str(_build_module()))
            addr = engine.get_function_address
            llvm.add_symbol(RT_ALLOC, addr(RT_ALLOC))
            llvm.add_symbol(RT_FREE, addr(RT_FREE))
            _calls["alloc"] = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)(addr(RT_ALLOC))
            _calls["free"] = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr(RT_FREE))
            _calls["release"] = ctypes.CFUNCTYPE(ctypes.c_int64)(addr("ts_heap_release"))
            _calls["held"] = ctypes.CFUNCTYPE(ctypes.c_int64)(addr("ts_heap_held"))
            _calls["limit"] = ctypes.CFUNCTYPE(ctypes.c_int64)(addr("ts_heap_limit_get"))
            _calls["set_limit"] = ctypes.CFUNCTYPE(None, ctypes.c_int64)(addr("ts_heap_set_limit"))
        _calls["set_limit"](limit_from_env())
        tune_malloc()
        _engine = engine


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except (OSError, AttributeError):
        return None


def tune_malloc(environ=None) -> bool:
    """Fix glibc's mmap and trim thresholds (see the module docstring); False where
    there is no glibc ``mallopt``, or the environment sets them or turns this off."""
    environ = os.environ if environ is None else environ
    if environ.get("TILESOLVE_MALLOC_TUNING", "").strip() == "0" or any(
            environ.get(k) for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    libc = _libc()
    if libc is None:
        return False
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def release() -> int:
    """Free every cached block now, and ask glibc to give its arenas' free memory
    back to the system; returns the bytes of cached blocks given back."""
    if _engine is None:
        return 0
    freed = int(_calls["release"]())
    libc = _libc()
    if libc is not None:
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim(0)
    return freed


def held_bytes() -> int:
    """Bytes of freed blocks the cache holds for the next allocations."""
    return 0 if _engine is None else int(_calls["held"]())


def set_limit(nbytes: int) -> int:
    """Set the cache's byte limit (0: off; cached blocks over it are released); the
    previous limit."""
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise ValueError(f"heap cache limit must be a non-negative int of bytes, got {nbytes!r}")
    install()
    old = int(_calls["limit"]())
    _calls["set_limit"](nbytes)
    if held_bytes() > nbytes:
        release()
    return old


def raw_alloc(nbytes: int) -> int:
    """``ts_rt_alloc`` from Python (tests): the address, 0 when it failed."""
    install()
    return _calls["alloc"](nbytes) or 0


def raw_free(address: int) -> None:
    """``ts_rt_free`` from Python (tests)."""
    install()
    _calls["free"](address or None)


register_releaser(release)          # tilesolve.release_memory() empties this cache too
