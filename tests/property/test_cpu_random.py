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
refuse with a RealizeError instead; so must both when an input is read below 0, or when a
Func's region is past int32 (an unclamped lookup of large values).  Half
the CPU examples are realized once more into windows of larger arrays (``out=``), which
must get the same values and leave the rest untouched; a third are realized over a shifted
domain (``mins=``) by the build that takes buffer mins, against the reference's.  The
compiled code is a checked build (every access tested against its buffer).  An example
costs about 0.15 s, so each test runs ten times the profile's examples: 250 each under
``ci`` (500 pipeline x schedule pairs), 10,000 each under ``fuzz``.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st
from schedule_strategies import schedules
from strategies import STAGE_KINDS, UNSAFE_KINDS, pipelines

import tilesolve as ts
from tilesolve.analysis.intervals import required_regions
from tilesolve.backend.compile import compile_lowered
from tilesolve.errors import BoundsError, LoweringError, RealizeError, ScheduleError
from tilesolve.lower import input_regions, lower

_SETTINGS = settings(max_examples=max(5, settings().max_examples * 10),
                     suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def _inputs(case, sizes, lowered, rng):
    """``(arrays, below)``: arrays for every input covering what both the reference and
    the compiled code read; ``below`` when the pipeline reads an input (without boundary
    condition) below 0, which no array can cover.  None when the compiled code reads
    more of a fixed-size input than the reference does (rounded-up tiles)."""
    pipe = case.pipeline
    shapes = {}
    below = False
    ref = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    for name, img in pipe.images.items():
        if name in case.input_sizes:
            shapes[name] = list(case.input_sizes[name])
            continue
        box = ref.get(name)
        if box is not None and any(iv.lo < 0 for iv in box):
            below = True
        shapes[name] = [1] * img.dims if box is None else [max(1, int(iv.hi) + 1) for iv in box]
    out_sizes = {o: sizes for o in pipe.output_names}
    for _ in range(4):          # the code's regions may depend on the input extents
        grown = False
        params = {n: p.default for n, p in pipe.params.items()}
        for name, region in input_regions(lowered, {**out_sizes, **shapes}, params).items():
            if any(hi < lo for lo, hi in region):
                continue
            for d, (lo, hi) in enumerate(region):
                below = below or lo < 0
                if hi >= shapes[name][d] and name in case.input_sizes:
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
    return arrays, below


def _check(data, gpu: bool):
    case = data.draw(pipelines(max_stages=3 if gpu else 4, min_images=0,
                               kinds=STAGE_KINDS + UNSAFE_KINDS), label="pipeline")
    pipe = case.pipeline
    scale = 1 if gpu else data.draw(st.sampled_from([1, 1, 9]), label="scale")
    sizes = [s * scale for s in case.sizes]
    sched = data.draw(schedules(pipe, gpu=gpu), label="schedule")
    note(str(sched))
    try:
        required_regions(pipe, sizes, input_sizes=case.input_sizes)
    except BoundsError:
        # an access no bound can be given (an unclamped data-dependent index): the
        # oracle refuses, and so does compiled code, at lowering or before it runs
        zeros = {n: np.zeros(tuple(reversed(case.input_sizes.get(n, [1] * img.dims))),
                             img.type.dtype) for n, img in pipe.images.items()}
        with pytest.raises(BoundsError):
            ts.reference.realize(pipe, sizes, **zeros)
        with pytest.raises(BoundsError):
            try:
                lowered = lower(pipe, sched)
            except ScheduleError as exc:      # as below
                assert any(k in str(exc) for k in ("is not a constant",
                                                   "is computed inside a gpu_",
                                                   "needs a buffer of constant size")), exc
                event("discarded: a vector/unroll width on a run-time extent")
                assume(False)
            compile_lowered(pipe, lowered, schedule=sched, checked=True).realize(sizes, **zeros)
        return
    try:
        lowered = lower(pipe, sched)
    except ScheduleError as exc:
        # vectorize/unroll without a width on a loop of run-time extent, or (a gap of
        # the strategy) a compute level that a later update's reads invalidate
        # (GPU schedules) a shared buffer without a constant size
        assert any(k in str(exc) for k in ("is not a constant", "reads it outside",
                                           "is computed inside a gpu_",
                                           "needs a buffer of constant size")), exc
        event("discarded: ScheduleError at lowering")
        assume(False)
    except LoweringError:
        # lowering's own verifier refused its output: a lowering bug, which
        # tests/property/test_lowering_random.py reports; nothing to compile here
        event("discarded: LoweringError")
        assume(False)
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    made = _inputs(case, sizes, lowered, rng)
    if made is None:
        event("discarded: round_up reads past a fixed-size input")
    assume(made is not None)
    inputs, below = made
    compiled = compile_lowered(pipe, lowered, schedule=sched, num_threads=2, checked=True)
    regions = required_regions(pipe, sizes, input_sizes=case.input_sizes)
    if not all(iv.lo >= 0 and iv.hi < n for o in pipe.output_names
               for iv, n in zip(regions[o], sizes)):
        with pytest.raises(RealizeError, match="beyond the size asked for"):
            compiled.realize(sizes, **inputs)
        with pytest.raises(RealizeError, match=r"output \w+ is accessed at -?\d+, which is "):
            ts.reference.realize(pipe, sizes, **inputs)      # the oracle agrees
        return
    if below:        # an input read below 0: both refuse, naming the input
        with pytest.raises(RealizeError, match=r"input '?\w+'? "):
            compiled.realize(sizes, **inputs)
        with pytest.raises(RealizeError, match=r"input '?\w+'? "):
            ts.reference.realize(pipe, sizes, **inputs)
        return
    try:
        want = ts.reference.realize(pipe, sizes, **inputs)
    except RealizeError as exc:
        # a Func's region past int32 (an unclamped lookup of a Func whose values are
        # large): the compiled code refuses too, before it runs
        assert "too large" in str(exc), exc
        with pytest.raises(RealizeError, match="too large"):
            compiled.realize(sizes, **inputs)
        event("both refuse: a region past int32")
        return
    try:
        got = compiled.realize(sizes, **inputs)
    except RealizeError as exc:
        # the schedule's round_up loops read more of an output (read by other Funcs)
        # than the algorithm does: refused before running, as Halide does
        assert "beyond the size asked for" in str(exc), exc
        event("discarded: round_up reads of an output past its size")
        assume(False)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    _assert_equal(pipe, got, want, f"{case}\n{sched}\n{compiled.loop_ir()}")
    if not gpu and data.draw(st.booleans(), label="into windows"):
        # out= windows of larger arrays (row strides beyond the width): the same
        # values, and nothing written around them
        pads = [np.full(tuple(n + 3 for n in g.shape), 7, g.dtype) for g in got]
        wins = [p[tuple(slice(1, 1 + n) for n in g.shape)] for p, g in zip(pads, got)]
        compiled.realize(sizes, out=wins if len(wins) > 1 else wins[0], **inputs)
        for p, win, g in zip(pads, wins, got):
            np.testing.assert_array_equal(win, g)
            mask = np.ones(p.shape, bool)
            mask[tuple(slice(1, 1 + n) for n in g.shape)] = False
            assert (p[mask] == 7).all()
    if not gpu and data.draw(st.integers(0, 2), label="shifted outputs") == 0:
        _check_shifted(pipe, sched, sizes, inputs,
                       [data.draw(st.integers(-3, 3), label="min") for _ in sizes])


def _check_shifted(pipe, sched, sizes, inputs, mins):
    """The outputs realized over ``[min, min + size)`` by the build that takes buffer
    mins (checked) equal the reference's, or both refuse with the same kind of error."""
    shifted = compile_lowered(pipe, lower(pipe, sched, buffer_mins=True), schedule=sched,
                              num_threads=2, checked=True)
    try:
        want = ts.reference.realize(pipe, sizes, mins=mins, **inputs)
    except (RealizeError, BoundsError) as exc:
        with pytest.raises(type(exc)):
            shifted.realize(sizes, mins=mins, **inputs)
        event("shifted outputs: both refuse")
        return
    for _ in range(4):
        try:
            got = shifted.realize(sizes, mins=mins, **inputs)
            break
        except RealizeError as exc:
            if "beyond the size asked for" in str(exc):
                event("shifted outputs: round_up reads of an output past its size")
                return
            # the shifted round_up loops read an input past the end the reference
            # reads: the build must name it, and compute the same values once the
            # array covers what it asked for
            m = re.search(r"input '(\w+)' is too small: dimension (\d+) .*must cover "
                          r"\[(-?\d+), (-?\d+)\] but the array has extent (\d+)", str(exc))
            assert m is not None, exc
            name, dim, hi, ext = m.group(1), int(m.group(2)), int(m.group(4)), int(m.group(5))
            assert hi >= ext, exc
            arr = inputs[name]
            pad = [(0, 0)] * arr.ndim
            pad[arr.ndim - 1 - dim] = (0, hi + 1 - ext)
            inputs = {**inputs, name: np.pad(arr, pad, mode="edge")}
            event("shifted outputs: round_up reads of an input past the reference's")
    else:
        raise AssertionError(f"shifted outputs still refused over mins {mins}")
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    _assert_equal(pipe, got, want, f"over mins {mins}\n{sched}\n{shifted.loop_ir()}")
    event("shifted outputs: equal")


def _assert_equal(pipe, got, want, context):
    """Each output equal to the reference's: exactly for integers, within 1e-6 for floats."""
    for name, g, w in zip(pipe.output_names, got, want):
        msg = f"output {name} {context}"
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
