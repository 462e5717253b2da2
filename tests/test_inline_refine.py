"""Inlining revisited after grouping (solver/inline_refine.py): a large Func that no
group could hold is inlined when the cost model says its recomputation is cheaper
than its buffer's memory traffic, and only then."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.solver.cost import CostModel
from tilesolve.solver.greedy import greedy_groups
from tilesolve.solver.inline_refine import candidates, refine_inlining
from tilesolve.solver.predict import predict_cost
from tilesolve.solver.problem import Problem
from pinned import PINNED


def _laplacian():
    app = get_app("local_laplacian")
    pipe, est = app.build(app.PAPER_SIZE, pyramid_levels=5)
    return app, pipe, est


def test_the_remapped_levels_of_local_laplacian_are_inlined_and_stay_correct():
    app, pipe, est = _laplacian()
    base = Problem(pipe, PINNED, est)
    assert "gPyramid_0" not in base.inlined          # the pre-grouping rule keeps it
    before = greedy_groups(CostModel(base)).total
    refined, _, result = refine_inlining(base)
    assert "gPyramid_0" in refined.inlined
    assert result.total < 0.97 * before
    s = ts.solve_schedule(pipe, PINNED, estimates=est, method="greedy")
    assert "gPyramid_0" in s.provenance.inlined and "s[gPyramid_0]" not in str(s)
    # the model prices the schedule in the problem it was made in
    assert predict_cost(pipe, s, PINNED, est) == pytest.approx(s.provenance.predicted_cost,
                                                               rel=1e-9)
    small = [40, 32, 3]
    inp = app.make_inputs(small)
    out = np.asarray(ts.compile(pipe, s).realize(small, **inp)).astype(np.float64)
    ref = np.asarray(ts.reference.realize(pipe, small, **inp)).astype(np.float64)
    assert np.abs(out - ref).max() <= 1.0         # integers within 1: the pipeline calls exp


def test_stencils_inlined_into_stencils_are_not_tried():
    app = get_app("stencil_chain")
    pipe, est = app.build(app.PAPER_SIZE)
    p = Problem(pipe, PINNED, est)
    r = greedy_groups(CostModel(p))
    assert candidates(p, r) == []                # each would be evaluated ~25 times a point
    assert refine_inlining(p)[0] is p


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler for the CUDA emulation")
def test_gpu_specs_retry_roots_only_and_the_schedule_stays_correct():
    """On a GPU spec the remapped levels of local_laplacian are inlined too (its
    kernels then read the input, not 8 full-resolution copies of it); members of a
    GPU group (shared memory) are not tried.  The paper-size schedule, emulated at a
    small size, equals the reference."""
    from tilesolve.backend import cuda as C
    app, pipe, est = _laplacian()
    h100 = ts.load_spec("h100")
    base = Problem(pipe, h100, est)
    first = greedy_groups(CostModel(base))
    tried = candidates(base, first)
    roots = {cols[0].output for cols in first.columns}
    assert tried and set(tried) <= roots
    assert len(tried) <= h100.cost_params.gpu_inline_trials
    refined, _, result = refine_inlining(base)
    assert "gPyramid_0" in refined.inlined and result.total < 0.97 * first.total
    s = ts.solve_schedule(pipe, h100, estimates=est, method="greedy")
    assert "gPyramid_0" in s.provenance.inlined
    small = [40, 32, 3]
    inp = app.make_inputs(small)
    got = np.asarray(C.emulate_cuda(pipe, s).realize(small, **inp)).astype(np.int64)
    want = np.asarray(ts.reference.realize(pipe, small, **inp)).astype(np.int64)
    diff = np.abs(got - want)
    assert diff.max() <= 1 and np.count_nonzero(diff) <= 0.01 * diff.size   # exp: off by 1


def _haar():
    from tilesolve.apps.validation import haar
    pipe, est = haar.build()
    return haar, pipe, est


def test_a_member_computed_in_a_group_is_retried_inlined_and_stays_correct():
    """haar's ``haar_x`` (read at two rows by each subband) is computed per tile by
    greedy; inlined into the subbands its arithmetic overlaps the input's reads, and
    the model finds that cheaper.  Without ``inline_members`` it stays a member."""
    app, pipe, est = _haar()
    s = ts.solve_schedule(pipe, PINNED, estimates=est, method="greedy")
    assert "haar_x" in s.provenance.inlined and "s[haar_x]" not in str(s)
    off = ts.solve_schedule(pipe, PINNED.with_cost_params(inline_members=False),
                            estimates=est, method="greedy")
    assert "haar_x" not in off.provenance.inlined and "s[haar_x]" in str(off)
    assert s.provenance.predicted_cost < 0.97 * off.provenance.predicted_cost
    small = app.SMALL_SIZE
    inp = app.make_inputs(small)
    out = np.asarray(ts.compile(pipe, s).realize(small, **inp))
    np.testing.assert_allclose(out, app.numpy_reference(inp, small), rtol=1e-5, atol=1e-6)


def test_members_that_inlining_would_evaluate_too_often_are_not_tried():
    """unsharp's ``blur_x`` is read once a point by a stage evaluated for each of three
    colour channels: inlined, it would be computed three times a point."""
    app = get_app("unsharp")
    pipe, est = app.build(app.PAPER_SIZE)
    p = Problem(pipe, PINNED, est)
    assert candidates(p, greedy_groups(CostModel(p))) == []
    wide = Problem(pipe, PINNED.with_cost_params(inline_member_recompute=4), est)
    assert candidates(wide, greedy_groups(CostModel(wide))) == ["blur_x"]
