"""The pictures of tilesolve.viz: a schedule's HTML page (Schedule.to_html, `tilesolve
explain APP --html`) and the bench ratios plot (`tilesolve bench --plot`)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.bench.runner import Case
from tilesolve.errors import TilesolveError
from tilesolve.bench.ratios import bench_ratios
from tilesolve.viz.bench_plot import write_plot
from tilesolve.viz.groups import tile_svg

SPEC = "xeon-e5-2620v3"
VOID = {"meta", "br", "hr", "img", "input", "link"}


def _solved(app_name):
    app = get_app(app_name)
    case = Case(app, app.SMALL_SIZE, dict(getattr(app, "SMALL_BUILD", {}) or {}), 0)
    sched = ts.solve_schedule(case.pipeline, SPEC, case.estimates, method="greedy")
    return case, sched


class _Balanced(HTMLParser):
    """Checks that every element is closed in order (SVG's self-closed ones included)."""

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.svgs = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)
        self.svgs += tag == "svg"

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _check_well_formed(page: str) -> list:
    """The page's tags balance, and each inline <svg> parses as XML; the SVG roots."""
    p = _Balanced()
    p.feed(page)
    p.close()
    assert not p.errors and not p.stack, (p.errors[:3], p.stack)
    svgs = re.findall(r"<svg\b.*?</svg>", page, flags=re.S)
    assert len(svgs) == p.svgs and svgs
    return [ET.fromstring(s) for s in svgs]


SVG_NS = "{http://www.w3.org/2000/svg}"


def _by_class(roots, cls):
    return [e for r in roots for e in r.iter() if cls in (e.get("class") or "").split()]


@pytest.mark.parametrize("app_name", ["blur", "camera_pipe"])
def test_schedule_page_names_every_func_and_draws_each_group(app_name):
    case, sched = _solved(app_name)
    page = sched.to_html(estimates=case.estimates)
    roots = _check_well_formed(page)
    pipe = case.pipeline
    nodes = {e.get("data-func"): e for e in _by_class(roots, "node")}
    assert set(nodes) == set(pipe.funcs) | set(pipe.images)
    for n, e in nodes.items():                 # every node's label is its name
        assert any((t.text or "").startswith(n) for t in e.iter(SVG_NS + "text"))
    groups = sched.provenance.groups
    clusters = _by_class(roots, "cluster")
    assert sorted(int(c.get("data-group")) for c in clusters) == list(range(len(groups)))
    inlined = set(sched.provenance.inlined)
    assert {n for n, e in nodes.items() if "inlined" in e.get("class")} == inlined
    edges = {(e.get("data-from"), e.get("data-to")) for e in _by_class(roots, "edge")}
    assert edges == set(pipe.graph.edges)
    for g in groups:                            # each group's card, with its why-fused line
        why = g.why_fused()
        if why:
            assert why.replace("<", "&lt;") in page
    assert len(_by_class(roots, "tile")) == len(groups)


def test_page_from_a_json_round_trip_is_the_same():
    case, sched = _solved("blur")
    again = ts.Schedule.from_json(sched.to_json(), case.pipeline)
    assert isinstance(again.provenance, dict)
    assert again.to_html(estimates=case.estimates) == sched.to_html(estimates=case.estimates)


def test_tile_grid_over_the_output():
    root = ET.fromstring(tile_svg((16, 8), [64, 48]))
    grid = [e for e in root.iter() if e.get("class") == "grid"]
    assert len(grid) == 64 // 16 - 1 + 48 // 8 - 1
    untiled = ET.fromstring(tile_svg((None, 1, None), None))      # no estimates: no grid
    assert not [e for e in untiled.iter() if e.get("class") == "grid"]
    assert "extent unknown" in ET.tostring(untiled, encoding="unicode")


def test_measured_times_beside_the_prediction():
    case, sched = _solved("blur")
    profile = {"runs": 2, "total_ms": 3.0, "funcs": {"blur_x": {"ms": 2.0, "entries": 48},
                                                    "blur_y": {"ms": 4.0, "entries": 2}}}
    roots = _check_well_formed(sched.to_html(estimates=case.estimates, profile=profile))
    (bar,) = _by_class(roots, "measured")          # one group: its share of the time
    assert "3 ms" in bar.find(SVG_NS + "title").text   # (2 + 4) ms over 2 runs
    labels = [t.text for e in _by_class(roots, "node") for t in e.iter(SVG_NS + "text")]
    assert "blur_x  1 ms" in labels and "blur_y  2 ms" in labels
    with pytest.raises(TilesolveError, match="profile="):
        sched.to_html(profile={"blur_x": 1.0})


