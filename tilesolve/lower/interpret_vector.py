"""Fast paths of the interpreter: whole loop nests as numpy evaluations.

A *nest* is a For whose body holds only loops, lets, ifs and Stores (a stage
nest, with its guards and tail versions).  ``run_chain`` tries, in order:

1. **all loops at once**: one evaluation with one broadcast axis per loop.
   Exact unless an iteration reads what an earlier iteration of the nest
   stores (a scan); that is detected after evaluating, before storing, and
   the nest falls back.  A tail-version test (``if ... else``) must go the
   same way for every iteration.  Several iterations storing one element: the last
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


def tree_ok(s) -> bool:
    """Loops, lets, ifs (with or without else) and Stores only: the shape of a
    stage nest with tail versions, which runs fast when every test it meets
    is the same for all its iterations."""
    if isinstance(s, (L.For, L.LetStmt)):
        return tree_ok(s.body)
    if isinstance(s, L.IfThenElse):
        return tree_ok(s.then_case) and (s.else_case is None or tree_ok(s.else_case))
    return isinstance(s, L.Store)


def _loop_count(s) -> int:
    """The most loops on one path of an ``tree_ok`` statement."""
    if isinstance(s, L.For):
        return 1 + _loop_count(s.body)
    if isinstance(s, L.LetStmt):
        return _loop_count(s.body)
    if isinstance(s, L.IfThenElse):
        return max(_loop_count(s.then_case),
                   0 if s.else_case is None else _loop_count(s.else_case))
    return 0


def _scalar(v) -> int:
    a = np.asarray(v)
    if a.size != 1:
        raise _Fallback()
    return int(a.reshape(-1)[0])


def _reduction_depth(s) -> int:
    """How many outer loops the stored index depends on, over every path of the
    nest to a Store (0: none usable, or it depends on loaded data)."""
    best = [0]

    def visit(x, path):
        if isinstance(x, (L.For, L.LetStmt)):
            visit(x.body, path + [x])
        elif isinstance(x, L.IfThenElse):
            visit(x.then_case, path)
            if x.else_case is not None:
                visit(x.else_case, path)
        else:
            best[0] = -1 if best[0] < 0 else max(best[0], _path_depth(path + [x]))

    visit(s, [])
    return max(best[0], 0)


def _path_depth(chain) -> int:
    store = chain[-1]
    if any(isinstance(n, L.Load) for n in walk(store.index)):
        return -1
    deps = {n.name for n in walk(store.index) if isinstance(n, E.Var)}
    for x in reversed(chain[:-1]):
        if isinstance(x, L.LetStmt) and x.name in deps:
            if any(isinstance(n, L.Load) for n in walk(x.value)):
                return -1
            deps |= {n.name for n in walk(x.value) if isinstance(n, E.Var)}
    loops = [x for x in chain if isinstance(x, L.For)]
    used = [i for i, lp in enumerate(loops) if lp.name in deps]
    return max(used) + 1 if used else 0


class VectorMode:
    """Mixin of ``Interpreter`` (needs ``ev``, ``recording``, ``mask``,
    ``_store_buf``, ``_check_loads``)."""

    def run_chain(self, s: L.For, env) -> bool:
        """Run the nest under ``s`` fast; False when it must run serially."""
        n = self._nest(s)
        if n is None:
            return False
        try:
            self._run(s, env, n, self._store_all)
            return True
        except _Fallback:
            pass
        k = _reduction_depth(s)
        stores = {x.buffer for x in L.walk_stmts(s) if isinstance(x, L.Store)}
        if not 0 < k < n or len(stores) != 1:
            return False
        buf = self._store_buf(stores.pop())
        saved = (buf.data.copy(), buf.written.copy())
        try:
            self._run(s, env, k, self._store_reduction)
            return True
        except _Fallback:
            buf.data[...], buf.written[...] = saved
            return False

    def _nest(self, s):
        hit = self.eligible.get(id(s))
        if hit is None:
            hit = self.eligible[id(s)] = (s, _loop_count(s) if tree_ok(s) else None)
        return hit[1]

    # -- walking the nest ----------------------------------------------------------------
    def _run(self, s, env, k, store_fn):
        self.recording = []
        state = {"k": k, "shape": [1] * k, "store": store_fn, "first": None, "checked": 0,
                 "stores": 0}
        try:
            self._step(s, dict(env), np.ones((1,) * k, dtype=bool), 0, 0, state)
        finally:
            self.recording = None
            self.mask = True

    def _step(self, x, env, mask, axis, seen, state):
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
                if state["shape"][axis] != 1 and state["shape"][axis] != ext:
                    raise _Fallback()
                r = [1] * state["k"]
                r[axis] = ext
                state["shape"][axis] = ext
                env[x.name] = np.arange(mn, mn + ext, dtype=np.int32).reshape(r)
                self._step(x.body, env, mask, axis + 1, seen + 1, state)
            else:
                for v in range(mn, mn + ext):
                    env[x.name] = np.int32(v)
                    self._step(x.body, env, mask, axis, seen + 1, state)
            return
        if isinstance(x, L.LetStmt):
            env[x.name] = self.ev(x.value, env)
            self._step(x.body, env, mask, axis, seen, state)
            return
        self.mask = mask
        c = np.asarray(self.ev(x.cond, env), dtype=bool)
        if x.else_case is None:
            self._step(x.then_case, env, mask & c, axis, seen, state)
            return
        # a version test: it must go the same way for every (active) iteration
        live = np.broadcast_to(c, np.broadcast_shapes(c.shape, mask.shape))[
            np.broadcast_to(mask, np.broadcast_shapes(c.shape, mask.shape))]
        if live.size == 0:
            return
        if live.all():
            self._step(x.then_case, env, mask, axis, seen, state)
        elif not live.any():
            self._step(x.else_case, env, mask, axis, seen, state)
        else:
            raise _Fallback()

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
        state["stores"] += 1
        if state["stores"] > 1:       # a loop above a version test ran it twice
            raise _Fallback()
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
