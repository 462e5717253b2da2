"""The cost model's per-tile footprints are the buffers lowering allocates.

For the greedy solver's CPU schedule of each app (small size), every producer computed
per tile of its group is allocated by lowering at the extents ``analysis.footprint``
predicts for an interior tile (the largest of it and its neighbours): the extents seen while the loop-IR interpreter runs the
program (their maximum over all tiles) must equal ``tile_facts(...).member_regions``.
When they differ, the solver ranks schedules by buffers that are not the ones built."""
import importlib

import pytest

import tilesolve as ts
from tilesolve.analysis.footprint import interior_tile, tile_facts
from tilesolve.apps import get_app
from tilesolve.lower.lower import lower
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group
from tilesolve.specs import load_spec

_interp = importlib.import_module("tilesolve.lower.interpret")


def _allocated_extents(lowered, sizes, inputs, monkeypatch) -> dict:
    seen = {}
    original = _interp.Interpreter._allocate

    def spy(self, s, env):
        exts = tuple(int(self.ev(x, env)) for x in s.extents)
        seen[s.name] = tuple(max(a, b) for a, b in zip(seen.get(s.name, exts), exts))
        return original(self, s, env)
    monkeypatch.setattr(_interp.Interpreter, "_allocate", spy)
    _interp.run(lowered, sizes, **inputs)
    return seen


def _neighbours(tile, tiling) -> list:
    out = [tile]
    for d, t in enumerate(tiling):
        if t is not None:
            out.append(tuple((lo + t, hi + t) if k == d else (lo, hi)
                             for k, (lo, hi) in enumerate(tile)))
    return out


APPS = ["blur", "unsharp", "harris", "stencil_chain", "camera_pipe", "interpolate",
        "bilateral_grid",
        "max_filter"]


@pytest.mark.parametrize("name", APPS)
def test_predicted_footprints_are_the_allocations(name, monkeypatch):
    app = get_app(name)
    size = app.SMALL_SIZE
    pipe, est = app.build(size)
    sched = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    seen = _allocated_extents(lower(pipe, sched), size, app.make_inputs(size), monkeypatch)
    problem = Problem(pipe, load_spec("host"), est)
    compared = 0
    for g in sched.provenance.groups:
        if all(t is None for t in g.tiling) or len(g.members) == 1:
            continue
        group = Group(g.output, frozenset(g.members))
        tile = interior_tile(problem.regions[g.output], g.tiling)
        # the interior tile and its neighbours: with down/upsampling a tile's region
        # depends on its parity; lowering allocates the largest
        facts = [tile_facts(problem, group, t) for t in _neighbours(tile, g.tiling)]
        for m in g.members:
            if m == g.output:
                continue
            predicted = tuple(max(hi - lo + 1 for lo, hi in dims)
                              for dims in zip(*(f.member_regions[m] for f in facts)))
            assert seen.get(m) == predicted, (m, g.output, g.tiling)
            compared += 1
    assert compared > 0, f"{name}: the greedy schedule fuses nothing per tile"
