"""One GPU loop nest of the loop IR -> one ``__global__`` CUDA C function.

``KernelBuilder(name, root, ...).build()`` returns ``(plan.Kernel, text)``.

Mapping (see ``codegen`` for the whole picture)::

    gpu_block  For v in [m, m+e)   ->  const ts_i32 v = m + (ts_i32)blockIdx.<axis>;
    gpu_thread For v in [m, m+e)   ->  if ((ts_i32)threadIdx.<axis> < e) {
                                         const ts_i32 v = m + (ts_i32)threadIdx.<axis>; ... }
    other For                      ->  for (ts_i32 v = m; v < m + e; ++v)  (#pragma unroll when
                                       unrolled, or serial of constant extent <= UNROLL_SERIAL)
    vectorized For of 2 or 4 lanes ->  float2/float4 ... loads and stores where aligned
                                       (``vector.py``), the loop unrolled between them
    Allocate (outside thread loops) -> __shared__ T name[N];   (inside: a per-thread array)
    Barrier                        ->  __syncthreads();
    Store outside thread loops     ->  if (threadIdx.x == 0 && ...) { ... }   (one thread writes)

Block loops must be perfectly nested (a chain); the innermost is blockIdx.x,
then y, and every further one is fused into z.  A thread loop's axis is the
number of thread loops nested inside it (innermost = x).  Grid and block sizes
must be computable before the launch: from host values only (lets inside the
kernel are substituted, then the expression is simplified).
"""
from __future__ import annotations

from ...analysis.simplify import simplify as _simplify
from ...errors import LoweringError
from ...lower.extent_bound import ExtentBounder, const_upper
from ...lower.ir import (Allocate, Barrier, Block, For, IfThenElse, Load, LetStmt,
                         ProducerConsumer, Store, stmt_children, walk_stmts)
from ...model import expr as E
from ...model import types as T
from ...model.visit import substitute_names, trampoline, walk
from . import vector
from .cexpr import ExprPrinter, ctype
from .plan import Kernel, KernelParam

AXES = "xyz"
# A serial loop of at most this constant extent is unrolled whole by nvcc (``#pragma
# unroll``): RDom taps, channels and per-thread tiles, whose indices then fold.
UNROLL_SERIAL = 16
_ONE = E.Const(T.int32, 1)


def param_decl(p: KernelParam) -> str:
    """A kernel parameter as the signature declares it (a buffer: a restrict pointer)."""
    if p.kind == "buffer":
        return f"{'const ' if p.read_only else ''}{ctype(p.type)} *__restrict__ {p.cname}"
    return f"const {ctype(p.type)} {p.cname}"


def _plus(a: str, b: str) -> str:
    return b if a == "0" else f"{a} + {b}"


def _facts(root) -> dict:
    """Per statement (by id): does its subtree hold a Store, a thread loop, a Barrier?
    (Children before parents: the reverse of ``walk_stmts``' parents-first order.)"""
    facts: dict = {}
    for s in reversed(list(walk_stmts(root))):
        store, thread = isinstance(s, Store), isinstance(s, For) and s.kind == "gpu_thread"
        barrier = isinstance(s, Barrier)
        for c in stmt_children(s):
            cs, ct, cb = facts[id(c)]
            store, thread, barrier = store or cs, thread or ct, barrier or cb
        facts[id(s)] = (store, thread, barrier)
    return facts


class _Printer(ExprPrinter):
    """An ExprPrinter that records the scalar names and buffers it prints."""

    def __init__(self, names, used: set, reads: set, bound: set, fast_math: bool = False):
        super().__init__(names, fast_math)
        self.used, self.reads, self.bound = used, reads, bound

    def node(self, e, args):
        if isinstance(e, (E.Var, E.Param)):
            self.used.add(e.name)
        elif isinstance(e, Load):
            self.reads.add(e.buffer)
        elif isinstance(e, E.Let):
            self.bound.add(e.name)
        return super().node(e, args)


def _thread_depth(s) -> int:
    """The largest number of nested gpu_thread loops on one path through ``s``."""
    deepest, stack = 0, [(s, 0)]
    while stack:
        n, above = stack.pop()
        above += isinstance(n, For) and n.kind == "gpu_thread"
        deepest = max(deepest, above)
        stack.extend((c, above) for c in stmt_children(n))
    return deepest


