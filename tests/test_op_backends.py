"""Every backend's spelling of every op agrees with the op's numpy evaluation.

For each type, one pipeline has an output per op of the op table that accepts that
type (``out_OP[x] = OP(a[x], b[x])``).  It is built once per backend and schedule: the
LLVM CPU backend, scalar and vectorized; the generated CUDA C run on the CPU shim;
Halide through the bridge (where the ``halide`` package is installed).  Hypothesis then
draws operands of the type, the edges included (0, -1, 1, the type's min and max, NaN,
+-inf, -0.0), and every output must equal the reference (``ts.reference``, the op
table's numpy rule) bit for bit, except the results of the C library's transcendental
functions, which may differ by a few ulps.
"""
from __future__ import annotations

import functools
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.errors import TilesolveError
from tilesolve.model import expr as E
from tilesolve.model import ops
from tilesolve.model import types as T

INTS = (T.uint8, T.uint16, T.uint32, T.uint64, T.int8, T.int16, T.int32, T.int64)
FLOATS = (T.float16, T.float32, T.float64)
N = 67                       # not a multiple of the vector width: the tail runs too
INEXACT = {"exp", "log", "pow", "sin", "cos", "tan", "atan2", "atan", "asin", "acos", "sinh",
           "cosh", "tanh", "asinh", "acosh", "atanh"}
# Halide computes float32 exp, log and pow with its own polynomials, which are not made
# for non-finite operands or results (exp(inf) == 0, log(nan) == 89.1): there they are
# compared where the operands are finite and normal and the reference's result is 0 or between
# 1e-30 and 1e30 in magnitude (pow(3.4e38, 1.0) overflows inside Halide's exp(y log x))
HALIDE_F32_POLY = {"exp", "log", "pow"}       # float16 math goes through them too
# Halide's float min/max drop a NaN operand (ours propagate it, numpy's rule) and, without
# strict_float, a comparison with a NaN may hold (a <= b is !(b < a)): the bridge keeps
# Halide's native ops (its bounds inference reads min/max), so there they are compared
# where neither operand is NaN
HALIDE_NAN_LOOSE = {"min", "max", "eq", "ne", "lt", "le", "gt", "ge"}


def accepts(op: ops.Op, t: T.Type) -> bool:
    """Whether the language applies ``op`` to operands of type ``t``."""
    if op.kind == "logic":
        return t.is_bool()
    if op.kind == "bits":
        return t.is_integral()
    if op.kind == "math":
        return t.is_float() or (op.name == "abs" and t.is_integral())
    return not t.is_bool()


def partner(t: T.Type) -> T.Type:
    """The type ``reinterpret`` reads ``t``'s bits as in these tests: the other signedness
    of an integer, the signed integer of a float's width, and a float for 32 and 64-bit
    signed integers."""
    if t.is_float():
        return T.Type("int", t.bits)
    if t.is_int() and t.bits >= 32:
        return T.Type("float", t.bits)
    return T.Type("uint" if t.is_int() else "int", t.bits)


def ops_for(t: T.Type) -> list[str]:
    return [n for n, o in ops.OPS.items() if accepts(o, t)]


@functools.lru_cache(maxsize=None)
def pipeline_for(t: T.Type):
    x = ts.Var("x")
    a, b = ts.ImageParam(t, 1, "a"), ts.ImageParam(t, 1, "b")
    outs = []
    for name in ops_for(t):
        op = ops.OPS[name]
        args = (a[x], b[x])[:op.arity]
        args = tuple(E.as_expr(v) for v in args)
        if op.kind == "math":
            e = E.Intrinsic(name, args, t)
        elif op.kind == "reinterpret":
            e = E.Intrinsic(name, args, partner(t))
        else:
            e = E.BinOp(name, *args)
        f = ts.Func(f"out_{name}")
        f[x] = ts.cast(ts.uint8, e) if e.type.is_bool() else e
        outs.append(f)
    return ts.Pipeline(outs)


def _schedule(pipe, how: str):
    s = ts.Schedule(pipe, target="cuda" if how == "cuda" else "cpu")
    for f in pipe.outputs:
        if how == "vector":
            s[f].vectorize(ts.Var("x"), 16)
        elif how == "cuda":
            s[f].gpu_tile(ts.Var("x"), ts.Var("xo"), ts.Var("xi"), 32)
    return s


