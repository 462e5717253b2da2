"""Generated code computes every expression exactly as ``model.evaluate`` does.

For each scalar type one module evaluates a list of expressions over three input arrays
(``a``, ``b``: any values including 0, -1, the extremes, inf and NaN; ``c``: finite and
moderate, for float->int casts and transcendental functions), once in a scalar loop and
once in a vectorized loop of 8 lanes (plus a variant where ``b`` is uniform across the
lanes).  Hypothesis draws the data; integers must match bit for bit, floats exactly for
IEEE-exact operations and within a few ulps for transcendental ones.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilesolve.backend.cpu.codegen import generate
from tilesolve.backend.cpu.runtime import NativeKernel
from tilesolve.lower import ir as L
from tilesolve.model import expr as E
from tilesolve.model import types as T
from tilesolve.model.evaluate import evaluate
from tilesolve.model.visit import mutate

W = 8
N = 128
APPROX = {"exp", "log", "sin", "cos", "tan", "pow", "atan2"}


def expressions(t: T.Type) -> dict:
    """name -> Expr over Params a, b, c of type t."""
    a, b, c = (E.Param(t, n) for n in "abc")
    out = {}
    if t.is_bool():
        out.update(and_=a & b, or_=a | b, not_=~a, eq=a == b, ne=a != b, lt=a < b,
                   ge=a >= b, sel=E.select(a, b, c), xor=E.select(a, ~b, b))
    else:
        for op in ("add", "sub", "mul", "div", "mod", "min", "max",
                   "eq", "ne", "lt", "le", "gt", "ge"):
            out[op] = E.binop(op, a, b)
        out["sel"] = E.select(a < b, a, c)
        out["abs"] = E.abs_(a)
        out["neg"] = -a
        out["nested"] = (a * b + c) / (b - 3) % (c + 7)
        for k in (1, 2, 3, 4, 7, 8, -1, -2, -3, -8, 0):
            if t.is_uint() and k < 0:
                continue
            out[f"div{k}"] = a / k
            out[f"mod{k}"] = a % k
    if t.is_float():
        for name in ("sqrt", "exp", "log", "sin", "cos", "tan", "floor", "ceil"):
            out[name] = getattr(E, name)(c)
        out["round"] = E.round_(c)
        out["sqrt_a"] = E.sqrt(a)
        out["floor_a"] = E.floor(a)
        out["pow"] = E.pow_(c, b / 1000)
        out["atan2"] = E.atan2(c, b)
    src = c if t.is_float() else a
    for t2 in T.ALL_TYPES:
        if t2 != t:
            out[f"cast_{t2}"] = E.cast(t2, src)
    return out


def _loads(e: E.Expr, index: E.Expr, uniform_b: E.Expr | None = None) -> E.Expr:
    def fn(n):
        if isinstance(n, E.Param):
            idx = uniform_b if (uniform_b is not None and n.name == "b") else index
            return L.load(n.name.upper(), idx, n.type)
        return None
    return mutate(e, fn)


@functools.lru_cache(maxsize=None)
def kernel(t: T.Type):
    exprs = expressions(t)
    names = list(exprs)
    args = [L.Argument(n, "buffer", t, 1) for n in "ABC"]
    x, xo, xi = E.Var("k.x"), E.Var("k.xo"), E.Var("k.xi")
    xv = xo * W + xi
    zero = E.Const(T.int32, 0)
    loops = []
    for mode in ("s", "v", "u"):
        stores = []
        for nm in names:
            buf = f"O_{mode}_{nm}"
            args.append(L.Argument(buf, "buffer", exprs[nm].type, 1, True))
            idx = x if mode == "s" else xv
            stores.append(L.Store(buf, idx, _loads(exprs[nm], idx, xo if mode == "u" else None)))
        body = L.Block.make(stores)
        if mode == "s":
            loops.append(L.For("k.x", zero, E.Const(T.int32, N), "serial", body))
        else:
            inner = L.For("k.xi", zero, E.Const(T.int32, W), "vectorized", body)
            loops.append(L.For("k.xo", zero, E.Const(T.int32, N // W), "serial", inner))
    gen = generate(L.LoweredPipeline(f"exprs_{t}", tuple(args), L.Block.make(loops)))
    assert not gen.notes, gen.notes
    return NativeKernel(gen), names, exprs


def data(t: T.Type, seed: int):
    rng = np.random.default_rng(seed)
    if t.is_bool():
        return tuple(rng.integers(0, 2, N).astype(bool) for _ in range(3))
    if t.is_float():
        special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 3.5, -2.5,
                            np.finfo(t.dtype).max, np.finfo(t.dtype).tiny], dtype=t.dtype)
        vals = []
        for _ in range(2):
            v = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 6, N)).astype(t.dtype)
            m = rng.random(N) < 0.25
            v[m] = rng.choice(special, m.sum())
            vals.append(v)
        c = rng.uniform(-100, 100, N)
        halves = rng.random(N) < 0.3
        c[halves] = np.round(c[halves]) + 0.5          # ties for round-half-even
        return vals[0], vals[1], c.astype(t.dtype)
    info = np.iinfo(t.dtype)
    special = np.array([0, 1, 2, 3, 7, 8, info.max, info.min, info.max - 1, info.min + 1]
                       + ([-1, -2, -7, -8] if t.is_int() else []), dtype=t.dtype)
    vals = []
    for _ in range(3):
        v = rng.integers(info.min, info.max, N, dtype=t.dtype, endpoint=True)
        small = rng.random(N) < 0.3
        v[small] = rng.integers(-20 if t.is_int() else 0, 21, small.sum())
        m = rng.random(N) < 0.25
        v[m] = rng.choice(special, m.sum())
        vals.append(v.astype(t.dtype))
    return tuple(vals)


def _ulp_close(got, want, ulps):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got == want) | both_nan
    info = np.finfo({16: np.float16, 32: np.float32}.get(ulps[1], np.float64))
    tiny = max(float(info.tiny), float(np.finfo(np.float32).tiny))
    with np.errstate(invalid="ignore"):
        tol = ulps[0] * float(info.eps) * np.maximum(np.abs(want), tiny)
        return same | (np.abs(got - want) <= tol)


def _check(t, seed):
    kern, names, exprs = kernel(t)
    A, B, C = data(t, seed)
    outs = {m: [np.zeros(N, exprs[n].type.dtype) for n in names] for m in "svu"}
    assert kern([A, B, C] + outs["s"] + outs["v"] + outs["u"]) == 0
    env = {"a": A, "b": B, "c": C}
    env_u = {"a": A, "b": np.repeat(B[: N // W], W), "c": C}
    for k, nm in enumerate(names):
        e = exprs[nm]
        for mode, en in (("s", env), ("v", env), ("u", env_u)):
            want = np.broadcast_to(evaluate(e, en), (N,))
            got = outs[mode][k]
            if e.type.is_float():
                ulps = 8 if any(a in nm for a in APPROX) else 0
                ok = _ulp_close(got, want, (ulps, e.type.bits))
            else:
                ok = got == want
            if not np.all(ok):
                i = int(np.argmin(ok))
                pytest.fail(f"{t} {nm} ({mode}): a={A[i]!r} b={en['b'][i]!r} c={C[i]!r} "
                            f"got {got[i]!r} want {want[i]!r} (expr {e})")


@pytest.mark.parametrize("t", T.ALL_TYPES, ids=str)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_expression_semantics_match_evaluate(t, seed):
    _check(t, seed)


def test_int_min_divided_by_minus_one_does_not_trap():
    # covered by the random data too; pinned here so a regression names itself
    _check(T.int32, 1)
    kern, names, exprs = kernel(T.int8)
    A = np.array([-128] * N, np.int8)
    B = np.array([-1, 0] * (N // 2), np.int8)
    outs = [np.zeros(N, exprs[n].type.dtype) for _ in range(3) for n in names]
    assert kern([A, B, A] + outs) == 0
    div = outs[names.index("div")]
    mod = outs[names.index("mod")]
    assert list(div[:2]) == [-128, 0] and list(mod[:2]) == [0, 0]


@functools.lru_cache(maxsize=None)
def _div_kernel(divisors: tuple):
    xo, xi, x = E.Var("d.xo"), E.Var("d.xi"), E.Var("d.x")
    a = L.load("A", x, T.float32)
    args = [L.Argument("A", "buffer", T.float32, 1)]
    stores = []
    for k, c in enumerate(divisors):
        args.append(L.Argument(f"O{k}", "buffer", T.float32, 1, True))
        stores.append(L.Store(f"O{k}", x, a / E.Const(T.float32, c)))
    body = L.For("d.xo", E.Const(T.int32, 0), E.Var("A.extent.0") / 16, "serial", L.For(
        "d.xi", E.Const(T.int32, 0), E.Const(T.int32, 16), "vectorized",
        L.LetStmt("d.x", xo * 16 + xi, L.Block.make(stores))))
    gen = generate(L.LoweredPipeline("fdiv", tuple(args), body))
    return NativeKernel(gen)


@given(seed=st.integers(0, 2 ** 32 - 1))
def test_float32_division_by_odd_integer_constants_is_exact(seed):
    """x / c for odd integer constants is computed with a double multiply (no divide);
    it must round exactly like float32 division for every bit pattern, subnormals too."""
    divisors = (3.0, -3.0, 5.0, 7.0, 9.0, 255.0, 12345.0, 16777215.0, 6.0, 0.1, 2.0)
    kern = _div_kernel(divisors)
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32)
    tiny = rng.random(4096) < 0.3                     # subnormals and the smallest normals
    bits[tiny] = rng.integers(0, 2 ** 24, tiny.sum()) | (rng.integers(0, 2, tiny.sum()) << 31)
    a = bits.view(np.float32)
    a[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.4e-45, -1.4e-45, 3.4e38]
    outs = [np.zeros_like(a) for _ in divisors]
    assert kern([a] + outs) == 0
    with np.errstate(all="ignore"):
        for c, o in zip(divisors, outs):
            want = a / np.float32(c)
            same = (o.view(np.uint32) == want.view(np.uint32)) | (np.isnan(o) & np.isnan(want))
            assert same.all(), (c, a[~same][:3], o[~same][:3], want[~same][:3])
