"""Constant upper bounds of allocation extents (Halide's rule for GPU buffers).

``const_upper(e)``: a constant no smaller than ``e`` for every value of its free
names, when cancellation proves one (``min(base + 63, W - 1) - base + 1 <= 64``),
with exact rewrites for floor division by a constant; None otherwise.
``ExtentBounder``: the extent of an allocation bounded through the lets that enclose
it (substituted one level at a time, so names that cancel do so while the Expr is
small) and then over the ranges of the enclosing loops (``bounds.expr_bounds``).
Only an allocation's size uses such a bound; the region computed stays exact.
"""
from __future__ import annotations

from ..analysis.simplify import numeric_bounds, simplify
from ..model import expr as E
from ..model.visit import substitute_names, walk
from . import bounds as B


def _pos_div(e: E.Expr):
    """``k`` when ``e`` is an integer ``X / k`` with a constant ``k > 0``, else None."""
    if (isinstance(e, E.BinOp) and e.op == "div" and isinstance(e.b, E.Const)
            and not e.type.is_float() and int(e.b.value) > 0):
        return e.b
    return None


def _push(e: E.Expr, depth: int = 0, memo: dict | None = None) -> E.Expr:
    """Distribute + and - over min/max, and into a floor division by a constant
    ``k > 0`` (``X / k + L = (X + k*L) / k``, ``L - X / k = (k*L - X + k - 1) / k``
    for any integer ``L``), so that cancellations show.  Every step is exact."""
    if depth > 6 or not isinstance(e, E.BinOp) or e.op not in ("add", "sub"):
        return e
    memo = {} if memo is None else memo
    key = (id(e), depth)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    r = _push_step(e, depth, memo)
    memo[key] = (e, r)          # e kept alive: its id stays its own
    return r


def _push_step(e: E.Expr, depth: int, memo: dict) -> E.Expr:
    def push(x):
        return _push(x, depth + 1, memo)
    a, b = push(e.a), push(e.b)
    op = e.op
    if isinstance(a, E.BinOp) and a.op in ("min", "max"):
        return E.BinOp(a.op, push(simplify(E.binop(op, a.a, b))),
                       push(simplify(E.binop(op, a.b, b))))
    if isinstance(b, E.BinOp) and b.op in ("min", "max"):
        m = b.op if op == "add" else ("max" if b.op == "min" else "min")
        return E.BinOp(m, push(simplify(E.binop(op, a, b.a))),
                       push(simplify(E.binop(op, a, b.b))))
    k = _pos_div(a)
    if k is not None and not b.type.is_float():
        return E.BinOp("div", push(simplify(E.binop(op, a.a, _unfloor(b * k)))), k)
    k = _pos_div(b)
    if k is not None and not a.type.is_float():
        ak = _unfloor(a * k)
        num = b.a + ak if op == "add" else ak - b.a + (k - 1)
        return E.BinOp("div", push(simplify(num)), k)
    return simplify(E.binop(op, a, b))


def _split_div(e: E.Expr) -> E.Expr:
    """``(X + c) / k`` -> ``X / k + (X % k + c) / k`` (floor division, k > 1 a
    constant): exact, and lets a tile's ``(b + 7) / 8 - b / 8`` cancel to
    ``(b % 8 + 7) / 8``, which is at most 1."""
    from ..model.visit import mutate

    def fn(n):
        if not (isinstance(n, E.BinOp) and n.op == "div" and isinstance(n.b, E.Const)
                and not n.type.is_float() and int(n.b.value) > 1):
            return None
        a = n.a
        if not (isinstance(a, E.BinOp) and a.op in ("add", "sub")):
            return None
        if isinstance(a.b, E.Const):
            x, c = a.a, int(a.b.value) * (1 if a.op == "add" else -1)
        elif isinstance(a.a, E.Const) and a.op == "add":
            x, c = a.b, int(a.a.value)
        else:
            return None
        if isinstance(x, E.Const):
            return None
        k = n.b
        x = mutate(x, fn)
        return x / k + (E.BinOp("mod", x, k) + E.Const(x.type, c)) / k
    return mutate(e, fn)


def _size(e: E.Expr, cap: int) -> int:
    """The number of nodes of ``e``, counted up to ``cap + 1``."""
    n = 0
    for _ in walk(e):
        n += 1
        if n > cap:
            break
    return n


