"""Fast paths of the interpreter: whole loop nests as numpy evaluations.

A *chain* is a For whose body is loops, lets and guards ending in one Store.
``run_chain`` tries, in order:

1. **all loops at once**: one evaluation with one broadcast axis per loop.
   Exact unless an iteration reads what an earlier iteration of the nest
   stores (a scan); that is detected after evaluating, before storing, and
   the nest falls back.  Several iterations storing one element: the last
   in loop order wins, as when run serially.
2. **reductions**: when the stored index depends only on the outer ``k``
   loops (``f[x, y] = f[x, y] + g[x + r.x]``: loops ``y, x, r.x``), the outer
   loops run as vectors and the inner ones serially, in order.  That is the
   serial order as long as different outer iterations never touch one
   element; checked at every step (distinct stores, every read of the
   stored buffer is its own element or one the nest never stores), restoring
   the buffer and falling back otherwise.

Otherwise (``_Fallback``) the interpreter runs the outer loop point by point.
"""
from __future__ import annotations

import numpy as np

from ..errors import LoweringError
from ..model import expr as E
from ..model.visit import walk
from . import ir as L


class _Fallback(Exception):
    pass


def chain_of(s: L.For):
    """The statements of the chain under ``s`` (ending in its Store), or None."""
    chain, x = [], s
    while True:
        chain.append(x)
        if isinstance(x, (L.For, L.LetStmt)):
            x = x.body
        elif isinstance(x, L.IfThenElse) and x.else_case is None:
            x = x.then_case
        elif isinstance(x, L.Store):
            return chain
        else:
            return None


def _scalar(v) -> int:
    a = np.asarray(v)
    if a.size != 1:
        raise _Fallback()
    return int(a.reshape(-1)[0])


def _reduction_depth(chain) -> int:
    """How many outer loops the stored index depends on (0: none usable)."""
    store = chain[-1]
    if any(isinstance(n, L.Load) for n in walk(store.index)):
        return 0
    deps = {n.name for n in walk(store.index) if isinstance(n, E.Var)}
    for x in reversed(chain[:-1]):
        if isinstance(x, L.LetStmt) and x.name in deps:
            if any(isinstance(n, L.Load) for n in walk(x.value)):
                return 0
            deps |= {n.name for n in walk(x.value) if isinstance(n, E.Var)}
    loops = [x for x in chain if isinstance(x, L.For)]
    used = [i for i, lp in enumerate(loops) if lp.name in deps]
    return max(used) + 1 if used else 0