def test_explain_writes_the_page_with_the_profile(tmp_path):
    from tilesolve.bench.methods import compile_status
    from tilesolve.cli import main
    out = tmp_path / "blur.html"
    args = ["explain", "blur", "--spec", SPEC, "--html", str(out)]
    ok, _ = compile_status()
    if ok:
        args += ["--profile", "--runs", "1"]
    assert main(args) == 0
    roots = _check_well_formed(out.read_text())
    assert len(_by_class(roots, "cluster")) == 1
    assert bool(_by_class(roots, "measured")) == ok
    assert main(["explain", "blur", "--html", str(tmp_path / "no" / "x.html")]) == 2


def _bench_doc(apps, li2018_fails=()):
    recs = []
    for k, app in enumerate(apps):
        recs += [{"app": app, "method": "naive", "backend": "tilesolve-cpu", "status": "ok",
                  "run_ms_min": 10.0},
                 {"app": app, "method": "greedy", "backend": "tilesolve-cpu", "status": "ok",
                  "run_ms_min": 1.0 + k},
                 {"app": app, "method": "halide-adams2019", "backend": "halide", "status": "ok",
                  "run_ms_min": 2.0}]
        if app in li2018_fails:
            recs.append({"app": app, "method": "halide-li2018", "backend": "halide",
                         "status": "error", "run_ms_min": None, "detail": "it failed"})
    return {"tilesolve_bench": 1, "environment": {}, "options": {}, "records": recs}


def test_bench_plot_has_one_bar_per_app(tmp_path):
    apps = ["blur", "harris", "unsharp"]
    path = tmp_path / "ratios.svg"
    br = bench_ratios(_bench_doc(apps)["records"])
    write_plot(str(path), br)
    assert br.ours == "greedy" and br.series == ("adams2019",)
    root = ET.fromstring(path.read_text())
    bars = [e for e in root.iter() if e.get("class") == "bar"]
    assert [b.get("data-app") for b in bars] == apps
    assert [float(b.get("data-ratio")) for b in bars] == [0.5, 1.0, 1.5]
    h = {b.get("data-app"): float(b.get("height")) for b in bars}
    assert h["blur"] > h["unsharp"] > h["harris"]     # log scale: |log 0.5| > |log 1.5|
    br = bench_ratios(_bench_doc(apps, li2018_fails=["harris"])["records"])
    assert br.series == ("adams2019", "li2018") and len(br.ratio) == 3
    assert "it failed" in br.missing[("harris", "li2018")]
    with pytest.raises(TilesolveError, match="no rows of tilesolve method"):
        bench_ratios(_bench_doc(apps)["records"], ours="ilp")


def test_bench_plot_from_a_json_file(tmp_path):
    from tilesolve.cli import main
    src, out = tmp_path / "run.json", tmp_path / "ratios.html"
    src.write_text(json.dumps(_bench_doc(["blur", "harris"])))
    assert main(["bench", "--plot", str(out), "--from", str(src)]) == 0
    roots = _check_well_formed(out.read_text())
    assert len(_by_class(roots, "bar")) == 2
    assert main(["bench", "--plot", str(out), "--from", str(tmp_path / "none.json")]) == 2
    assert main(["bench", "--from", str(src)]) == 2                  # --from needs --plot
    assert main(["bench", "--plot", str(out), "--apps", "blur"]) == 2  # no Halide rows coming
    assert main(["bench", "--plot", str(tmp_path / "r.txt"), "--from", str(src)]) == 2


def test_bench_plot_png_through_matplotlib_or_a_clear_error(tmp_path):
    import importlib.util
    path = tmp_path / "ratios.png"
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(TilesolveError, match="need matplotlib"):
            write_plot(str(path), bench_ratios(_bench_doc(["blur"])["records"]))
        assert not path.exists()
    else:
        write_plot(str(path), bench_ratios(_bench_doc(["blur"])["records"]))
        assert path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.browser
def test_page_renders_in_a_browser(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install chromium): the page is "
                    "checked as HTML and XML only")
    case, sched = _solved("camera_pipe")
    page = tmp_path / "camera_pipe.html"
    page.write_text(sched.to_html(estimates=case.estimates))
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          "--enable-logging=stderr", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not console, console
    dom = run.stdout
    assert "<svg" in dom and "</html>" in dom
    for name in case.pipeline.funcs:
        assert f">{name}</text>" in dom or f">{name}  " in dom
