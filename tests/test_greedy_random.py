"""The greedy (and ILP) solver on random small pipelines: legal, correct, deterministic.

A pipeline is drawn as a *recipe* (plain data) and built from it, so the same
recipe can be built twice.  Recipes are 2-d chains of 1-5 stages over one
input behind a boundary condition: pointwise, stencils of 2-9 taps within 5x5, 2x
downsampling, 2x upsampling, an inline ``ts.sum`` reduction and a window (an
in-place max, min or sum over 8-60 taps: the solver may block it for its
accumulation chain), computed in
float32, uint8 (wrapping) or int32 from a float32, uint8 or int32 input.

* ``solve_schedule(pipe, "host", estimates, method="greedy")`` returns a
  schedule that validates, compiles, and whose output equals
  ``ts.reference.realize`` (integers exactly, floats within 1e-6 relative: no
  transcendental math here and no reassociation in the compiler);
* the same recipe, built again, gets the same schedule (``to_json`` with the
  provenance's timing fields removed, and the printed code);
* ``method="ilp"`` (2 s limit) on a few recipes: legal and correct too.

Estimates are the sizes realized, or 4 or 16 times larger, sometimes rounded up
to a multiple of 64 (as image sizes often are, so that blocks divide them): at the realized
size the solver's tiles then cover the output several times over, or a few
times with partial tiles at the edges (fused tile loops, producers per tile).  Compiling costs about a
second an example, so the compiling tests run a fraction of the profile's
examples.
"""
from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.model import types as T

