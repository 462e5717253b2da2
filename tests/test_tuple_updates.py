"""Tuple updates whose values read each other (Halide's semantics: every value of an
update is computed from the values before it, at each point of its iteration): the
reference against numpy loops, and compiled builds (the solvers' schedules, hand
schedules, the CUDA emulation, Halide through the bridge) against the reference."""
import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import PipelineError
from tilesolve.model import types as T

x, y = ts.Var("x"), ts.Var("y")
SPEC = "xeon-e5-2620v3"
W, H = 29, 13


def _same(a, b):
    """Equal arrays, or equal tuples of arrays, dtypes included."""
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(u, v)


def _builds_agree(pipe, sizes, estimates, methods=("greedy", "ilp"), **args):
    """The reference, then each solver's compiled build checked against it."""
    ref = ts.reference.realize(pipe, sizes, **args)
    for method in methods:
        s = ts.solve_schedule(pipe, SPEC, estimates, method=method)
        _same(ts.compile(pipe, s).realize(sizes, **args), ref)
    return ref


def _hand_argmax(img, r, name="best"):
    """Halide's hand-written argmax: (x, y, value) of the first largest point."""
    best = ts.Func(name)
    best[()] = (ts.cast(ts.int32, 0), ts.cast(ts.int32, 0), img[0, 0])
    old = best[()]
    better = img[r.x, r.y] > old[2]
    best[()] = (ts.select(better, r.x, old[0]), ts.select(better, r.y, old[1]),
                ts.select(better, img[r.x, r.y], old[2]))
    return best


