"""Random pipelines x random GPU schedules whose kernels have a steady state (a block's
clamp- and guard-free body, lower/partition.py): the generated CUDA C itself, run on the
CPU shim (``emulate_cuda``: g++, every block, threads split at barriers, writes outside
a buffer caught), equals ``ts.reference.realize``.  The sizes are the strategy's (small,
seldom a multiple of a tile) and four times larger.  Each example compiles with g++, so
the count is a tenth of the profile's."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from schedule_strategies import schedules
from strategies import pipelines
from test_lowering_random import _arrays

import tilesolve as ts
from tilesolve.analysis.intervals import required_regions
from tilesolve.backend import cuda as C
from tilesolve.errors import LoweringError, ScheduleError
from tilesolve.lower import ir as L
from tilesolve.lower import lower

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")


@needs_cxx
@settings(max_examples=max(3, settings().max_examples // 10),
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_random_gpu_steady_kernels_emulate_like_the_reference(data):
    case = data.draw(pipelines(max_stages=3), label="pipeline")
    pipe = case.pipeline
    scale = data.draw(st.sampled_from([1, 4]), label="scale")
    sizes = [s * scale for s in case.sizes]
    regions = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    assume(all(iv.lo >= 0 and iv.hi < n for o in pipe.output_names
               for iv, n in zip(regions[o], sizes)))
    sched = data.draw(schedules(pipe, gpu=True), label="schedule")
    note(str(sched))
    try:
        lowered = lower(pipe, sched)
    except ScheduleError as exc:
        assert "is not a constant" in str(exc) or "is computed inside a gpu_" in str(exc), exc
        assume(False)
    assume(any(isinstance(n, L.IfThenElse) and n.steady for n in L.walk_stmts(lowered.body)))
    try:
        emu = C.emulate_cuda(pipe, sched)
    except LoweringError as exc:
        # what the CUDA backend refuses by name whatever the steady state: sizes known
        # only inside a kernel, block loops that are not one nest
        assert any(k in str(exc) for k in ("known at launch", "not a constant",
                                           "single nest", "once per", "inside gpu_thread",
                                           "thread dimensions", "shared memory")), exc
        assume(False)
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    inputs = _arrays(case, sizes, lowered, rng)
    assume(inputs is not None)
    want = ts.reference.realize(pipe, sizes, **inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = emu.realize(sizes, **inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)
