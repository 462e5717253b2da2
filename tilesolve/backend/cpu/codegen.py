"""Loop IR (``tilesolve.lower.ir``) -> LLVM IR text for the host CPU.

ABI of the generated entry function
-----------------------------------
::

    i32 ts_<name>(i8** buffers, i32* dims, i64* scalars, i32 num_threads)

* ``buffers[i]``: the data pointer of the i-th *buffer* argument, in
  ``LoweredPipeline.args`` order (buffer arguments only; inputs and outputs alike).
* ``dims``: for each buffer argument in the same order, for each dimension d (0 =
  innermost): its extent, then its stride in *elements*; consecutively, so buffer i
  dimension d is at ``2 * (sum of the ranks of buffers before i) + 2 * d``.  They bind the
  loop IR's Vars ``<buffer>.extent.<d>`` and ``<buffer>.stride.<d>``.  The stride of
  dimension 0 must be 1: the code is specialized for dense rows (``<b>.stride.0`` is the
  constant 1, so accesses contiguous in x become vector loads); callers copy other arrays.
* ``scalars[j]``: the j-th scalar argument (a Param), in its low bytes: integers and bool
  sign- or zero-extended (only the low bits are read), float16 and float32 as their bit
  patterns in the low 16 or 32 bits, float64 as its 64-bit pattern.
* ``num_threads``: the size of the thread team for parallel loops (``<= 0``: the runtime's
  default).
* Returns 0, or an error code: 1 = a heap allocation failed (the rest of that
  allocation's scope was skipped; the outputs are incomplete); 2 (checked builds only) =
  an access fell outside its buffer and was skipped.
* Checked builds: ``scalars`` has three more slots after the Params, where the first
  fault is written: the buffer's place in ``GeneratedModule.fault_names``, the flat
  index, and the last index the buffer owns.
* Profiled builds (``profile=True``): the next slot holds the address of the int64
  counters (see ``profile.py``; ``GeneratedModule.profile`` is their layout), and the
  module also exports ``i64 <entry>.ticks()``, the timer.

Outputs must not overlap inputs or each other: every buffer pointer is ``noalias``.
The entry unpacks its arguments and calls ``ts_<name>.impl`` (internal, inlined by O3),
whose pointer parameters carry ``noalias``.

Loops
-----
serial, gpu_block, gpu_thread: plain counted loops (``gpu_thread`` loops are split at
top-level barriers, the CPU emulation of a GPU block; Barrier itself emits nothing).
unrolled (constant extent): the body once per iteration.  parallel: outlined with
:func:`~.parallel.emit_parallel_for` (captured values passed as arguments, buffer pointers
``noalias``); a parallel loop inside another, or inside a vectorized loop, runs serially.
vectorized (constant extent W): the body once, with W-lane values (see
``codegen_lanes``/``codegen_expr``/``codegen_memory``): uniform values stay scalar,
affine indices are ramps (dense vector loads/stores), clamped ramps branch between a
dense access and a gather, other indices gather/scatter, an IfThenElse whose condition
varies becomes a lane mask (masked loads/stores), inner loops with uniform bounds run
with a vector body.  When the body cannot be vectorized (an allocation, a nested
vectorized loop, inner loop bounds that vary: ``codegen_vector.vectorize_blocker``) a
scalar loop is emitted, left to LLVM's loop vectorizer, and the reason goes into
:attr:`GeneratedModule.notes`.  Every other loop tells LLVM's loop vectorizer to keep
out (``llvm.loop.vectorize.enable false``): the schedule decides what is vectorized.

Common subexpressions: a value is reused within the scope (loop body, branch) that
computed it; a value that reads memory only within one statement.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from llvmlite import ir

from ...errors import LoweringError
from ...lower import ir as L
from ...model import expr as E
from ...model.visit import trampoline
from .codegen_expr import I8, I32, I64, ExprEmitter, Ramp, is_varying, llvm_type, mem_type
from .codegen_memory import Buffer, MemoryEmitter
from .codegen_vector import (MAX_LANES, chunk_wide_vector_loop, free_names,
                             split_at_barriers, vectorize_blocker)
from .parallel import emit_parallel_for
from .profile import ProfileContext, ProfileLayout, define_ticks, host_timer, plan

__all__ = ["GeneratedModule", "generate", "entry_name"]


@dataclass(frozen=True)
class GeneratedModule:
    """The LLVM IR of one lowered pipeline, and how to call it."""

    ir_text: str
    entry: str                 # the entry function's symbol
    buffer_args: tuple         # Arguments, in the order of ``buffers``
    scalar_args: tuple         # Arguments, in the order of ``scalars``
    notes: tuple               # remarks: loops not vectorized, allocations moved...
    checked: bool = False      # every access tested against its buffer (see the ABI)
    fault_names: tuple = ()    # checked builds: buffer names, by the id a fault records
    profile: ProfileLayout | None = None   # profiled builds: where the counters are


def entry_name(pipeline_name: str) -> str:
    return "ts_" + re.sub(r"\W", "_", pipeline_name)


def generate(lowered: L.LoweredPipeline, triple: str = "", data_layout: str = "",
             checked: bool = False, profile: bool = False, fma: bool = False,
             scalar_gathers: bool | None = None, vector_math: bool = True,
             shared_spans: bool = True, window_gathers: int = 0) -> GeneratedModule:
    """Generate the LLVM module for ``lowered`` (see the module docstring for the ABI);
    ``checked``: test every load and store against the buffer it accesses; ``profile``:
    time each Func and parallel loop (``profile.py``); ``fma``: float add, subtract
    and multiply carry LLVM's ``contract`` flag, so a multiply and the add using it
    may fuse (``Schedule.set_codegen(fma=True)``); ``scalar_gathers``: a vector load at
    lane-varying indices is one load a lane (True) or ``llvm.masked.gather`` (False)
    instead of the choice by index (None, see ``codegen_memory._gather``; to compare);
    ``vector_math=False``: float32 vector math functions are LLVM intrinsics and C
    library calls, one a lane, instead of ``vecmath.py``'s code (to compare the two);
    ``shared_spans=False``: a strided vector load reads its own span only, not the span
    of the loads of the same buffer at constant offsets from it (to compare);
    ``window_gathers``: the most 32-bit lanes the target permutes in one instruction (8
    with AVX2, 16 with AVX-512F; 0: none), which a gather at float coordinates whose
    lanes lie close together loads as one window and a permute (``codegen_memory``)."""
    module = ir.Module(name=lowered.name)
    if triple:
        module.triple = triple
    if data_layout:
        module.data_layout = data_layout
    notes: list[str] = []
    bufs, scalars = lowered.buffer_args(), lowered.scalar_args()
    name = entry_name(lowered.name)
    fault_names: list[str] | None = [] if checked else None
    layout = None
    if profile:
        layout = plan(lowered, name, host_timer(triple))
        define_ticks(module, layout)
    impl = _emit_impl(module, name + ".impl", lowered, bufs, scalars, notes, fault_names,
                      layout, ("contract",) if fma else (), scalar_gathers, vector_math,
                      shared_spans, window_gathers)
    _emit_entry(module, name, impl, bufs, scalars, checked, layout is not None)
    return GeneratedModule(str(module), name, bufs, scalars, tuple(notes), checked,
                           tuple(fault_names or ()), layout)


def _impl_params(bufs, scalars, checked: bool, profile: bool = False):
    params = []
    for a in bufs:
        params.append((a.name, mem_type(a.type).as_pointer()))
        for d in range(a.dims):
            params.append((f"{a.name}.extent.{d}", I32))
            params.append((f"{a.name}.stride.{d}", I32))
    for a in scalars:
        params.append((a.name, llvm_type(a.type)))
    if checked:
        params.append(("fault", I64.as_pointer()))
    if profile:
        params.append(("profile", I64.as_pointer()))
    params.append(("num_threads", I32))
    return params


def _emit_impl(module, name, lowered, bufs, scalars, notes, fault_names,
               layout=None, fp_flags=(), scalar_gathers: bool | None = None,
               vector_math: bool = True, shared_spans: bool = True,
               window_gathers: int = 0) -> ir.Function:
    checked = fault_names is not None
    params = _impl_params(bufs, scalars, checked, layout is not None)
    fn = ir.Function(module, ir.FunctionType(I32, [t for _, t in params]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    env, buffers = {}, {}
    buf_names = {a.name: a for a in bufs}
    for (pname, _), arg in zip(params, fn.args):
        arg.name = pname
        if pname in buf_names:
            arg.add_attribute("noalias")
            buffers[pname] = Buffer(arg, buf_names[pname].type, buf_names[pname].is_output)
        elif pname == "profile":
            arg.add_attribute("noalias")
        elif pname not in ("num_threads", "fault"):
            env[pname] = arg
    for a in bufs:
        # dense rows: dimension 0 has stride 1, so x-contiguous accesses are vector loads
        env[f"{a.name}.stride.0"] = ir.Constant(I32, 1)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    err = b.alloca(I32, name="err")
    b.store(ir.Constant(I32, 0), err)
    fault = fn.args[-2 - (layout is not None)] if checked else None
    prof = None
    if layout is not None:
        prof = ProfileContext.for_entry(layout, module, b, fn.args[-2])
        t0 = prof.begin_run(b)
    em = FnEmitter(module, fn, b, env, buffers, err, fn.args[-1], notes, in_parallel=False,
                   fault=fault, fault_names=fault_names, prof=prof)
    em.fp_flags = fp_flags
    em.scalar_gathers = scalar_gathers
    em.vector_math = vector_math
    em.shared_spans = shared_spans
    em.window_gathers = window_gathers
    if checked:
        for a in bufs:
            buffers[a.name] = _argument_range(em, a, buffers[a.name])
    em.emit_stmt(lowered.body)
    if prof is not None:
        prof.end_run(b, t0)
    b.ret(b.load(err))
    em.free_reused_at_exits()
    return fn


def _argument_range(em, a, buf: Buffer) -> Buffer:
    """``buf`` with the flat index range an argument array owns: per dimension,
    ``(extent - 1) * stride`` added to the top (or, negative, to the bottom); an empty
    array owns nothing."""
    b = em.b
    zero, lo, hi = ir.Constant(I64, 0), ir.Constant(I64, 0), ir.Constant(I64, 0)
    empty = ir.Constant(ir.IntType(1), 0)
    for d in range(a.dims):
        ext = b.sext(em.lookup(f"{a.name}.extent.{d}"), I64)
        st = b.sext(em.lookup(f"{a.name}.stride.{d}"), I64)
        empty = b.or_(empty, b.icmp_signed("<=", ext, zero))
        term = b.mul(b.sub(ext, ir.Constant(I64, 1)), st)
        neg = b.icmp_signed("<", term, zero)
        lo = b.add(lo, b.select(neg, term, zero))
        hi = b.add(hi, b.select(neg, zero, term))
    hi = b.select(empty, ir.Constant(I64, -1), hi)
    return Buffer(buf.ptr, buf.type, buf.is_output, lo, hi, em.fault_id(a.name))


def _emit_entry(module, name, impl, bufs, scalars, checked: bool = False,
                profile: bool = False) -> None:
    i8pp = I8.as_pointer().as_pointer()
    fnty = ir.FunctionType(I32, [i8pp, I32.as_pointer(), I64.as_pointer(), I32])
    fn = ir.Function(module, fnty, name)
    fn.attributes.add("nounwind")
    pbuf, pdims, pscal, nthreads = fn.args
    pbuf.name, pdims.name, pscal.name, nthreads.name = "buffers", "dims", "scalars", "num_threads"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args, k = [], 0
    for i, a in enumerate(bufs):
        raw = b.load(b.gep(pbuf, [ir.Constant(I32, i)], inbounds=True), align=8)
        args.append(b.bitcast(raw, mem_type(a.type).as_pointer(), name=a.name))
        for _ in range(2 * a.dims):
            args.append(b.load(b.gep(pdims, [ir.Constant(I32, k)], inbounds=True), align=4))
            k += 1
    for j, a in enumerate(scalars):
        raw = b.load(b.gep(pscal, [ir.Constant(I32, j)], inbounds=True), align=8)
        t = llvm_type(a.type)
        if a.type.is_float():
            v = b.bitcast(b.trunc(raw, ir.IntType(a.type.bits)), t) if a.type.bits < 64 \
                else b.bitcast(raw, t)
        else:
            v = b.trunc(raw, t)
        args.append(v)
    if checked:
        args.append(b.gep(pscal, [ir.Constant(I32, len(scalars))], inbounds=True))
    if profile:
        slot = b.gep(pscal, [ir.Constant(I32, len(scalars) + 3 * checked)], inbounds=True)
        args.append(b.inttoptr(b.load(slot, align=8), I64.as_pointer(), name="profile"))
    args.append(nthreads)
    b.ret(b.call(impl, args))


_NO_VECTORIZE = "llvm.loop.vectorize.enable"


class _LoopID(ir.values.MDValue):
    """A loop's ``!llvm.loop`` node: ``distinct !{!self, !{!"<property>", i1 false}}``."""

    def descr(self, buf):
        buf.append("distinct ")
        super().descr(buf)

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


