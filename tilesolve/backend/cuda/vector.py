"""Vector accesses in GPU kernels: a ``vectorized`` loop of 2 or 4 lanes (Halide's
``vectorize`` of a thread's serial tile) loads and stores its consecutive elements as one
``float2``/``float4`` (``int4``, ``double2`` ...) access where the address is aligned.

``plan(loop)`` recognises the loops it can vectorize: a constant extent of 2 or 4, a body
of lets ending in one Store.  It returns a ``VectorLoop`` naming

* the store, vectorized when its index advances by one element a lane and the loop
  reads nothing of its buffer (a lane may read what an earlier lane stored);
* the loads (taps) of the store's value and of the lets that are dense in the same way, read
  by every lane (not inside a ``select``'s branch or the right operand of ``&&``/``||``,
  which C evaluates only sometimes) and from a buffer the loop does not write (a lane
  may read what an earlier lane stored: hoisting its load would read the old value).

Loads of one buffer whose indices differ by constants (a stencil's taps ``in[x - 1]``,
``in[x]``, ``in[x + 1]``) share a window: the elements any of them reads, with no gap
(taps further apart than the vector take windows of their own), read once.

The kernel text (``kernels.KernelBuilder``) reads each window into a per-thread array
before the loop (``ts_vload<N, LEN>``), runs the loop unrolled with the loads
replaced by the array's elements and the store by a store into a second array, then
writes that array (``ts_vstore``).  The prelude's ``ts_vload`` finds at run time how far
the window's start is from an address aligned to the vector (in elements) and reads
each aligned run of N elements inside the window as one access, the others one each;
``ts_vstore`` writes one access where aligned, else one a lane.  Every element read or
written is one the scalar loop reads or writes, so the result and the memory touched
are the same; only the number of memory instructions changes.  A buffer allocated in
the kernel that a vector access reaches is declared ``__align__(16)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...analysis.simplify import simplify
from ...lower.ir import For, LetStmt, Load, Store
from ...model import expr as E
from ...model import types as T
from ...model.visit import children, mutate, substitute_names, walk
from ...solver.gpu_sectors import VECTOR_BYTES     # the widest access (float4, int4, ...)

LANES = (2, 4)


@dataclass
class VectorLoop:
    """How a vectorized loop is written (see the module docstring): ``lanes`` its
    extent; ``loads``: ``(buffer, start index, type, window array, length)`` for each
    window of elements read before the loop (``array[k] = buffer[start + k]``, ``k <
    length``), which the taps of one buffer a constant apart share (``in[x -
    1]``, ``in[x]``, ``in[x + 1]``: one window of 6 elements for 4 lanes); ``store_base`` the store's
    first lane's index (None: the store stays one a lane); ``body`` the loop's body with
    the vectorized loads replaced by reads of their lanes arrays (and the store by one
    into ``store_lanes`` when vectorized)."""
    lanes: int
    loads: list = field(default_factory=list)
    store: Store | None = None
    store_base: E.Expr | None = None
    store_lanes: str = ""
    body: object = None

    @property
    def buffers(self) -> set:
        """The buffers a vector access of the loop reaches."""
        out = {b for b, *_ in self.loads}
        if self.store_base is not None:
            out.add(self.store.buffer)
        return out


def _fits(t: T.Type, lanes: int) -> bool:
    return (not t.is_bool() and not (t.is_float() and t.bits == 16)
            and t.bytes * lanes <= VECTOR_BYTES)


def _conditional_loads(e: E.Expr) -> set:
    """The ids of the Loads of ``e`` that C evaluates only sometimes: inside a select's
    branches or the right operand of a logical ``and``/``or``."""
    out, stack = set(), [(e, False)]
    seen = set()
    while stack:
        n, cond = stack.pop()
        if (id(n), cond) in seen:
            continue
        seen.add((id(n), cond))
        if cond and isinstance(n, Load):
            out.add(id(n))
        if isinstance(n, E.Select):
            stack.append((n.cond, cond))
            stack.extend(((n.true_value, True), (n.false_value, True)))
        elif isinstance(n, E.BinOp) and n.op in ("and", "or"):
            stack.extend(((n.a, cond), (n.b, True)))
        elif isinstance(n, Load):
            stack.append((n.index, cond))
        else:
            stack.extend((c, cond) for c in children(n))
    return out


def plan(loop: For) -> VectorLoop | None:
    """The vector form of ``loop`` (a ``vectorized`` For), or None where it has none."""
    if loop.kind != "vectorized" or not isinstance(loop.extent, E.Const) \
            or int(loop.extent.value) not in LANES:
        return None
    lanes = int(loop.extent.value)
    lets, s = [], loop.body
    while isinstance(s, LetStmt):
        lets.append((s.name, s.value))
        s = s.body
    if not isinstance(s, Store):
        return None
    inner = dict(lets)
    bound_in_exprs = {n.name for _, v in lets for n in walk(v) if isinstance(n, E.Let)} \
        | {n.name for n in walk(s.value) if isinstance(n, E.Let)}

    def full(e):
        for _ in range(len(lets) + 1):
            names = {n.name for n in walk(e) if isinstance(n, E.Var) and n.name in inner}
            if not names:
                return e
            e = substitute_names(e, {k: inner[k] for k in names})
        return None

    def first_lane(index):
        """The index of lane 0 where ``index`` advances by one element a lane, else None."""
        e = full(index)
        if e is None or any(isinstance(n, Load) or (isinstance(n, E.Var) and n.name in
                                                     bound_in_exprs) for n in walk(e)):
            return None
        at = [simplify(substitute_names(e, {loop.name: simplify(loop.min + k)}))
              for k in range(lanes)]
        for k in range(1, lanes):
            d = simplify(at[k] - at[0])
            if not (isinstance(d, E.Const) and int(d.value) == k):
                return None
        return at[0]

    v = VectorLoop(lanes, store=s)
    reads_own = any(isinstance(n, Load) and n.buffer == s.buffer
                    for e in [val for _, val in lets] + [s.value] for n in walk(e))
    if _fits(s.value.type, lanes) and not reads_own:
        # (a loop that reads the buffer it stores keeps its stores in order, one a lane)
        v.store_base = first_lane(s.index)
    # the taps: the loads that may be hoisted, with their first lane's index
    taps = []
    for e in [val for _, val in lets] + [s.value]:
        skip = _conditional_loads(e)
        for n in walk(e):
            if isinstance(n, Load) and id(n) not in skip and n.buffer != s.buffer \
                    and _fits(n.type, lanes):
                base = first_lane(n.index)
                if base is not None:
                    taps.append((n, base))
    # taps of one buffer a constant apart share a window of elements
    families: list = []                     # [buffer, type, reference index, {id: offset}]
    for n, base in taps:
        for fam in families:
            if fam[0] == n.buffer and fam[1] == n.type:
                d = simplify(base - fam[2])
                if isinstance(d, E.Const):
                    fam[3][id(n)] = int(d.value)
                    break
        else:
            families.append([n.buffer, n.type, base, {id(n): 0}])
    chosen: dict = {}           # id(Load) -> its window's Load
    lane = simplify(E.Var(loop.name) - loop.min)
    for buf, t, ref, offsets in families:
        # split into runs whose taps' elements leave no gap: a window reads only the
        # elements some tap reads
        runs: list = []
        for c in sorted(set(offsets.values())):
            if runs and c <= runs[-1][-1] + lanes:
                runs[-1].append(c)
            else:
                runs.append([c])
        for run in runs:
            lo, length = run[0], run[-1] + lanes - run[0]
            name = f"{buf}.lanes{len(v.loads)}"
            v.loads.append((buf, simplify(ref + lo), t, name, length))
            for i, c in offsets.items():
                if lo <= c <= run[-1]:
                    chosen[i] = Load(name, simplify(lane + (c - lo)), t)
    if not v.loads and v.store_base is None:
        return None

    def swap(e):
        return mutate(e, lambda n: chosen.get(id(n))) if chosen else e
    if v.store_base is not None:
        v.store_lanes = f"{s.buffer}.lanes"
        body = Store(v.store_lanes, lane, swap(s.value))
    else:
        body = Store(s.buffer, s.index, swap(s.value))
    for name, val in reversed(lets):
        body = LetStmt(name, swap(val), body)
    v.body = For(loop.name, loop.min, loop.extent, "unrolled", body)
    return v