@functools.lru_cache(maxsize=None)
def build(t: T.Type, how: str):
    pipe = pipeline_for(t)
    if how == "halide":
        from tilesolve.interop import halide as th
        hp = th.translate(pipe)
        hp.compute_root_all()
        return hp
    if how == "cuda":
        from tilesolve.backend.cuda import emulate_cuda
        return emulate_cuda(pipe, _schedule(pipe, how))
    return ts.compile(pipe, _schedule(pipe, how))


def edges(t: T.Type) -> list:
    if t.is_float():
        info = np.finfo(t.dtype)
        return [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.nan, np.inf, -np.inf,
                float(info.max), -float(info.max), float(info.tiny),
                float(info.smallest_subnormal)]
    vals = {0, 1, 2, t.bits - 1, t.bits, t.max_value(), t.min_value(), t.max_value() - 1}
    if t.is_int():
        vals |= {-1, -2, -t.bits, t.min_value() + 1}
    return sorted(vals)


def values(t: T.Type):
    if t.bits == 16 and t.is_float():      # every bit pattern (subnormals, NaNs) alike
        other = st.integers(0, 0xFFFF).map(lambda v: float(np.uint16(v).view(np.float16)))
    elif t.is_float():
        other = st.floats(width=t.bits, allow_nan=True, allow_infinity=True)
    else:
        other = st.integers(int(t.min_value()), int(t.max_value()))
    return st.one_of(st.sampled_from(edges(t)), other)


def operands(t: T.Type):
    return st.lists(values(t), min_size=N, max_size=N).map(lambda v: np.asarray(v, t.dtype))


def check_equal(pipe, got, want, t: T.Type, loose=frozenset(), operands=()):
    """Outputs equal the reference (``loose``: ops compared only where Halide defines
    them as we do, see above)."""
    for f, g, w in zip(pipe.outputs, got, want):
        name = f.name[len("out_"):]
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        if name in loose and name in HALIDE_NAN_LOOSE:
            keep = np.ones(w.shape, bool)
            for v in operands:
                keep &= ~np.isnan(v)
            g, w = g[keep], w[keep]
        elif name in loose:
            aw = np.abs(w.astype(np.float64))      # 1e30 as float16 would be inf
            keep = ((aw >= 1e-30) & (aw <= 1e30)) | (w == 0)
            for v in operands:
                keep &= np.isfinite(v) & ((np.abs(v) >= np.finfo(t.dtype).tiny) | (v == 0))
            g, w = g[keep], w[keep]
        if name == "reinterpret" and w.dtype.kind == "f":      # every bit, NaN payloads too
            g, w = g.view(f"i{w.itemsize}"), w.view(f"i{w.itemsize}")
        if name in INEXACT:
            # float16: computed in float32 and rounded once, one float16 ulp apart at most
            rtol = {16: 2.0 ** -10, 32: 1e-5}.get(t.bits, 1e-12)
            atol = float(np.finfo(t.dtype).smallest_subnormal) if t.bits == 16 else 0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{name} on {t}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{name} on {t}")


def _run(backend, t, a, b):
    pipe = pipeline_for(t)
    want = ts.reference.realize(pipe, [len(a)], a=a, b=b)
    got = build(t, backend).realize([len(a)], a=a, b=b)
    loose = frozenset()
    if backend == "halide" and t.is_float():
        loose = HALIDE_NAN_LOOSE | (HALIDE_F32_POLY if t.bits <= 32 else set())
    with np.errstate(all="ignore"):
        check_equal(pipe, got, want, t, loose, (a, b))


ALL_TYPES = INTS + FLOATS + (T.bool_,)
BACKENDS = ["scalar", "vector",
            pytest.param("cuda", marks=pytest.mark.skipif(
                shutil.which("g++") is None, reason="the CUDA emulation needs g++")),
            "halide"]


def test_every_op_of_the_table_is_checked_on_some_type():
    checked = {n for t in ALL_TYPES for n in ops_for(t)}
    assert checked == set(ops.OPS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_backend_agrees_with_numpy(backend, t):
    if backend == "halide":
        pytest.importorskip("halide", reason="the Halide bridge needs the halide package")
        if t == T.uint64:        # Halide's Python bindings have no uint64 buffers
            with pytest.raises(TilesolveError, match="a is uint64: Halide's Python bindings"):
                build(t, backend)
            return

    @settings(max_examples=8, deadline=None, derandomize=True)
    @given(a=operands(t), b=operands(t))
    def check(a, b):
        _run(backend, t, a, b)

    e = np.asarray(edges(t), t.dtype)
    _run(backend, t, np.tile(e, len(e)), np.repeat(e, len(e)))     # every pair of edges
    check()
