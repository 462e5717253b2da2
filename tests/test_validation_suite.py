"""The validation suite (``tilesolve/apps/validation``) and the random pipelines
(``tilesolve/apps/random_pipelines.py``), at their small sizes.

* every validation pipeline: ``ts.reference.realize`` equals its independent numpy
  reference (integers exactly; floats to a few ulps: the references do the same
  float32 operations in the same order), and the output varies;
* the greedy solver's schedule (for a pinned CPU, estimates of the realistic size, so
  the realized size leaves partial tiles), compiled, equals the reference
  (``tune.check.compare``, the bench's tolerance: integers within 1 where the
  pipeline calls transcendental math);
* five random pipelines (fixed seeds whose Funcs cover every kind of stage) compile
  under greedy and equal the reference, and the generator is deterministic;
* ``tilesolve bench --suite validation`` runs the suite (a stub backend: the runner's
  logic only) and reports the suite in its records, its table and its JSON.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from pinned import PINNED

import tilesolve as ts
from tilesolve.apps import SUITES, suite
from tilesolve.apps.random_pipelines import _generate, build_random
from tilesolve.apps.validation import PIPELINES
from tilesolve.tune.check import compare, transcendentals

FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6
# Lowering the 49 Funcs of laplacian_blend's greedy schedule takes 10-20 s (the
# symbolic extents of the repeat-edge of every pyramid level)
SLOW = {"laplacian_blend"}
RANDOM_SEEDS = (7, 30, 33, 36, 53)


def _small(name):
    mod = PIPELINES[name]
    params = dict(getattr(mod, "SMALL_BUILD", {}) or {})
    sizes = list(mod.SMALL_SIZE)
    pipe, _ = mod.build(sizes, **params)
    _, est = mod.build(None, **params)
    inputs = mod.make_inputs(sizes, 0, **params)
    return mod, params, sizes, pipe, est, inputs


def _outputs(v):
    return v if isinstance(v, tuple) else (v,)


def _case(name):
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


@pytest.mark.parametrize("name", list(PIPELINES))
def test_reference_equals_the_numpy_reference(name):
    mod, params, sizes, pipe, est, inputs = _small(name)
    got = _outputs(ts.reference.realize(pipe, sizes, **inputs))
    want = _outputs(mod.numpy_reference(inputs, sizes, **params))
    assert len(got) == len(want) == len(pipe.outputs)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape == tuple(reversed(sizes)), (g.shape, w.shape, sizes)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert np.all(np.isfinite(w.astype(np.float64)))
        assert np.unique(w).size > 10, "the output should vary for the comparison to mean much"
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


@pytest.mark.parametrize("name", [_case(n) for n in list(PIPELINES)])
def test_greedy_schedule_compiled_equals_the_reference(name):
    _, _, sizes, pipe, est, inputs = _small(name)
    sched = ts.solve_schedule(pipe, PINNED, estimates=est, method="greedy")
    sched.validate()
    got = ts.compile(pipe, sched).realize(sizes, **inputs)
    ref = ts.reference.realize(pipe, sizes, **inputs)
    ok, err, tol = compare(got, ref, 1e-4, 1e-4, 1 if transcendentals(pipe) else 0)
    assert ok, f"max error {err} (tolerance {tol})"


def test_estimates_name_every_output_and_input():
    assert len(PIPELINES) >= 15
    for name in list(PIPELINES):
        mod = PIPELINES[name]
        pipe, est = mod.build(None, **(getattr(mod, "SMALL_BUILD", {}) or {}))
        assert set(est) == set(pipe.output_names) | set(pipe.images), name
        for out in pipe.outputs:
            assert est[out.name] == list(mod.PAPER_SIZE), name
        for img, p in pipe.images.items():
            assert len(est[img]) == p.dims, (name, img)


def test_no_name_is_in_two_suites():
    names = [n for s in SUITES for n in suite(s, random_count=3)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_pipeline_compiles_and_equals_the_reference(seed):
    pipe, est, make_inputs = build_random(seed)
    small = [64, 48, est["output"][2]]
    pipe, _, _ = build_random(seed, small)
    inputs = make_inputs(small, seed=1)
    ref = ts.reference.realize(pipe, small, **inputs)
    assert np.unique(ref).size > 10
    sched = ts.solve_schedule(pipe, PINNED, estimates=est, method="greedy")
    got = ts.compile(pipe, sched).realize(small, **inputs)
    ok, err, tol = compare(got, ref, 1e-4, 1e-4, 1 if transcendentals(pipe) else 0)
    assert ok, f"random pipeline {seed}: max error {err} (tolerance {tol})"


def test_random_seeds_cover_every_kind_of_stage_and_are_deterministic():
    kinds = set()
    for seed in RANDOM_SEEDS:
        pipe, _, _ = build_random(seed)
        kinds.update(name.rstrip("0123456789") for name in pipe.funcs)
        assert _generate(seed).kinds == _generate(seed).kinds
    assert {"stencil", "down", "up", "histogram", "cdf", "equalize", "mix", "to_int",
            "to_float"} <= kinds, kinds
    assert kinds & {"window_max", "window_min", "window_sum"}
    assert kinds & {"sqrt", "exp", "log", "tanh", "sin", "atan"}
    assert kinds & {"shr", "shl_mask", "and_mask", "sat_add"}
    p1, e1, _ = build_random(5)
    p2, e2, _ = build_random(5)
    assert e1 == e2 and list(p1.funcs) == list(p2.funcs)
    with pytest.raises(ValueError, match="channels"):
        build_random(5, [64, 48, e1["output"][2] + 1])


def test_bench_suite_option_reports_the_suite(monkeypatch, tmp_path, capsys):
    """``tilesolve bench --suite validation --apps ...``, with every solver and the
    compiler stubbed: the records name the suite and the table and JSON report it."""
    from tilesolve.bench import methods
    from tilesolve.cli import main

    class Compiled:
        compile_seconds, cache_hit = 0.001, False

        def __init__(self, pipe):
            self.pipe = pipe

        def realize(self, sizes, **inputs):
            return ts.reference.realize(self.pipe, sizes, **inputs)

    class Sched:
        provenance = {"method": "greedy", "predicted_cost": 1.0}

    monkeypatch.setattr(methods, "compile_status", lambda: (True, ""))
    monkeypatch.setattr(methods, "method_status", lambda name: (True, ""))
    monkeypatch.setattr(methods, "solve", lambda *a, **k: (Sched(), 0.01, 1.0))
    monkeypatch.setattr(ts, "compile", lambda pipe, sched=None, **k: Compiled(pipe),
                        raising=False)
    out = tmp_path / "b.json"
    rc = main(["bench", "--suite", "validation,random", "--random-count", "1",
               "--random-seed", "3", "--apps", "matvec,median3x3,random_3",
               "--methods", "naive,greedy", "--repeat", "1", "--json", str(out), "-q"])
    text = capsys.readouterr().out
    assert rc == 0, text
    doc = json.loads(out.read_text())
    assert {(r["suite"], r["app"]) for r in doc["records"]} == {
        ("validation", "matvec"), ("validation", "median3x3"), ("random", "random_3")}
    assert doc["options"]["suites"] == ["validation", "random"]
    assert set(doc["suites"]) == {"validation", "random"}
    assert doc["suites"]["validation"]["apps"] == ["matvec", "median3x3"]
    assert "suite validation: 2 pipelines" in text and "suite random: 1 pipeline," in text
    assert main(["bench", "--suite", "nope"]) == 2
    assert "valid suites: apps, validation, random" in capsys.readouterr().err
    assert main(["bench", "--suite", "validation", "--apps", "blur"]) == 2
    assert "unknown app 'blur'" in capsys.readouterr().err
