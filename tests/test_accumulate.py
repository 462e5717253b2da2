"""lower/accumulate.py: a register-blocked reduction accumulates in a local tile.

Checked: matmul's blocked update gets the tile (behind a run-time test that its rows do
not overlap), results are bit-identical to the reference on both sides of that test and
at ragged sizes, the tile is left out where stores could collide or the value reads
other elements of the buffer, and the injectivity rule itself.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.lower import accumulate as A
from tilesolve.lower import ir as L
from tilesolve.lower.lower import lower
from tilesolve.model import expr as E


def _matmul():
    return _blocked(32, 4, 8, 0, "auto", scan_max=False)


def _allocs(low):
    return [s for s in L.walk_stmts(low.body) if isinstance(s, L.Allocate)
            and ".acc" in s.name]


def test_the_blocked_update_accumulates_in_a_register_tile():
    pipe, s = _matmul()
    low = lower(pipe, s)
    tiles = _allocs(low)
    assert tiles and all(t.memory == "register" for t in tiles)
    assert [int(e.value) for e in tiles[0].extents] == [32 * 4]
    # inside the tile's reduction loop, prod is neither read nor written
    for t in tiles:
        loop = next(st for st in L.walk_stmts(t.body) if isinstance(st, L.For)
                    and ".r." in st.name)
        for node in L.walk_stmts(loop):
            assert not (isinstance(node, L.Store) and node.buffer == "prod")
            for e in L.stmt_exprs(node):
                assert not [n for n in A.walk(e) if isinstance(n, L.Load) and n.buffer == "prod"]
    # the rows are W apart, W known at run time: a test picks the tile or the plain loop
    guarded = [n for n in L.walk_stmts(low.body) if isinstance(n, L.IfThenElse)
               and isinstance(n.then_case, L.Allocate) and ".acc" in n.then_case.name]
    assert guarded and "32 <=" in str(guarded[0].cond)


def test_the_codegen_option_leaves_the_tiles_out():
    """``set_codegen(accumulator_tiles=False)``: the same schedule lowered without the
    pass (``benchmarks/ab.py --set accumulator_tiles=false`` times the two), with the
    same results."""
    pipe, s = _matmul()
    plain = s.copy().set_codegen(accumulator_tiles=False)
    assert _allocs(lower(pipe, s)) and not _allocs(lower(pipe, plain))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 17)).astype(np.float32)
    b = rng.standard_normal((17, 70)).astype(np.float32)
    np.testing.assert_array_equal(ts.compile(pipe, plain).realize([70, 9], A=a, B=b),
                                  ts.compile(pipe, s).realize([70, 9], A=a, B=b))


@pytest.mark.parametrize("w,h,k", [(64, 8, 17), (70, 9, 5), (31, 4, 3), (8, 3, 40), (1, 1, 1)])
def test_results_are_bit_identical_on_both_sides_of_the_test(w, h, k):
    pipe, s = _matmul()
    rng = np.random.default_rng(w * 100 + h)
    a = rng.standard_normal((h, k)).astype(np.float32)
    b = rng.standard_normal((k, w)).astype(np.float32)
    got = ts.compile(pipe, s).realize([w, h], A=a, B=b)
    want = ts.reference.realize(pipe, [w, h], A=a, B=b)
    np.testing.assert_array_equal(got, want)


def test_reads_of_other_elements_keep_the_buffer():
    x, r = ts.Var("x"), ts.RDom((1, 10), name="r")
    inp = ts.ImageParam(ts.float32, 1, "inp")
    f = ts.Func("f")
    f[x] = inp[x]
    f[x] = f[x] + f[x] * 0.5 + inp[x + r.x]         # reads f only at x: promoted
    g = ts.Func("g")
    g[x] = inp[x]
    g[r.x] = g[r.x - 1] + g[r.x]                     # a scan: reads another element
    out = ts.Func("out")
    out[x] = f[x] + g[x]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    xo, xi = ts.Var("xo"), ts.Var("xi")
    s[f].compute_root()
    s[f].update(0).split(x, xo, xi, 8).reorder(xi, r.x, xo).vectorize(xi, 8)
    s[g].compute_root()
    low = lower(pipe, s)
    names = [t.name for t in _allocs(low)]
    assert any(n.startswith("f.") for n in names) and not any(n.startswith("g.") for n in names)
    a = np.random.default_rng(0).standard_normal(40).astype(np.float32)
    got = ts.compile(pipe, s).realize([24], inp=a)
    np.testing.assert_array_equal(got, ts.reference.realize(pipe, [24], inp=a))


def _for(name, extent, kind="unrolled"):
    return L.For(name, E.as_expr(0), E.as_expr(extent), kind, L.Block(()))


def test_distinct_stores_rule():
    x, y, w = E.Var("x"), E.Var("y"), E.Var("W")
    tile = [_for("y", 4), _for("x", 8, "vectorized")]
    assert A._distinct(x + y * 8, tile) is True                  # dense rows
    assert A._distinct(x + y * 7, tile) is None                  # rows overlap
    assert A._distinct(x + y, tile) is None
    cond = A._distinct(x + (y + 3) * w, tile)                    # W at run time
    assert isinstance(cond, E.Expr) and "8 <= W" in str(cond)
    assert A._distinct(x * x + y * 64, tile) is None             # not affine


def _blocked(bx, by, vec, unroll_k, tail, scan_max=True):
    """A matmul-like update blocked ``bx x by`` (x vectorized, y unrolled) inside the
    RDom loop, optionally K-split and unrolled; ``scan_max`` makes the value read
    ``prod[x, y]`` twice."""
    x, y = ts.Var("x"), ts.Var("y")
    a = ts.ImageParam(ts.float32, 2, "A")
    b = ts.ImageParam(ts.float32, 2, "B")
    r = ts.RDom((0, a.width()), name="r")
    prod = ts.Func("prod")
    step = a[r.x, y] * b[x, r.x]
    prod[x, y] = 1.0 if scan_max else 0.0
    prod[x, y] = ts.max(prod[x, y] * 0.75, prod[x, y] + step) if scan_max else prod[x, y] + step
    out = ts.Func("out")
    out[x, y] = prod[x, y]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    xo, xi, yo, yi, ko, ki = (ts.Var(n) for n in ("xo", "xi", "yo", "yi", "ko", "ki"))
    s[prod].compute_root()
    u = s[prod].update(0).split(x, xo, xi, bx, tail=tail).split(y, yo, yi, by, tail=tail)
    if unroll_k:
        u = u.split(r.x, ko, ki, unroll_k).reorder(xi, yi, ki, ko, xo, yo).unroll(ki)
    else:
        u = u.reorder(xi, yi, r.x, xo, yo)
    u.vectorize(xi, vec).unroll(yi)
    return pipe, s


@settings(deadline=None)
@given(bx=st.sampled_from([4, 8, 16]), by=st.integers(1, 4), vec=st.sampled_from([4, 8]),
       unroll_k=st.sampled_from([0, 2, 3]), tail=st.sampled_from(["auto", "guard_with_if"]),
       w=st.integers(1, 40), h=st.integers(1, 9), k=st.integers(1, 11))
def test_random_blocked_reductions_equal_the_reference(bx, by, vec, unroll_k, tail, w, h, k):
    vec = min(vec, bx)
    pipe, s = _blocked(bx, by, vec, unroll_k, tail)
    rng = np.random.default_rng(w + 41 * h + 997 * k)
    a = rng.standard_normal((h, k)).astype(np.float32)
    b = rng.standard_normal((k, w)).astype(np.float32)
    got = ts.compile(pipe, s).realize([w, h], A=a, B=b)
    np.testing.assert_array_equal(got, ts.reference.realize(pipe, [w, h], A=a, B=b))


def _clamped_taps():
    """A 5x5 box over a repeat-edge input, the update blocked 2 vectors x 4 rows inside
    the taps: loop partitioning splits the r.x loop into three versions per r.y."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    r = ts.RDom((0, 5), (0, 5), name="r")
    box = ts.Func("box")
    box[x, y] += clamped[x + r.x - 2, y + r.y - 2] * (r.x + 2 * r.y + 1)
    pipe = ts.Pipeline(box)
    s = ts.Schedule(pipe)
    xb, xr, yb, yr = ts.Var("xb"), ts.Var("xr"), ts.Var("yb"), ts.Var("yr")
    s[box].compute_root()
    s[box].update(0).split(x, xb, xr, 32).split(y, yb, yr, 4) \
        .reorder(xr, yr, r.x, r.y, xb, yb).vectorize(xr, 16).unroll(xr).unroll(yr)
    return pipe, s


def test_one_tile_serves_the_partitioned_versions_of_a_tap_loop():
    """The three versions of the clamped r.x loop (and every r.y) share one tile, loaded
    before the r.y loop and stored after it, instead of a tile per version and r.y
    step; bit-identical to the reference at sizes with and without a steady part."""
    pipe, s = _clamped_taps()
    low = lower(pipe, s)
    tiles = _allocs(low)
    assert len(tiles) == 1, [t.name for t in tiles]
    loops = [st.name for st in L.walk_stmts(tiles[0].body) if isinstance(st, L.For)]
    assert "box.s1.r.y" in loops and len([n for n in loops if "r.x" in n]) >= 3, loops
    compiled = ts.compile(pipe, s, cache_dir=False)
    rng = np.random.default_rng(1)
    for w, h in ((32, 4), (64, 8), (70, 13), (5, 3)):
        src = rng.standard_normal((h, w)).astype(np.float32)
        want = ts.reference.realize(pipe, [w, h], input=src)
        np.testing.assert_array_equal(compiled.realize([w, h], input=src), want)
