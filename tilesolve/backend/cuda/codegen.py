"""Loop IR (target "cuda") -> CUDA C kernels + a host launch plan.

    program = generate(lowered)      # a plan.CudaProgram
    print(program.source)            # prelude + one __global__ function per kernel
    print(program.plan_str())        # host side: loops, lets, device allocations, launches

Splitting host and device (``_HostSplitter``):

* each loop nest rooted at a ``gpu_block`` loop (or a ``gpu_thread`` loop
  outside any block loop: one block) becomes one kernel;
* loops, lets, ifs and allocations around kernels stay on the host (allocations
  become device buffers);
* host code that stores to memory but has no GPU loop (e.g. a compute_root Func
  the schedule left serial) becomes a one-thread kernel (correct, slow: a note says so).

Inside a kernel (``kernels.KernelBuilder``): block loops map to
``blockIdx`` (innermost block loop = x; beyond three, the outer ones are fused
into z), thread loops to ``threadIdx`` (a loop's axis is the number of thread
loops nested inside it, so the innermost is x).  Thread loops of different
extents share one block whose size is the maximum per axis; each loop guards
``threadIdx < extent`` (Sioutas et al. 2020, §4).  Code outside thread loops
that stores to memory runs on thread 0 only; ``Barrier`` is ``__syncthreads()``.
"""
from __future__ import annotations

from ...errors import LoweringError
from ...lower.ir import (Allocate, Barrier, Block, For, IfThenElse, Load, LetStmt,
                         LoweredPipeline, ProducerConsumer, Store, stmt_exprs, walk_stmts)
from ...model import types as T
from ...model.visit import walk
from .cexpr import PRELUDE, Namer
from .kernels import KernelBuilder
from .plan import (CudaProgram, HostAlloc, HostFor, HostIf, HostLet, HostSeq, Launch,
                   extent_name, stride_name)

GPU_LOOPS = ("gpu_block", "gpu_thread")

__all__ = ["generate"]


def _has(s, pred) -> bool:
    return any(pred(n) for n in walk_stmts(s))


def _is_gpu_loop(n) -> bool:
    return isinstance(n, For) and n.kind in GPU_LOOPS


def _check_host_expr(e, where: str):
    for n in walk(e):
        if isinstance(n, Load):
            raise LoweringError(
                f"{where} reads buffer {n.buffer} on the host; host-side values (loop bounds, "
                "sizes, conditions around kernels) may not depend on computed data on the GPU "
                "target")


class _HostSplitter:
    def __init__(self, lp: LoweredPipeline, namer: Namer):
        self.lp = lp
        self.namer = namer
        self.kernels = []
        self.texts = []
        self.notes = []
        self.scalars: dict = {}      # host scalar name -> Type
        self.buffers: dict = {}      # buffer name -> Type
        for a in lp.args:
            if a.kind == "scalar":
                self.scalars[a.name] = a.type
            else:
                self.buffers[a.name] = a.type
                for d in range(a.dims):
                    self.scalars[extent_name(a.name, d)] = T.int32
                    self.scalars[stride_name(a.name, d)] = T.int32

    def split(self, s):
        if _is_gpu_loop(s):
            return self._kernel(s, serial=False)
        if not _has(s, _is_gpu_loop) and not _has(s, lambda n: isinstance(n, Allocate)):
            if _has(s, lambda n: isinstance(n, Store)):
                return self._kernel(s, serial=True)
            return HostSeq(())
        if isinstance(s, Block):
            return HostSeq(tuple(self.split(x) for x in s.stmts))
        if isinstance(s, ProducerConsumer):
            return self.split(s.body)
        if isinstance(s, LetStmt):
            return self._let_chain(s)
        if isinstance(s, For):
            _check_host_expr(s.min, f"loop {s.name}")
            _check_host_expr(s.extent, f"loop {s.name}")
            return self._scoped(s.name, T.int32,
                                lambda: HostFor(s.name, s.min, s.extent, self.split(s.body)))
        if isinstance(s, IfThenElse):
            _check_host_expr(s.cond, "an if around GPU kernels")
            return HostIf(s.cond, self.split(s.then_case),
                          None if s.else_case is None else self.split(s.else_case))
        if isinstance(s, Allocate):
            if s.memory == "shared":
                raise LoweringError(f"allocation {s.name} is in shared memory but outside any "
                                    "gpu_block loop; shared memory exists only inside a block")
            for e in s.extents:
                _check_host_expr(e, f"the size of allocation {s.name}")
            old = self.buffers.get(s.name)
            self.buffers[s.name] = s.type
            try:
                return HostAlloc(s.name, s.type, tuple(s.extents), self.split(s.body))
            finally:
                if old is None:
                    del self.buffers[s.name]
                else:
                    self.buffers[s.name] = old
        if isinstance(s, Barrier):
            return HostSeq(())
        raise LoweringError(f"the CUDA backend cannot place a {type(s).__name__} on the host")

    def _let_chain(self, s):
        """A chain of LetStmts (the hoisted regions of long pipelines: hundreds) in a
        loop, not one recursion per let."""
        chain = []
        while isinstance(s, LetStmt):
            _check_host_expr(s.value, f"let {s.name}")
            chain.append((s.name, s.value, self.scalars.get(s.name)))
            self.scalars[s.name] = s.value.type
            s = s.body
        try:
            body = self.split(s)
        finally:
            for name, _, old in reversed(chain):
                if old is None:
                    self.scalars.pop(name, None)
                else:
                    self.scalars[name] = old
        for name, value, _ in reversed(chain):
            body = HostLet(name, value, body)
        return body

    def _scoped(self, name, t, build):
        old = self.scalars.get(name)
        self.scalars[name] = t
        try:
            return build()
        finally:
            if old is None:
                del self.scalars[name]
            else:
                self.scalars[name] = old

    def _kernel(self, s, serial: bool):
        funcs = tuple(dict.fromkeys(n.name for n in walk_stmts(s)
                                    if isinstance(n, ProducerConsumer) and n.is_producer))
        local = {n.name for n in walk_stmts(s) if isinstance(n, Allocate)}
        written = [n.buffer for n in walk_stmts(s) if isinstance(n, Store) and n.buffer not in local]
        label = written[0] if written else (funcs[0] if funcs else "kernel")
        name = self.namer.fresh(f"{self.lp.name}_k{len(self.kernels)}_{label}".replace(".", "_"))
        kb = KernelBuilder(name, s, self.namer, dict(self.scalars), dict(self.buffers), funcs)
        kernel, text = kb.build()
        if serial:
            self.notes.append(f"kernel {name}: host code with no GPU loop (producing "
                              f"{', '.join(funcs) or 'stores'}) runs as a single GPU thread; "
                              "give it gpu_blocks/gpu_threads to make it parallel")
        self.kernels.append(kernel)
        self.texts.append(text)
        return Launch(name)