def _let_scopes(root, names: set) -> dict:
    """{id of each gpu_thread loop and Allocate: {name: the value it is bound to there}}
    for the let ``names`` (those bound to more than one value in the kernel)."""
    out: dict = {}
    if not names:
        return out
    env: dict = {}
    work: list = [root]
    while work:
        s = work.pop()
        if isinstance(s, tuple):             # leaving a let's scope
            name, old = s
            if old is None:
                env.pop(name, None)
            else:
                env[name] = old
            continue
        if (isinstance(s, For) and s.kind == "gpu_thread") or isinstance(s, Allocate):
            out[id(s)] = dict(env)
        if isinstance(s, LetStmt) and s.name in names:
            work.append((s.name, env.get(s.name)))
            env[s.name] = s.value
        work.extend(reversed(stmt_children(s)))
    return out


class KernelBuilder:
    def __init__(self, name: str, root, namer, host_scalars: dict, host_buffers: dict,
                 funcs: tuple = (), fast_math: bool = False):
        self.name, self.root, self.names = name, root, namer
        self.host_scalars, self.host_buffers, self.funcs = host_scalars, host_buffers, funcs
        self.used, self.reads, self.writes, self.bound_names = set(), set(), set(), set()
        self.pr = _Printer(namer, self.used, self.reads, self.bound_names, fast_math)
        self.lines: list[str] = []
        self.depth = 1
        self.shared_bytes = 0
        self.facts = _facts(root)   # the root's statements live as long as the builder
        self.thread_ext: dict = {}
        self.lets: dict = {}
        for n in walk_stmts(root):
            if isinstance(n, LetStmt):
                old = self.lets.get(n.name, n.value)
                self.lets[n.name] = n.value if old is n.value else None   # None: ambiguous
        # a name bound to different values (the two bodies of a block's steady state):
        # its value where each thread loop and allocation sits
        self.scoped = _let_scopes(root, {k for k, v in self.lets.items() if v is None})
        # the vectorized loops' vector forms, and the buffers their accesses reach (an
        # allocation among them is aligned to the widest vector)
        self.vectors = {id(n): v for n in walk_stmts(root) if isinstance(n, For)
                        and n.kind == "vectorized" and (v := vector.plan(n)) is not None}
        self.aligned = set().union(*(v.buffers for v in self.vectors.values()))

    # -- host-computable sizes ------------------------------------------------------
    def _lets_at(self, at) -> dict:
        """The kernel's lets as seen at statement ``at`` (None: the unambiguous ones)."""
        scoped = self.scoped.get(id(at)) if at is not None else None
        return {**self.lets, **scoped} if scoped else self.lets

    def _substituted(self, e: E.Expr, at=None) -> E.Expr:
        """``e`` with the kernel's lets (as seen at statement ``at``) substituted until
        only host values and loop variables remain."""
        lets = self._lets_at(at)
        for _ in range(64):
            inner = {n.name for n in walk(e) if isinstance(n, E.Var)
                     and n.name not in self.host_scalars and lets.get(n.name) is not None}
            if not inner:
                break
            e = substitute_names(e, {k: lets[k] for k in inner})
        return e

    def host_expr(self, e: E.Expr, what: str, required: bool = True, at=None):
        """``e`` as an Expr of host values only (simplified), computable before the
        launch; None (or a LoweringError if ``required``) when it is not."""
        e = self._substituted(e, at)
        for n in walk(e):
            bad = None
            if isinstance(n, Load):
                bad = f"reads buffer {n.buffer}"
            elif isinstance(n, (E.Var, E.Param)) and n.name not in self.host_scalars:
                bad = f"depends on {n.name}, which is only known inside the kernel"
            if bad is not None:
                if not required:
                    return None
                raise LoweringError(
                    f"kernel {self.name}: {what} ({e}) {bad}; GPU grid and block sizes must be "
                    "known at launch (give the GPU loops constant extents, e.g. a constant tile "
                    "size)")
        return _simplify(e)

    def bounded_expr(self, e: E.Expr, what: str, at=None) -> E.Expr:
        """A host Expr equal to ``e`` if there is one, else a constant upper bound of it."""
        h = self.host_expr(e, what, required=False, at=at)
        if h is not None:
            return h
        # the lowering's constant bound (one engine for allocations and launches): first
        # of the fully substituted extent, then with lets substituted one level at a
        # time, so names that cancel (a tile's base) cancel before their Exprs grow
        ub = const_upper(_simplify(self._substituted(e, at)))
        if ub is None:
            blocks = [(b.name, b.min, b.extent) for b in walk_stmts(self.root)
                      if isinstance(b, For) and b.kind == "gpu_block"]
            ub = ExtentBounder({k: v for k, v in self._lets_at(at).items() if v is not None},
                               blocks)(e)
        if ub is None:
            self.host_expr(e, what, at=at)   # raises, naming what is unknown
        return E.Const(T.int32, max(ub, 0))

    # -- structure ------------------------------------------------------------------
    def _blocks(self):
        blocks = [n for n in walk_stmts(self.root) if isinstance(n, For) and n.kind == "gpu_block"]
        for i, b in enumerate(blocks):
            inner = [n for n in walk_stmts(b.body) if isinstance(n, For) and n.kind == "gpu_block"]
            if len(inner) != len(blocks) - 1 - i:
                other = next(n for n in blocks if n is not b and n not in inner
                             and blocks.index(n) > i)
                raise LoweringError(f"kernel {self.name}: gpu_block loops {b.name} and {other.name} "
                                    "are not nested in one another; the block loops of one kernel "
                                    "must form a single nest")
        for b, inner in zip(blocks, blocks[1:]):
            self._check_between(b, b.body, inner)
        for t in walk_stmts(self.root):
            if isinstance(t, For) and t.kind == "gpu_thread":
                for n in walk_stmts(t.body):
                    if isinstance(n, For) and n.kind == "gpu_block":
                        raise LoweringError(f"kernel {self.name}: gpu_block loop {n.name} is inside "
                                            f"gpu_thread loop {t.name}")
                    if isinstance(n, Barrier):
                        raise LoweringError(f"kernel {self.name}: a barrier inside gpu_thread loop "
                                            f"{t.name} (barriers go between thread loops)")
        return blocks

    def _check_between(self, outer, s, target):
        """Between two block loops only lets, allocations, ifs and serial loops may sit;
        anything else with side effects would run once per inner block."""
        work = [s]
        while work:
            s = work.pop()
            if s is target:
                continue
            if isinstance(s, (LetStmt, ProducerConsumer, Allocate)):
                work.append(s.body)
                continue
            if isinstance(s, IfThenElse) and s.else_case is None:
                work.append(s.then_case)
                continue
            if isinstance(s, For) and s.kind not in ("gpu_block", "gpu_thread"):
                work.append(s.body)
                continue
            if isinstance(s, Block):
                for x in s.stmts:
                    if any(n is target for n in walk_stmts(x)):
                        work.append(x)
                    elif any(isinstance(n, (Store, For, Barrier)) for n in walk_stmts(x)):
                        break
                else:
                    continue
            raise LoweringError(f"kernel {self.name}: code between gpu_block loops {outer.name} "
                                f"and {target.name} would run once per {target.name} block; put "
                                "it inside the innermost block loop")

    def _layout(self, blocks):
        n = len(blocks)
        self.block_axis, self.fused = {}, []
        exts = [self.host_expr(b.extent, f"the extent of gpu_block loop {b.name}") for b in blocks]
        self.block_ext = {id(b): x for b, x in zip(blocks, exts)}
        grid = [_ONE, _ONE, _ONE]
        for i, b in enumerate(blocks):
            axis = n - 1 - i if n <= 3 else (2 if i < n - 2 else n - 1 - i)
            self.block_axis[id(b)] = axis
            if n > 3 and i < n - 2:
                self.fused.append(b)
                grid[2] = exts[i] if grid[2] is _ONE else _simplify(grid[2] * exts[i])
            else:
                grid[axis] = exts[i]
        self.grid = tuple(grid)
        # threads
        self.thread_axis, per_axis = {}, ([], [], [])
        for t in walk_stmts(self.root):
            if isinstance(t, For) and t.kind == "gpu_thread":
                axis = _thread_depth(t.body)
                if axis > 2:
                    raise LoweringError(f"kernel {self.name}: gpu_thread loop {t.name} has {axis} "
                                        "thread loops inside it; CUDA has 3 thread dimensions")
                self.thread_axis[id(t)] = axis
                what = f"the extent of gpu_thread loop {t.name}"
                ext = self.bounded_expr(t.extent, what, at=t)
                exact = self.host_expr(t.extent, what, required=False, at=t)
                if exact is None:
                    # an extent that depends on the block but is one constant for every
                    # block (a producer's region in a steady state: its base cancels)
                    exact = _simplify(self._substituted(t.extent, t))
                    if not isinstance(exact, E.Const):
                        exact = None
                self.thread_ext[id(t)] = t.extent if exact is None else exact
                if all(x is not ext for x in per_axis[axis]):
                    per_axis[axis].append(ext)
        block = []
        for exts_a in per_axis:
            if not exts_a:
                block.append(_ONE)
            elif all(isinstance(x, E.Const) for x in exts_a):
                block.append(E.Const(T.int32, max(max(x.value for x in exts_a), 1)))
            else:
                m = exts_a[0]
                for x in exts_a[1:]:
                    m = E.max_(m, x)
                block.append(_simplify(m))
        self.block = tuple(block)
        self.block_const = (tuple(int(b.value) for b in block)
                            if all(isinstance(b, E.Const) for b in block) else None)

    # -- emission -------------------------------------------------------------------
    def line(self, text: str):
        self.lines.append("  " * self.depth + text)

    def open(self, text: str):
        self.line(text)
        self.depth += 1

    def close(self, text: str = "}"):
        self.depth -= 1
        self.line(text)

    def _unbound(self) -> list:
        return [a for a in range(3) if a not in self.bound
                and not (isinstance(self.block[a], E.Const) and self.block[a].value == 1)]

    def _stmt(self, item):
        """Emit ``s`` of ``item = (s, tail)`` (``tail``: nothing follows ``s`` in its C
        scope): a ``trampoline`` step yielding ``(child, tail)``, so no recursion per
        statement."""
        s, tail = item
        store, thread, barrier = self.facts[id(s)]
        unbound = self._unbound()
        if store and unbound and not thread and not barrier:
            conds = " && ".join(f"threadIdx.{AXES[a]} == 0" for a in unbound)
            if self.thread_level == 0 and self.writes:
                # what the block's threads stored so far (e.g. the pure stage of the Func
                # this updates) must be visible to the one thread before it reads it
                self.line("__syncthreads();  // the block's stores so far, before one thread")
            self.open(f"if ({conds}) {{  // one thread of the block")
            saved, self.bound = self.bound, {0, 1, 2}
            yield s, True
            self.bound = saved
            self.close()
            if self.thread_level == 0 and not tail:
                self.line("__syncthreads();  // the other threads wait for its stores")
            return
        e = self.pr
        scoped = isinstance(s, (LetStmt, Allocate)) or (isinstance(s, For) and s.kind == "gpu_block")
        if scoped and not tail:
            self.open("{")
        if isinstance(s, Block):
            for i, x in enumerate(s.stmts):
                yield x, tail and i == len(s.stmts) - 1
        elif isinstance(s, ProducerConsumer):
            self.line(f"// {'produce' if s.is_producer else 'consume'} {s.name}")
            yield s.body, tail
        elif isinstance(s, LetStmt):
            self.bound_names.add(s.name)
            self.line(f"const {ctype(s.value.type)} {self.names(s.name)} = {e(s.value)};")
            yield s.body, True
        elif isinstance(s, Allocate):
            self._allocate(s)
            yield s.body, True
        elif isinstance(s, Store):
            self.writes.add(s.buffer)
            self.line(f"{self.names(s.buffer)}[{e.index(s.index)}] = {e(s.value)};")
        elif isinstance(s, IfThenElse):
            self.open(f"if ({e(s.cond)}) {{")
            yield s.then_case, True
            if s.else_case is not None:
                self.close("} else {")
                self.depth += 1
                yield s.else_case, True
            self.close()
        elif isinstance(s, Barrier):
            self.line("__syncthreads();")
        elif isinstance(s, For):
            self.bound_names.add(s.name)
            if s.kind == "gpu_block":
                self._block_var(s)
                yield s.body, True
            elif s.kind == "gpu_thread":
                yield from self._thread_loop(s)
            else:
                yield from self._serial_loop(s)
        else:
            raise LoweringError(f"kernel {self.name}: cannot emit a {type(s).__name__}")
        if scoped and not tail:
            self.close()

    def _allocate(self, s: Allocate):
        self.bound_names.add(s.name)
        count = 1
        for x in s.extents:
            x = self.bounded_expr(x, f"the size of allocation {s.name}", at=s)
            if not isinstance(x, E.Const):
                raise LoweringError(f"kernel {self.name}: allocation {s.name} has a size ({x}) that "
                                    "is not a constant; GPU shared and per-thread arrays need "
                                    "constant sizes (use constant tile sizes)")
            count *= max(int(x.value), 0)
        count = max(count, 1)
        one_thread = self.block_const == (1, 1, 1)
        if s.memory == "shared" and self.thread_level:
            raise LoweringError(f"kernel {self.name}: shared allocation {s.name} is inside a "
                                "gpu_thread loop; shared memory belongs to the whole block")
        shared = s.memory == "shared" or (not self.thread_level and not one_thread)
        ct = ctype(s.type)
        align = ""
        if s.name in self.aligned:
            align = f"__align__({vector.VECTOR_BYTES}) "
            count = -(-count * s.type.bytes // vector.VECTOR_BYTES) * vector.VECTOR_BYTES \
                // s.type.bytes
        if shared:
            self.shared_bytes += count * s.type.bytes
            self.line(f"__shared__ {align}{ct} {self.names(s.name)}[{count}];"
                      + ("" if s.memory == "shared" else f"  // {s.memory} at block level: shared"))
        else:
            self.line(f"{align}{ct} {self.names(s.name)}[{count}];  // {s.memory}, per thread")

    def _block_var(self, s: For):
        axis = self.block_axis[id(s)]
        v, mn = self.names(s.name), self.pr.index(s.min)
        if s in self.fused:
            k = self.fused.index(s)
            idx = "blockIdx.z"
            inner = self.fused[k + 1:]
            if inner:
                div = " * ".join(f"(ts_u32)({self.pr(self.block_ext[id(b)])})" for b in inner)
                idx = f"({idx} / ({div}))"
            if k > 0:
                idx = f"({idx} % (ts_u32)({self.pr(self.block_ext[id(s)])}))"
            self.line(f"const ts_i32 {v} = {_plus(mn, f'(ts_i32){idx}')};")
        else:
            self.line(f"const ts_i32 {v} = {_plus(mn, f'(ts_i32)blockIdx.{AXES[axis]}')};")

    def _thread_loop(self, s: For):
        axis = self.thread_axis[id(s)]
        conds, newly = [], {axis}
        if self.thread_level == 0:      # outermost loop of a nest: other axes idle
            nest = {self.thread_axis[id(t)] for t in walk_stmts(s)
                    if isinstance(t, For) and t.kind == "gpu_thread"}
            for a in self._unbound():
                if a not in nest:
                    conds.append(f"threadIdx.{AXES[a]} == 0")
                    newly.add(a)
        ext = self.thread_ext[id(s)]
        if not (ext is self.block[axis] or isinstance(ext, E.Const) and
                isinstance(self.block[axis], E.Const) and ext.value == self.block[axis].value):
            conds.append(f"(ts_i32)threadIdx.{AXES[axis]} < {self.pr.index(ext)}")
        self.open(f"if ({' && '.join(conds)}) {{" if conds else "{")
        tid = f"(ts_i32)threadIdx.{AXES[axis]}"
        self.line(f"const ts_i32 {self.names(s.name)} = {_plus(self.pr.index(s.min), tid)};")
        saved = self.bound
        self.bound = self.bound | newly
        self.thread_level += 1
        yield s.body, True
        self.thread_level -= 1
        self.bound = saved
        self.close()

    def _vector_loop(self, s: For, vl: vector.VectorLoop):
        """A vectorized loop in its vector form (``vector.py``): its windows of loaded
        elements into arrays, the loop unrolled on them, its store from a lanes array."""
        n, names, pr = vl.lanes, self.names, self.pr
        self.open(f"{{  // {names(s.name)}: {n} lanes, vector accesses where aligned")
        for buf, start, t, arr, length in vl.loads:
            self.reads.add(buf)
            self.bound_names.add(arr)
            self.line(f"{ctype(t)} {names(arr)}[{length}];")
            self.line(f"ts_vload<{n}, {length}>({names(arr)}, {names(buf)}, "
                      f"{pr.index(start)});")
        if vl.store_base is not None:
            self.bound_names.add(vl.store_lanes)
            self.line(f"{ctype(vl.store.value.type)} {names(vl.store_lanes)}[{n}];")
        self.facts.update(_facts(vl.body))      # (the plan, and so its body, lives in self)
        yield vl.body, True
        if vl.store_base is not None:
            self.writes.add(vl.store.buffer)
            self.line(f"ts_vstore<{n}>({names(vl.store.buffer)}, {pr.index(vl.store_base)}, "
                      f"{names(vl.store_lanes)});")
        self.close()

    def _serial_loop(self, s: For):
        vl = self.vectors.get(id(s))
        if vl is not None:
            yield from self._vector_loop(s, vl)
            return
        v = self.names(s.name)
        simple = all(isinstance(x, (E.Const, E.Var, E.Param)) for x in (s.min, s.extent))
        if simple:
            lo = self.pr.index(s.min)
            hi = self.pr.index(s.extent) if E.is_const(s.min, 0) else f"{lo} + {self.pr.index(s.extent)}"
        else:
            self.open("{")
            lo = self.names.fresh(f"{v}_lo")
            hi = self.names.fresh(f"{v}_hi")
            self.line(f"const ts_i32 {lo} = {self.pr.index(s.min)}, {hi} = {lo} + "
                      f"{self.pr.index(s.extent)};")
        if s.kind == "unrolled" or (isinstance(s.extent, E.Const) and
                                    int(s.extent.value) <= UNROLL_SERIAL):
            self.line("#pragma unroll")
        self.open(f"for (ts_i32 {v} = {lo}; {v} < {hi}; ++{v}) {{"
                  + (f"  // {s.kind}" if s.kind not in ("serial", "unrolled") else ""))
        yield s.body, True
        self.close()
        if not simple:
            self.close()

    # -- the whole kernel -----------------------------------------------------------
    def build(self):
        blocks = self._blocks()
        self._layout(blocks)
        self.bound, self.thread_level = set(), 0
        trampoline((self.root, True), self._stmt)
        body = self.lines
        unknown = sorted((self.used - self.bound_names) - set(self.host_scalars))
        if unknown:
            raise LoweringError(f"kernel {self.name}: {unknown[0]} is used but never defined")
        bufs = sorted(self.reads | self.writes)
        missing = [b for b in bufs if b not in self.host_buffers and b not in self.bound_names]
        if missing:
            raise LoweringError(f"kernel {self.name}: buffer {missing[0]} is not an argument or an "
                                "allocation outside the kernel")
        params = [KernelParam(self.names(b), b, "buffer", self.host_buffers[b], b not in self.writes)
                  for b in bufs if b not in self.bound_names]
        params += [KernelParam(self.names(n), n, "scalar", self.host_scalars[n])
                   for n in sorted(self.used - self.bound_names)]
        sig = [param_decl(p) for p in params]
        bounds = ""
        if self.block_const is not None:
            bounds = f"__launch_bounds__({self.block_const[0] * self.block_const[1] * self.block_const[2]}) "
        out = sorted(self.writes - self.bound_names)
        local = [f for f in self.funcs if f not in out]
        what = f"  // writes {', '.join(out) or 'nothing'}" + (
            f"; computes {', '.join(local)} inside" if local else "")
        head = f"extern \"C\" __global__ void {bounds}{self.name}({', '.join(sig)}) {{{what}"
        text = "\n".join([head] + body + ["}", ""])
        kernel = Kernel(self.name, tuple(params), self.grid, self.block, self.block_const,
                        self.shared_bytes, self.funcs)
        return kernel, text
