"""Loop IR (target "cuda") -> CUDA C kernels + a host launch plan.

    program = generate(lowered)      # a plan.CudaProgram (fast_math=True: the schedule's
                                     # set_codegen(fma=True), see cexpr.reciprocal)
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
    def __init__(self, lp: LoweredPipeline, namer: Namer, fast_math: bool = False):
        self.lp = lp
        self.namer = namer
        self.fast_math = fast_math
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

    def split(self, root):
        """The host plan of ``root``: GPU loop nests become kernels, the rest host steps.

        Iterative (an explicit stack of visits and exits), not one recursion per
        statement: a pipeline of hundreds of root Funcs nests as deep as it is long."""
        work, done = [("visit", root)], []
        while work:
            op, s = work.pop()
            if op == "visit":
                self._visit(s, work, done)
            elif op == "block":
                n = len(s.stmts)
                parts = done[len(done) - n:]
                del done[len(done) - n:]
                done.append(HostSeq(tuple(parts)))
            elif op == "let":
                chain, body = s, done.pop()
                for name, value, old in reversed(chain):
                    self._restore(self.scalars, name, old)
                    body = HostLet(name, value, body)
                done.append(body)
            elif op == "for":
                st, old = s
                self._restore(self.scalars, st.name, old)
                done.append(HostFor(st.name, st.min, st.extent, done.pop()))
            elif op == "if":
                else_step = done.pop() if s.else_case is not None else None
                done.append(HostIf(s.cond, done.pop(), else_step))
            else:                                    # "alloc"
                st, old = s
                self._restore(self.buffers, st.name, old)
                done.append(HostAlloc(st.name, st.type, tuple(st.extents), done.pop()))
        return done.pop()

    @staticmethod
    def _restore(scope, name, old):
        if old is None:
            scope.pop(name, None)
        else:
            scope[name] = old

    def _visit(self, s, work, done):
        if _is_gpu_loop(s):
            done.append(self._kernel(s, serial=False))
        elif not _has(s, _is_gpu_loop) and not _has(s, lambda n: isinstance(n, Allocate)):
            has_store = _has(s, lambda n: isinstance(n, Store))
            done.append(self._kernel(s, serial=True) if has_store else HostSeq(()))
        elif isinstance(s, Block):
            work.append(("block", s))
            work.extend(("visit", x) for x in reversed(s.stmts))
        elif isinstance(s, ProducerConsumer):
            work.append(("visit", s.body))
        elif isinstance(s, LetStmt):
            chain = []
            while isinstance(s, LetStmt):        # a chain of lets: one frame
                _check_host_expr(s.value, f"let {s.name}")
                chain.append((s.name, s.value, self.scalars.get(s.name)))
                self.scalars[s.name] = s.value.type
                s = s.body
            work.append(("let", chain))
            work.append(("visit", s))
        elif isinstance(s, For):
            _check_host_expr(s.min, f"loop {s.name}")
            _check_host_expr(s.extent, f"loop {s.name}")
            work.append(("for", (s, self.scalars.get(s.name))))
            self.scalars[s.name] = T.int32
            work.append(("visit", s.body))
        elif isinstance(s, IfThenElse):
            _check_host_expr(s.cond, "an if around GPU kernels")
            work.append(("if", s))
            if s.else_case is not None:
                work.append(("visit", s.else_case))
            work.append(("visit", s.then_case))
        elif isinstance(s, Allocate):
            if s.memory == "shared":
                raise LoweringError(f"allocation {s.name} is in shared memory but outside any "
                                    "gpu_block loop; shared memory exists only inside a block")
            for e in s.extents:
                _check_host_expr(e, f"the size of allocation {s.name}")
            work.append(("alloc", (s, self.buffers.get(s.name))))
            self.buffers[s.name] = s.type
            work.append(("visit", s.body))
        elif isinstance(s, Barrier):
            done.append(HostSeq(()))
        else:
            raise LoweringError(f"the CUDA backend cannot place a {type(s).__name__} on the host")

    def _kernel(self, s, serial: bool):
        funcs = tuple(dict.fromkeys(n.name for n in walk_stmts(s)
                                    if isinstance(n, ProducerConsumer) and n.is_producer))
        local = {n.name for n in walk_stmts(s) if isinstance(n, Allocate)}
        written = [n.buffer for n in walk_stmts(s) if isinstance(n, Store) and n.buffer not in local]
        label = written[0] if written else (funcs[0] if funcs else "kernel")
        name = self.namer.fresh(f"{self.lp.name}_k{len(self.kernels)}_{label}".replace(".", "_"))
        kb = KernelBuilder(name, s, self.namer, dict(self.scalars), dict(self.buffers), funcs,
                           self.fast_math)
        kernel, text = kb.build()
        if serial:
            self.notes.append(f"kernel {name}: host code with no GPU loop (producing "
                              f"{', '.join(funcs) or 'stores'}) runs as a single GPU thread; "
                              "give it gpu_blocks/gpu_threads to make it parallel")
        self.kernels.append(kernel)
        self.texts.append(text)
        return Launch(name)


def _flatten(root):
    """Drop empty sequences and unwrap one-element ones (iterative, post-order)."""
    work, done = [(root, False)], []
    while work:
        step, built = work.pop()
        kids = _plan_children(step)
        if not built and kids:
            work.append((step, True))
            work.extend((k, False) for k in reversed(kids))
            continue
        if not kids:
            done.append(step)
            continue
        parts = done[len(done) - len(kids):]
        del done[len(done) - len(kids):]
        done.append(_rebuild(step, parts))
    return done.pop()


def _plan_children(step) -> list:
    if isinstance(step, HostSeq):
        return list(step.steps)
    if isinstance(step, (HostLet, HostFor, HostAlloc)):
        return [step.body]
    if isinstance(step, HostIf):
        return [step.then_case] + ([] if step.else_case is None else [step.else_case])
    return []


def _rebuild(step, parts):
    if isinstance(step, HostSeq):
        flat = []
        for s in parts:
            flat.extend(s.steps if isinstance(s, HostSeq) else (s,))
        return flat[0] if len(flat) == 1 else HostSeq(tuple(flat))
    if isinstance(step, HostLet):
        return HostLet(step.name, step.value, parts[0])
    if isinstance(step, HostFor):
        return HostFor(step.name, step.min, step.extent, parts[0])
    if isinstance(step, HostIf):
        return HostIf(step.cond, parts[0], parts[1] if len(parts) > 1 else None)
    return HostAlloc(step.name, step.type, step.extents, parts[0])


def generate(lp: LoweredPipeline, fast_math: bool = False) -> CudaProgram:
    """CUDA C text and the host launch plan for a lowered pipeline (``fast_math``: float
    results may differ from IEEE in the last bit, as the schedule's ``fma`` option
    allows; see ``cexpr.reciprocal``)."""
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
    splitter = _HostSplitter(lp, namer, fast_math)
    plan = _flatten(splitter.split(lp.body))
    header = (f"// tilesolve: CUDA kernels of pipeline {lp.name} "
              f"({len(splitter.kernels)} kernel{'s' if len(splitter.kernels) != 1 else ''})\n")
    source = header + PRELUDE + "\n" + "\n".join(splitter.texts)
    return CudaProgram(lp.name, source, tuple(splitter.kernels), plan, tuple(lp.args),
                       tuple(lp.notes) + tuple(splitter.notes),
                       (tuple(lp.input_regions), tuple(lp.output_read_regions)))