def _flatten(step):
    """Drop empty sequences and unwrap one-element ones."""
    if isinstance(step, HostSeq):
        parts = []
        for s in step.steps:
            s = _flatten(s)
            if isinstance(s, HostSeq):
                parts.extend(s.steps)
            else:
                parts.append(s)
        return parts[0] if len(parts) == 1 else HostSeq(tuple(parts))
    if isinstance(step, HostLet):
        chain = []
        while isinstance(step, HostLet):          # a chain of lets: a loop, not recursion
            chain.append(step)
            step = step.body
        body = _flatten(step)
        for let in reversed(chain):
            body = HostLet(let.name, let.value, body)
        return body
    if isinstance(step, HostFor):
        return HostFor(step.name, step.min, step.extent, _flatten(step.body))
    if isinstance(step, HostIf):
        return HostIf(step.cond, _flatten(step.then_case),
                      None if step.else_case is None else _flatten(step.else_case))
    if isinstance(step, HostAlloc):
        return HostAlloc(step.name, step.type, step.extents, _flatten(step.body))
    return step


def generate(lp: LoweredPipeline) -> CudaProgram:
    """CUDA C text and the host launch plan for a lowered pipeline."""
    if not isinstance(lp, LoweredPipeline):
        raise LoweringError(f"generate() needs a LoweredPipeline, got {type(lp).__name__}")
    if lp.target not in ("cuda",):
        raise LoweringError(f"pipeline {lp.name} was lowered for target {lp.target!r}; the CUDA "
                            "backend needs target='cuda'")
    for s in walk_stmts(lp.body):
        for e in stmt_exprs(s):
            for n in walk(e):
                if n.__class__.__name__ in ("Call", "BufferExtent", "RVar"):
                    raise LoweringError(f"pipeline {lp.name}: an unlowered {type(n).__name__} "
                                        f"({n}) is left in the loop IR")
    namer = Namer()
    for a in lp.args:            # argument names first: they keep their plain spelling
        namer(a.name)
    splitter = _HostSplitter(lp, namer)
    plan = _flatten(splitter.split(lp.body))
    header = (f"// tilesolve: CUDA kernels of pipeline {lp.name} "
              f"({len(splitter.kernels)} kernel{'s' if len(splitter.kernels) != 1 else ''})\n")
    source = header + PRELUDE + "\n" + "\n".join(splitter.texts)
    return CudaProgram(lp.name, source, tuple(splitter.kernels), plan, tuple(lp.args),
                       tuple(lp.notes) + tuple(splitter.notes),
                       (tuple(lp.input_regions), tuple(lp.output_read_regions)))
