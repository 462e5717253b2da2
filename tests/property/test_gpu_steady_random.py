"""Random pipelines x random GPU schedules whose kernels have a steady state (a block's
clamp- and guard-free body, lower/partition.py): the generated CUDA C itself, run on the
CPU shim (``emulate_cuda``: g++, every block, threads split at barriers, writes outside
a buffer caught), equals ``ts.reference.realize``.  The sizes are the strategy's (small,
seldom a multiple of a tile) and four times larger.  Each example compiles with g++, so
the count is a tenth of the profile's."""
from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_lowering_random import equals_reference, gpu_case

from tilesolve.backend import cuda as C
from tilesolve.errors import LoweringError
from tilesolve.lower import ir as L

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="no C++ compiler for the CUDA emulation")


@needs_cxx
@settings(max_examples=max(3, settings().max_examples // 10),
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_random_gpu_steady_kernels_emulate_like_the_reference(data):
    case, sizes, sched, lowered = gpu_case(data, scale=data.draw(st.sampled_from([1, 4]),
                                                                 label="scale"))
    pipe = case.pipeline
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
    equals_reference(data, case, sizes, lowered, emu.realize)
