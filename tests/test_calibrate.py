"""``tilesolve calibrate``: the fit recovers known parameters of a synthetic machine, the
written spec round-trips with its comments, the command runs end to end, bad input
names its argument, and the training pipelines equal the reference.

No assertion here is about speed: "measured" times in the fit tests come from the cost
model itself under a spec with known parameters."""
import math

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.cli import main
from tilesolve.errors import SolverError, SpecError, TilesolveError
from tilesolve.solver.predict import predict_cost
from tilesolve.specs import host as host_mod
from tilesolve.specs.cost_params import defaults
from tilesolve.specs.loader import calibrated_host, default_cache_dir, spec_from_yaml
from tilesolve.tune.calibrate import QUICK, calibrate
from tilesolve.tune.fit import fit_spec, price_samples, spearman
from tilesolve.tune.microbench import Measurement, MicroResults
from tilesolve.tune.training import (KINDS, TrainingMismatch, build_cases, check_case,
                                     measure_cases)
from tilesolve.tune.yaml_out import spec_yaml

MACHINE = "xeon-e5-2620v3"      # a shipped spec: the same synthetic machine everywhere


@pytest.fixture(scope="module")
def cases():
    """Eight random pipelines (every kind twice), three schedules each; not compiled."""
    return build_cases(ts.load_spec(MACHINE), 8, seed=3, size=(256, 192), variants=2)


