"""Random pipelines x random legal schedules: the lowered loop IR, run by the
checking interpreter, equals ``ts.reference.realize``.

Pipelines come from ``strategies.pipelines()`` (pointwise, stencils, 2x
resampling, inline reductions, histograms, scans, lookups, boundary
conditions); schedules from ``schedule_strategies.schedules()`` (inline /
root / compute_at any loop / store_at, splits with every tail, tiles,
reorders, fuses, vectorize, unroll, parallel).  The interpreter raises on any
read of an element never stored and on any access outside a buffer, so this
also checks that every Load reads a region some Store wrote.  Sizes are
small (and scaled up once in a while so that some factors divide the
extents and some do not).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from schedule_strategies import schedules
from strategies import pipelines

import tilesolve as ts
from tilesolve.analysis.intervals import required_regions
from tilesolve.errors import RealizeError, ScheduleError
from tilesolve.lower import input_regions, interpret, lower, run


def _any_inputs(case, sizes):
    """Inputs large enough for everything the reference reads (zeros)."""
    ref = required_regions(case.pipeline, sizes, input_sizes=case.input_sizes)
    out = {}
    for name, img in case.pipeline.images.items():
        box = ref.get(name)
        shape = case.input_sizes.get(name) or \
            ([1] * img.dims if box is None else [max(1, int(iv.hi) + 1) for iv in box])
        out[name] = np.zeros(tuple(reversed(shape)), img.type.dtype)
    return out


def _arrays(case, sizes, lowered, rng):
    """Inputs covering what both the reference and the lowered program read
    (None when one of them reads an input at a negative index)."""
    pipe = case.pipeline
    ref = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    out_sizes = {o: sizes for o in pipe.output_names}
    shapes = {}
    for name, img in pipe.images.items():
        if name in case.input_sizes:
            shapes[name] = list(case.input_sizes[name])
            continue
        box = ref.get(name)
        his = [0] * img.dims if box is None else [int(iv.hi) for iv in box]
        if box is not None and any(iv.lo < 0 for iv in box):
            return None
        shapes[name] = [h + 1 for h in his]
    # the lowered program's own regions may depend on the input extents: iterate
    for _ in range(4):
        mine = input_regions(lowered, {**out_sizes, **shapes})
        grown = False
        for name, region in mine.items():
            for d, (lo, hi) in enumerate(region):
                if hi < lo:
                    continue
                if lo < 0:
                    return None
                if hi + 1 > shapes[name][d]:
                    if name in case.input_sizes:
                        return None
                    shapes[name][d] = hi + 1
                    grown = True
        if not grown:
            break
    arrays = {}
    for name, img in pipe.images.items():
        shape = tuple(reversed(shapes[name]))
        t = img.type
        if t.is_float():
            arrays[name] = rng.uniform(-4, 4, shape).astype(np.float32)
        elif t.is_uint():
            arrays[name] = rng.integers(0, min(256, 1 << t.bits), shape).astype(t.dtype)
        else:
            arrays[name] = rng.integers(-50, 50, shape).astype(t.dtype)
    return arrays


@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_random_pipeline_and_schedule_interpret_like_the_reference(data):
    case = data.draw(pipelines(max_stages=4), label="pipeline")
    pipe = case.pipeline
    scale = data.draw(st.sampled_from([1, 1, 4]), label="scale")
    sizes = [s * scale for s in case.sizes]
    regions = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    if not all(iv.lo >= 0 and iv.hi < n for o in pipe.output_names
               for iv, n in zip(regions[o], sizes)):
        # an output whose own updates (or another output) need more than asked for:
        # the oracle refuses (test_cpu_random checks that compiled code refuses too)
        with pytest.raises(RealizeError, match=r"output \w+ is accessed at"):
            ts.reference.realize(pipe, sizes, **_any_inputs(case, sizes))
        return
    sched = data.draw(schedules(pipe), label="schedule")
    note(str(sched))
    try:
        lowered = lower(pipe, sched)
    except ScheduleError as exc:
        # vectorize/unroll without a width on a loop of run-time extent
        assert "is not a constant" in str(exc), exc
        assume(False)
    note(str(lowered))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    inputs = _arrays(case, sizes, lowered, rng)
    assume(inputs is not None)
    want = ts.reference.realize(pipe, sizes, **inputs)
    want = want if isinstance(want, tuple) else (want,)
    bufs = dict(inputs)
    got = []
    for o in pipe.outputs:
        bufs[o.name] = np.zeros(tuple(reversed(sizes)), dtype=o.type.dtype)
        got.append(bufs[o.name])
    params = {n: p.default for n, p in pipe.params.items()}
    try:
        interpret(lowered, bufs, params)
    except RealizeError as exc:
        # a schedule that reads an output past the size asked for (a round_up split of a
        # Func that reads another output): refused before anything runs, naming it, as
        # compiled code refuses (test_cpu_random); inputs were sized to cover every read
        refused = re.search(r"output (\w+) would be accessed", str(exc))
        assert refused and refused.group(1) in pipe.output_names, exc
        return
    for name, g, w in zip(pipe.output_names, got, want):
        msg = f"output {name}\n{case}\n{sched}\n{lowered}"
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=msg)
        else:
            np.testing.assert_array_equal(g, w, err_msg=msg)


@settings(max_examples=max(5, settings().max_examples // 3),
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_random_gpu_schedules_emulate_like_the_reference(data):
    """gpu_block/gpu_thread loops run serially (Barrier is a no-op)."""
    case, sizes, _sched, lowered = gpu_case(data)
    assert lowered.target == "cuda"
    equals_reference(data, case, sizes, lowered, lambda sz, **inp: run(lowered, sz, **inp))


def gpu_case(data, scale: int = 1):
    """(case, sizes, schedule, lowered): a random pipeline at its sizes times ``scale``
    whose outputs stay inside them, a random GPU schedule of it and its lowering; an
    example that lowering refuses by name is discarded (a width on a run-time extent,
    GPU loops of a Func computed inside its consumer's GPU loops)."""
    case = data.draw(pipelines(max_stages=3), label="pipeline")
    pipe = case.pipeline
    sizes = [s * scale for s in case.sizes]
    regions = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    assume(all(iv.lo >= 0 and iv.hi < n for o in pipe.output_names
               for iv, n in zip(regions[o], sizes)))
    sched = data.draw(schedules(pipe, gpu=True), label="schedule")
    note(str(sched))
    try:
        lowered = lower(pipe, sched)
    except ScheduleError as exc:
        # refused by name: a vector/unroll extent, a GPU loop nesting, a shared buffer
        # without a constant size
        assert any(k in str(exc) for k in ("is not a constant", "is computed inside a gpu_",
                                           "needs a buffer of constant size")), exc
        assume(False)
    return case, sizes, sched, lowered


def equals_reference(data, case, sizes, lowered, realize) -> None:
    """``realize(sizes, **inputs)`` on drawn inputs equals ``ts.reference.realize``:
    exactly for integers, within 1e-6 for floats."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    inputs = _arrays(case, sizes, lowered, rng)
    assume(inputs is not None)
    want = ts.reference.realize(case.pipeline, sizes, **inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = realize(sizes, **inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)
