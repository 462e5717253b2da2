"""``tilesolve calibrate``'s streams weight (``cost_params.stream_miss_loads``): the fit
recovers a known weight of a synthetic machine, keeps the base's when the times cannot
tell, and the parameter is optional, validated and written with its comment.

"Measured" times in the fit tests come from the cost model itself under a spec with a
known weight; no assertion here is about speed."""
import math

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.errors import SpecError
from tilesolve.solver.predict import predict_cost
from tilesolve.specs.loader import spec_from_yaml
from tilesolve.tune.streams import fit_stream_weight, streams_case

MACHINE = "xeon-e5-2620v3"
STREAM_MISS_LOADS = ts.load_spec(MACHINE).cost_params.stream_miss_loads   # the default


@pytest.fixture(scope="module")
def case():
    return streams_case(ts.load_spec(MACHINE))


def _times(case, truth, scale=2e-9, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return [(case.pipeline, s, case.estimates,
             predict_cost(case.pipeline, s, truth, case.estimates) * scale
             * math.exp(rng.normal(0.0, noise)))
            for _label, s in case.schedules]


@pytest.mark.parametrize("truth, start", [(0.0, None), (2.5, None), (12.0, 1.0)])
def test_the_fit_recovers_a_known_weight(case, truth, start):
    machine = ts.load_spec(MACHINE)
    samples = _times(case, machine.with_cost_params(stream_miss_loads=truth), noise=0.01)
    start_spec = machine if start is None else machine.with_cost_params(stream_miss_loads=start)
    fit = fit_stream_weight(start_spec, samples)
    assert fit.before == (STREAM_MISS_LOADS if start is None else start)
    assert fit.fitted and abs(fit.value - truth) <= 0.15 * truth + 0.25, fit
    assert fit.error_best < fit.error_before


def test_the_weight_stays_when_it_already_explains_the_times(case):
    machine = ts.load_spec(MACHINE)
    fit = fit_stream_weight(machine, _times(case, machine))
    assert not fit.fitted and fit.value == STREAM_MISS_LOADS
    assert "better" in fit.how(case.sizes, 2) and fit.how(case.sizes, 2).startswith("kept")


def test_the_weight_stays_when_the_times_are_noise(case):
    machine = ts.load_spec(MACHINE)
    rng = np.random.default_rng(1)
    samples = [(p, s, e, float(rng.uniform(9.0, 11.0)))
               for p, s, e, _ in _times(case, machine)][:2]
    fit = fit_stream_weight(machine, samples)
    assert not fit.fitted and "at least 3" in fit.notes[0]


def test_the_case_builds_every_tiling_from_its_column_and_equals_the_reference():
    from tilesolve.reference import realize
    case = streams_case(ts.load_spec(MACHINE), quick=True)
    assert len(case.schedules) >= 3
    sizes = [64, 40]
    ref = realize(case.pipeline, sizes, input=case.inputs["input"][:42, :66])
    for label, sched in case.schedules:
        assert sched.provenance.groups, label
        got = ts.compile(case.pipeline, sched).realize(sizes, input=case.inputs["input"][:42, :66])
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=label)


def test_the_parameter_is_optional_validated_and_round_trips():
    machine = ts.load_spec(MACHINE)
    assert "cost_params" not in machine.to_dict()
    set_ = machine.with_cost_params(stream_miss_loads=0.5)
    assert set_.to_dict()["cost_params"] == {"stream_miss_loads": 0.5}
    assert ts.specs.HardwareSpec.from_dict(set_.to_dict()) == set_
    with pytest.raises(SpecError, match="field 'cost_params.stream_miss_loads': expected a "
                                        "non-negative"):
        machine.with_cost_params(stream_miss_loads=-1.0)
    gpu = ts.load_spec("h100").to_dict()
    with pytest.raises(SpecError, match="'cost_params.stream_miss_loads' is a parameter of "
                                        "the CPU cost model"):
        ts.specs.HardwareSpec.from_dict(dict(gpu, cost_params={"stream_miss_loads": 1.0}))
    from tilesolve.specs import spec_to_yaml
    assert spec_from_yaml(spec_to_yaml(set_)) == set_