def _synthetic_samples(cases, truth, scale, noise, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for c in cases:
        for _label, sched in c.schedules:
            cost = predict_cost(c.pipeline, sched, truth, c.estimates)
            out.append((c.pipeline, sched, c.estimates,
                        cost * scale * math.exp(rng.normal(0.0, noise))))
    return out


# ---------------------------------------------------------------------------
# The fit
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("true_load_cost, start_load_cost, scale",
                         [(25.0, 80.0, 3e-6), (140.0, 10.0, 5e-8)])
def test_fit_recovers_known_parameters_of_a_synthetic_machine(cases, true_load_cost,
                                                               start_load_cost, scale):
    machine = ts.load_spec(MACHINE)
    truth = machine.replace(load_cost=true_load_cost)
    samples = _synthetic_samples(cases, truth, scale, noise=0.03)
    assert len(samples) >= 16
    start = machine.replace(load_cost=start_load_cost)
    new, rep = fit_spec(start, samples)
    # the fit moved from the wrong start to the truth, and says so
    assert rep.fitted == ("load_cost", "scale")
    assert rep.load_cost_before == start_load_cost
    assert new.load_cost == rep.load_cost_after
    assert abs(new.load_cost - true_load_cost) / true_load_cost < 0.15
    assert abs(rep.scale_ms_per_unit - scale) / scale < 0.1
    assert rep.log_error_after < 0.06 < rep.log_error_before
    assert rep.spearman_after >= rep.spearman_before and rep.spearman_after > 0.95
    lo, hi = rep.load_cost_range
    assert lo <= new.load_cost <= hi
    # nothing else of the spec changed
    assert new.replace(load_cost=start_load_cost) == start


def test_fit_with_the_true_parameters_stays_put(cases):
    truth = ts.load_spec(MACHINE).replace(load_cost=25.0)
    samples = _synthetic_samples(cases, truth, 2e-6, noise=0.0)
    new, rep = fit_spec(truth, samples)
    assert rep.log_error_before < 1e-6 and rep.log_error_after < 1e-6
    assert new.load_cost == pytest.approx(25.0, rel=1e-3)


def test_fit_keeps_load_cost_when_the_data_cannot_tell(cases):
    machine = ts.load_spec(MACHINE)
    few = _synthetic_samples(cases[:1], machine.replace(load_cost=20.0), 1e-6, 0.0)[:3]
    new, rep = fit_spec(machine, few)
    assert rep.fitted == ("scale",) and new == machine
    assert any("samples" in n for n in rep.notes)
    # the same schedule over and over: the memory share never varies
    same = [few[0]] * 6
    new, rep = fit_spec(machine, same)
    assert rep.fitted == ("scale",) and new.load_cost == machine.load_cost
    assert any("memory share" in n for n in rep.notes)


def test_fit_keeps_load_cost_when_the_best_fit_is_hardly_better(cases):
    """Noisy samples from a machine near the starting value: the best load_cost explains
    them less than MIN_FIT_GAIN better, so it is kept (a flat fit once moved load_cost
    from 40 to 15 and made the benchmark apps' schedules 1.28x slower)."""
    from tilesolve.tune.fit import MIN_FIT_GAIN
    machine = ts.load_spec(MACHINE)
    samples = _synthetic_samples(cases, machine.replace(load_cost=30.0), 3e-6, noise=0.2)
    start = machine.replace(load_cost=36.0)
    new, rep = fit_spec(start, samples)
    assert rep.fitted == ("scale",) and new.load_cost == 36.0
    assert any("better than 36" in n for n in rep.notes), rep.notes
    assert rep.log_error_after == rep.log_error_before
    # the same samples from a start far off: the fit is clearly better and moves
    new, rep = fit_spec(machine.replace(load_cost=400.0), samples)
    assert rep.fitted == ("load_cost", "scale")
    assert rep.log_error_after < rep.log_error_before * (1 - MIN_FIT_GAIN)


def test_fit_rejects_bad_samples(cases):
    c = cases[0]
    label, sched = c.schedules[0]
    with pytest.raises(TilesolveError, match="sample 0: measured_ms must be a positive"):
        fit_spec(MACHINE, [(c.pipeline, sched, c.estimates, -1.0)])
    with pytest.raises(TilesolveError, match="no samples"):
        fit_spec(MACHINE, [])
    with pytest.raises(TilesolveError, match=r"sample 0 must be \(pipeline"):
        fit_spec(MACHINE, [(c.pipeline, sched)])
    hand = ts.Schedule(c.pipeline)           # no recorded groups: the model cannot price it
    with pytest.raises(SolverError, match="records no groups"):
        fit_spec(MACHINE, [(c.pipeline, hand, c.estimates, 1.0)])


def test_spearman_ranks():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 2, 3]) == pytest.approx(1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_predicted_cost_is_linear_in_load_cost(cases):
    """Without the overlap of memory and arithmetic (``memory_overlap``) and the
    streams, every term is a constant or ``load_cost`` times a number of words."""
    c = cases[1]
    _label, sched = c.schedules[0]
    m = ts.load_spec(MACHINE).with_cost_params(memory_overlap=0.0)
    p = [predict_cost(c.pipeline, sched, m.replace(load_cost=L), c.estimates)
         for L in (10.0, 20.0, 40.0)]
    assert p[0] < p[1] < p[2]
    assert p[2] - p[1] == pytest.approx(2 * (p[1] - p[0]), rel=1e-9)


def test_the_fits_split_of_a_sample_prices_it_exactly_at_any_load_cost(cases):
    """``price_samples`` prices each sample once; its ``PricedSample.cost(L)`` is what
    the model predicts with ``load_cost`` L, the overlap of memory and arithmetic and
    the streams included, on both sides of the point where a group turns memory-bound."""
    base = ts.load_spec(MACHINE)
    assert base.cost_params.memory_overlap > 0
    samples = [(c.pipeline, sched, c.estimates, 1.0) for c in cases[:4]
               for _label, sched in c.schedules]
    priced = price_samples(base, samples)
    assert any(p.overlaps for p in priced)
    for L in (0.5, 5.0, 40.0, 400.0):
        for (pipe, sched, est, _), p in zip(samples, priced):
            want = predict_cost(pipe, sched, base.replace(load_cost=L), est)
            assert p.cost(L) == pytest.approx(want, rel=1e-9)


# ---------------------------------------------------------------------------
# The written spec
# ---------------------------------------------------------------------------
def _fake_micro():
    res = MicroResults()
    for m in (Measurement("call_overhead_ms", 0.05, "ms", "a 1x1 realize"),
              Measurement("memory_bandwidth_gbs", 12.5, "GB/s", "numpy copy, test"),
              Measurement("vector_ns_per_op", 0.05, "ns/op", "vectorized chain"),
              Measurement("scalar_ns_per_op", 0.4, "ns/op", "scalar chain"),
              Measurement("parallel_task_us", 1.5, "us", "tasks"),
              Measurement("parallel_loop_us", 3.0, "us", "loops")):
        res.add(m)
    res.cache_levels = [Measurement("L1", 100.0, "GB/s", "L1 sweep"),
                        Measurement("L2", None, "GB/s", "not measured: too big"),
                        Measurement("memory", 15.0, "GB/s", "beyond")]
    return res


def _written(cases, machine_line=None):
    base = ts.load_spec(MACHINE)
    samples = _synthetic_samples(cases, base.replace(load_cost=25.0), 3e-6, 0.02)
    fitted, rep = fit_spec(base.replace(memory_bandwidth_gbs=12.5), samples)
    return spec_yaml(base, fitted, detected=False, micro=_fake_micro(), fit=rep, pipelines=8,
                     quick=True, stamp="2000-01-01 00:00 UTC",
                     machine=machine_line or host_mod.host_fingerprint())


def test_written_yaml_round_trips_and_keeps_its_comments(cases, tmp_path):
    text, spec = _written(cases)
    path = tmp_path / "cal.yaml"
    path.write_text(text)
    loaded = ts.load_spec(str(path))
    assert loaded == spec and loaded.name == "host"
    assert loaded.memory_bandwidth_gbs == 12.5 and loaded.load_cost == spec.load_cost
    lines = {ln.split(":")[0]: ln for ln in text.splitlines() if not ln.startswith(("#", " "))}
    assert "# fitted to 24 samples of 8 random pipelines, log-error" in lines["load_cost"]
    assert "# measured: numpy copy, test" in lines["memory_bandwidth_gbs"]
    assert "measured 100 GB/s: L1 sweep" in text and "not measured: too big" in text
    assert "# ms_per_cost_unit: " in text and "# machine: " in text
    assert all("  # " in ln for ln in lines.values()), "every field says where it came from"
    # calibrating a calibrated spec again does not pile up descriptions
    again, _ = spec_yaml(loaded, loaded, detected=False, micro=_fake_micro(), fit=None,
                         pipelines=0, quick=True, stamp="2001", machine="m")
    assert spec_from_yaml(again).description.count("calibrated") == 1


def test_bad_values_in_a_written_spec_are_clear_errors(cases, tmp_path):
    text, _ = _written(cases)
    bad = tmp_path / "bad.yaml"
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("load_cost:"))
    bad.write_text("\n".join(lines[:i] + ["load_cost: -3   # hand-edited"] + lines[i + 1:]))
    with pytest.raises(SpecError, match=r"bad.yaml: field 'load_cost': expected a positive "
                                        r"number, got -3"):
        ts.load_spec(str(bad))
    bad.write_text(text + "ms_per_cost_unit: 3.0e-6\n")
    with pytest.raises(SpecError, match="field 'ms_per_cost_unit' is unknown"):
        ts.load_spec(str(bad))