def test_hand_written_argmax_equals_ts_argmax_and_numpy():
    img = ts.ImageParam(ts.uint8, 2, "img")
    r = ts.RDom((0, W), (0, H), name="r")
    best = _hand_argmax(img, r)
    assert best.packed is not None and best.types == (ts.int32, ts.int32, ts.uint8)
    pipe = ts.Pipeline(best)
    a = np.random.default_rng(0).integers(0, 7, (H, W)).astype(np.uint8)    # many ties
    k = int(np.argmax(a))                              # the first largest, row-major
    want = (np.int32(k % W), np.int32(k // W), a.reshape(-1)[k])
    ref = _builds_agree(pipe, [], {"img": [W, H]}, ("greedy", "ilp", "beam"), img=a)
    assert tuple(v.item() for v in ref) == tuple(v.item() for v in want)
    q = ts.RDom((0, W), (0, H), name="q")
    lib = ts.Func("lib")
    lib[()] = ts.argmax(q, img[q.x, q.y])
    _same(ts.reference.realize(ts.Pipeline(lib), [], img=a), ref)


def test_a_swap_update_and_the_views_of_a_packed_tuple():
    img = ts.ImageParam(ts.float32, 2, "img")
    f = ts.Func("f")
    f[x, y] = (img[x, y] * 2, img[x, y] - 1)
    before = ts.Func("before")                     # a consumer defined before the swap
    before[x, y] = f[x, y][0] - f[x, y][1]
    f[x, y] = (f[x, y][1], f[x, y][0])
    g = ts.Func("g")
    g[x, y] = before[x, y] * 10 + f[x + 1, y][0]
    pipe = ts.Pipeline(g)
    assert set(pipe.funcs) == {"f_0", "f_1", "f_0_init", "f_1_init", "f_packed", "before", "g"}
    a = (np.random.default_rng(1).random((H, W)) * 8).astype(np.float32)
    want = ((a[:, :-1] - 1) - a[:, :-1] * 2) * 10 + (a[:, 1:] - 1)
    ref = _builds_agree(pipe, [W - 1, H], {"g": [W - 1, H]}, img=a)
    np.testing.assert_array_equal(ref, want.astype(np.float32))
    s = ts.Schedule(pipe)
    xo, xi = ts.Var("xo"), ts.Var("xi")
    s[g].split(x, xo, xi, 8).vectorize(xi, 8)
    s[f].compute_at(g, xo)              # the values and the packed Func, at g's xo loop
    assert s.func_schedule("f_packed").compute.func == "g"
    assert all(s.func_schedule(c).compute.func == "g" for c in f.components)
    _same(ts.compile(pipe, s).realize([W - 1, H], img=a), ref)
    _same(ts.compile(pipe, ts.Schedule(pipe)).realize([W - 1, H], img=a), ref)  # defaults
    s = ts.Schedule(pipe)
    s[f].compute_root()
    s["f_packed"].update(0).parallel(y)               # its own loops, by its name
    assert s.func_schedule("f_packed").compute.kind == "root"
    _same(ts.compile(pipe, s).realize([W - 1, H], img=a), ref)


def _complex_scan(n):
    re, im = ts.ImageParam(ts.float32, 1, "re"), ts.ImageParam(ts.float32, 1, "im")
    c, s = ts.Param(ts.float32, "c"), ts.Param(ts.float32, "s")
    z = ts.Func("z")
    z[x] = (re[x], im[x])
    r = ts.RDom((1, n - 1), name="r")
    prev = z[r.x - 1]
    z[r.x] = (prev[0] * c - prev[1] * s + z[r.x][0], prev[0] * s + prev[1] * c + z[r.x][1])
    return z


def test_a_complex_scan_against_a_numpy_loop():
    n = 40
    z = _complex_scan(n)
    pipe = ts.Pipeline(z)
    rng = np.random.default_rng(2)
    re, im = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c, s = np.float32(np.cos(0.3) * 0.97), np.float32(np.sin(0.3) * 0.97)
    zr, zi = re.copy(), im.copy()
    for i in range(1, n):                   # z[i] = w * z[i - 1] + z[i], in float32
        pr, pi = zr[i - 1], zi[i - 1]
        zr[i], zi[i] = pr * c - pi * s + zr[i], pr * s + pi * c + zi[i]
    args = dict(re=re, im=im, c=float(c), s=float(s))
    ref = _builds_agree(pipe, [n], {"z": [n], "re": [n], "im": [n]},
                        ("greedy", "ilp", "beam"), **args)
    _same(ref, (zr, zi))


def test_mixed_types_per_row_with_a_where_predicate():
    img = ts.ImageParam(ts.float32, 2, "img")
    r = ts.RDom((0, W), name="r")
    r.where(r.x % 3 != 1)
    m = ts.Func("m")
    m[y] = (ts.cast(ts.int32, -1), ts.cast(ts.float32, np.inf), ts.cast(ts.bool_, False),
            ts.cast(ts.uint8, 0))
    old = m[y]
    better = img[r.x, y] < old[1]
    # index and value of the row's minimum over the kept columns; whether the minimum
    # moved after a previous one was found; how many times it moved (wrapping uint8)
    m[y] = (ts.select(better, r.x, old[0]), ts.select(better, img[r.x, y], old[1]),
            old[2] | (better & (old[0] >= 0)), old[3] + ts.cast(ts.uint8, better))
    pipe = ts.Pipeline(m)
    assert m.packed is not None and m.packed.type == ts.uint32
    a = np.random.default_rng(3).random((H, W)).astype(np.float32)
    want = [np.full(H, -1, np.int32), np.full(H, np.inf, np.float32), np.zeros(H, bool),
            np.zeros(H, np.uint8)]
    for row in range(H):
        for col in range(W):
            if col % 3 == 1:
                continue
            b = a[row, col] < want[1][row]
            if b:
                want[2][row] |= want[0][row] >= 0
                want[3][row] += 1
                want[0][row], want[1][row] = col, a[row, col]
    ref = _builds_agree(pipe, [H], {"m": [H], "img": [W, H]}, img=a)
    _same(ref, tuple(want))


def test_undef_and_updates_after_packing():
    f = ts.Func("f")
    f[x] = (ts.cast(ts.int8, x - 5), ts.cast(ts.float64, x) * 0.5, ts.cast(ts.int16, 7))
    f[x] = (ts.undef(ts.int8), f[x][1] + ts.cast(ts.float64, f[x][0]), ts.undef(ts.int16))
    assert f.packed is not None and f.packed.type == ts.uint64
    f[x] = (f[x][0] * 3, ts.undef(ts.float64), f[x][2] - 1)      # each reads its own value
    f[x] = (ts.cast(ts.int8, f[x][2]) + f[x][0], ts.undef(ts.float64),
            ts.cast(ts.int16, f[x][0]))                           # reads across again
    pipe = ts.Pipeline(f)
    v0 = (np.arange(10) - 5).astype(np.int8)
    v1 = np.arange(10) * 0.5 + v0
    v0 = (v0 * 3).astype(np.int8)
    v2 = np.full(10, 6, np.int16)
    v0, v2 = (v2.astype(np.int8) + v0).astype(np.int8), v0.astype(np.int16)
    ref = _builds_agree(pipe, [10], {"f": [10]})
    _same(ref, (v0, v1, v2))


@pytest.mark.parametrize("t", T.ALL_TYPES, ids=str)
def test_every_type_keeps_its_bits_in_a_packed_tuple(t):
    """A value of each type next to an int32, through an update that reads across."""
    n = 12
    f = ts.Func("f")
    if t.is_bool():
        first = x % 3 == 1
    elif t.is_float():
        first = ts.cast(t, ts.cast(ts.float32, x) * 0.37 - 2.3)
    else:
        first = ts.cast(t, x * 37 - 200)
    f[x] = (first, x * 5)
    f[x] = (ts.select(f[x][1] % 2 == 0, f[x][0], ts.cast(t, f[x][1])), f[x][1] + 1)
    assert f.packed.type == {64: ts.uint64}.get(t.bits, ts.uint32)
    pipe = ts.Pipeline(f)
    i = np.arange(n)
    if t.is_bool():
        v0 = i % 3 == 1
    elif t.is_float():
        v0 = (i.astype(np.float32) * np.float32(0.37) - np.float32(2.3)).astype(t.dtype)
    else:
        v0 = (i * 37 - 200).astype(t.dtype)
    v1 = (i * 5).astype(np.int32)
    want = (np.where(v1 % 2 == 0, v0, v1.astype(t.dtype)), v1 + 1)
    _same(_builds_agree(pipe, [n], {"f": [n]}, ("greedy",)), want)


def test_every_value_of_a_tuple_update_runs_over_its_rdom():
    """A value that names no RVar still runs once per point of the update's RDom."""
    img = ts.ImageParam(ts.int32, 1, "img")
    r = ts.RDom((0, 5), name="r")
    f = ts.Func("f")
    f[x] = (ts.cast(ts.int32, 0), x)
    f[x] = (f[x][0] + 1, f[x][1] + img[r.x])              # values apart
    g = ts.Func("g")
    g[x] = (x, ts.cast(ts.int32, 0))
    g[x] = (g[x][0] * 2, g[x][1] + g[x][0] + img[r.x])     # values read each other
    pipe = ts.Pipeline([f, g])
    a = np.arange(5, dtype=np.int32) * 3
    g0, g1 = np.arange(6), np.zeros(6, np.int64)
    for v in a:
        g0, g1 = g0 * 2, g1 + g0 + v
    ref = _builds_agree(pipe, [6], {"f": [6], "g": [6], "img": [5]}, img=a)
    _same(ref, (np.full(6, 5, np.int32), (np.arange(6) + a.sum()).astype(np.int32),
                g0.astype(np.int32), g1.astype(np.int32)))


@pytest.mark.skipif(shutil.which("g++") is None, reason="the CUDA emulation needs g++")
def test_a_packed_tuple_under_the_cuda_emulation():
    from tilesolve.backend.cuda import emulate_cuda
    img = ts.ImageParam(ts.float32, 2, "img")
    r = ts.RDom((0, W), name="r")
    best = ts.Func("best")
    best[y] = (ts.cast(ts.int32, 0), img[0, y])
    better = img[r.x, y] > best[y][1]
    best[y] = (ts.select(better, r.x, best[y][0]), ts.select(better, img[r.x, y], best[y][1]))
    out = ts.Func("out")
    out[y] = ts.cast(ts.float32, best[y][0]) + best[y][1]
    pipe = ts.Pipeline(out)
    a = np.random.default_rng(4).random((H, W)).astype(np.float32)
    ref = ts.reference.realize(pipe, [H], img=a)
    cols = np.argmax(a, axis=1)
    np.testing.assert_array_equal(ref, (cols + a[np.arange(H), cols]).astype(np.float32))
    s = ts.solve_schedule(pipe, "h100", {"out": [H], "img": [W, H]}, method="greedy")
    np.testing.assert_array_equal(emulate_cuda(pipe, s).realize([H], img=a), ref)


def test_a_packed_tuple_through_the_halide_bridge():
    pytest.importorskip("halide", reason="the Halide bridge needs the halide package")
    from tilesolve.interop import halide as th
    n = 24
    pipe = ts.Pipeline(_complex_scan(n))
    rng = np.random.default_rng(5)
    args = dict(re=rng.standard_normal(n).astype(np.float32),
                im=rng.standard_normal(n).astype(np.float32), c=0.6, s=0.7)
    hp = th.translate(pipe)
    hp.compute_root_all()
    _same(hp.realize([n], **args), ts.reference.realize(pipe, [n], **args))


def test_what_stays_refused_names_the_func():
    img = ts.ImageParam(ts.int32, 1, "img")
    f = ts.Func("f")
    f[x] = (x, x * 2)
    r = ts.RDom((0, 4), name="r")
    with pytest.raises(PipelineError, match="Func f: the values of this Tuple update read "
                                            "each other and its left side"):
        f[ts.clamp(f[r.x][0], 0, 3)] = (f[r.x][1], f[r.x][0])
    q = ts.RDom((0, 4), name="q")
    with pytest.raises(PipelineError, match="Func f: the values of a Tuple update may use "
                                            "one RDom"):
        f[x] = (f[x][0] + img[r.x], f[x][1] + img[q.x])
    with pytest.raises(PipelineError, match="Func f_1: update value .* has type float32"):
        f[x] = (f[x][1], ts.cast(ts.float32, f[x][0]))