def _unfloor(e: E.Expr) -> E.Expr:
    """``(X / k) * m`` -> ``(X - X % k) * (m / k)`` where ``k > 0`` divides ``m``
    (exact, floor division): a rounded-down tile start becomes something the
    tile's loop variable cancels against."""
    from ..model.visit import mutate

    def fn(n):
        if not (isinstance(n, E.BinOp) and n.op == "mul" and not n.type.is_float()):
            return None
        for d, m in ((n.a, n.b), (n.b, n.a)):
            k = _pos_div(d)
            if k is not None and isinstance(m, E.Const) and int(m.value) % int(k.value) == 0:
                x = mutate(d.a, fn)
                r = x - E.BinOp("mod", x, k)
                q = int(m.value) // int(k.value)
                return r if q == 1 else r * E.Const(n.type, q)
        return None
    return mutate(e, fn)


def _as_div(n: E.Expr):
    """``(Y, k)`` with ``n == Y / k`` (floor division, ``k > 0`` a constant) when
    ``n`` is ``X / k`` plus or minus an integer Expr, else None."""
    k = _pos_div(n)
    if k is not None:
        return n.a, k
    if not (isinstance(n, E.BinOp) and n.op in ("add", "sub")) or n.type.is_float():
        return None
    a, b = n.a, n.b
    k = _pos_div(a)
    if k is not None:
        return simplify(E.binop(n.op, a.a, _unfloor(b * k))), k
    k = _pos_div(b)
    if k is not None:
        ak = _unfloor(a * k)
        return simplify(b.a + ak if n.op == "add" else ak - b.a + (k - 1)), k
    return None


def _merge_divs(e: E.Expr) -> E.Expr:
    """``(X / k1 + L) / k2`` -> ``(X + k1*L) / (k1*k2)`` bottom-up (exact for floor
    division by positive constants), so that a pyramid level's
    ``((m / 2 + 1) / 2 + 1) / 2`` compares with ``(m + 1) / 8``."""
    if not isinstance(e, E.BinOp) or e.type.is_float():
        return e
    a, b = _merge_divs(e.a), _merge_divs(e.b)
    if _pos_div(e) is not None:
        inner = _as_div(a)
        k = int(e.b.value) * int(inner[1].value) if inner is not None else 0
        if inner is not None and k <= 1 << 20:
            return E.BinOp("div", inner[0], E.Const(e.type, k))
    if a is e.a and b is e.b:
        return e
    return E.BinOp(e.op, a, b)


_CONST_UPPER_CACHE: dict = {}


def const_upper(e: E.Expr, max_nodes: int = 80):
    """``_const_upper``, remembered (Exprs are interned: the same Expr is the same
    object; the cache keeps it alive so its id stays its own)."""
    key = (id(e), max_nodes)
    hit = _CONST_UPPER_CACHE.get(key)
    if hit is not None:
        return hit[1]
    if len(_CONST_UPPER_CACHE) > 20000:
        _CONST_UPPER_CACHE.clear()
    r = _const_upper(e, max_nodes)
    _CONST_UPPER_CACHE[key] = (e, r)
    return r


def _const_upper(e: E.Expr, max_nodes: int):
    """A provable constant upper bound of an int32 Expr, or None.

    The bound must not depend on the values of the free names: it is taken
    twice, with the names anywhere in int32 and within +-2**20, and kept only
    when both agree (``min(256, W - x)`` gives 256 both times; ``W / 8`` does
    not) and it is at most 2**20 (what is bigger would be a heap buffer anyway;
    that also rejects bounds that only come from a type's range)."""
    e = simplify(e)
    if isinstance(e, E.Const):
        return int(e.value)
    if _size(e, max_nodes) > max_nodes:     # tile extents are small Exprs; skip the rest
        return None
    best = None
    e = simplify(_merge_divs(simplify(_unfloor(e))))
    memo: dict = {}
    for p in (_push(e, 0, memo), _push(simplify(_split_div(e)), 0, memo)):
        free = {n.name for n in walk(p) if isinstance(n, (E.Var, E.Param, E.RVar))}
        free |= {f"{n.image}.extent.{n.dim}" for n in walk(p) if isinstance(n, E.BufferExtent)}
        hi = numeric_bounds(p)[1]
        small = numeric_bounds(p, {n: (-(1 << 20), 1 << 20) for n in free})[1]
        if hi is None or hi != small or hi > 1 << 20:   # a constant only worth it for tiles
            continue
        best = int(hi) if best is None else min(best, int(hi))
    return best


