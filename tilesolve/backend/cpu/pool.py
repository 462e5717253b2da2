"""tilesolve's own thread pool for parallel loops, in LLVM IR over pthreads.

Why not libgomp's ``GOMP_parallel``: it ends every parallel region with a barrier that
waits for *every* thread of the team, including one that the OS has not scheduled yet.
On a machine busy with other work, that thread starts a time slice later, finds nothing
left to do and only then lets the region end: a loop of 0.2 ms took 26 ms.  Here a
region waits only for the threads that joined it:

* ``ts_pool_parallel(fn, data, team, flags)`` (the master) publishes the job under the
  pool's mutex, wakes the workers, and runs ``fn(data)`` itself as thread 0.  Each
  thread that joins takes the next thread number under the mutex.  When the master's
  call returns, it runs ``fn(data)`` again for each thread number nobody took (a static
  loop's shares; a dynamic loop finds its counter exhausted and returns at once), then
  closes the job and waits only for the workers that joined.  A worker that wakes after
  that sees the job closed and sleeps again.
* Workers spin a little on the job generation before sleeping on a condition variable,
  and the master a little on the count of workers still running, so back-to-back loops
  on a quiet machine do not pay a wake-up each.
* The thread number and team size live in one pthread key (``team << 32 | (num + 1)``;
  0 outside a region): ``ts_pool_thread_num``, ``ts_pool_num_threads`` and
  ``ts_pool_in_parallel`` read it.  A second master that finds the pool busy (another
  Python thread) runs its loop serially as thread 0 of 1; so does a nested loop, which
  the call site already runs serially.

Workers are created on demand (the largest team asked for so far, minus the master) and
live for the process.  ``install()`` compiles the module once, initializes the mutex,
condition variables and key, and returns the four entry points' addresses.
"""
from __future__ import annotations

import ctypes

from llvmlite import ir

from .target import runtime_engine

I8 = ir.IntType(8)
I8P = I8.as_pointer()
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()
WORKER = ir.FunctionType(VOID, [I8P])
SPINS = 20000                      # job-generation polls before a worker sleeps
_OPAQUE = ir.ArrayType(I8, 128)    # room for a pthread mutex / condition variable


