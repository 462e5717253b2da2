"""Loop partitioning of boundary clamps (lower/partition.py): the steady state of a
repeat_edge stencil has no clamp, no select, no masked load and no gather; partitioned
loops equal the reference at every size around the vector width; and the range the
solver gives for the steady state is sufficient (every point in it satisfies the
condition)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.analysis.simplify import simplify
from tilesolve.lower import ir as L
from tilesolve.lower.lower import lower
from tilesolve.lower.partition import _solve
from tilesolve.model import expr as E
from tilesolve.model.visit import substitute_names

LANES = 8


def _blur(boundary, tail=None):
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = boundary(inp)
    blur = ts.Func("blur")
    blur[x, y] = (src[x - 1, y] + src[x, y] * 2 + src[x + 2, y] + src[x, y - 1]
                  + src[x, y + 1]) / 6
    pipe = ts.Pipeline(blur)
    s = ts.Schedule(pipe)
    if tail is None:
        s[blur].vectorize(x, LANES)
    else:
        xo, xi = ts.Var("xo"), ts.Var("xi")
        s[blur].split(x, xo, xi, LANES, tail=tail).vectorize(xi)
    return pipe, s


def _blocks(text: str, label_prefix: str) -> list:
    """The bodies of the LLVM basic blocks whose label starts with ``label_prefix``: the
    loop's body and its remainder copies, not the preheader LLVM hoists invariants to."""
    out, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^([\w.]+):", line)
        if m:
            name = m.group(1)
            inside = name.startswith(label_prefix) and not re.search(r"preheader|loopexit", name)
            cur = [] if inside else None
            if cur is not None:
                out.append(cur)
        elif cur is not None:
            cur.append(line)
    return ["\n".join(b) for b in out]


def test_repeat_edge_blur_steady_state_has_no_select_masked_load_or_gather():
    pipe, s = _blur(ts.boundary.repeat_edge)
    compiled = ts.compile(pipe, s, cache_dir=False)
    assert "blur.s0.x.x.steady" in compiled.loop_ir()
    text = compiled.llvm_ir()
    steady = _blocks(text, "blur.s0.x.x.steady.loop")
    assert steady, "no steady-state loop in the LLVM IR"
    body = "\n".join(steady)
    assert f"load <{LANES} x float>" in body           # the taps are dense vector loads
    for banned in ("= select ", "@llvm.masked.load", "@llvm.masked.gather", "@llvm.smin",
                   "@llvm.smax"):
        assert banned not in body, f"{banned} in the steady state:\n{body}"
    # the edges keep their clamps (so the check above can tell the two apart)
    edges = "\n".join(_blocks(text, "blur.s0.x.x.loop"))
    assert any(k in edges for k in ("@llvm.smin", "@llvm.smax", "= select ", "gather"))


@pytest.mark.parametrize("boundary", [ts.boundary.repeat_edge, ts.boundary.constant_exterior,
                                      ts.boundary.mirror_interior])
@pytest.mark.parametrize("tail", [None, "guard_with_if", "shift_inward"])
def test_partitioned_stencils_equal_the_reference_around_the_vector_width(boundary, tail):
    pipe, s = _blur(boundary, tail)
    compiled = ts.compile(pipe, s, cache_dir=False)
    for w in (1, 2, LANES - 1, LANES, LANES + 1, 2 * LANES + 3, 5 * LANES):
        for h in (1, 3):
            if w < LANES and tail == "shift_inward":
                continue                  # the tile does not fit: checked to raise elsewhere
            a = np.random.default_rng(w * 7 + h).random((h, w), dtype=np.float32)
            want = ts.reference.realize(pipe, [w, h], input=a)
            got = compiled.realize([w, h], input=a)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"size {w}x{h}")


def _vectorized_repeat_edge(t, value):
    """``f[x, y] = value(src, x, y)`` over ``repeat_edge`` of a ``t`` input, vectorized
    in x: (pipeline, schedule, the text of the first steady loop of its lowered IR)."""
    x, y = ts.Var("x"), ts.Var("y")
    src = ts.boundary.repeat_edge(ts.ImageParam(t, 2, "input"))
    f = ts.Func("f")
    f[x, y] = value(src, x, y)
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    s[f].vectorize(x, LANES)
    steady = [n for n in L.walk_stmts(lower(pipe, s).body)
              if isinstance(n, L.For) and n.name.endswith(".steady")]
    assert steady
    return pipe, s, str(steady[0])


def test_a_clamp_the_solver_cannot_place_stays_in_the_steady_state():
    """x % 5 is not linear in the loop variable: its clamp is kept everywhere, and the
    linear taps beside it are still partitioned."""
    pipe, s, text = _vectorized_repeat_edge(
        ts.float32, lambda src, x, y: src[x % 5 * 3 - 1, y] + src[x + 1, y])
    assert "% 5" in text and "input.extent.0 - 1)" in text
    compiled = ts.compile(pipe, s, cache_dir=False)
    for w in (1, 9, 30):
        a = np.random.default_rng(w).random((2, w + 14), dtype=np.float32)
        np.testing.assert_array_equal(compiled.realize([w, 2], input=a),
                                      ts.reference.realize(pipe, [w, 2], input=a))


