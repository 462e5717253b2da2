"""required_regions never misses a point the pipeline touches (and is exact when it can be).

A brute-force scalar evaluator (``strategies.Tracer``) computes the outputs point
by point and records every (Func/input, point) read or written; every one must
lie inside the region ``required_regions`` reports.  For pipelines without
data-dependent indices or mirror boundaries the regions must be exactly the
bounding boxes of what is touched.
"""
from hypothesis import given
from strategies import Tracer, pipelines

from tilesolve.analysis.intervals import required_regions


def _bbox(pts):
    dims = len(next(iter(pts)))
    return [(min(p[d] for p in pts), max(p[d] for p in pts)) for d in range(dims)]


@given(pipelines())
def test_touched_points_lie_in_required_regions(case):
    regions = required_regions(case.pipeline, case.sizes, input_sizes=case.input_sizes)
    touched = Tracer(case.pipeline, case.input_sizes).run(case.sizes)
    for name, pts in touched.items():
        assert name in regions, f"{name} is read but has no region\n{case}"
        box = regions[name]
        for pt in pts:
            assert box.contains(pt), f"{name}{list(pt)} is touched but outside {box}\n{case}"
    if case.exact:
        got = {n: [(iv.lo, iv.hi) for iv in b] for n, b in regions.items()}
        want = {n: _bbox(pts) for n, pts in touched.items()}
        assert got == want, f"regions are not tight:\n{got}\n!=\n{want}\n{case}"
