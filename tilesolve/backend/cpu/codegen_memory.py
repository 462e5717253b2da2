"""Loads, stores and allocations: the memory half of the per-function emitter.

Mixin of the emitter in ``codegen.py``; needs ``self.b``, ``self.fn``, ``self.buffers``
(name -> :class:`Buffer`), ``self.lanes``, ``self.err_ptr``, ``self.notes`` and the
expression methods of :class:`~.codegen_expr.ExprEmitter`.

Accesses in a vectorized loop, by the shape of the index (see ``codegen_expr.Ramp``):

====================  =======================================================
uniform index         one scalar load (broadcast later if needed); a store
                      writes the last lane's value (what the serial loop leaves)
Guarded (clamped)     a branch on "no lane is clamped": the ramp's access below,
                      else a gather/scatter
ramp, stride 1        one dense ``load/store <W x T>``, alignment = element size
ramp, stride -1       a dense access and a lane-reversing shuffle
ramp, |stride| 2..4   (loads) dense power-of-two loads inside the span, one shuffle;
                      the span widened to the loads of the same buffer at constant
                      offsets in the same statement (``_sibling_windows``), so that
                      ``in[2x]`` and ``in[2x + 1]`` read the same chunks
Strided (run-time     a scalar load or store per lane, addresses stepped in scalars
stride)
float coordinates     (a resampling window) a masked load of the lanes' window and
                      one permute where they lie within one vector's width
                      (``_window_gather``), else a load a lane
anything else         a gather (``llvm.masked.gather``: the target's gather
                      instruction where LLVM deems it fast) or a scatter
                      (per-lane scalar stores, in lane order)
====================  =======================================================

Under a mask (inside an IfThenElse whose condition varies across lanes, see
``codegen.FnEmitter._masked_if``), dense accesses become ``llvm.masked.load/store``,
gathers read only the active lanes, and scatters store only the active lanes.  Masked code runs only when at least one lane is active, so uniform
loads are as safe there as in the serial program.

Allocations: ``stack``/``shared``/``register`` with constant extents and at most
:data:`STACK_LIMIT_BYTES` become one 64-byte aligned ``alloca`` in the entry block of the
function being emitted (the entry function or an outlined parallel body, so each thread
has its own); everything else is on the heap, the runtime's ``ts_rt_alloc(bytes)`` and
``ts_rt_free`` (``heap.py``: 64-byte aligned; large blocks are kept for the next
realization instead of being faulted in again):

* outside every loop of the function being emitted: allocated before the body and
  released after it (or at an early ``Free``);
* inside a loop of it (a producer computed per row of its consumer; in an outlined
  parallel body, also per tile, since the body runs a range of the loop's iterations):
  one block per allocation and function call, a *pseudostack*.  Its pointer and
  capacity live in two slots of the function's entry block (null, 0); each time the
  allocation is reached, a capacity below the size asked releases the block and
  allocates the size, or half again the old capacity where that is more (a size that
  creeps up from one iteration to the next reallocates a logarithmic number of
  times).  The scope's end keeps the block for the next iteration, and an early
  ``Free`` only ends the name; the function releases its blocks before it returns.
  Each call of a parallel body (a thread's range of iterations) has its own blocks.
  A block holds what the last iteration left there (like a fresh ``malloc``, generated
  code never reads what it did not write).  The cost: an allocation per loop and call
  instead of one per iteration (resize_up staging an input row per row: 52,560
  allocations a run, 10.3 -> 6.3 ms on one thread), for memory held until the
  function returns (buffers allocated one after another in a loop body are all held
  at once, each at the largest size it was asked for).

If the allocation fails the body is skipped and error code :data:`ERR_ALLOC` is stored
(atomically) in the function's error slot, which the entry point returns (a reused
block is then null with capacity 0, and the next iteration asks again).

Checked builds (``generate(..., checked=True)``): every load and store first tests its
flat index (each active lane's) against the range its buffer owns: an argument's
``[sum min(0, (extent-1)*stride), sum max(0, (extent-1)*stride)]``, an allocation's
``[0, count - 1]``.  An access outside is skipped (a load gives 0), error code
:data:`ERR_BOUNDS` is set and the first fault is recorded in the fault slots
``(buffer id, flat index, last valid index)``, which the caller turns into an error
naming the Func and the coordinate.  A reused heap block owns the range of the size
asked this time, not its capacity.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from llvmlite import ir

from ...model import expr as E
from ...model.types import Type
from ...lower import ir as L
from ...model.visit import walk
from .codegen_expr import I8, I32, I64, _mangle, mem_type
from .codegen_lanes import Guarded, Halves, Ramp, Strided, is_varying, is_vector_value
from .heap import RT_ALLOC, RT_FREE

STACK_LIMIT_BYTES = 64 * 1024
ERR_ALLOC = 1
ERR_BOUNDS = 2
_DENSE_STRIDE_MAX = 4


# One-instruction permutes of a vector of 32-bit lanes by a vector of lane numbers, by
# (lanes, element type): x86's ``vpermps``/``vpermd`` (AVX2, 8 lanes; AVX-512F, 16).
# ``window_gathers`` (the widest the target has, from ``generate``) enables them.
_PERMUTES = {
    (8, "float"): "llvm.x86.avx2.permps", (8, "i32"): "llvm.x86.avx2.permd",
    (16, "float"): "llvm.x86.avx512.permvar.sf.512",
    (16, "i32"): "llvm.x86.avx512.permvar.si.512",
}


@dataclass(frozen=True)
class Buffer:
    """A buffer visible to the code: a pointer to its element type, and its scalar type."""

    ptr: ir.Value
    type: Type
    is_output: bool = False
    lo: ir.Value | None = None     # checked builds: the flat index range owned (i64)
    hi: ir.Value | None = None
    id: int = -1                   # checked builds: the name's place in the fault table


def _float_coordinates(index: E.Expr) -> bool:
    """Whether ``index`` converts a float to an integer outside any load (a resampling
    tap's ``int(ceil(x / scale - r)) + k``), and reads no memory."""
    found = False
    for n in walk(index):
        if isinstance(n, L.Load):
            return False
        if (isinstance(n, E.Cast) and not n.type.is_float()
                and n.value.type.is_float()):
            found = True
    return found


def _offset(index: E.Expr) -> tuple:
    """``index`` as ``(X, c)``: ``X + c`` with ``c`` a constant (0 when there is none)."""
    if isinstance(index, E.BinOp) and isinstance(index.b, E.Const) and index.op in ("add", "sub"):
        c = int(index.b.value)
        return index.a, (c if index.op == "add" else -c)
    return index, 0


def _sibling_windows(value: E.Expr) -> dict:
    """For each load of ``value`` at ``buf[X + c]`` that has siblings (loads of the same
    buffer at ``X + c'``, another constant), ``(c, the sorted offsets of them all)``,
    keyed by the load's id.  Every load of an Expr is evaluated whenever the Expr is (a
    select computes both sides), so a load may read anything between the first sibling's
    first element and the last one's last: the buffer holds everything between."""
    groups: dict = {}
    for n in walk(value):
        if isinstance(n, L.Load):
            x, c = _offset(n.index)
            groups.setdefault((n.buffer, id(x)), {}).setdefault(id(n), c)
    out = {}
    for loads in groups.values():
        offsets = tuple(sorted(set(loads.values())))
        if len(offsets) > 1:
            out.update({k: (c, offsets) for k, c in loads.items()})
    return out


def _sibling_span(c: int, offsets: tuple, stride: int, lanes: int) -> tuple:
    """The span ``(first, last)`` (from ``X``) that the ramp of ``lanes`` lanes at ``X + c``
    with ``stride > 0`` reads with its siblings at ``offsets``: the offsets taken
    ``stride`` consecutive ones at a time from the lowest, each such run sharing
    ``stride * lanes`` elements (``in[2x]`` and ``in[2x + 1]``: one 32-float span, two
    registers for 16 lanes), cut at the last sibling's last element."""
    g0 = offsets[0]
    for o in offsets:
        if o > c:
            break
        if o >= g0 + stride:
            g0 = o
    return g0, min(g0 + stride * lanes - 1, offsets[-1] + (lanes - 1) * stride)

class MemoryEmitter:
    """Mixin: Load / Store / Allocate."""

    def buffer(self, name: str) -> Buffer:
        try:
            return self.buffers[name]
        except KeyError:
            from ...errors import LoweringError
            raise LoweringError(f"codegen: buffer {name!r} is accessed but neither an "
                                "argument nor allocated here") from None

    def _addr(self, buf: Buffer, idx: ir.Value) -> ir.Value:
        return self.b.gep(buf.ptr, [self._wide_index(idx)], inbounds=True)

    def _wide_index(self, idx: ir.Value) -> ir.Value:
        """The i64 address index of a 32-bit ``idx``: its ``nsw`` add/sub/mul/shl spine
        (index arithmetic, which never wraps) rebuilt in 64 bits over sign-extended
        terms -- the same value.  LLVM's alias analysis then sees that two addresses
        differ by a constant (``base + 16`` and ``base``): with every term extended
        once at the root, as before, it could not, once its reassociation had dropped
        the ``nsw`` flags, and kept a reduction's accumulators in memory."""
        if idx.type != I32:
            return idx
        b, memo = self.b, {}

        def wide(v, depth):
            hit = memo.get(id(v))
            if hit is not None:
                return hit
            if isinstance(v, ir.Constant):
                r = ir.Constant(I64, v.constant)
            elif (depth < 16 and isinstance(v, ir.Instruction) and "nsw" in v.flags
                  and v.opname in ("add", "sub", "mul", "shl")
                  and (v.opname in ("add", "sub") or isinstance(v.operands[1], ir.Constant))):
                x, y = (wide(o, depth + 1) for o in v.operands)
                r = getattr(b, v.opname)(x, y, flags=["nsw"])
            else:
                r = b.sext(v, I64)
            memo[id(v)] = r
            return r
        return wide(idx, 0)

    def _vec_ptr(self, buf: Buffer, idx: ir.Value, n: int) -> ir.Value:
        vt = ir.VectorType(buf.ptr.type.pointee, n)
        return self.b.bitcast(self._addr(buf, idx), vt.as_pointer())

    def _from_mem(self, v, t: Type):
        return self.b.icmp_unsigned("!=", v, self.const(v.type, 0)) if t.is_bool() else v

    def _to_mem(self, v, t: Type):
        if not t.is_bool():
            return v
        vt = ir.VectorType(I8, v.type.count) if isinstance(v.type, ir.VectorType) else I8
        return self.b.zext(v, vt)

    def _reverse(self, v, n: int):
        mask = ir.Constant(ir.VectorType(I32, n), list(range(n - 1, -1, -1)))
        return self.b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), mask)

    # -- loads -------------------------------------------------------------------------
    def emit_load(self, e):
        buf = self.buffer(e.buffer)
        idx = self.emit(e.index, index=True)
        b = self.b
        if not is_varying(idx):
            v = self._checked_load(buf, idx, lambda: b.load(self._addr(buf, idx),
                                                            align=max(1, buf.type.bytes)))
        elif isinstance(idx, Guarded):
            with b.if_else(idx.cond, likely=True) as (fast, slow):
                with fast:
                    v_fast = self._load_lanes(buf, idx.fast)
                    bb_fast = b.block
                with slow:
                    v_slow = self._load_lanes(buf, idx.slow)
                    bb_slow = b.block
            v = b.phi(v_fast.type)
            v.add_incoming(v_fast, bb_fast)
            v.add_incoming(v_slow, bb_slow)
        else:
            window = self.windows.get(id(e))
            v = None
            if window is not None and isinstance(idx, Ramp) and self.mask is None \
                    and 2 <= abs(idx.stride) <= _DENSE_STRIDE_MAX:
                v = self._sibling_load(buf, e, idx, window)
            if v is None:
                v = self._load_lanes(buf, idx, self._per_lane(e.index, idx), e.index)
        return self._from_mem(v, buf.type)

    def _per_lane(self, index: E.Expr, idx) -> bool:
        """Whether a gather at ``idx`` (``index`` emitted) loads one lane at a time: at
        coordinates computed in float (a resampling window); elsewhere (a lookup table,
        the edge lanes of a clamp, a masked tail) the target's gather is the smaller
        code (see ``_gather``).  ``scalar_gathers`` forces either form."""
        if self.scalar_gathers is not None:
            return self.scalar_gathers
        return (self.mask is None and is_vector_value(idx)
                and _float_coordinates(index))

    def _load_lanes(self, buf: Buffer, idx, per_lane: bool | None = None, index=None):
        """A W-lane load at a Ramp or a vector of indices; ``per_lane``: a gather's form
        (None: ``scalar_gathers``, False when unset); ``index``: the Expr ``idx`` is the
        value of, if known (a window gather bounds its lanes from it)."""
        per_lane = bool(self.scalar_gathers) if per_lane is None else per_lane
        return self._checked_load(buf, idx,
                                  lambda: self._unchecked_load_lanes(buf, idx, per_lane, index))

    def _unchecked_load_lanes(self, buf: Buffer, idx, per_lane: bool, index=None):
        b, w = self.b, self.lanes
        align = max(1, buf.type.bytes)
        if isinstance(idx, Ramp) and idx.stride == 1:
            return self._dense_load(buf, idx.base, self.mask)
        if isinstance(idx, Halves) and self.mask is None:
            return self._halves_load(buf, idx, align)
        if isinstance(idx, Ramp) and idx.stride == -1:
            start = b.sub(idx.base, ir.Constant(idx.base.type, w - 1))
            mask = None if self.mask is None else self._reverse(self.mask, w)
            return self._reverse(self._dense_load(buf, start, mask), w)
        if isinstance(idx, Ramp) and 2 <= abs(idx.stride) <= _DENSE_STRIDE_MAX \
                and self.mask is None:
            s = idx.stride
            span = (w - 1) * abs(s) + 1
            if s > 0:
                start, picks = idx.base, [k * s for k in range(w)]
            else:
                start = b.sub(idx.base, ir.Constant(idx.base.type, span - 1))
                picks = [span - 1 + k * s for k in range(w)]
            return self._span_load(buf, start, span, picks)
        if isinstance(idx, Strided) and self.mask is None:
            return self._strided_load(buf, idx, align)
        return self._gather(buf, self.vec(idx), align, per_lane, index)

    def _strided_load(self, buf: Buffer, idx: Strided, align: int):
        """One scalar load a lane at ``base + k * stride``: each lane reads its own row
        (cache line), and a gather would first build the vector of addresses."""
        b = self.b
        vt = ir.VectorType(buf.ptr.type.pointee, idx.lanes)
        out = ir.Constant(vt, ir.Undefined)
        for k, at in enumerate(self._lane_pointers(buf, idx)):
            out = b.insert_element(out, b.load(at, align=align), ir.Constant(I32, k))
        return out

    def _lane_pointers(self, buf: Buffer, idx: Strided) -> list:
        """The address of each lane of ``idx``: the first lane's, then each the previous
        one's plus the stride, stepped as 64-bit pointers (one sign extension of the
        stride, hoisted out of the loop; no 32-bit index a lane to extend)."""
        b = self.b
        at = self._addr(buf, idx.base)
        step = b.sext(idx.stride, I64) if idx.stride.type != I64 else idx.stride
        out = [at]
        for _ in range(1, idx.lanes):
            at = b.gep(at, [step], inbounds=True)
            out.append(at)
        return out

    def _span_load(self, buf: Buffer, start, span: int, picks: list):
        """The lanes ``buf[start + p]`` for ``p`` in ``picks`` (each in ``[0, span)``),
        read with dense loads of a power-of-two width inside ``[start, start + span)``
        (``_span_chunks``), then one shuffle."""
        return self._pick(self._span_chunks(buf, start, span), picks)

    def _span_chunks(self, buf: Buffer, start, span: int) -> tuple:
        """``(wide, starts, c)``: dense loads of ``c`` elements (the widest power of two
        within the span) at ``start + s0`` for ``s0`` in ``starts`` (``0, c, 2c, ...``,
        the last one moved back to end at ``span - 1``, so nothing outside the span is
        read), concatenated into ``wide``.  A load of an odd width (31 floats for a
        stride-2 ramp of 16 lanes) is split by LLVM into a load per power of two, and its
        shuffle into inserts."""
        b = self.b
        align = max(1, buf.type.bytes)
        c = 1 << (span.bit_length() - 1)
        if c == span:
            starts = [0]
        else:
            c = min(c, max(self.lanes, 2))
            starts = [min(j * c, span - c) for j in range(-(-span // c))]
        chunks = [b.load(self._vec_ptr(buf, b.add(start, ir.Constant(start.type, s0))
                                       if s0 else start, c), align=align)
                  for s0 in starts]
        while len(chunks) > 1:                  # concatenate pairwise (padding with undef)
            if len(chunks) % 2:
                chunks.append(ir.Constant(chunks[0].type, ir.Undefined))
            n = chunks[0].type.count
            both = ir.Constant(ir.VectorType(I32, 2 * n), list(range(2 * n)))
            chunks = [b.shuffle_vector(chunks[i], chunks[i + 1], both)
                      for i in range(0, len(chunks), 2)]
        return chunks[0], starts, c

    def _pick(self, chunks: tuple, picks: list):
        """The lanes at span offsets ``picks`` of ``_span_chunks``' loads: one shuffle."""
        wide, starts, c = chunks
        where = []
        for p in picks:                         # the first chunk that holds offset p
            j = next(j for j, s0 in enumerate(starts) if s0 <= p < s0 + c)
            where.append(j * c + p - starts[j])
        return self.b.shuffle_vector(wide, ir.Constant(wide.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, len(picks)), where))

    def _sibling_load(self, buf: Buffer, e, idx: Ramp, window: tuple):
        """A strided load ``buf[X + c]`` with siblings (``window``: ``c`` and the offsets
        of them all): the span it shares with them (``_sibling_span``) is loaded once per
        statement, from ``X``'s own base, and each picks its lanes from it.  None for a
        negative stride, or where ``X`` is no plain ramp."""
        x, c = _offset(e.index)
        xi = self.emit(x, index=True)
        s = idx.stride
        if s < 0 or not isinstance(xi, Ramp) or xi.stride != s:
            return None
        first, last = _sibling_span(c, window[1], s, self.lanes)
        key = ("span", e.buffer, id(x), first, last)
        chunks = self.stmt_cache.get(key)
        if chunks is None:
            start = xi.base if not first else \
                self.b.add(xi.base, ir.Constant(xi.base.type, first))
            chunks = self.stmt_cache[key] = self._span_chunks(buf, start, last - first + 1)
        return self._pick(chunks, [c - first + k * s for k in range(self.lanes)])

    def _halves_load(self, buf: Buffer, idx: Halves, align: int):
        """The lanes ``q + (k + odd) // 2``: a dense load of the ``(W - 1 + odd) // 2 + 1``
        elements they touch (W/2, +1 when odd, for an even W; one for a single lane),
        each duplicated by a shuffle (Halide's upsampling code)."""
        b, w = self.b, self.lanes
        out = []
        with b.if_else(idx.odd) as (odd, even):
            for branch, is_odd in ((odd, True), (even, False)):
                with branch:
                    n = (w - 1 + is_odd) // 2 + 1
                    out.append((self._span_load(buf, idx.q, n, idx.picks(is_odd)), b.block))
        v = b.phi(out[0][0].type)
        for val, block in out:
            v.add_incoming(val, block)
        return v

    def _dense_load(self, buf: Buffer, start, mask):
        """``load <W x T>`` at element ``start``; masked lanes are not read."""
        b = self.b
        align = max(1, buf.type.bytes)
        ptr = self._vec_ptr(buf, start, self.lanes)
        if mask is None:
            return b.load(ptr, align=align)
        vt = ptr.type.pointee
        fn = self.declare(f"llvm.masked.load.{_mangle(vt)}.p0", vt, [ptr.type, I32, mask.type, vt])
        return b.call(fn, [ptr, ir.Constant(I32, align), mask, ir.Constant(vt, ir.Undefined)])

    def _safe_indices(self, idx: ir.Value) -> ir.Value:
        """Under a mask, the indices of inactive lanes replaced by that of the first active
        lane (there is one: masked code runs only when some lane is active), so that a
        gather never touches an address the serial program would not."""
        if self.mask is None:
            return idx
        b, w = self.b, self.lanes
        iw = ir.IntType(w)
        bits = b.bitcast(self.mask, iw)
        cttz = self.declare(f"llvm.cttz.i{w}", iw, [iw, ir.IntType(1)])
        first = b.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)])
        lane = b.zext(first, I32) if w < 32 else (b.trunc(first, I32) if w > 32 else first)
        pick = b.extract_element(idx, lane)
        return b.select(self.mask, idx, self.vec(pick))

    def _gather(self, buf: Buffer, idx: ir.Value, align: int, per_lane: bool, index=None):
        """The lanes at a vector of indices: ``llvm.masked.gather`` over their addresses
        (under a mask, inactive lanes are not read), which LLVM lowers to the target's
        gather instruction (AVX2, AVX-512), or one scalar load a lane.  Per lane at
        coordinates computed in float (``_float_coordinates``): each lane's address is
        its own conversion, LLVM hoists it out of the loops it does not vary in, and the
        loads issue side by side (resize_down's taps: 15.3 -> 8.0 ms on one thread);
        the gather instruction elsewhere: at indices read from memory (a lookup table:
        6-28% faster there), and where the lanes are integer arithmetic of the loop
        (clamped upsampling outside the steady loop), where per-lane loads were no
        faster and made a third more code (laplacian_blend).
        ``per_lane`` chooses (``_per_lane``); ``generate(..., scalar_gathers=True /
        False)`` forces one form (to compare)."""
        b, w = self.b, self.lanes
        et = buf.ptr.type.pointee
        vt = ir.VectorType(et, w)
        if per_lane:
            idx = self._safe_indices(idx)
            permute = _PERMUTES.get((w, str(et))) if w <= self.window_gathers else None
            if permute is not None and self.mask is None:
                return self._window_gather(buf, idx, align, permute, index)
            return self._lane_loads(buf, idx, align)
        ptrs = b.gep(buf.ptr, [b.sext(idx, ir.VectorType(ir.IntType(64), w))], inbounds=True,
                     source_etype=et)
        ptrs.type = ir.VectorType(ir.PointerType(), w)   # llvmlite types it as one pointer
        mt = ir.VectorType(ir.IntType(1), w)
        mask = self.mask if self.mask is not None else ir.Constant(mt, [1] * w)
        fn = self.declare(f"llvm.masked.gather.{_mangle(vt)}.v{w}p0", vt, [ptrs.type, I32, mt, vt])
        return b.call(fn, [ptrs, ir.Constant(I32, align), mask, ir.Constant(vt, ir.Undefined)])

    def _lane_loads(self, buf: Buffer, idx: ir.Value, align: int) -> ir.Value:
        """One scalar load a lane, put together."""
        b = self.b
        out = ir.Constant(ir.VectorType(buf.ptr.type.pointee, self.lanes), ir.Undefined)
        for k in range(self.lanes):
            lane = ir.Constant(I32, k)
            x = b.load(self._addr(buf, b.extract_element(idx, lane)), align=align)
            out = b.insert_element(out, x, lane)
        return out

    def _window_gather(self, buf: Buffer, idx: ir.Value, align: int, permute: str,
                       index=None):
        """A gather whose lanes lie within one vector's width of each other (a
        resampling window: ``begin(x) + r`` moves by a pixel or less from lane to lane)
        as one dense load of the window ``[min, max]`` (masked to it: no element past
        the lanes' own is read) and one permute of it by ``index - min``: two
        instructions instead of a load and an insert a lane.  A vector whose lanes are
        further apart takes the per-lane loads (downsampling, where a window of two
        vectors and a two-vector permute measured slower than the loads).

        The window's ends come from the index Expr (``_lane_bounds``): a tap's
        ``clamp(begin(x) + r)`` is bounded through the clamp and the offset from the
        lanes of ``begin(x)``, and the test of its width is that of ``begin(x)``'s
        lanes, the same Value for every tap (LLVM takes it out of the taps' loop)."""
        b, w = self.b, self.lanes
        it = ir.VectorType(I32, w)
        ends = self._lane_bounds(index) if index is not None and index.type.bits == 32 \
            else None
        lo, hi, width = ends if ends is not None else self._reduce_bounds(idx)
        near = b.icmp_signed("<", width, ir.Constant(I32, w))
        with b.if_else(near, likely=True) as (fast, slow):
            with fast:
                steps = ir.Constant(it, list(range(w)))
                window = self._dense_load(buf, lo, b.icmp_signed("<=", steps,
                                                                  self.vec(b.sub(hi, lo))))
                vt = window.type            # the permute's own type: float or i32 lanes
                v_fast = b.call(self.declare(permute, vt, [vt, it]),
                                [window, b.sub(idx, self.vec(lo))])
                bb_fast = b.block
            with slow:
                v_slow, bb_slow = self._lane_loads(buf, idx, align), b.block
        v = b.phi(v_fast.type)
        v.add_incoming(v_fast, bb_fast)
        v.add_incoming(v_slow, bb_slow)
        return v

    def _reduce_bounds(self, v: ir.Value) -> tuple:
        """(smallest lane, largest lane, their difference) of an i32 vector, as scalars."""
        it = v.type
        lo, hi = (self.b.call(self.declare(f"llvm.vector.reduce.{op}.v{it.count}i32", I32,
                                           [it]), [v]) for op in ("smin", "smax"))
        return lo, hi, self.b.sub(hi, lo)

    def _lane_bounds(self, e: E.Expr):
        """(smallest lane, largest lane, a bound of their difference) of the 32-bit index
        Expr ``e``, as scalars.  The ends are exact: through a sum or difference with a
        uniform value, a min or max with one, and a product with a constant, from the
        ends of the one operand that varies (a ramp's ends, else its lanes reduced).
        The bound of the difference is that operand's (times the constant's magnitude):
        an offset keeps it, a clamp only shrinks it.  None for a type other than i32."""
        b = self.b
        v = self.emit(e, index=True)
        if not is_varying(v):
            return (v, v, ir.Constant(I32, 0)) if v.type == I32 else None
        if isinstance(v, Ramp):
            lo, hi, _ = self.ramp_range(v)
            return lo, hi, ir.Constant(I32, abs(v.stride) * (v.lanes - 1))
        if isinstance(e, E.BinOp) and e.op in ("add", "sub", "min", "max", "mul"):
            va, vb = self.emit(e.a, index=True), self.emit(e.b, index=True)
            if is_varying(va) != is_varying(vb):
                one, other = (e.a, vb) if is_varying(va) else (e.b, va)
                inner = self._lane_bounds(one) if other.type == I32 else None
                if inner is not None:
                    lo, hi, width = inner
                    if e.op == "add":
                        return b.add(lo, other), b.add(hi, other), width
                    if e.op == "sub":
                        return ((b.sub(lo, other), b.sub(hi, other), width) if one is e.a
                                else (b.sub(other, hi), b.sub(other, lo), width))
                    if e.op in ("min", "max"):
                        less = "<" if e.op == "min" else ">"

                        def pick(x):
                            return b.select(b.icmp_signed(less, x, other), x, other)
                        return pick(lo), pick(hi), width
                    k = e.b if one is e.a else e.a
                    if isinstance(k, E.Const):
                        lo, hi = b.mul(lo, other), b.mul(hi, other)
                        width = b.mul(width, ir.Constant(I32, abs(k.value)))
                        return (lo, hi, width) if k.value >= 0 else (hi, lo, width)
        v = self.vec(v)
        if v.type != ir.VectorType(I32, self.lanes):
            return None
        return self._reduce_bounds(v)

    # -- stores ------------------------------------------------------------------------
    def emit_store(self, s):
        buf = self.buffer(s.buffer)
        # siblings share a span load (not in checked builds: each load is in its own branch)
        self.windows = _sibling_windows(s.value) \
            if self.lanes > 1 and self.shared_spans and self.fault is None else {}
        try:
            value = self.emit(s.value)
        finally:
            self.windows = {}
        idx = self.emit(s.index, index=True)
        b, w = self.b, self.lanes
        align = max(1, buf.type.bytes)
        if not is_varying(idx):
            if self.mask is not None:       # the last active lane's value ends up there
                v = self._to_mem(self.vec(value), buf.type)
                vi = self.vec(idx)
                return self._checked_store(buf, vi, lambda: self._scatter(buf, vi, v))
            if is_varying(value):
                value = b.extract_element(self.vec(value), ir.Constant(I32, w - 1))
            value = self._to_mem(value, buf.type)
            self._checked_store(buf, idx, lambda: b.store(value, self._addr(buf, idx),
                                                          align=align))
            return
        v = self._to_mem(self.vec(value), buf.type)
        if isinstance(idx, Guarded):
            with b.if_else(idx.cond, likely=True) as (fast, slow):
                with fast:
                    self._store_lanes(buf, idx.fast, v)
                with slow:
                    self._store_lanes(buf, idx.slow, v)
        else:
            self._store_lanes(buf, idx, v)

    def _store_lanes(self, buf: Buffer, idx, v) -> None:
        self._checked_store(buf, idx, lambda: self._unchecked_store_lanes(buf, idx, v))

    def _unchecked_store_lanes(self, buf: Buffer, idx, v) -> None:
        b, w = self.b, self.lanes
        if isinstance(idx, Ramp) and idx.stride == 1:
            self._dense_store(buf, idx.base, v, self.mask)
        elif isinstance(idx, Ramp) and idx.stride == -1:
            start = b.sub(idx.base, ir.Constant(idx.base.type, w - 1))
            mask = None if self.mask is None else self._reverse(self.mask, w)
            self._dense_store(buf, start, self._reverse(v, w), mask)
        else:
            self._scatter(buf, idx if isinstance(idx, Strided) else self.vec(idx), v)

    def _dense_store(self, buf: Buffer, start, v, mask) -> None:
        b = self.b
        align = max(1, buf.type.bytes)
        ptr = self._vec_ptr(buf, start, self.lanes)
        if mask is None:
            b.store(v, ptr, align=align)
            return
        fn = self.declare(f"llvm.masked.store.{_mangle(v.type)}.p0", ir.VoidType(),
                          [v.type, ptr.type, I32, mask.type])
        b.call(fn, [v, ptr, ir.Constant(I32, align), mask])

    def _scatter(self, buf: Buffer, vi, v) -> None:
        """Per-lane stores in lane order (so the last lane wins, as in the serial loop);
        under a mask, only the active lanes store.  ``vi``: a vector of indices, or a
        Strided (the indices stepped in scalars)."""
        b = self.b
        align = max(1, buf.type.bytes)
        lanes = self._lane_pointers(buf, vi) if isinstance(vi, Strided) else None
        for k in range(self.lanes):
            lane = ir.Constant(I32, k)

            def store():
                at = lanes[k] if lanes else self._addr(buf, b.extract_element(vi, lane))
                b.store(b.extract_element(v, lane), at, align=align)
            if self.mask is None:
                store()
            else:
                with b.if_then(b.extract_element(self.mask, lane)):
                    store()

    # -- checked builds ----------------------------------------------------------------
    def _checked_load(self, buf: Buffer, idx, load):
        """``load()``, or (checked build, some active lane outside ``buf``) zero."""
        bad = self._bad_access(buf, idx)
        if bad is None:
            return load()
        b = self.b
        with b.if_else(bad, likely=False) as (then, otherwise):
            with otherwise:
                v_ok = load()
                bb_ok = b.block
            with then:
                bb_bad = b.block
        v = b.phi(v_ok.type)
        v.add_incoming(v_ok, bb_ok)
        v.add_incoming(ir.Constant(v_ok.type, None), bb_bad)
        return v

    def _checked_store(self, buf: Buffer, idx, store) -> None:
        bad = self._bad_access(buf, idx)
        if bad is None:
            store()
            return
        with self.b.if_then(self.b.not_(bad), likely=True):
            store()

    def _bad_access(self, buf: Buffer, idx):
        """None outside checked builds; else an i1 that is true when some active lane of
        the access at ``idx`` falls outside ``buf``, having recorded the first such lane."""
        if self.fault is None or buf.lo is None:
            return None
        b = self.b
        if not is_varying(idx):
            i = b.sext(idx, I64)
            bad = b.or_(b.icmp_signed("<", i, buf.lo), b.icmp_signed(">", i, buf.hi))
            with b.if_then(bad, likely=False):
                self._record_fault(buf, i)
            return bad
        w = self.lanes
        vi = b.sext(self.vec(idx), ir.VectorType(I64, w))
        lanes = b.or_(b.icmp_signed("<", vi, self.vec(buf.lo)),
                      b.icmp_signed(">", vi, self.vec(buf.hi)))
        if self.mask is not None:
            lanes = b.and_(lanes, self.mask)
        iw = ir.IntType(w)
        bits = b.bitcast(lanes, iw)
        bad = b.icmp_unsigned("!=", bits, ir.Constant(iw, 0))
        with b.if_then(bad, likely=False):
            cttz = self.declare(f"llvm.cttz.i{w}", iw, [iw, ir.IntType(1)])
            first = b.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)])
            lane = b.zext(first, I32) if w < 32 else (b.trunc(first, I32) if w > 32 else first)
            self._record_fault(buf, b.extract_element(vi, lane))
        return bad

    def _record_fault(self, buf: Buffer, index) -> None:
        """The first fault of a run: (buffer id, flat index, last valid index), then
        :data:`ERR_BOUNDS` in the error slot."""
        b = self.b
        cur = b.load_atomic(self.err_ptr, "monotonic", 4)
        with b.if_then(b.icmp_signed("==", cur, ir.Constant(I32, 0))):
            for k, v in enumerate((ir.Constant(I64, buf.id), index, buf.hi)):
                b.store(v, b.gep(self.fault, [ir.Constant(I32, k)], inbounds=True))
            self.set_error(ERR_BOUNDS)

    def checked_buffer(self, name: str, buf: Buffer, count) -> Buffer:
        """``buf`` with the range ``[0, count - 1]`` it owns (checked builds)."""
        if self.fault is None:
            return buf
        hi = count - 1 if isinstance(count, int) else self.b.sub(count, ir.Constant(I64, 1))
        return Buffer(buf.ptr, buf.type, buf.is_output, ir.Constant(I64, 0),
                      ir.Constant(I64, hi) if isinstance(hi, int) else hi,
                      self.fault_id(name))

    def fault_id(self, name: str) -> int:
        if name not in self.fault_names:
            self.fault_names.append(name)
        return self.fault_names.index(name)

    # -- allocations -------------------------------------------------------------------
    @contextlib.contextmanager
    def allocation(self, s):
        """Allocate ``s.name`` for the with-block (which emits its body), then release it."""
        elem = mem_type(s.type)
        nbytes = max(1, s.type.bytes)
        consts = [x.value for x in s.extents if isinstance(x, E.Const)]
        if len(consts) == len(s.extents):
            count = 1
            for c in consts:
                count *= max(0, c)
            if s.memory != "heap" and count * nbytes <= STACK_LIMIT_BYTES:
                ptr = self._entry_alloca(elem, max(1, count), s.name)
                buf = self.checked_buffer(s.name, Buffer(ptr, s.type), count)
                with self._with_buffer(s.name, buf):
                    yield
                return
        if s.memory != "heap":
            self.notes.append(f"allocation {s.name} ({s.memory}) is on the heap: its size "
                              "is not a constant of at most "
                              f"{STACK_LIMIT_BYTES} bytes")
        with self._heap_allocation(s, elem, nbytes):
            yield

    def _entry_alloca(self, elem, count: int, name: str) -> ir.Value:
        slot = self._entry_slot(ir.ArrayType(elem, count), name)
        slot.align = 64
        return self.b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True)

    @contextlib.contextmanager
    def _heap_allocation(self, s, elem, nbytes: int):
        b = self.b
        size = ir.Constant(I64, nbytes)
        count = ir.Constant(I64, 1)
        overflow = ir.Constant(ir.IntType(1), 0)
        for ext in s.extents:
            x = b.sext(self.scalar(ext), I64)
            x = b.select(b.icmp_signed("<", x, ir.Constant(I64, 0)), ir.Constant(I64, 0), x)
            prod = b.smul_with_overflow(size, x)
            size = b.extract_value(prod, 0)
            count = b.mul(count, x)
            overflow = b.or_(overflow, b.extract_value(prod, 1))
        # an impossible size makes the allocation fail, which reports ERR_ALLOC
        size = b.select(overflow, ir.Constant(I64, -128), size)
        # whole 64-byte lines, at least one
        size = b.and_(b.add(size, ir.Constant(I64, 64)), ir.Constant(I64, -64))
        i8p = I8.as_pointer()
        alloc, free = self.heap_functions()
        reused = self.loop_depth > 0
        if reused:
            key = self._reused_key(s)
            raw = self._reused_block(key, size, s.name)
        else:
            raw = b.call(alloc, [size], name=f"{s.name}.raw")
        failed = b.icmp_unsigned("==", raw, ir.Constant(i8p, None))
        ok_bb = self.fn.append_basic_block(f"{s.name}.ok")
        fail_bb = self.fn.append_basic_block(f"{s.name}.fail")
        done_bb = self.fn.append_basic_block(f"{s.name}.done")
        b.cbranch(failed, fail_bb, ok_bb)
        b.position_at_end(fail_bb)
        self.set_error(ERR_ALLOC)
        b.branch(done_bb)
        b.position_at_end(ok_bb)
        ptr = b.bitcast(raw, elem.as_pointer(), name=s.name)
        buf = self.checked_buffer(s.name, Buffer(ptr, s.type), count)
        slot = None
        if not reused:
            # the pointer to release lives in a slot: an early Free releases it and
            # stores null there, so the release at the end of the scope does nothing
            # on that path
            slot = self._entry_slot(i8p, f"{s.name}.slot")
            b.store(raw, slot)
        # a reused block is the function's: a Free only ends the name (slot None)
        outer = self.heap_slots.get(s.name, False)
        self.heap_slots[s.name] = slot
        try:
            with self._with_buffer(s.name, buf):
                yield
        finally:
            if outer is False:
                self.heap_slots.pop(s.name, None)
            else:
                self.heap_slots[s.name] = outer
            if reused:
                self.reused_live.discard(key)
        if not reused:
            b.call(free, [b.load(slot)])
        b.branch(done_bb)
        b.position_at_end(done_bb)

    def _reused_key(self, s) -> int:
        """The reused block of allocation ``s``: one per Allocate node (the copies of an
        unrolled loop's body share it), a fresh one where the node's own block is in use
        (the node reached again inside its own scope cannot happen in well-formed IR,
        but a shared subtree must never hand one block to two live buffers)."""
        key = id(s)
        while key in self.reused_live:
            key = (key, len(self.reused))
        if key not in self.reused:
            i8p = I8.as_pointer()
            b = self.b
            here = b.block
            b.position_at_start(self.fn.blocks[0])
            ptr = b.alloca(i8p, name=f"{s.name}.block")
            cap = b.alloca(I64, name=f"{s.name}.capacity")
            b.store(ir.Constant(i8p, None), ptr)
            b.store(ir.Constant(I64, 0), cap)
            b.position_at_end(here)
            self.reused[key] = (ptr, cap, s)      # s: keeps id(s) unique while kept
        self.reused_live.add(key)
        return key

    def _reused_block(self, key, size, name: str) -> ir.Value:
        """The function's block for the allocation ``key``, grown to at least ``size``
        bytes: when its capacity is less, the old block is released and a new one of
        the size, or of half again the old capacity where that is more (a size that
        creeps up reallocates a logarithmic number of times), is allocated; if the
        larger one is refused, the size alone.  Null (and capacity 0) when both fail:
        an impossible size (the overflow marker, near 2**64 unsigned) always fails."""
        b = self.b
        i8p = I8.as_pointer()
        null = ir.Constant(i8p, None)
        ptr_slot, cap_slot, _ = self.reused[key]
        alloc, free = self.heap_functions()
        cap = b.load(cap_slot, name=f"{name}.capacity")
        with b.if_then(b.icmp_unsigned(">", size, cap), likely=False):
            b.call(free, [b.load(ptr_slot)])
            more = b.add(cap, b.lshr(cap, ir.Constant(I64, 1)))
            more = b.and_(b.add(more, ir.Constant(I64, 63)), ir.Constant(I64, -64))
            want = b.select(b.icmp_unsigned(">", more, size), more, size)
            raw = b.call(alloc, [want], name=f"{name}.raw")
            b.store(raw, ptr_slot)
            b.store(want, cap_slot)
            retry = b.and_(b.icmp_unsigned("==", raw, null),
                           b.icmp_unsigned("!=", want, size))
            with b.if_then(retry, likely=False):
                b.store(b.call(alloc, [size], name=f"{name}.raw"), ptr_slot)
                b.store(size, cap_slot)
            with b.if_then(b.icmp_unsigned("==", b.load(ptr_slot), null), likely=False):
                b.store(ir.Constant(I64, 0), cap_slot)
        return b.load(ptr_slot, name=f"{name}.raw")

    def free_reused_at_exits(self) -> None:
        """Release the reused blocks of this function before each of its returns (the
        function is complete; its slots start null, so a block never allocated
        releases nothing)."""
        if not self.reused:
            return
        free = self.heap_functions()[1]
        b = ir.IRBuilder()
        for bb in self.fn.blocks:
            term = bb.terminator
            if isinstance(term, ir.Ret):
                b.position_before(term)
                for ptr_slot, _, _ in self.reused.values():
                    b.call(free, [b.load(ptr_slot)])

    def heap_functions(self):
        """The runtime's ``ts_rt_alloc``/``ts_rt_free`` (``heap.py``: 64-byte aligned
        blocks, large ones cached between realizations), declared in this module."""
        i8p = I8.as_pointer()
        alloc = self.declare(RT_ALLOC, i8p, [I64])
        if "noalias" not in alloc.return_value.attributes:
            alloc.return_value.add_attribute("noalias")
        return alloc, self.declare(RT_FREE, ir.VoidType(), [i8p])

    def _entry_slot(self, ty, name: str) -> ir.Value:
        """An alloca of ``ty`` in the function's entry block (allocated once a call)."""
        b = self.b
        here = b.block
        b.position_at_start(self.fn.blocks[0])
        slot = b.alloca(ty, name=name)
        b.position_at_end(here)
        return slot

    def free_early(self, name: str) -> None:
        """A ``Free``: release a heap allocation now (a stack one stays until the
        function returns); either way later code may no longer name the buffer."""
        slot = self.heap_slots.pop(name, None)
        if slot is not None:            # None: a reused block, kept for the next use
            i8p = I8.as_pointer()
            free = self.heap_functions()[1]
            self.b.call(free, [self.b.load(slot)])
            self.b.store(ir.Constant(i8p, None), slot)
        self.buffers.pop(name, None)

    @contextlib.contextmanager
    def _with_buffer(self, name: str, buf: Buffer):
        old = self.buffers.get(name)
        self.buffers[name] = buf
        try:
            yield
        finally:
            if old is None:
                self.buffers.pop(name, None)
            else:
                self.buffers[name] = old

    def set_error(self, code: int) -> None:
        self.b.store_atomic(ir.Constant(I32, code), self.err_ptr, "monotonic", 4)