def test_installed_spec_is_what_load_spec_host_returns(cases, tmp_path, monkeypatch):
    monkeypatch.setattr(host_mod, "measure_memory_bandwidth", lambda **kw: 10.5)
    text, spec = _written(cases)
    (tmp_path / host_mod.CALIBRATED_FILE).write_text(text)
    assert ts.load_spec("host", cache_dir=tmp_path) == spec
    assert calibrated_host(tmp_path) == spec
    detected = ts.load_spec("host", cache_dir=tmp_path, calibrated=False)
    assert detected.load_cost == host_mod.LOAD_COST and "calibrated" not in detected.description
    # measure_bandwidth=False asks for the detected host with defaults
    assert ts.load_spec("host", cache_dir=tmp_path, measure_bandwidth=False) != spec
    # a file calibrated on another machine is ignored
    other, _ = _written(cases, machine_line="elsewhere|x86_64|Other CPU|64")
    (tmp_path / host_mod.CALIBRATED_FILE).write_text(other)
    assert calibrated_host(tmp_path) is None
    # a broken file for this machine is an error naming it and the way out
    (tmp_path / host_mod.CALIBRATED_FILE).write_text(text.replace("cores: 6", "cores: 0"))
    with pytest.raises(SpecError, match=r"host.yaml: field 'cores'.*tilesolve calibrate"):
        ts.load_spec("host", cache_dir=tmp_path)


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------
def _state(path):
    return path.stat().st_mtime_ns if path.exists() else None


