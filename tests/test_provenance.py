"""Typed provenance: what solve_schedule records, how it prints, its JSON round trip."""
import dataclasses
import json
import math

import pytest

import tilesolve as ts
from tilesolve.solver.provenance import (BeamStats, Candidate, GroupRecord, IlpStats,
                                         Provenance)
from tilesolve.solver.space import Cost, GpuCost


def blur():
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    clamped = ts.boundary.repeat_edge(inp)
    bx, by = ts.Func("blur_x"), ts.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return ts.Pipeline(by)


EST = {"blur_y": [1536, 1024], "input": [1536, 1024]}


@pytest.mark.parametrize("method", ["greedy", "ilp", "beam", "auto"])
def test_solver_provenance_is_typed_and_round_trips(method):
    pipe = blur()
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", EST, method=method, time_limit=5)
    p = s.provenance
    assert isinstance(p, Provenance) and p.method == method and p.spec == "xeon-e5-2620v3"
    assert p.groups and all(isinstance(g, GroupRecord) and isinstance(g.cost, Cost)
                            for g in p.groups)
    assert p.predicted_cost == pytest.approx(sum(g.cost.total for g in p.groups))
    if method == "ilp":
        assert isinstance(p.ilp, IlpStats) and p.ilp.columns > 0 and p.status == "optimal"
    if method == "beam":
        assert isinstance(p.beam, BeamStats) and p.beam.passes >= 1
    if method == "auto":
        assert {c.method for c in p.candidates} >= {"ilp", "beam"}
        assert sum(c.chosen for c in p.candidates) == 1
        assert p.predicted_cost == min(c.predicted_cost for c in p.candidates)
        assert all(isinstance(c, Candidate) for c in p.candidates)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.method = "x"
    # the mapping view the Schedule's printing uses
    assert p["method"] == method and "solve_time" in p and "fallback" not in p
    code = str(s)
    assert f"# solver: {method}" in code.splitlines()[1]
    ex = s.explain()
    assert "group 0: blur_y" in ex and "cost " in ex and "footprint per tile" in ex
    # JSON: plain dict at the boundary, equal both ways, and typed again on request
    text = s.to_json()
    doc = json.loads(text)["provenance"]
    assert doc["method"] == method and isinstance(doc["groups"][0]["cost"], dict)
    t = ts.Schedule.from_json(text, pipe)
    assert t == s and t.to_json() == text
    back = Provenance.from_dict(t.provenance)
    assert back == p and back.groups == p.groups and back.ilp == p.ilp and back.beam == p.beam
    assert s.copy() == s


def test_a_plain_dict_copy_of_typed_provenance_still_goes_to_json():
    """``dict(provenance)`` keeps the typed records inside (GroupRecord, IlpStats): the
    JSON writer turns them into their dict forms at any depth."""
    pipe = blur()
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", EST, method="greedy")
    t = s.copy()
    t.provenance = dict(s.provenance)
    assert any(isinstance(g, GroupRecord) for g in t.provenance["groups"])
    assert json.loads(t.to_json())["provenance"] == json.loads(s.to_json())["provenance"]


def test_gpu_cost_and_infinite_costs_round_trip():
    gpu = GpuCost(256, (32, 8), 4096, 32, 0.75, 6, 132, 1000)
    c = Cost(math.inf, 1.0, 2.0, 3.0, 4.0, False, "too big", 10, 4096, 1.1, gpu)
    d = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert d["total"] is None and d["gpu"]["block"] == [32, 8]
    assert Cost.from_dict(d) == c
    p = Provenance("greedy", math.inf, groups=(GroupRecord("f", ("f",), (32, 8), c),))
    q = Provenance.from_dict(json.loads(json.dumps(p.to_dict(), allow_nan=False)))
    assert q.groups == p.groups and math.isinf(q.predicted_cost)
    assert "INFEASIBLE: too big" in str(q) and "256 threads per block (32x8)" in str(q)


def test_unknown_keys_are_kept_not_dropped():
    p = Provenance.from_dict({"method": "greedy", "predicted_cost": 1.0, "note": "by hand"})
    assert p["note"] == "by hand" and p.to_dict()["note"] == "by hand"
    assert p != Provenance("greedy", 1.0)


def test_explain_says_why_a_group_is_fused():
    """Each fused group records its members' cost apart; explain() prints the saving
    and the terms that moved, and the record survives the JSON round trip."""
    import tilesolve as ts
    from tilesolve.apps import get_app
    pipe, est = get_app("unsharp").build()
    s = ts.solve_schedule(pipe, "xeon-e5-2620v3", est, method="greedy")
    fused = [g for g in s.provenance.groups if len(g.members) > 1]
    assert fused and all(g.apart is not None for g in fused)
    g = fused[0]
    assert sum(g.apart.values()) > g.cost.total          # fusing paid for itself
    text = s.explain()
    assert "against" in text and "apart (saves" in text and "loads" in text
    again = ts.Schedule.from_json(s.to_json(), pipe)
    from tilesolve.solver.provenance import Provenance
    prov = Provenance.from_dict(again.provenance)
    assert [x.why_fused() for x in prov.groups if len(x.members) > 1][0] == g.why_fused()
