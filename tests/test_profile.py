"""Profiling compiled code (``ts.compile(..., profile=True)``) and ``tilesolve explain --ir``.

Profiled results equal the reference; every produced Func is reported; the times are
consistent with the wall time around ``realize``; a build without profiling is the
very same code as before; ``explain --ir`` prints our loop IR and Halide's statement.
No assertion compares speeds."""
import time

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.cpu.codegen import generate
from tilesolve.backend.cpu.jit import DiskCache
from tilesolve.backend.cpu.target import host_target
from tilesolve.cli import main
from tilesolve.errors import TilesolveError
from tilesolve.lower import lower

W, H = 200, 120


def _pipeline():
    """g computed at root, h inlined into the tiled, parallel output f."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    g, h, f = ts.Func("g"), ts.Func("h"), ts.Func("f")
    g[x, y] = (clamped[x - 1, y] + clamped[x, y] * 2 + clamped[x + 1, y]) * 0.25
    h[x, y] = g[x, y - 1] + g[x, y + 1]
    f[x, y] = h[x, y] * 0.5 + g[x, y]
    pipe = ts.Pipeline(f)
    s = ts.Schedule(pipe)
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[f].tile(x, y, xo, yo, xi, yi, 64, 16).parallel(yo).vectorize(xi, 8)
    s[g].compute_root().vectorize(x, 8)
    return pipe, s


@pytest.fixture(scope="module")
def case():
    pipe, s = _pipeline()
    img = np.random.default_rng(0).random((H, W), dtype=np.float32)
    ref = ts.reference.realize(pipe, [W, H], input=img)
    return pipe, s, img, ref


def test_profiled_run_equals_reference_and_reports_every_func(case, tmp_path):
    pipe, s, img, ref = case
    fast = ts.compile(pipe, s, profile=True, num_threads=2, cache_dir=tmp_path)
    assert fast.profiled
    walls = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = fast.realize([W, H], input=img)
        walls.append((time.perf_counter() - t0) * 1e3)
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    p = fast.profile()
    assert p["runs"] == 3 and p["num_threads"] == 2
    assert set(p["funcs"]) == {"f", "g"}          # h is inlined: no produce region
    assert p["funcs"]["f"]["entries"] == 3 and p["funcs"]["g"]["entries"] == 3
    tol = 0.5                                      # ms: timer calibration, rounding
    for run, last in ((p, sum(walls)), (p["last"], walls[-1])):
        parts = [f["ms"] for f in run["funcs"].values()]
        parts += [r["idle_ms"] for r in run["parallel"].values()] + [run["other_ms"]]
        assert all(v >= 0 for v in parts) and run["total_ms"] >= 0
        assert sum(f["ms"] for f in run["funcs"].values()) <= last + tol
        assert run["total_ms"] <= last + tol
        assert sum(parts) == pytest.approx(run["total_ms"], rel=0.02, abs=0.05)
    (loop, region), = p["parallel"].items()
    assert region["func"] == "f" and loop.startswith("f.")
    assert 0.0 <= region["utilization"] <= 1.0 and region["entries"] == 3
    report = fast.profile_report()
    for word in ("Func", "total ms", "% run", "entries", "utilization", "f", "g", loop):
        assert word in report
    fast.reset_profile()
    assert fast.profile()["runs"] == 0 and fast.profile()["last"] is None


def test_profiled_checked_and_serial_builds(case):
    pipe, s, img, ref = case
    fast = ts.compile(pipe, s, profile=True, checked=True, num_threads=1, cache_dir=False)
    np.testing.assert_allclose(fast.realize([W, H], input=img), ref, rtol=1e-6, atol=1e-6)
    p = fast.profile()
    (region,) = p["parallel"].values()
    assert 0.0 <= region["utilization"] <= 1.0
    assert set(p["funcs"]) == {"f", "g"}


def test_nested_producers_count_once():
    """g computed per tile of f: g's time is its own, not f's as well."""
    pipe, s = _pipeline()
    xo = ts.Var("xo")
    s[pipe.func("g")].compute_at(pipe.func("f"), xo)
    img = np.random.default_rng(1).random((H, W), dtype=np.float32)
    fast = ts.compile(pipe, s, profile=True, num_threads=2, cache_dir=False)
    out = fast.realize([W, H], input=img)
    np.testing.assert_allclose(out, ts.reference.realize(pipe, [W, H], input=img),
                               rtol=1e-6, atol=1e-6)
    p = fast.profile()
    assert p["funcs"]["g"]["entries"] == 4 * 8      # one per tile
    parts = sum(f["ms"] for f in p["funcs"].values()) + p["other_ms"] + \
        sum(r["idle_ms"] for r in p["parallel"].values())
    assert parts == pytest.approx(p["total_ms"], rel=0.02, abs=0.05)


def test_profiling_off_is_the_same_code(case, tmp_path):
    pipe, s, _, _ = case
    default = ts.compile(pipe, s, cache_dir=tmp_path)
    off = ts.compile(pipe, s, profile=False, cache_dir=False)
    assert off.llvm_ir() == default.llvm_ir()
    assert "readcyclecounter" not in off.llvm_ir() and ".ticks" not in off.llvm_ir()
    lowered, tgt = lower(pipe, s, target="cpu"), host_target()
    plain = generate(lowered, tgt.info.triple, tgt.info.data_layout)
    assert generate(lowered, tgt.info.triple, tgt.info.data_layout,
                    profile=False).ir_text == plain.ir_text
    assert plain.profile is None and not off.profiled
    for call in (off.profile_report, off.profile, off.reset_profile):
        with pytest.raises(TilesolveError, match=r"profile=True"):
            call()
    # the compile cache keeps the two builds apart
    on = ts.compile(pipe, s, profile=True, cache_dir=tmp_path)
    assert on._kernel.jit.key != default._kernel.jit.key
    assert DiskCache.key("x", tgt) != DiskCache.key("x", tgt, ("profile",))


def test_profile_is_cpu_only(case):
    pipe, _, _, _ = case
    s = ts.Schedule(pipe, target="cuda")
    with pytest.raises(TilesolveError, match="profile=True is for CPU code"):
        ts.compile(pipe, s, profile=True)


def test_explain_ir_prints_both(capsys, tmp_path):
    rc = main(["explain", "blur", "--method", "greedy", "--ir", "--ir-out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "== tilesolve loop IR (blur, greedy) ==" in out and "produce blur_x" in out
    assert (tmp_path / "blur.greedy.loop_ir.txt").read_text().startswith("func blur_y(")
    try:
        import halide  # noqa: F401
    except ImportError:
        assert "== Halide lowered statement: unavailable ==" in out
        return
    assert "== Halide lowered statement (blur, greedy schedule replayed in Halide) ==" in out
    assert "produce blur_x" in out.split("== Halide lowered statement")[1]
    assert "produce blur_x" in (tmp_path / "blur.greedy.halide.stmt").read_text()


def test_explain_profile_and_bad_options(capsys):
    assert main(["explain", "blur", "--method", "naive", "--profile", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "== profile (1 runs" in out and "blur_x" in out and "% run" in out
    assert main(["explain", "nope"]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_explain_ir_without_halide_says_why(capsys, monkeypatch):
    from tilesolve.interop import halide as th
    monkeypatch.setattr(th, "available", lambda: (False, "Halide is not available: test"))
    assert main(["explain", "blur", "--method", "naive", "--ir"]) == 0
    out = capsys.readouterr().out
    assert "== tilesolve loop IR (blur, naive) ==" in out
    assert "== Halide lowered statement: unavailable ==\nHalide is not available: test" in out


def test_explain_takes_the_validation_suite(capsys):
    assert main(["explain", "haar", "--spec", "xeon-e5-2620v3", "--profile", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "== haar at [64, 48]" in out and "shrunk" in out.split("== profile")[1]