def test_calibrate_quick_end_to_end(tmp_path, capsys):
    installed = default_cache_dir() / host_mod.CALIBRATED_FILE   # the compile cache is shared
    before = _state(installed)
    out = tmp_path / "host-cal.yaml"
    assert main(["calibrate", "--quick", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    text = out.read_text()
    assert captured.out == text
    assert "fit:" in captured.err and "wrote" in captured.err
    spec = ts.load_spec(str(out))
    assert spec.kind == "cpu" and spec.name == "host" and spec.memory_bandwidth_gbs > 0
    assert spec_from_yaml(text) == spec
    for key in ("memory_bandwidth_gbs", "load_cost", "vector_bits", "parallelism_threshold"):
        line = next(ln for ln in text.splitlines() if ln.startswith(key + ":"))
        assert "#" in line, line
    assert "# machine: " + host_mod.host_fingerprint() in text
    # the load_cost fitted to the training set is reported, not applied (--fit-load-cost)
    assert spec.load_cost == host_mod.LOAD_COST
    # the streams weight was measured; written as a field (with its comment) when fitted
    assert "#   stream_miss_loads: " in text and "2-stage stencil" in text
    if spec.cost_params.stream_miss_loads != defaults("cpu").stream_miss_loads:
        line = next(ln for ln in text.splitlines() if ln.startswith("  stream_miss_loads:"))
        assert "# fitted to" in line, line
    assert _state(installed) == before            # --out: not installed as the host spec


def test_calibrate_gpu_base_keeps_the_launch_overhead(tmp_path):
    with pytest.raises(TilesolveError, match="argument --out: the base spec 'h100' is a GPU"):
        calibrate("h100", quick=True, cache_dir=tmp_path)
    out = tmp_path / "h100-cal.yaml"
    res = calibrate("h100", out=out, quick=True)
    h100 = ts.load_spec("h100")
    assert ts.load_spec(str(out)) == h100 and res.fit is None
    line = next(ln for ln in res.yaml.splitlines() if ln.startswith("launch_overhead_us:"))
    assert "not measured" in line and "5.74 us is kept" in line


def test_calibrate_gpu_base_writes_what_a_driven_gpu_measured(tmp_path, monkeypatch):
    """Where a GPU is driven (here faked), its launch overhead and copy bandwidth
    replace the spec's, each with a comment saying how it was measured."""
    from tilesolve.tune import gpu_micro
    from tilesolve.tune.microbench import Measurement
    monkeypatch.setattr(gpu_micro, "gpu_measurements", lambda spec: [
        Measurement("launch_overhead_us", 2.125, "us", "measured: fake launches"),
        Measurement("gpu_memory_bandwidth_gbs", 2983.0, "GB/s", "measured: fake copy")])
    out = tmp_path / "h100-cal.yaml"
    res = calibrate("h100", out=out, quick=True)
    got = ts.load_spec(str(out))
    assert got.launch_overhead_us == 2.125 and got.memory_bandwidth_gbs == 2983.0
    assert got.replace(launch_overhead_us=5.74, memory_bandwidth_gbs=3350.0) == ts.load_spec("h100")
    lines = {ln.split(":")[0]: ln for ln in res.yaml.splitlines()}
    assert "measured: fake launches" in lines["launch_overhead_us"]
    assert "measured: fake copy" in lines["memory_bandwidth_gbs"]


@pytest.mark.gpu
def test_gpu_measurements_on_a_real_gpu():
    from tilesolve.backend.cuda.runtime import availability
    from tilesolve.tune.gpu_micro import gpu_measurements
    if availability() is not None:
        pytest.skip(f"no CUDA GPU: {availability()}")
    got = {m.name: m for m in gpu_measurements(ts.load_spec("h100"))}
    assert 0 < got["launch_overhead_us"].value < 1000
    assert 1 < got["gpu_memory_bandwidth_gbs"].value < 100_000


def test_bad_base_and_out_name_the_argument(tmp_path, capsys):
    out = str(tmp_path / "x.yaml")
    assert main(["calibrate", "--quick", "--base", "no-such-spec", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "argument --base" in err and "'no-such-spec': unknown spec name" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text(ts.specs.spec_to_yaml(ts.load_spec(MACHINE)).replace(
        "vector_bits: 256", "vector_bits: 300"))
    with pytest.raises(SpecError, match=r"argument --base: .*bad.yaml: field 'vector_bits'"):
        calibrate(str(bad), out=out, quick=True)
    missing = tmp_path / "no" / "such" / "dir" / "x.yaml"
    assert main(["calibrate", "--quick", "--out", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "argument --out" in err and "does not exist" in err
    with pytest.raises(TilesolveError, match="argument --out: .* it is a directory"):
        calibrate(out=tmp_path, quick=True)
    assert not (tmp_path / "x.yaml").exists()


# ---------------------------------------------------------------------------
# The training set
# ---------------------------------------------------------------------------
def test_training_pipelines_equal_the_reference():
    # the cases of `calibrate --quick` (they share compiled code with the end-to-end test)
    spec = ts.load_spec("host", measure_bandwidth=False, calibrated=False)
    small = build_cases(spec, len(KINDS), seed=0, size=QUICK["size"],
                        variants=QUICK["variants"])
    assert [c.kind for c in small] == list(KINDS)
    assert all(len(c.schedules) == 2 for c in small)
    samples = measure_cases(small, repeat=1)          # raises TrainingMismatch on a mismatch
    assert len(samples) == sum(len(c.schedules) for c in small)
    assert all(ms > 0 for *_, ms in samples)
    c = small[0]
    ref = np.asarray(ts.reference.realize(c.pipeline, c.sizes, **c.inputs))
    with pytest.raises(TrainingMismatch, match="train_0 .* differs from the reference"):
        check_case(c, "greedy", ref + 1.0, ref)


def test_training_cases_are_seeded_and_not_the_apps():
    spec = ts.load_spec(MACHINE)
    a = build_cases(spec, 4, seed=5, size=(64, 64), variants=1)
    b = build_cases(spec, 4, seed=5, size=(64, 64), variants=1)
    assert [str(c.pipeline) for c in a] == [str(c.pipeline) for c in b]
    assert [str(s) for c in a for _, s in c.schedules] == \
        [str(s) for c in b for _, s in c.schedules]
    names = {n for c in a for n in c.pipeline.funcs}
    from tilesolve.apps import blur
    assert not names & set(blur.build([64, 64])[0].funcs)


def test_a_schedule_read_back_from_json_is_priced_alike(cases):
    """The autotuner's samples come from its database: schedules read back from JSON,
    whose provenance is a plain dict."""
    c = cases[2]
    _label, sched = c.schedules[1]
    again = ts.Schedule.from_json(sched.to_json(), c.pipeline)
    assert isinstance(again.provenance, dict)
    assert predict_cost(c.pipeline, again, MACHINE, c.estimates) == \
        predict_cost(c.pipeline, sched, MACHINE, c.estimates)


def test_a_fitted_load_cost_is_only_reported_unless_asked_for(cases, tmp_path):
    """calibrate's default: the training set's best load_cost goes into the comment,
    the base's stays in the spec (applied, it made the apps' schedules slower on every
    machine tried), and the scale is the kept spec's."""
    machine = ts.load_spec(MACHINE)
    samples = _synthetic_samples(cases, machine.replace(load_cost=25.0), 3e-6, 0.02)
    start = machine.replace(load_cost=80.0)
    kept, rep = fit_spec(start, samples, apply_load_cost=False)
    applied, rep2 = fit_spec(start, samples)
    assert kept == start and rep.fitted == ("load_cost", "scale") and not rep.applied
    assert applied.load_cost == rep.load_cost_after == rep2.load_cost_after and rep2.applied
    assert abs(rep.load_cost_after - 25.0) / 25.0 < 0.1
    assert rep.scale_ms_per_unit != rep2.scale_ms_per_unit
    assert "fitted, not applied" in rep.summary()
    text, spec = spec_yaml(start, kept, detected=False, micro=_fake_micro(), fit=rep,
                           pipelines=8, quick=True, stamp="2000", machine="m")
    line = next(ln for ln in text.splitlines() if ln.startswith("load_cost:"))
    assert spec.load_cost == 80.0 and "not applied" in line and "--fit-load-cost" in line