TYPES = {"float32": T.float32, "uint8": T.uint8, "int32": T.int32}
KINDS = ("pointwise", "stencil", "down", "up", "reduce", "window")
_FEW = max(4, settings().max_examples // 6)
_FEWER = max(2, settings().max_examples // 12)


@st.composite
def recipes(draw):
    """A pipeline recipe: input type, boundary, stages, output sizes, input sizes."""
    stages = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(KINDS))
        st_ = {"kind": kind, "type": draw(st.sampled_from(sorted(TYPES))),
               "from": draw(st.integers(0, len(stages)))}      # index into earlier values
        if kind == "stencil":
            offs = st.tuples(st.integers(-2, 2), st.integers(-2, 2))
            st_["taps"] = draw(st.lists(offs, min_size=2, max_size=9, unique=True))
        elif kind == "down":
            st_["phase"] = draw(st.integers(0, 1))
        elif kind == "reduce":
            st_["lo"] = draw(st.integers(-2, 0))
            st_["n"] = draw(st.integers(2, 4))
        elif kind == "pointwise":
            st_["other"] = draw(st.integers(0, len(stages)))
        elif kind == "window":      # an in-place update over a long RDom (a chain)
            st_["n"] = draw(st.integers(8, 60))
            st_["op"] = draw(st.sampled_from(["max", "min", "add"]))
        stages.append(st_)
    return {"input": draw(st.sampled_from(sorted(TYPES))),
            "boundary": draw(st.sampled_from(["repeat_edge", "constant_exterior"])),
            "stages": stages,
            "sizes": [draw(st.integers(9, 70)), draw(st.integers(9, 50))],
            "input_sizes": [draw(st.integers(4, 80)), draw(st.integers(4, 60))],
            "estimate_scale": draw(st.sampled_from([1, 1, 4, 16])),
            "estimate_round": draw(st.sampled_from([1, 64]))}


def build(recipe):
    """The Pipeline of ``recipe`` (fresh Funcs each call) and its estimates."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(TYPES[recipe["input"]], 2, "input")
    values = [getattr(ts.boundary, recipe["boundary"])(inp)]
    for i, s in enumerate(recipe["stages"]):
        t = TYPES[s["type"]]
        p = values[s["from"]]
        f = ts.Func(f"s{i}")
        if s["kind"] == "pointwise":
            f[x, y] = ts.cast(t, p[x, y]) * ts.cast(t, 3) + ts.cast(t, values[s["other"]][x, y])
        elif s["kind"] == "stencil":
            e = None
            for k, (dx, dy) in enumerate(s["taps"]):
                term = ts.cast(t, p[x + dx, y + dy]) * ts.cast(t, k + 1)
                e = term if e is None else e + term
            f[x, y] = e
        elif s["kind"] == "down":
            f[x, y] = ts.cast(t, p[2 * x + s["phase"], 2 * y])
        elif s["kind"] == "up":
            f[x, y] = ts.cast(t, p[x / 2, y / 2]) + ts.cast(t, p[(x + 1) / 2, y / 2])
        elif s["kind"] == "window":
            r = ts.RDom((0, s["n"]), name=f"r{i}")
            f[x, y] = ts.cast(t, p[x, y])
            v = ts.cast(t, p[x + r.x, y])
            f[x, y] = (f[x, y] + v if s["op"] == "add" else
                       getattr(ts, s["op"])(f[x, y], v))
        else:
            r = ts.RDom((s["lo"], s["n"]), name=f"r{i}")
            f[x, y] = ts.sum(ts.cast(t, p[x + r.x, y + r.x]), name=f"sum{i}")
        values.append(f)
    pipe = ts.Pipeline(values[-1])
    k, q = recipe.get("estimate_scale", 1), recipe.get("estimate_round", 1)
    return pipe, {values[-1].name: [-(-v * k // q) * q for v in recipe["sizes"]],
                  "input": [-(-v * k // q) * q for v in recipe["input_sizes"]]}


def inputs_for(recipe, seed=0):
    t = TYPES[recipe["input"]]
    w, h = recipe["input_sizes"]
    g = np.random.default_rng(seed)
    if t.is_float():
        a = g.random((h, w), dtype=np.float32)
    elif t == T.uint8:
        a = g.integers(0, 256, (h, w)).astype(np.uint8)
    else:
        a = g.integers(-1000, 1000, (h, w)).astype(np.int32)
    return {"input": a}


def schedule_key(s) -> tuple:
    """The schedule without its timing: JSON minus provenance ``*time*`` fields, and
    the printed code minus comment lines."""
    doc = json.loads(s.to_json())
    doc["provenance"] = {k: v for k, v in doc["provenance"].items() if "time" not in k}
    code = "\n".join(ln for ln in str(s).splitlines() if not ln.startswith("#"))
    return json.dumps(doc, sort_keys=True), code


def check_compiled(recipe, method):
    pipe, est = build(recipe)
    s = ts.solve_schedule(pipe, "host", estimates=est, method=method, time_limit=2.0)
    assert s.provenance.method in (method, "greedy")    # the ILP may fall back to greedy
    s.validate()
    again = ts.Schedule.from_json(s.to_json(), pipe)
    assert str(again) == str(s)
    inputs = inputs_for(recipe)
    want = ts.reference.realize(pipe, recipe["sizes"], **inputs)
    got = ts.compile(pipe, s).realize(recipe["sizes"], **inputs)
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    else:
        np.testing.assert_array_equal(got, want)
    return s


@settings(max_examples=_FEW)
@given(recipes())
def test_greedy_schedules_compile_and_match_the_reference(recipe):
    check_compiled(recipe, "greedy")


@settings(max_examples=_FEWER)
@given(recipes())
def test_ilp_schedules_compile_and_match_the_reference(recipe):
    check_compiled(recipe, "ilp")


@given(recipes())
def test_greedy_is_deterministic(recipe):
    pipe1, est1 = build(recipe)
    pipe2, est2 = build(recipe)
    a = ts.solve_schedule(pipe1, "host", estimates=est1, method="greedy")
    b = ts.solve_schedule(pipe2, "host", estimates=est2, method="greedy")
    c = ts.solve_schedule(pipe1, "host", estimates=est1, method="greedy")
    assert schedule_key(a) == schedule_key(b) == schedule_key(c)


def test_schedule_key_sees_a_change():
    """schedule_key tells two different schedules apart (the determinism test can fail)."""
    recipe = {"input": "float32", "boundary": "repeat_edge",
              "stages": [{"kind": "stencil", "type": "float32", "from": 0,
                          "taps": [(-1, 0), (1, 0)]},
                         {"kind": "stencil", "type": "float32", "from": 1,
                          "taps": [(0, -1), (0, 1)]}],
              "sizes": [64, 48], "input_sizes": [64, 48]}
    pipe, est = build(recipe)
    s = ts.solve_schedule(pipe, "host", estimates=est, method="greedy")
    t = s.copy()
    t["s0"].compute_root()
    assert schedule_key(s) != schedule_key(t)
    u = s.copy()
    u.provenance = u.provenance.replace(solve_time=123.0)
    assert schedule_key(s) == schedule_key(u)
