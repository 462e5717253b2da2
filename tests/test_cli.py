"""The ``tilesolve`` command: bench (end to end and with a stub backend), specs, demo,
and clear errors for bad options."""
import csv
import json
import types

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.bench import cli as bench_cli
from tilesolve.bench import methods, runner
from tilesolve.bench.record import FIELDS
from tilesolve.tune import check
from tilesolve.cli import main


# ---------------------------------------------------------------------------
# End to end, with the real apps, solvers and CPU backend
# ---------------------------------------------------------------------------
def test_bench_end_to_end_json(tmp_path, capsys):
    out_json = tmp_path / "bench.json"
    rc = main(["bench", "--apps", "blur,hist_eq", "--size", "small", "--repeat", "2",
               "--json", str(out_json), "--time-limit", "10"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out
    doc = json.loads(out_json.read_text())
    assert doc["tilesolve_bench"] == 1
    assert {"spec", "cores", "date"} <= set(doc["environment"])
    recs = doc["records"]
    assert {r["app"] for r in recs} == {"blur", "hist_eq"}
    assert {r["method"] for r in recs} == set(methods.ALL_METHODS)
    for r in recs:
        assert set(FIELDS) <= set(r), set(FIELDS) - set(r)
        assert r["spec"] == "host" and r["cores"] >= 1 and r["date"]
        assert r["status"] in ("ok", "unavailable"), r
        if r["status"] == "ok":
            assert r["check"] == "ok" and len(r["run_ms"]) == 2 and r["repeat"] == 2
            assert 0 < r["run_ms_min"] <= r["run_ms_median"]
            assert r["compile_s"] is not None and r["solve_s"] is not None
            assert r["speedup"] is not None and r["max_error"] is not None
        else:
            assert r["detail"]
    naive = [r for r in recs if r["method"] == "naive"]
    assert len(naive) == 2 and all(r["status"] == "ok" for r in naive)
    assert all(abs(r["speedup"] - 1.0) < 1e-12 for r in naive)
    # the table went to stdout, the progress to stderr
    assert "hist_eq" in captured.out and "speedup" in captured.out
    assert "blur / naive: compiling" in captured.err


def test_bench_hand_method_runs_the_apps_hand_schedule(tmp_path):
    out_json = tmp_path / "bench.json"
    assert main(["bench", "--suite", "apps,validation", "--apps", "blur,haar", "--methods",
                 "naive,hand", "--repeat", "1", "-q", "--json", str(out_json)]) == 0
    recs = {(r["app"], r["method"]): r for r in json.loads(out_json.read_text())["records"]}
    assert recs["blur", "hand"]["status"] == "ok" and ".tile(" in recs["blur", "hand"]["schedule"]
    assert recs["haar", "hand"]["status"] == "unavailable"
    assert "no hand schedule" in recs["haar", "hand"]["detail"]


def test_specs_lists_specs(capsys):
    assert main(["specs"]) == 0
    out = capsys.readouterr().out
    for name in ("h100", "host", "a100"):
        assert name in out


@pytest.mark.parametrize("argv, message", [
    (["bench", "--apps", "blur,nope"], "unknown app 'nope'; valid apps: blur"),
    (["bench", "--methods", "naive,sa"], "unknown method 'sa'; valid methods: naive, greedy, ilp, beam, auto"),
    (["bench", "--repeat", "0"], "expected a positive integer"),
    (["bench", "--size", "huge"], "invalid choice: 'huge'"),
    (["bench", "--time-limit", "-1"], "positive number of seconds"),
    (["bench", "--halide-autoschedulers", "mullapudi"], "valid: mullapudi2016, adams2019, li2018"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_options_give_clear_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_unknown_app_lists_every_valid_app(capsys):
    assert main(["bench", "--apps", "blurr"]) == 2
    err = capsys.readouterr().err
    for name in ts.apps.APPS:
        assert name in err


def test_demo_runs(capsys):
    assert main(["demo", "--size", "64", "48"]) == 0
    out = capsys.readouterr().out
    assert "schedule:" in out and "max error vs the reference" in out


# ---------------------------------------------------------------------------
# The runner with a stub backend: its logic, independent of the compiler
# ---------------------------------------------------------------------------
def _tiny_blur_app(small_build=None):
    """An app object with the suite's interface: a repeat-edge 3x3 blur."""
    def build(sizes=None, radius=1):
        x, y = ts.Var("x"), ts.Var("y")
        inp = ts.ImageParam(ts.float32, 2, "input")
        cl = ts.boundary.repeat_edge(inp)
        bx, by = ts.Func("blur_x"), ts.Func("blur_y")
        bx[x, y] = sum(cl[x + i, y] for i in range(-radius, radius + 1)) / (2 * radius + 1)
        by[x, y] = sum(bx[x, y + i] for i in range(-radius, radius + 1)) / (2 * radius + 1)
        w, h = sizes or app.PAPER_SIZE
        return ts.Pipeline(by), {"blur_y": [w, h], "input": [w, h]}

    def make_inputs(sizes, seed=0, radius=1):
        w, h = sizes
        return {"input": np.random.default_rng(seed).random((h, w), dtype=np.float32)}

    app = types.SimpleNamespace(build=build, make_inputs=make_inputs,
                                PAPER_SIZE=[48, 40], SMALL_SIZE=[20, 12])
    if small_build:
        app.SMALL_BUILD = small_build
    return app


class _Sched:
    def __init__(self, method):
        self.method = method
        self.provenance = {"method": method, "predicted_cost": 42.0}

    def __str__(self):
        return f"# stub schedule ({self.method})"


class _StubCompiled:
    """Runs the reference; off by one for the method named ``wrong``."""

    def __init__(self, pipe, sched, wrong):
        self.pipe, self.off = pipe, (getattr(sched, "method", None) == wrong)
        self.compile_seconds, self.cache_hit = 0.001, False

    def realize(self, sizes, **inputs):
        out = ts.reference.realize(self.pipe, sizes, **inputs)
        return out + np.float32(1) if self.off else out


@pytest.fixture
def stub_backend(monkeypatch):
    """``ts.compile`` runs the reference; every solver 'solves' instantly."""
    state = {"wrong": None, "unavailable": {}}
    monkeypatch.setattr(methods, "compile_status", lambda: (True, ""))

    def status(name):
        why = state["unavailable"].get(name)
        return (False, why) if why else (True, "")
    monkeypatch.setattr(methods, "method_status", status)
    monkeypatch.setattr(methods, "solve", lambda pipe, m, *a, **k: (_Sched(m), 0.01, 42.0))
    monkeypatch.setattr(ts, "compile", lambda pipe, sched=None, **k: _StubCompiled(
        pipe, sched, state["wrong"]), raising=False)
    return state


def _install_app(monkeypatch, app):
    monkeypatch.setattr(runner, "app_names", lambda: ["tiny"])
    monkeypatch.setattr(bench_cli, "app_names", lambda: ["tiny"])
    monkeypatch.setattr(runner, "get_app", lambda name: app)


def test_mismatch_is_a_loud_fail_and_exit_1(stub_backend, monkeypatch, tmp_path, capsys):
    _install_app(monkeypatch, _tiny_blur_app())
    stub_backend["wrong"] = "ilp"
    stub_backend["unavailable"] = {"beam": "beam search unavailable: not built"}
    out_csv = tmp_path / "b.csv"
    rc = main(["bench", "--repeat", "3", "--csv", str(out_csv), "-q"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL <<<" in out and "FAILED: 1 of 5 rows" in out
    assert "tiny / ilp: FAIL: differs from the reference" in out
    assert "beam search unavailable: not built" in out      # reported, not dropped
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["method"] for r in rows] == ["naive", "greedy", "ilp", "beam", "auto"]
    assert list(rows[0]) == list(FIELDS)
    status = {r["method"]: (r["status"], r["check"]) for r in rows}
    assert status == {"naive": ("ok", "ok"), "greedy": ("ok", "ok"), "ilp": ("FAIL", "FAIL"),
                      "beam": ("unavailable", ""), "auto": ("ok", "ok")}
    assert float(rows[2]["max_error"]) == pytest.approx(1.0)
    assert len(rows[1]["run_ms"].split()) == 3


def test_all_ok_exit_0_and_progress(stub_backend, monkeypatch, capsys):
    _install_app(monkeypatch, _tiny_blur_app())
    rc = main(["bench", "--methods", "naive,greedy", "--repeat", "2"])
    captured = capsys.readouterr()
    assert rc == 0
    assert "tiny / greedy: running once at [20, 12]" in captured.err
    assert "tiny: timing 2 rows in 2 rounds" in captured.err
    assert captured.err.lstrip().startswith("[")


def test_paper_size_with_small_build_checks_both(stub_backend, tmp_path):
    app = _tiny_blur_app(small_build={"radius": 2})
    opts = runner.BenchOptions(methods=["naive", "greedy", "ilp"], size="paper", repeat=1)
    stub_backend["wrong"] = "greedy"
    res = runner.run_bench(opts, apps={"tiny": app})
    recs = {r.method: r for r in res.records}
    assert recs["naive"].sizes == [48, 40] and recs["naive"].check_sizes == [20, 12]
    assert "verified on the small build {'radius': 2}" in recs["ilp"].detail
    assert recs["ilp"].status == "ok"
    # greedy is wrong both at the small size and, against naive, at the paper size
    assert recs["greedy"].status == "FAIL"
    assert "differs from naive's" in recs["greedy"].detail
    assert not res.ok


def test_compare_tolerances():
    a = np.arange(6, dtype=np.uint8).reshape(2, 3)
    assert check.compare(a, a.copy())[0]
    assert not check.compare(a, a + 1)[0]
    assert check.compare(a, a + 1, int_slack=1)[0]
    f = np.linspace(0, 100, 12, dtype=np.float32)
    assert check.compare(f * (1 + 1e-6), f)[0]
    assert not check.compare(f + 0.5, f)[0]
    assert not check.compare(f[:5], f)[0]
    nan = np.array([np.nan, 1.0], np.float32)
    assert check.compare(nan, nan.copy())[0]


def test_interrupt_still_reports_finished_rows(stub_backend, monkeypatch, tmp_path, capsys):
    _install_app(monkeypatch, _tiny_blur_app())

    def compile_or_interrupt(pipe, sched=None, **k):
        if sched.method == "ilp":
            raise KeyboardInterrupt
        return _StubCompiled(pipe, sched, None)
    monkeypatch.setattr(ts, "compile", compile_or_interrupt, raising=False)
    out_json = tmp_path / "partial.json"
    rc = main(["bench", "--repeat", "1", "--json", str(out_json), "-q"])
    out = capsys.readouterr().out
    assert rc == 130
    assert "INTERRUPTED" in out
    recs = json.loads(out_json.read_text())["records"]
    assert [r["method"] for r in recs] == ["naive", "greedy"]


def test_exit_status_rules():
    from tilesolve.bench.record import Record
    from tilesolve.bench.table import format_table

    def result(*recs):
        return runner.BenchResult(records=list(recs))
    ok = Record(app="a", method="naive", status="ok", check="ok")
    gone = Record(app="a", method="beam", status="unavailable", detail="not here")
    halide_err = Record(app="a", method="halide-li2018", backend="halide", status="error",
                        detail="run: too big")
    halide_fail = Record(app="a", method="halide-li2018", backend="halide", status="FAIL",
                         check="FAIL", detail="differs")
    ts_err = Record(app="a", method="ilp", status="error", detail="compile: boom")
    assert result(ok, gone, halide_err).ok          # Halide's own errors are listed only
    assert not result(ok, halide_fail).ok           # a wrong Halide output may be our translation
    assert not result(ok, ts_err).ok
    text = format_table([ok, gone, halide_err, ts_err])
    assert "Halide errors (1; not counted in the exit status)" in text
    assert "FAILED: 1 of 4 rows" in text and "a / ilp: error: compile: boom" in text


def test_bench_on_a_gpu_spec_without_a_gpu_says_so_once(capsys):
    """Without pycuda or a GPU, ``tilesolve bench --spec h100`` exits 2 with one message
    that says why and what runs instead (it once failed every row with the same error)."""
    from tilesolve.backend.cuda.runtime import availability
    if availability() is None:
        pytest.skip("a GPU is here: bench --spec h100 times it")
    assert main(["bench", "--spec", "h100", "--apps", "blur", "--size", "small"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "spec h100 is a GPU" in err and "gpu_run.sh check" in err


def test_time_rounds_interleaves_the_rows_and_times_each_second_run():
    from tilesolve.bench.record import Record
    from tilesolve.bench.runner import time_rounds
    calls = []

    def runner(name, fail_after=None):
        def run():
            calls.append(name)
            if fail_after is not None and calls.count(name) > fail_after:
                raise RuntimeError("boom")
        return run
    a, b, c = (Record(app="x", method=m) for m in "abc")
    time_rounds([(a, runner("a")), (b, runner("b", fail_after=3)), (c, runner("c"))], 3)
    assert calls[:6] == ["a", "a", "b", "b", "c", "c"]          # round 1, each twice
    assert calls[6:8] == ["a", "a"]                              # round 2 starts over
    assert a.repeat == c.repeat == 3 and len(a.run_ms) == 3
    assert b.status == "error" and "boom" in b.detail            # failed in round 2
    assert calls.count("b") == 4