def _loop_id(module: ir.Module, prop: str) -> ir.values.MDValue:
    flag = module.add_metadata([ir.MetaDataString(module, prop), ir.Constant(ir.IntType(1), 0)])
    node = _LoopID(module, [], name=str(len(module.metadata)))
    node.operands = (node, flag)
    return node


class FnEmitter(ExprEmitter, MemoryEmitter):
    """Emits statements into one LLVM function (the entry's impl or an outlined body)."""

    def __init__(self, module, fn, builder, env, buffers, err_ptr, num_threads, notes,
                 in_parallel, fault=None, fault_names=None, prof=None):
        self.module, self.fn, self.b = module, fn, builder
        self.env, self.buffers = env, buffers
        self.heap_slots = {}       # heap allocation -> the slot holding its pointer
        # loops of this function around the statement being emitted (an outlined
        # parallel body starts inside its own loop over its iterations), and the blocks
        # that heap allocations inside them reuse (``codegen_memory``: the pseudostack)
        self.loop_depth = 1 if in_parallel else 0
        self.reused, self.reused_live = {}, set()
        self.err_ptr, self.num_threads = err_ptr, num_threads
        self.notes, self.in_parallel = notes, in_parallel
        self.fault, self.fault_names = fault, fault_names   # checked builds (i64*, names)
        self.prof = prof           # profiled builds: a profile.ProfileContext
        self.lanes = 1
        self.mask = None           # <W x i1> inside a varying IfThenElse of a vector loop
        self.cache = [{}]
        self.stmt_cache = {}
        self.pure_memo = {}
        self.load_memo = {}
        self.depth = 0            # of emit() calls in progress

    # -- scopes ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _scoped(self, name, value):
        """``name`` bound to ``value``, with a fresh cache scope."""
        shadow = name in self.env
        old = self.env.get(name)
        self.env[name] = value
        saved = self.cache
        self.cache = [{}] if shadow else saved + [{}]
        try:
            yield
        finally:
            self.cache = saved
            if shadow:
                self.env[name] = old
            else:
                del self.env[name]

    @contextlib.contextmanager
    def _nested(self):
        saved = self.cache
        self.cache = saved + [{}]
        try:
            yield
        finally:
            self.cache = saved

    # -- statements --------------------------------------------------------------------
    def emit_stmt(self, s: L.Stmt) -> None:
        """Emit ``s``.  Each compound statement is a generator that yields its children
        (``_stmt_step``), driven by one loop: no recursion per nested statement."""
        trampoline(s, self._stmt_step)

    def _stmt_step(self, s: L.Stmt):
        self.stmt_cache = {}            # values that read memory live for one statement
        if isinstance(s, L.Store):
            return self.emit_store(s)
        if isinstance(s, L.Barrier):
            return None
        if isinstance(s, L.Free):
            return self.free_early(s.name)
        if isinstance(s, L.Block):
            return self._block(s)
        if isinstance(s, L.For):
            return self._for(s)
        if isinstance(s, L.LetStmt):
            return self._let_stmt(s)
        if isinstance(s, L.IfThenElse):
            return self._if(s)
        if isinstance(s, L.Allocate):
            return self._allocate(s)
        if isinstance(s, L.ProducerConsumer):
            if self.prof is not None and s.is_producer and self.lanes == 1:
                return self._timed_produce(s)
            return self._block(L.Block((s.body,)))
        raise LoweringError(f"codegen: unknown statement {type(s).__name__}")

    def _block(self, s: L.Block):
        for x in s.stmts:
            yield x

    def _timed_produce(self, s: L.ProducerConsumer):
        """A produce region of a profiled build: its time goes to Func ``s.name``."""
        token = self.prof.enter_produce(self.b, s.name)
        yield s.body
        self.prof.exit_produce(self.b, token)

    def _let_stmt(self, s: L.LetStmt):
        # a LetStmt is lowering's own index arithmetic (loop variables, tile bases,
        # extents), which never overflows: its add/sub/mul spine carries ``nsw``, so
        # LLVM can tell apart addresses that differ by a constant (and keep a
        # reduction's accumulators in registers)
        value = self.emit(s.value, index=True)
        with self._scoped(s.name, value):
            yield s.body

    def _allocate(self, s: L.Allocate):
        with self.allocation(s), self._nested():
            yield s.body

    def _if(self, s: L.IfThenElse):
        cond = self.emit(s.cond)
        if is_varying(cond):
            yield from self._masked_if(s, self.vec(cond))
            return
        b = self.b
        if s.else_case is None:
            with b.if_then(cond), self._nested():
                yield s.then_case
        else:
            with b.if_else(cond) as (then, otherwise):
                with then, self._nested():
                    yield s.then_case
                with otherwise, self._nested():
                    yield s.else_case

    def _masked_if(self, s: L.IfThenElse, cond):
        """An IfThenElse whose condition varies across the lanes: each branch runs with
        the lanes where it holds as the mask (and only if there is one)."""
        outer, b = self.mask, self.b
        then_mask = cond if outer is None else b.and_(outer, cond)
        yield from self._under_mask(then_mask, s.then_case)
        if s.else_case is not None:
            not_cond = b.xor(cond, self.const(cond.type, 1))
            yield from self._under_mask(not_cond if outer is None else b.and_(outer, not_cond),
                                        s.else_case)

    def _under_mask(self, mask, stmt):
        b, outer = self.b, self.mask
        bits = b.bitcast(mask, ir.IntType(self.lanes))
        with b.if_then(b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))):
            self.mask = mask
            try:
                with self._nested():
                    yield stmt
            finally:
                self.mask = outer

    def _for(self, s: L.For):
        kind = s.kind
        if kind == "vectorized":
            reason = None
            if isinstance(s.extent, E.Const) and s.extent.value > MAX_LANES:
                self.notes.append(f"loop {s.name}: its {s.extent.value} lanes run as "
                                  f"vectors of {MAX_LANES}")
                return self._block(chunk_wide_vector_loop(s))
            if not isinstance(s.extent, E.Const):
                reason = f"its extent {L._e(s.extent)} is not a constant"
            elif self.lanes > 1:
                reason = "it is nested in another vectorized loop"
            else:
                reason = vectorize_blocker(s.body, s.name)
            if reason is None:
                return self._vector_for(s)
            self.notes.append(f"loop {s.name} is not vectorized: {reason}")
        elif kind == "unrolled":
            if isinstance(s.extent, E.Const):
                return self._unrolled_for(s)
            self.notes.append(f"loop {s.name} is not unrolled: its extent "
                              f"{L._e(s.extent)} is not a constant")
        elif kind == "parallel":
            if not self.in_parallel and self.lanes == 1:
                return self._parallel_for(s)
            where = "another parallel loop" if self.in_parallel else "a vectorized loop"
            self.notes.append(f"loop {s.name} runs serially: it is nested in {where}")
        elif kind == "gpu_thread":
            pieces = split_at_barriers(s.body)
            if pieces is not None:
                return self._block(L.Block(tuple(L.For(s.name, s.min, s.extent, "serial", p)
                                                 for p in pieces)))
        return self._serial_for(s)

    def _serial_for(self, s: L.For):
        mn, ext = self.scalar(s.min), self.scalar(s.extent)
        # a vectorized loop we could not vectorize ourselves is left to LLVM's vectorizer
        with self.counted_loop(s.name, mn, ext, auto_vectorize=s.kind == "vectorized") as i, \
                self._scoped(s.name, i):
            yield s.body

    @contextlib.contextmanager
    def counted_loop(self, name, mn, ext, auto_vectorize=False):
        """``for i in [mn, mn + ext): <the with-block>`` as a rotated loop with a phi; the
        with-block emits the body with ``i``.  LLVM's loop vectorizer is told to leave it
        alone unless ``auto_vectorize``: the schedule decides what is vectorized (and
        compile times halve)."""
        b = self.b
        zero = ir.Constant(I32, 0)
        end = b.add(mn, ext, name=f"{name}.end")
        pre = b.block
        loop = self.fn.append_basic_block(f"{name}.loop")
        after = self.fn.append_basic_block(f"{name}.after")
        b.cbranch(b.icmp_signed(">", ext, zero), loop, after)
        b.position_at_end(loop)
        i = b.phi(I32, name=name)
        i.add_incoming(mn, pre)
        self.loop_depth += 1
        try:
            yield i
        finally:
            self.loop_depth -= 1
        nxt = b.add(i, ir.Constant(I32, 1), name=f"{name}.next", flags=("nsw",))
        i.add_incoming(nxt, b.block)
        latch = b.cbranch(b.icmp_signed("<", nxt, end), loop, after)
        if not auto_vectorize:
            latch.set_metadata("llvm.loop", _loop_id(self.module, _NO_VECTORIZE))
        b.position_at_end(after)

    def _unrolled_for(self, s: L.For):
        mn = self.scalar(s.min)
        self.loop_depth += 1        # the copies of an allocation share one reused block
        try:
            for k in range(max(0, s.extent.value)):
                if isinstance(mn, ir.Constant):
                    i = ir.Constant(I32, mn.constant + k)
                else:
                    i = self.b.add(mn, ir.Constant(I32, k), flags=("nsw",))
                with self._scoped(s.name, i):
                    yield s.body
        finally:
            self.loop_depth -= 1

    def _vector_for(self, s: L.For):
        mn = self.scalar(s.min)
        w = s.extent.value
        if w <= 0:
            return
        if w == 1:
            with self._scoped(s.name, mn):
                yield s.body
            return
        self.lanes = w
        try:
            with self._scoped(s.name, Ramp(mn, 1, w)):
                yield s.body
        finally:
            self.lanes = 1

    def _parallel_for(self, s: L.For) -> None:
        mn, ext = self.scalar(s.min), self.scalar(s.extent)
        used = free_names(s.body)
        env_names = sorted(n for n in used if n in self.env)
        buf_names = sorted(n for n in used if n in self.buffers)
        captured = [self.env[n] for n in env_names] + [self.buffers[n].ptr for n in buf_names]
        checked = self.fault is not None
        ranges = [v for n in buf_names for v in (self.buffers[n].lo, self.buffers[n].hi)
                  if checked and self.buffers[n].lo is not None]
        captured += ranges + ([self.fault] if checked else [])
        noalias = [False] * len(env_names) + [True] * len(buf_names) + \
            [False] * (len(ranges) + checked)
        prof, hooks, team = self.prof, None, None
        if prof is not None:           # the counters, then the timing around each body
            hooks = prof.worker_hooks(s.name, len(captured))
            captured.append(prof.base)
            noalias.append(True)
            team = []
        captured += [mn, self.err_ptr]
        noalias += [False, False]
        buf_info = {n: self.buffers[n] for n in buf_names}
        module, notes, fault_names = self.module, self.notes, self.fault_names
        subs = []

        def body(bld, i, caps):
            env = dict(zip(env_names, caps))
            k = len(env_names)
            bufs = {n: Buffer(p, buf_info[n].type, buf_info[n].is_output)
                    for n, p in zip(buf_names, caps[k:k + len(buf_names)])}
            k += len(buf_names)
            fault = None
            if checked:
                for n in buf_names:
                    if buf_info[n].lo is not None:
                        bufs[n] = Buffer(bufs[n].ptr, bufs[n].type, bufs[n].is_output,
                                         caps[k], caps[k + 1], buf_info[n].id)
                        k += 2
                fault = caps[k]
            cmin, err = caps[-2], caps[-1]
            sub = FnEmitter(module, bld.function, bld, env, bufs, err, None, notes,
                            in_parallel=True, fault=fault, fault_names=fault_names,
                            prof=hooks[2][-1] if hooks else None)
            sub.fp_flags = self.fp_flags
            sub.scalar_gathers = self.scalar_gathers
            sub.vector_math = self.vector_math
            sub.shared_spans = self.shared_spans
            sub.window_gathers = self.window_gathers
            subs.append(sub)
            var = bld.add(cmin, i, name=s.name, flags=("nsw",))
            with sub._scoped(s.name, var):
                sub.emit_stmt(s.body)

        base, k = f"{s.name}.par", 0
        while f"{base}.body" in module.globals:       # one outlined body per loop copy
            k += 1
            base = f"{s.name}.par{k}"
        token = prof.enter_parallel(self.b, s.name) if prof is not None else None
        emit_parallel_for(self.b, module, ext, body, captured, self.num_threads,
                          name=base, schedule="dynamic", chunk=0,
                          noalias=noalias, around=hooks and hooks[:2],
                          team_out=team)
        subs[0].free_reused_at_exits()      # each call of the body owns its blocks
        if prof is not None:
            prof.exit_parallel(self.b, token, team[0])