def test_a_clamp_of_a_halved_index_leaves_the_steady_state():
    """Floor division by a constant is solved exactly (``P / k >= m`` iff ``P >= m k``):
    an upsampling read ``src[x / 2]`` runs clamp-free in the steady loop, as chroma
    upsampling needs, and the results equal the reference at every width."""
    pipe, s, text = _vectorized_repeat_edge(
        ts.uint8, lambda src, x, y: ts.select(
            (x & 1) == 0, src[x / 2, y],
            ts.rounding_halving_add(src[x / 2, y], src[x / 2 + 1, y])))
    assert "/ 2, 0)" not in text and "input.extent.0 - 1)" not in text
    compiled = ts.compile(pipe, s, cache_dir=False)
    for w in (1, 2, 9, 31, 70):
        a = np.random.default_rng(w).integers(0, 256, (3, (w + 1) // 2), dtype=np.uint8)
        np.testing.assert_array_equal(compiled.realize([w, 3], input=a),
                                      ts.reference.realize(pipe, [w, 3], input=a))


# -- the solver's range is sufficient --------------------------------------------------
_V, _S = E.Var("v"), E.Var("s")


def _exprs():
    leaf = st.one_of(st.just(_V), st.just(_S), st.integers(-20, 20).map(lambda c: E.as_expr(c)))

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: p[0] + p[1]),
            st.tuples(inner, inner).map(lambda p: p[0] - p[1]),
            st.tuples(inner, st.sampled_from([-3, -1, 2, 5])).map(lambda p: p[0] * p[1]),
            st.tuples(inner, inner).map(lambda p: E.min_(p[0], p[1])),
            st.tuples(inner, inner).map(lambda p: E.max_(p[0], p[1])),
            st.tuples(inner, st.sampled_from([1, 2, 3, 8])).map(lambda p: p[0] / p[1]),
        )
    return st.recursive(leaf, extend, max_leaves=8)


def _value(e, v, s):
    r = simplify(substitute_names(e, {"v": E.as_expr(v), "s": E.as_expr(s)}))
    assert isinstance(r, E.Const), r
    return r.value


@given(_exprs(), st.integers(-15, 15))
def test_every_point_of_the_solved_range_satisfies_the_condition(x, s):
    sol = _solve(x, "v")
    if sol is None:
        return
    if not all(_value(g, 0, s) for g in sol.guards):
        return
    lo = max([_value(e, 0, s) for e in sol.los], default=-40)
    hi = min([_value(e, 0, s) for e in sol.his], default=40)
    for v in range(max(lo, -40), min(hi, 40) + 1):
        assert _value(x, v, s) >= 0, (str(x), v, s, lo, hi)




@pytest.mark.parametrize("offset", [0, 2])
def test_an_index_with_no_bound_leaves_its_clamp_in_place(offset):
    """``int32(ceil(x / s))`` for a float Param ``s``, over a vector's lanes, is bounded
    only by the int32 range.  The conditions solved from that range for the tap loop
    around the vector folded constants past the int32 range, wrapped around, and made
    the steady loop take taps whose clamp was not a no-op: the repeat_edge read ran far
    past the input (resampling's taps at float coordinates).  Such a clamp stays."""
    x, y = ts.Var("x"), ts.Var("y")
    r = ts.RDom((0, 6), name="r")
    scale = ts.Param(ts.float32, "s", 0.75)
    src = ts.boundary.repeat_edge(ts.ImageParam(ts.float32, 2, "input"))
    f = ts.Func("f")
    f[x, y] = 0.0
    at = ts.cast(ts.int32, ts.ceil((ts.cast(ts.float32, x) + 0.5) / scale - 0.5))
    f[x, y] += src[at + r.x + offset, y]
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    xo, xi, ro, ri = ts.Var("xo"), ts.Var("xi"), ts.Var("ro"), ts.Var("ri")
    s[f].vectorize(x, LANES)
    s[f].update(0).split(x, xo, xi, LANES).split(r.x, ro, ri, 3) \
        .reorder(xi, ri, ro, xo, y).vectorize(xi).unroll(ri)
    compiled = ts.compile(pipe, s, cache_dir=False)
    for w in (8, 16, 30, 64):
        a = np.random.default_rng(w).random((4, w), dtype=np.float32)
        np.testing.assert_allclose(compiled.realize([w, 4], input=a, s=0.75),
                                   ts.reference.realize(pipe, [w, 4], input=a, s=0.75),
                                   rtol=1e-6, err_msg=f"width {w}")
