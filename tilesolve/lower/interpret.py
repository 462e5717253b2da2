"""A checking interpreter of the loop IR (numpy), for tests and GPU emulation.

``interpret(lowered, buffers, params)`` runs ``lowered.body``: ``buffers``
maps every buffer argument to a numpy array (outputs are written in place),
``params`` every scalar argument to a value.  ``run(lowered, sizes, **kw)``
allocates the outputs and returns them as ``reference.realize`` does.

Every buffer carries a *written* mask.  The interpreter raises
``LoweringError`` on a Load of an element never stored, on any index outside
a buffer, and (at the end) on an output element never stored.  Buffer
arguments are copied into padded layouts (a gap after every row and plane,
never written), so an index past the end of a row is caught as well.

Speed: a loop whose body is a chain of loops, lets and guards ending in one
Store runs as numpy evaluations over many iterations at once
(``interpret_vector.py``); what cannot runs serially, point by point.
Parallel, vectorized, unrolled and GPU loops all run serially (GPU
emulation: ``Barrier`` is a no-op).
"""
from __future__ import annotations

import numpy as np

from ..errors import LoweringError, RealizeError
from ..model import expr as E
from ..model.evaluate import evaluate
from ..model.visit import mutate
from . import ir as L
from .regions import check_inputs
from .interpret_vector import VectorMode

PAD = 2


class _BufRef:
    """Stands for a buffer inside the Calls that replace Loads for ``evaluate``."""

    __slots__ = ("name", "type")

    def __init__(self, name, type):
        self.name, self.type = name, type


class _Buf:
    __slots__ = ("name", "data", "written", "is_input")

    def __init__(self, name, data, written, is_input=False):
        self.name, self.data, self.written, self.is_input = name, data, written, is_input


def _padded(arr: np.ndarray, dtype, fill_written: bool):
    """A flat padded copy of ``arr``: (flat data, written mask, strides innermost first)."""
    ext = list(reversed(arr.shape))
    padded = [e + PAD for e in ext[:-1]] + [ext[-1]]
    strides, s = [], 1
    for p in padded:
        strides.append(s)
        s *= p
    shape = tuple(reversed(padded))
    data = np.zeros(shape, dtype=dtype)
    written = np.zeros(shape, dtype=bool)
    sl = tuple(slice(0, e) for e in reversed(ext))
    data[sl] = arr
    written[sl] = fill_written
    return data.reshape(-1), written.reshape(-1), strides