def _module() -> ir.Module:
    m = ir.Module(name="ts_pool")

    def glob(name, ty, init=None):
        g = ir.GlobalVariable(m, ty, name)
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, None) if init is None else init
        g.align = 16
        return g

    mutex, work_cv, done_cv = glob("mutex", _OPAQUE), glob("work_cv", _OPAQUE), glob("done_cv", _OPAQUE)
    key = glob("key", I32)
    workers = glob("workers", I32)
    default_team = glob("default_team", I32)
    job_fn, job_data = glob("job_fn", WORKER.as_pointer()), glob("job_data", I8P)
    job_team, job_gen = glob("job_team", I32), glob("job_gen", I64)
    job_open, next_num, active = glob("job_open", I32), glob("next_num", I32), glob("active", I32)

    def decl(name, ret, args):
        return ir.Function(m, ir.FunctionType(ret, args), name)

    p_lock = decl("pthread_mutex_lock", I32, [I8P])
    p_unlock = decl("pthread_mutex_unlock", I32, [I8P])
    p_minit = decl("pthread_mutex_init", I32, [I8P, I8P])
    p_cinit = decl("pthread_cond_init", I32, [I8P, I8P])
    p_wait = decl("pthread_cond_wait", I32, [I8P, I8P])
    p_bcast = decl("pthread_cond_broadcast", I32, [I8P])
    p_kcreate = decl("pthread_key_create", I32, [I32.as_pointer(), I8P])
    p_get = decl("pthread_getspecific", I8P, [I32])
    p_set = decl("pthread_setspecific", I32, [I32, I8P])
    p_create = decl("pthread_create", I32, [I64.as_pointer(), I8P,
                                             ir.FunctionType(I8P, [I8P]).as_pointer(), I8P])
    p_detach = decl("pthread_detach", I32, [I64])

    M, WCV, DCV = (ir.Constant.bitcast(g, I8P) for g in (mutex, work_cv, done_cv))

    def fn(name, ret, args):
        f = ir.Function(m, ir.FunctionType(ret, args), name)
        f.attributes.add("nounwind")
        return f, ir.IRBuilder(f.append_basic_block("entry"))

    def set_me(b, team, num):          # key <- team << 32 | (num + 1)
        v = b.or_(b.shl(b.zext(team, I64), ir.Constant(I64, 32)),
                  b.zext(b.add(num, ir.Constant(I32, 1)), I64))
        b.call(p_set, [b.load(key), b.inttoptr(v, I8P)])

    def me(b):
        return b.ptrtoint(b.call(p_get, [b.load(key)]), I64)

    # -- init ---------------------------------------------------------------------------
    f, b = fn("ts_pool_init", I32, [I32])
    b.store(f.args[0], default_team)
    null = ir.Constant(I8P, None)
    r = b.call(p_minit, [M, null])
    r = b.or_(r, b.call(p_cinit, [WCV, null]))
    r = b.or_(r, b.call(p_cinit, [DCV, null]))
    r = b.or_(r, b.call(p_kcreate, [key, null]))
    b.ret(r)

    # -- queries ------------------------------------------------------------------------
    f, b = fn("ts_pool_thread_num", I32, [])
    v = me(b)
    num = b.sub(b.trunc(v, I32), ir.Constant(I32, 1))
    b.ret(b.select(b.icmp_unsigned("==", v, ir.Constant(I64, 0)), ir.Constant(I32, 0), num))
    f, b = fn("ts_pool_num_threads", I32, [])
    v = me(b)
    team = b.trunc(b.lshr(v, ir.Constant(I64, 32)), I32)
    b.ret(b.select(b.icmp_unsigned("==", v, ir.Constant(I64, 0)), ir.Constant(I32, 1), team))
    f, b = fn("ts_pool_in_parallel", I32, [])
    b.ret(b.zext(b.icmp_unsigned("!=", me(b), ir.Constant(I64, 0)), I32))

    # -- a worker -------------------------------------------------------------------------
    wm, b = fn("ts_pool_worker_main", I8P, [I8P])
    seen = b.alloca(I64, name="seen")
    spins = b.alloca(I32, name="spins")
    b.store(ir.Constant(I64, 0), seen)
    b.call(p_lock, [M])
    check, spin_top, spin_body, sleep, join = (wm.append_basic_block(n) for n in
                                              ("check", "spin", "spin_body", "sleep", "join"))
    b.branch(check)
    b.position_at_end(check)          # holding the mutex
    ready = b.and_(b.icmp_unsigned("!=", b.load(job_open), ir.Constant(I32, 0)),
                   b.icmp_unsigned("!=", b.load(job_gen), b.load(seen)))
    ready = b.and_(ready, b.icmp_signed("<", b.load(next_num), b.load(job_team)))
    b.cbranch(ready, join, sleep)
    b.position_at_end(sleep)
    b.call(p_wait, [WCV, M])
    b.branch(check)
    b.position_at_end(join)
    b.store(b.load(job_gen), seen)
    num = b.load(next_num)
    b.store(b.add(num, ir.Constant(I32, 1)), next_num)
    b.store_atomic(b.add(b.load_atomic(active, "monotonic", 4), ir.Constant(I32, 1)), active,
                   "monotonic", 4)
    work, data, team = b.load(job_fn), b.load(job_data), b.load(job_team)
    b.call(p_unlock, [M])
    set_me(b, team, num)
    b.call(work, [data])
    b.call(p_set, [b.load(key), null])
    b.call(p_lock, [M])
    left = b.sub(b.load_atomic(active, "monotonic", 4), ir.Constant(I32, 1))
    b.store_atomic(left, active, "release", 4)      # the master may spin on it
    with b.if_then(b.icmp_signed("==", left, ir.Constant(I32, 0))):
        b.call(p_bcast, [DCV])
    b.call(p_unlock, [M])
    # spin a while on the job generation (no lock) before taking the mutex to sleep
    b.store(ir.Constant(I32, 0), spins)
    b.branch(spin_top)
    b.position_at_end(spin_top)
    gen = b.load_atomic(job_gen, "monotonic", 8)
    more = b.icmp_signed("<", b.load(spins), ir.Constant(I32, SPINS))
    b.cbranch(b.and_(b.icmp_unsigned("==", gen, b.load(seen)), more), spin_body, wm.append_basic_block("spun"))
    spun = wm.blocks[-1]
    b.position_at_end(spin_body)
    b.store(b.add(b.load(spins), ir.Constant(I32, 1)), spins)
    b.branch(spin_top)
    b.position_at_end(spun)
    b.call(p_lock, [M])
    b.branch(check)

    # -- the master -----------------------------------------------------------------------
    f, b = fn("ts_pool_parallel", VOID, [WORKER.as_pointer(), I8P, I32, I32])
    work, data, team, _flags = f.args
    team = b.select(b.icmp_signed("<", team, ir.Constant(I32, 1)), b.load(default_team), team)
    b.call(p_lock, [M])
    busy = b.or_(b.icmp_unsigned("!=", b.load(job_open), ir.Constant(I32, 0)),
                 b.icmp_signed("==", team, ir.Constant(I32, 1)))
    with b.if_else(busy) as (serial, pooled):
        with serial:                   # another master holds the pool: this loop alone
            b.call(p_unlock, [M])
            b.call(work, [data])
        with pooled:
            tid = b.alloca(I64, name="tid")
            grow, grown = f.append_basic_block("grow"), f.append_basic_block("grown")
            cond = f.append_basic_block("grow_check")
            b.branch(cond)
            b.position_at_end(cond)
            want = b.sub(team, ir.Constant(I32, 1))
            b.cbranch(b.icmp_signed("<", b.load(workers), want), grow, grown)
            b.position_at_end(grow)
            rc = b.call(p_create, [tid, null, wm, null])
            ok = b.icmp_signed("==", rc, ir.Constant(I32, 0))
            with b.if_then(ok):
                b.call(p_detach, [b.load(tid)])
            b.store(b.add(b.load(workers), ir.Constant(I32, 1)), workers)
            b.cbranch(ok, cond, grown)     # a failed create: run with the workers there are
            b.position_at_end(grown)
            b.store(work, job_fn)
            b.store(data, job_data)
            b.store(team, job_team)
            b.store(ir.Constant(I32, 1), next_num)
            b.store_atomic(ir.Constant(I32, 0), active, "monotonic", 4)
            b.store(ir.Constant(I32, 1), job_open)
            b.store_atomic(b.add(b.load(job_gen), ir.Constant(I64, 1)), job_gen, "monotonic", 8)
            b.call(p_bcast, [WCV])
            b.call(p_unlock, [M])
            set_me(b, team, ir.Constant(I32, 0))
            b.call(work, [data])
            b.call(p_lock, [M])
            rest, rest_run, close = (f.append_basic_block(n) for n in ("rest", "rest_run", "close"))
            b.branch(rest)
            b.position_at_end(rest)        # thread numbers nobody took: run them here
            num = b.load(next_num)
            b.cbranch(b.icmp_signed("<", num, team), rest_run, close)
            b.position_at_end(rest_run)
            b.store(b.add(num, ir.Constant(I32, 1)), next_num)
            b.call(p_unlock, [M])
            set_me(b, team, num)
            b.call(work, [data])
            b.call(p_lock, [M])
            b.branch(rest)
            b.position_at_end(close)
            b.store(ir.Constant(I32, 0), job_open)
            # the joined workers finish at about the time the master does: spin on their
            # count (without the mutex) before sleeping, so a region's end costs no wake-up
            b.call(p_unlock, [M])
            mspins = b.alloca(I32, name="mspins")
            b.store(ir.Constant(I32, 0), mspins)
            mtop, mbody, mdone = (f.append_basic_block(n) for n in ("mspin", "mspin_body", "mspun"))
            b.branch(mtop)
            b.position_at_end(mtop)
            busy_w = b.icmp_signed(">", b.load_atomic(active, "acquire", 4), ir.Constant(I32, 0))
            more = b.icmp_signed("<", b.load(mspins), ir.Constant(I32, SPINS))
            b.cbranch(b.and_(busy_w, more), mbody, mdone)
            b.position_at_end(mbody)
            b.store(b.add(b.load(mspins), ir.Constant(I32, 1)), mspins)
            b.branch(mtop)
            b.position_at_end(mdone)
            b.call(p_lock, [M])
            wait, waited = f.append_basic_block("wait"), f.append_basic_block("waited")
            wcheck = f.append_basic_block("wait_check")
            b.branch(wcheck)
            b.position_at_end(wcheck)
            b.cbranch(b.icmp_signed(">", b.load_atomic(active, "monotonic", 4), ir.Constant(I32, 0)), wait, waited)
            b.position_at_end(wait)
            b.call(p_wait, [DCV, M])
            b.branch(wcheck)
            b.position_at_end(waited)
            b.call(p_unlock, [M])
            b.call(p_set, [b.load(key), null])
    b.ret_void()
    return m


_engine = None


def install(target, default_team: int = 1) -> dict:
    """Compile the pool once and initialize it (``default_team``: the team of a loop that
    asks for 0 threads); ``{ts_rt name: address}``, or an empty dict when pthreads cannot
    be used here."""
    global _engine
    engine = runtime_engine(str(_module()), target)
    addr = engine.get_function_address
    init = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(addr("ts_pool_init"))
    if init(max(1, int(default_team))) != 0:
        return {}
    _engine = engine                   # the code lives as long as the process
    return {"parallel": addr("ts_pool_parallel"), "thread_num": addr("ts_pool_thread_num"),
            "num_threads": addr("ts_pool_num_threads"),
            "in_parallel": addr("ts_pool_in_parallel")}
