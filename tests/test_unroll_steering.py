"""Short dimensions whose Var picks a select's branch or a callee's plane (haar's
subbands: ``select(c == 0, ...)``, ``haar_x[x, 2y, c % 2]``) are unrolled just outside
a group member's vector loop (``schedule_gen._unroll_steering``): each copy folds its
selects and the copies share their loads.  Not where the extent is a run-time size
(an image's channel count), and not with ``unroll_select_extent=1``."""
from __future__ import annotations

import numpy as np
from pinned import PINNED

import tilesolve as ts
from tilesolve.apps import suite


def _haar(spec=PINNED):
    mod = suite("validation")["haar"]
    pipe, est = mod.build(mod.PAPER_SIZE)
    return mod, pipe, ts.solve_schedule(pipe, spec, estimates=est, method="greedy")


def test_haar_subbands_are_unrolled_inside_the_tile():
    # haar_x kept a member (not inlined into the subbands) so that both kinds of
    # steering are here: its own select on c, and its readers' plane c % 2
    _mod, _pipe, s = _haar(ts.load_spec(PINNED).with_cost_params(inline_members=False))
    members = [ln for ln in str(s).splitlines() if ".compute_at(output, tile)" in ln]
    assert len(members) >= 3 and any(ln.startswith("s[haar_x]") for ln in members)
    for line in members:         # haar_x, and the subband stages computed per tile
        assert ".reorder(x_v, c, x, y).unroll(c)" in line, line


def test_switched_off_by_the_cost_parameter():
    spec = ts.load_spec(PINNED).with_cost_params(unroll_select_extent=1)
    _mod, _pipe, s = _haar(spec)
    assert ".unroll(c)" not in str(s)


def test_unrolled_haar_equals_the_reference_at_sizes_off_the_tile():
    mod, pipe, s = _haar()
    for sizes in ([64, 48], [130, 34]):
        inputs = mod.make_inputs(sizes)
        got = ts.compile(pipe, s).realize(sizes, **inputs)
        np.testing.assert_allclose(np.asarray(got), mod.numpy_reference(inputs, sizes),
                                   rtol=1e-5, atol=1e-6)


def test_a_channel_dimension_sized_at_run_time_is_not_unrolled():
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 3, "input")
    clamped = ts.boundary.repeat_edge(inp)
    f, out = ts.Func("f"), ts.Func("out")
    v = clamped[x, y, c]
    f[x, y, c] = ts.select(c == 0, ts.sqrt(v * v + 1.0), ts.exp(v) * 0.5)
    out[x, y, c] = f[x - 1, y, c] + f[x, y, c] + f[x + 1, y, c]
    pipe = ts.Pipeline(out)
    est = {"out": [1024, 768, 3], "input": [1024, 768, 3]}
    s = ts.solve_schedule(pipe, PINNED, estimates=est, method="greedy")
    assert "s[f].compute_at" in str(s)          # a member of out's group
    assert ".unroll(c)" not in str(s)           # its 3 channels are out's run-time extent
    rng = np.random.default_rng(0)
    a = rng.random((3, 40, 70), dtype=np.float32)
    got = np.asarray(ts.compile(pipe, s).realize([70, 40, 3], input=a))
    want = ts.reference.realize(pipe, [70, 40, 3], input=a)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)


def test_a_dimension_whose_copies_share_work_is_unrolled():
    """bgu's slice computes the grid coordinates of a pixel once for both of its planes
    (``sliced[x, y, j]``: ``j`` only picks the plane of ``fit`` it reads)."""
    mod = suite("validation")["bgu"]
    pipe, est = mod.build(mod.PAPER_SIZE)
    kept = ts.load_spec(PINNED).with_cost_params(inline_members=False)   # sliced a member
    s = ts.solve_schedule(pipe, kept, estimates=est, method="greedy")
    line = next(ln for ln in str(s).splitlines() if ln.startswith("s[sliced]"))
    assert ".reorder(x_v, j, x, y).unroll(j)" in line, line
    off = kept.with_cost_params(unroll_shared_ops=1000)
    s2 = ts.solve_schedule(pipe, off, estimates=est, method="greedy")
    assert ".unroll(j)" not in next(ln for ln in str(s2).splitlines()
                                    if ln.startswith("s[sliced]"))


def test_a_plain_channel_dimension_is_not_unrolled():
    """``f[x, y, c]`` of ``in[x, y, c]`` alone over two planes that its consumer reads
    at constants: the same size always, but no select, no shared work: left alone."""
    x, y, c = ts.Var("x"), ts.Var("y"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 3, "input")
    f, out = ts.Func("f"), ts.Func("out")
    f[x, y, c] = ts.exp(ts.sqrt(inp[x, y, c] * 2.0 + 1.0))
    out[x, y] = sum(f[x + i, y + j, (i + j) % 2] for i in range(3) for j in range(3))
    pipe = ts.Pipeline(out)
    est = {"out": [1024, 768], "input": [1026, 770, 2]}
    s = ts.solve_schedule(pipe, PINNED, estimates=est, method="greedy")
    assert "s[f].compute_at" in str(s) and ".unroll(c)" not in str(s)