class Interpreter(VectorMode):
    def __init__(self, lowered: L.LoweredPipeline):
        self.lowered = lowered
        self.refs: dict = {}
        self.memo: dict = {}
        self.bufs: dict[str, _Buf] = {}
        self.eligible: dict[int, tuple] = {}
        self.recording = None
        self.mask = True

    # -- expressions -----------------------------------------------------------------
    def _ref(self, name, t):
        key = (name, t)
        r = self.refs.get(key)
        if r is None:
            r = self.refs[key] = _BufRef(name, t)
        return r

    def _conv(self, n):
        if isinstance(n, L.Load):
            return E.Call(self._ref(n.buffer, n.type), (self.conv(n.index),))
        return None

    def conv(self, e):
        hit = self.memo.get(id(e))      # the IR keeps its Exprs alive
        if hit is None:
            hit = self.memo[id(e)] = mutate(e, self._conv, {})
        return hit

    def ev(self, e, env):
        return evaluate(self.conv(e), env, self._load)

    def _load(self, target, args):
        buf = self.bufs.get(target.name)
        if buf is None:
            raise LoweringError(f"Load from {target.name} outside its allocation")
        idx = np.asarray(args[0]).astype(np.int64)
        size = buf.data.size
        safe = np.clip(idx, 0, max(size - 1, 0))
        if self.recording is not None:
            self.recording.append((buf, idx, self.mask))
        else:
            self._check_loads(buf, idx, True)
        if size == 0:
            return np.zeros(idx.shape, dtype=buf.data.dtype)
        return buf.data[safe]

    @staticmethod
    def _check_loads(buf, idx, mask):
        idx = np.asarray(idx)
        m = np.broadcast_to(mask, idx.shape) if idx.ndim else mask
        sel = idx[m] if idx.ndim else (idx if m else np.zeros(0, np.int64))
        sel = np.atleast_1d(sel)
        if sel.size == 0:
            return
        bad = (sel < 0) | (sel >= buf.data.size)
        if bad.any():
            raise LoweringError(f"Load from {buf.name} at flat index {int(sel[bad][0])}, outside "
                                f"the buffer (size {buf.data.size})")
        unw = ~buf.written[sel]
        if unw.any():
            raise LoweringError(f"Load from {buf.name} at flat index {int(sel[unw][0])}, which "
                                "was never stored")

    # -- statements ------------------------------------------------------------------
    def run(self, env):
        self.exec(self.lowered.body, env)

    def exec(self, s, env):
        if isinstance(s, L.Block):
            for x in s.stmts:
                self.exec(x, env)
        elif isinstance(s, L.For):
            self._for(s, env)
        elif isinstance(s, L.LetStmt):
            inner = dict(env)
            inner[s.name] = self.ev(s.value, env)
            self.exec(s.body, inner)
        elif isinstance(s, L.IfThenElse):
            if bool(self.ev(s.cond, env)):
                self.exec(s.then_case, env)
            elif s.else_case is not None:
                self.exec(s.else_case, env)
        elif isinstance(s, L.Store):
            self._store_scalar(s, env)
        elif isinstance(s, L.Allocate):
            self._allocate(s, env)
        elif isinstance(s, L.ProducerConsumer):
            self.exec(s.body, env)
        elif isinstance(s, L.Barrier):
            pass
        elif isinstance(s, L.Free):
            # released: any later access faults, as a use after free would
            self.bufs[s.name] = _Buf(s.name, np.zeros(0, dtype=self.bufs[s.name].data.dtype),
                                     np.zeros(0, dtype=bool))
        else:
            raise LoweringError(f"the interpreter cannot run {type(s).__name__}")

    def _allocate(self, s, env):
        # a negative extent is an empty region (a tail where the producer is not needed):
        # it allocates nothing, as the CPU and CUDA backends do; any access then faults
        exts = [max(0, int(self.ev(x, env))) for x in s.extents]
        size = int(np.prod(exts, dtype=np.int64)) if exts else 1
        old = self.bufs.get(s.name)
        self.bufs[s.name] = _Buf(s.name, np.zeros(size, dtype=s.type.dtype),
                                 np.zeros(size, dtype=bool))
        try:
            self.exec(s.body, env)
        finally:
            if old is None:
                del self.bufs[s.name]
            else:
                self.bufs[s.name] = old

    def _store_buf(self, name):
        buf = self.bufs.get(name)
        if buf is None:
            raise LoweringError(f"Store to {name} outside its allocation")
        if buf.is_input:
            raise LoweringError(f"Store to input {name}")
        return buf

    def _store_scalar(self, s, env):
        buf = self._store_buf(s.buffer)
        i = int(self.ev(s.index, env))
        v = self.ev(s.value, env)
        if not 0 <= i < buf.data.size:
            raise LoweringError(f"Store to {s.buffer} at flat index {i}, outside the buffer "
                                f"(size {buf.data.size})")
        buf.data[i] = v
        buf.written[i] = True

    def _for(self, s, env):
        mn, ext = int(self.ev(s.min, env)), int(self.ev(s.extent, env))
        if ext <= 0:
            return
        if self.run_chain(s, env):
            return
        inner = dict(env)
        for i in range(mn, mn + ext):
            inner[s.name] = np.int32(i)
            self.exec(s.body, inner)


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------
def interpret(lowered: L.LoweredPipeline, buffers: dict, params: dict | None = None) -> None:
    """Run ``lowered`` on numpy arrays (outputs are filled in place), after the check every
    backend makes first (``regions.check_inputs``): ``RealizeError`` naming the buffer and
    dimension where an input, or an output the program reads (a round_up split of a Func
    that reads another output), does not cover what the program touches."""
    params = params or {}
    it = Interpreter(lowered)
    env = {}
    outs = []
    for a in lowered.args:
        if a.kind == "scalar":
            if a.name not in params:
                raise RealizeError(f"interpret(): missing param {a.name!r}")
            env[a.name] = np.asarray(params[a.name], dtype=a.type.dtype)
            continue
        arr = buffers.get(a.name)
        if arr is None:
            raise RealizeError(f"interpret(): missing buffer {a.name!r}")
        if arr.ndim != a.dims or arr.dtype != a.type.dtype:
            raise RealizeError(f"interpret(): buffer {a.name!r} must be a {a.dims}-D "
                               f"{a.type.dtype} array, got {arr.ndim}-D {arr.dtype}")
        data, written, strides = _padded(arr, a.type.dtype, not a.is_output)
        it.bufs[a.name] = _Buf(a.name, data, written, not a.is_output)
        for d in range(a.dims):
            env[f"{a.name}.extent.{d}"] = np.int32(arr.shape[a.dims - 1 - d])
            env[f"{a.name}.stride.{d}"] = np.int32(strides[d])
        if a.is_output:
            outs.append((a, arr, strides))
    check_inputs(lowered, buffers, params)
    it.run(env)
    for a, arr, strides in outs:
        buf = it.bufs[a.name]
        padded_shape = tuple(reversed([s2 // s1 for s1, s2 in zip(strides, strides[1:])]
                                      + [arr.shape[0]]))
        data = buf.data.reshape(padded_shape)
        written = buf.written.reshape(padded_shape)
        sl = tuple(slice(0, e) for e in arr.shape)
        real = written[sl]
        if not real.all():
            where = tuple(int(v[0]) for v in np.nonzero(~real))
            raise LoweringError(f"output {a.name}: element {where[::-1]} (innermost first) was "
                                "never stored")
        pad_written = written.copy()
        pad_written[sl] = False
        if pad_written.any():
            raise LoweringError(f"output {a.name}: a store fell outside the output's region")
        arr[...] = data[sl]


def run(lowered: L.LoweredPipeline, sizes, **inputs_and_params):
    """Allocate the outputs (sizes innermost first, or a dict by output name),
    interpret, and return the output arrays (one, or a tuple)."""
    bufs, params = {}, {}
    outs = []
    defaults = _param_defaults(lowered)
    for a in lowered.args:
        if a.kind == "scalar":
            if a.name in inputs_and_params:
                params[a.name] = inputs_and_params[a.name]
            elif defaults.get(a.name) is not None:
                params[a.name] = defaults[a.name]
            continue
        if a.is_output:
            s = sizes[a.name] if isinstance(sizes, dict) else sizes
            s = [s] if isinstance(s, int) else list(s)
            arr = np.zeros(tuple(reversed(s)), dtype=a.type.dtype)
            bufs[a.name] = arr
            outs.append(arr)
        else:
            if a.name not in inputs_and_params:
                raise RealizeError(f"run(): missing input {a.name!r}")
            bufs[a.name] = np.asarray(inputs_and_params[a.name])
    interpret(lowered, bufs, params)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _param_defaults(lowered) -> dict:
    from ..model.visit import walk
    out = {}
    for st in L.walk_stmts(lowered.body):
        for e in L.stmt_exprs(st):
            for n in walk(e):
                if isinstance(n, E.Param):
                    out[n.name] = n.default
    return out
