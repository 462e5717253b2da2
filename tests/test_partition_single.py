"""Loop partitioning skips a loop of one iteration (a vector loop's outer part when the
split is the vector width) and splits the loop around it: a direct 2-D blur blocked one
vector wide partitions its tap loop, not the one-iteration loop inside it (which made
the steady state's bounds a computation of every tap and ran 3x slower)."""
from __future__ import annotations

import numpy as np

import tilesolve as ts


def _blur():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    r = ts.RDom((0, 5), (0, 5), name="r")
    blur, out = ts.Func("blur"), ts.Func("out")
    blur[x, y] += clamped[x + r.x - 2, y + r.y - 2] * 0.04
    out[x, y] = blur[x, y]
    pipe = ts.Pipeline(out)
    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    xb, xr, yb, yr = ts.Var("x_b"), ts.Var("x_r"), ts.Var("y_b"), ts.Var("y_r")
    s[out].tile(x, y, xo, yo, xi, yi, 32, 16).vectorize(xi, 16)
    s[blur].compute_at(out, xo).vectorize(x, 16)
    s[blur].update(0).split(x, xb, xr, 16).split(y, yb, yr, 4) \
        .reorder(xr, yr, r.x, r.y, xb, yb).vectorize(xr, 16).unroll(yr)
    return pipe, s


def test_the_tap_loop_is_partitioned_not_the_single_iteration_inside():
    pipe, s = _blur()
    ir = ts.compile(pipe, s, cache_dir=False).loop_ir()
    assert "blur.s1.r.x.steady" in ir
    assert "x_r.x_r.steady" not in ir


def test_equal_to_the_reference_at_sizes_off_the_tile():
    pipe, s = _blur()
    compiled = ts.compile(pipe, s, cache_dir=False)
    for w, h in ((64, 32), (37, 21), (16, 4)):
        a = np.random.default_rng(w).random((h, w), dtype=np.float32)
        np.testing.assert_allclose(compiled.realize([w, h], input=a),
                                   ts.reference.realize(pipe, [w, h], input=a), rtol=1e-5)