class VectorMode:
    """Mixin of ``Interpreter`` (needs ``ev``, ``recording``, ``mask``,
    ``_store_buf``, ``_check_loads``)."""

    def run_chain(self, s: L.For, env) -> bool:
        """Run the chain under ``s`` fast; False when it must run serially."""
        chain = self._chain(s)
        if chain is None:
            return False
        n = sum(isinstance(x, L.For) for x in chain)
        try:
            self._run(chain, env, n, self._store_all)
            return True
        except _Fallback:
            pass
        k = _reduction_depth(chain)
        if not 0 < k < n:
            return False
        buf = self._store_buf(chain[-1].buffer)
        saved = (buf.data.copy(), buf.written.copy())
        try:
            self._run(chain, env, k, self._store_reduction)
            return True
        except _Fallback:
            buf.data[...], buf.written[...] = saved
            return False

    def _chain(self, s):
        hit = self.eligible.get(id(s))
        if hit is None:
            hit = self.eligible[id(s)] = (s, chain_of(s))
        return hit[1]

    # -- walking the chain ---------------------------------------------------------------
    def _run(self, chain, env, k, store_fn):
        self.recording = []
        state = {"k": k, "shape": [1] * k, "store": store_fn, "first": None, "checked": 0}
        try:
            self._step(chain, 0, dict(env), np.ones((1,) * k, dtype=bool), 0, 0, state)
        finally:
            self.recording = None
            self.mask = True

    def _step(self, chain, i, env, mask, axis, seen, state):
        x = chain[i]
        if isinstance(x, L.Store):
            self.mask = mask
            idx = self.ev(x.index, env)
            val = self.ev(x.value, env)
            state["store"](x, idx, val, mask, state)
            return
        if isinstance(x, L.For):
            mn, ext = _scalar(self.ev(x.min, env)), _scalar(self.ev(x.extent, env))
            if ext <= 0:
                return
            if seen < state["k"]:
                r = [1] * state["k"]
                r[axis] = ext
                state["shape"][axis] = ext
                env[x.name] = np.arange(mn, mn + ext, dtype=np.int32).reshape(r)
                self._step(chain, i + 1, env, mask, axis + 1, seen + 1, state)
            else:
                for v in range(mn, mn + ext):
                    env[x.name] = np.int32(v)
                    self._step(chain, i + 1, env, mask, axis, seen + 1, state)
            return
        if isinstance(x, L.LetStmt):
            env[x.name] = self.ev(x.value, env)
            self._step(chain, i + 1, env, mask, axis, seen, state)
            return
        self.mask = mask
        mask = mask & np.asarray(self.ev(x.cond, env), dtype=bool)
        self._step(chain, i + 1, env, mask, axis, seen, state)

    # -- storing -------------------------------------------------------------------------
    def _flat(self, store, idx, val, mask, state):
        shape = tuple(state["shape"])
        m = np.broadcast_to(mask, shape).reshape(-1)
        idx = np.broadcast_to(np.asarray(idx).astype(np.int64), shape).reshape(-1)
        val = np.broadcast_to(np.asarray(val), shape).reshape(-1)
        buf = self._store_buf(store.buffer)
        sel = idx[m]
        bad = (sel < 0) | (sel >= buf.data.size)
        if bad.any():
            raise LoweringError(f"Store to {store.buffer} at flat index {int(sel[bad][0])}, "
                                f"outside the buffer (size {buf.data.size})")
        return shape, m, idx, val, buf

    def _new_loads(self, state):
        loads = self.recording[state["checked"]:]
        state["checked"] = len(self.recording)
        return loads

    def _store_all(self, store, idx, val, mask, state):
        shape, m, idx, val, buf = self._flat(store, idx, val, mask, state)
        iters = np.nonzero(m)[0]
        idx, val = idx[m], val[m]
        loads = self._new_loads(state)
        if idx.size:
            # a scan: an iteration reads what an earlier one of this nest stores
            uniq, first = np.unique(idx, return_index=True)
            first_iter = iters[first]
            for lb, li, lm in loads:
                if lb is not buf:
                    continue
                li = np.broadcast_to(li, shape).reshape(-1)
                j = np.nonzero(np.broadcast_to(lm, shape).reshape(-1))[0]
                pos = np.minimum(np.searchsorted(uniq, li[j]), uniq.size - 1)
                if ((uniq[pos] == li[j]) & (first_iter[pos] < j)).any():
                    raise _Fallback()
        for lb, li, lm in loads:
            self._check_loads(lb, np.broadcast_to(li, shape), np.broadcast_to(lm, shape))
        if idx.size:
            uniq, first_rev = np.unique(idx[::-1], return_index=True)
            buf.data[uniq] = val[idx.size - 1 - first_rev]
            buf.written[uniq] = True

    def _store_reduction(self, store, idx, val, mask, state):
        shape, m, idx, val, buf = self._flat(store, idx, val, mask, state)
        if state["first"] is None:
            state["first"] = (idx.copy(), np.unique(idx))
        w, wset = state["first"]
        act = idx[m]
        if not np.array_equal(act, w[m]) or np.unique(act).size != act.size:
            raise _Fallback()
        for lb, li, lm in self._new_loads(state):
            if lb is not buf:
                self._check_loads(lb, np.broadcast_to(li, shape), np.broadcast_to(lm, shape))
                continue
            li = np.broadcast_to(li, shape).reshape(-1)
            lmask = np.broadcast_to(lm, shape).reshape(-1)
            own = li == w
            pos = np.minimum(np.searchsorted(wset, li), wset.size - 1)
            foreign = (wset[pos] == li) & ~own & lmask
            if foreign.any():
                raise _Fallback()
            self._check_loads(lb, li, lmask)
        buf.data[act] = val[m]
        buf.written[act] = True
