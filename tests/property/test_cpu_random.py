"""Random pipelines x random legal schedules, compiled for the CPU, equal the reference.

Pipelines come from ``strategies.pipelines()`` (pointwise, stencils, resampling,
reductions, histograms, scans, lookups, boundary conditions) and schedules from
``schedule_strategies.schedules()`` (inline / root / compute_at any loop / store_at,
splits with every tail strategy, tiles, reorders, fuses, vectorize, unroll, parallel;
with ``gpu=True`` also GPU blocks and threads, run here by the CPU emulation: serial
block/thread loops split at barriers).  Each example is lowered, generated, compiled by
LLVM and realized; the result must equal ``ts.reference.realize``: exactly for integers,
within 1e-6 for floats.  When an output would be touched beyond the size asked for
(its own update writes further, or another output reads it further) ``realize`` must
refuse with a RealizeError instead.  Compiling costs about a second per example, so these
tests run a third of the profile's examples.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from schedule_strategies import schedules
from strategies import pipelines

import tilesolve as ts
from tilesolve.analysis.intervals import required_regions
from tilesolve.backend.compile import compile_lowered
from tilesolve.errors import LoweringError, RealizeError, ScheduleError
from tilesolve.lower import input_regions, lower

_SETTINGS = settings(max_examples=max(5, settings().max_examples // 3),
                     suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def _inputs(case, sizes, lowered, rng):
    """Arrays for every input covering what both the reference and the compiled code
    read, or None if either reads an input (without boundary condition) below 0."""
    pipe = case.pipeline
    shapes = {}
    ref = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    for name, img in pipe.images.items():
        if name in case.input_sizes:
            shapes[name] = list(case.input_sizes[name])
            continue
        box = ref.get(name)
        if box is not None and any(iv.lo < 0 for iv in box):
            return None
        shapes[name] = [1] * img.dims if box is None else [int(iv.hi) + 1 for iv in box]
    out_sizes = {o: sizes for o in pipe.output_names}
    for _ in range(4):          # the code's regions may depend on the input extents
        grown = False
        params = {n: p.default for n, p in pipe.params.items()}
        for name, region in input_regions(lowered, {**out_sizes, **shapes}, params).items():
            if any(hi < lo for lo, hi in region):
                continue
            for d, (lo, hi) in enumerate(region):
                if lo < 0 or (hi >= shapes[name][d] and name in case.input_sizes):
                    return None
                if hi >= shapes[name][d]:
                    shapes[name][d], grown = hi + 1, True
        if not grown:
            break
    arrays = {}
    for name, img in pipe.images.items():
        shape, t = tuple(reversed(shapes[name])), img.type
        if t.is_float():
            arrays[name] = rng.uniform(-4, 4, shape).astype(np.float32)
        elif t.is_uint():
            arrays[name] = rng.integers(0, min(256, 1 << t.bits), shape).astype(t.dtype)
        else:
            arrays[name] = rng.integers(-50, 50, shape).astype(t.dtype)
    return arrays


def _check(data, gpu: bool):
    case = data.draw(pipelines(max_stages=3 if gpu else 4), label="pipeline")
    pipe = case.pipeline
    scale = 1 if gpu else data.draw(st.sampled_from([1, 1, 9]), label="scale")
    sizes = [s * scale for s in case.sizes]
    try:
        sched = data.draw(schedules(pipe, gpu=gpu), label="schedule")
        lowered = lower(pipe, sched)
    except ScheduleError as exc:
        # vectorize/unroll without a width on a loop of run-time extent, or (a gap of
        # the strategy) a compute level that a later update's reads invalidate
        assert "is not a constant" in str(exc) or "reads it outside" in str(exc), exc
        assume(False)
    except LoweringError:
        # lowering's own verifier refused its output: a lowering bug, which
        # tests/property/test_lowering_random.py reports; nothing to compile here
        assume(False)
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    inputs = _inputs(case, sizes, lowered, rng)
    assume(inputs is not None)
    compiled = compile_lowered(pipe, lowered, schedule=sched, num_threads=2)
    regions = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    if not all(iv.lo >= 0 and iv.hi < n for o in pipe.output_names
               for iv, n in zip(regions[o], sizes)):
        with pytest.raises(RealizeError, match="beyond the size asked for"):
            compiled.realize(sizes, **inputs)
        with pytest.raises(RealizeError, match=r"output \w+ is accessed at -?\d+, which is "):
            ts.reference.realize(pipe, sizes, **inputs)      # the oracle agrees
        return
    want = ts.reference.realize(pipe, sizes, **inputs)
    got = compiled.realize(sizes, **inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for name, g, w in zip(pipe.output_names, got, want):
        msg = f"output {name}\n{case}\n{sched}\n{compiled.loop_ir()}"
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=msg)
        else:
            np.testing.assert_array_equal(g, w, err_msg=msg)


@_SETTINGS
@given(data=st.data())
def test_random_pipeline_and_schedule_match_reference(data):
    _check(data, gpu=False)


@_SETTINGS
@given(data=st.data())
def test_random_gpu_schedules_run_by_the_cpu_emulation_match_reference(data):
    _check(data, gpu=True)