# ---------------------------------------------------------------------------
# The placer
# ---------------------------------------------------------------------------
def _culprits(x: E.Expr) -> list:
    """The run-time values (Params, input and output extents) that ``x`` has no
    constant bound because of: those that, fixed alone, make it bounded, else
    every one it names."""
    from ..model.visit import mutate

    def name(n):
        if isinstance(n, E.Param):
            return n.name
        if isinstance(n, E.BufferExtent):
            return f"{n.image}.extent({n.dim})"
        if isinstance(n, E.Var) and ".extent." in n.name and ".s" not in n.name:
            return n.name       # an output's extent (loop and region names have ".s0.")
        return None
    names = sorted({m for m in map(name, walk(x)) if m is not None})

    def fixed(m):
        return mutate(x, lambda n: E.Const(n.type, 1) if name(n) == m else None)
    alone = [m for m in names
             if not x.type.is_float() and const_upper(fixed(m)) is not None]
    return alone or names


class ExtentBounder:
    """Constant upper bounds of an allocation's extents (Halide's rule for GPU
    shared/register and stack buffers): the size of a full tile, which a tail
    tile uses part of.  Only the allocation's size uses the bound; the region
    computed stays exact.

    ``bound(ext)`` takes ``const_upper`` of ``ext``, then of ``ext`` with the
    lets that enclose the allocation substituted one level at a time (``top``:
    the outputs' and hoisted program lets, then ``env``, then the Func's own
    region ``lets``), so a tail tile's ``min(base + 63, W - 1) - base + 1``
    shows as ``min(64, W - base)`` while names that cancel stay names.  Where
    that finds no constant it bounds the extent over the ranges of the
    enclosing loops, innermost first (``bounds.expr_bounds``), trying
    ``const_upper`` after each.  None: no constant bound; ``shown(ext)`` is the
    substituted Expr, for messages."""

    # A tile extent that bounds shows its constant in a small Expr (at most ~40
    # nodes in the apps); bigger ones only cost time in const_upper, and each
    # substitution mostly grows them.
    TRY_NODES, GIVE_UP_NODES = 60, 400

    def __init__(self, defs: dict, loops: list = (), try_nodes: int | None = None):
        self.defs, self.loops = defs, list(loops)     # loops: (name, min, extent), outermost first
        self.try_nodes = self.TRY_NODES if try_nodes is None else try_nodes
        self.last: dict = {}

    @classmethod
    def at(cls, top: list, env: tuple, lets: list, **kw) -> "ExtentBounder":
        """The bounder for an allocation inside ``env`` (see ``insert_in_loop``)."""
        defs, loops = {}, []
        for n, v in top:
            defs[n] = v
        for entry in env:
            if entry[0] == "let":
                defs[entry[1]] = entry[2]
            elif entry[0] == "for":
                loops.append(entry[1:])
        for n, v in lets:
            defs[n] = v
        return cls(defs, loops, **kw)

    def _expand(self, e: E.Expr):
        """``e`` with the lets it names substituted once (None: it names none)."""
        sub = {n.name: self.defs[n.name] for n in walk(e)
               if isinstance(n, E.Var) and n.name in self.defs}
        return simplify(_subst(e, sub)) if sub else None

    def _deepen(self, e: E.Expr):
        """(bound or None, the most substituted ``e`` tried)."""
        for _ in range(64):
            size = _size(e, self.GIVE_UP_NODES)
            if size <= self.try_nodes:
                cu = const_upper(e, self.try_nodes)
                if cu is not None:
                    return cu, e
            if size > self.GIVE_UP_NODES:
                break
            nxt = self._expand(e)
            if nxt is None or nxt is e:
                break
            e = nxt
        return None, e

    def __call__(self, ext: E.Expr):
        if isinstance(ext, E.Const):
            return int(ext.value)
        cu, e = self._deepen(ext)
        self.last[id(ext)] = (ext, e)
        for var, mn, extent in reversed(self.loops):
            if cu is not None:
                break
            if not any(isinstance(n, E.Var) and n.name == var for n in walk(e)):
                continue
            lo = self._deepen(mn)[1]
            hi = simplify(lo + self._deepen(extent)[1] - 1)
            e = B.expr_bounds(e, {var: (lo, hi)})[1]
            if e is None:
                break
            cu = const_upper(e)
        return cu

    def shown(self, ext: E.Expr) -> E.Expr:
        hit = self.last.get(id(ext))
        return ext if hit is None else hit[1]


def _subst(e, values: dict):
    return substitute_names(e, values) if values else e
