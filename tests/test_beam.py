"""Beam search: legal partitions, between the ILP optimum and greedy, exact
when wide, deterministic, time-limited, and schedules that compile and run."""
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.apps import get_app
from tilesolve.solver.beam import solve_beam
from tilesolve.solver.beam.state import JOIN, NEW, Space
from tilesolve.solver.beam.tiling_search import TilingSearch
from tilesolve.solver.cost import CostModel
from tilesolve.solver.greedy import greedy_groups
from tilesolve.solver.ilp import solve_ilp
from tilesolve.solver.ilp.columns import enumerate_groups
from tilesolve.solver.problem import Problem
from tilesolve.specs import load_spec

SMALL_MENU_SPEC = "xeon-e5-2620v3"


def random_dag_pipeline(draw_edges, n):
    """A pipeline of ``n`` stencil stages over one input: stage i reads the
    input (no edges) or the stages in ``draw_edges[i]``; stages nobody reads
    are the outputs.  (Same generator as tests/test_ilp.py.)"""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    fs = []
    for i in range(n):
        f = ts.Func(f"s{i}")
        srcs = draw_edges[i]
        if not srcs:
            f[x, y] = inp[x, y] * 0.5 + inp[x + 1, y]
        else:
            e = None
            for k, j in enumerate(srcs):
                g = fs[j]
                term = g[x, y - 1] + g[x, y + 1] if k % 2 == 0 else g[x - 1, y] * 2.0
                e = term if e is None else e + term
            f[x, y] = e
        fs.append(f)
    read = {j for srcs in draw_edges for j in srcs}
    return ts.Pipeline([fs[i] for i in range(n) if i not in read])


@st.composite
def dags(draw, max_n=6):
    n = draw(st.integers(2, max_n))
    edges = [[]]
    for i in range(1, n):
        k = draw(st.integers(1, min(2, i)))
        edges.append(sorted(draw(st.sets(st.integers(0, i - 1), min_size=k, max_size=k))))
    return n, edges


def _model(pipe, spec=SMALL_MENU_SPEC, size=(512, 384)):
    est = {o: list(size) for o in pipe.output_names}
    return CostModel(Problem(pipe, load_spec(spec), est, inline=False))


def _ilp_optimum(model):
    n = len(model.problem.funcs)
    _, prov = solve_ilp(model, time_limit=20, max_group_size=n, max_groups=10**5,
                        max_tilings_per_group=100)
    assert prov.status == "optimal"
    return prov.objective


def check_partition(problem, columns):
    """Every Func in exactly one group; every group legal (enumerate_groups'
    condition); each column's cost is the model's for that tiling."""
    covered = sorted(m for g, _, _ in columns for m in g.members)
    assert covered == sorted(problem.funcs)
    for g, t, c in columns:
        assert g.output in g.members
        for m in g.producers():
            assert problem.can_join_group(m, g.output), (g, m)
            assert problem.consumers[m] and problem.consumers[m] <= g.members, (g, m)
        assert c.feasible, (str(g), str(t), c.reason)


@settings(max_examples=10)
@given(dags())
def test_partition_legal_and_between_ilp_optimum_and_greedy(dag):
    n, edges = dag
    model = _model(random_dag_pipeline(edges, n))
    cols, prov = solve_beam(model, time_limit=20)
    check_partition(model.problem, cols)
    total = sum(c.total for _, _, c in cols)
    assert prov.predicted_cost == pytest.approx(total, rel=1e-12)
    assert total >= _ilp_optimum(model) * (1 - 1e-9)
    assert total <= greedy_groups(model).total * (1 + 1e-9)
    assert prov.method == "beam" and prov.beam.source in ("beam", "greedy")


@settings(max_examples=8)
@given(dags(max_n=5))
def test_wide_beam_equals_the_optimum_on_small_pipelines(dag):
    n, edges = dag
    model = _model(random_dag_pipeline(edges, n))
    cols, prov = solve_beam(model, time_limit=20, beam_width=64)
    assert prov.predicted_cost == pytest.approx(_ilp_optimum(model), rel=1e-9)
    check_partition(model.problem, cols)


def test_beam_beats_greedy_where_pairwise_merging_gets_stuck():
    # an 8-stage stencil chain: greedy's best merge at each step leads to a
    # worse partition; the beam finds the optimum
    pipe, est = get_app("stencil_chain").build(stages=8)
    # (a case of the model without the overlap of memory and arithmetic)
    spec = load_spec(SMALL_MENU_SPEC).with_cost_params(memory_overlap=0.0)
    model = CostModel(Problem(pipe, spec, est))
    cols, prov = solve_beam(model, time_limit=30)
    check_partition(model.problem, cols)
    greedy = greedy_groups(model).total
    assert prov.predicted_cost < greedy * (1 - 1e-4)
    assert prov.beam.source == "beam" and prov.greedy_cost == pytest.approx(greedy)
    assert prov.predicted_cost == pytest.approx(_ilp_optimum(model), rel=1e-9)


def _all_partitions(problem):
    """Every partition into legal groups (brute force over enumerate_groups)."""
    groups = enumerate_groups(problem, max_group_size=len(problem.funcs), max_groups=10**6)
    out = set()

    def rec(remaining, acc):
        if not remaining:
            out.add(frozenset(acc))
            return
        f = min(remaining, key=problem.funcs.index)
        for g in groups:
            if f in g.members and g.members <= remaining:
                rec(remaining - g.members, acc + [g])
    rec(frozenset(problem.funcs), [])
    return out


@settings(max_examples=10)
@given(dags(max_n=6))
def test_decisions_reach_each_legal_partition_once_and_closed_groups_stay(dag):
    n, edges = dag
    model = _model(random_dag_pipeline(edges, n))
    problem = model.problem
    space = Space(problem, TilingSearch(model, menu="full"))
    finals = []

    def expand(s, closed_before):
        closed = {g for g in s.groups if space.closed(s, g)}
        assert closed_before <= set(s.groups), "a closed group changed"
        if space.done(s):
            assert closed == set(s.groups)        # at the end every group is closed
            finals.append(s)
            return
        for c in space.children(s):
            expand(c, closed)
    expand(space.root(), set())
    reached = [frozenset(s.groups) for s in finals]
    assert len(reached) == len(set(reached))
    # every legal partition whose groups all have a feasible tiling is reached
    feasible = {p for p in _all_partitions(problem)
                if all(len(g.members) == 1 or space.costs.full(g) is not None for g in p)}
    assert set(reached) == feasible


def test_greedy_answer_is_a_decision_path():
    pipe = random_dag_pipeline([[], [0], [0, 1], [2], [1, 3]], 5)
    model = _model(pipe, size=(1536, 1024))
    greedy = greedy_groups(model)
    space = Space(model.problem, TilingSearch(model, menu="full"))
    decisions = space.decisions_of(greedy.columns)
    assert set(decisions) <= {NEW, JOIN}
    final = space.follow(decisions)[-1]
    assert set(final.groups) == {g for g, _, _ in greedy.columns}
    assert final.cost == pytest.approx(greedy.total, rel=1e-12)


def test_deterministic_for_a_seed():
    pipe = random_dag_pipeline([[], [0], [0, 1], [2], [1, 3], [4]], 6)
    runs = []
    for _ in range(2):
        model = _model(pipe, size=(1536, 1024))
        cols, prov = solve_beam(model, time_limit=20, seed=7, restarts=1, beam_width=4)
        runs.append(([(g, t) for g, t, _ in cols], prov.predicted_cost,
                     prov.beam.states_expanded, [r.best_cost for r in prov.beam.runs]))
    assert runs[0] == runs[1]
    assert len(runs[0][3]) == 4          # 3 passes + 1 restart


def test_time_limit_is_respected():
    n = 30
    edges = [[]] + [sorted({max(0, i - 1)} | ({i - 2} if i >= 2 else set())) for i in range(1, n)]
    model = _model(random_dag_pipeline(edges, n), size=(1024, 768))
    t0 = time.perf_counter()
    cols, prov = solve_beam(model, time_limit=0.3)
    elapsed = time.perf_counter() - t0
    check_partition(model.problem, cols)
    # greedy is not limited; the search stops at the deadline (one depth's work past it)
    assert elapsed < prov.beam.greedy_time + 0.3 + 2.0
    assert prov.beam.timed_out or prov.beam.passes == 3
    assert prov.predicted_cost <= prov.greedy_cost * (1 + 1e-9)


def test_gpu_columns_satisfy_hard_constraints():
    pipe = random_dag_pipeline([[], [0], [1], [1, 2], [3]], 5)
    model = _model(pipe, "h100", size=(1536, 1024))
    spec = model.spec
    cols, prov = solve_beam(model, time_limit=20)
    check_partition(model.problem, cols)
    for g, t, c in cols:
        assert math.isfinite(c.total) and not t.is_untiled()
        assert c.gpu.threads <= spec.max_threads_per_block
        assert math.prod(s for s in t.sizes if s is not None) % spec.warp_size == 0
        assert c.gpu.shared_bytes <= spec.shared_mem_per_block_bytes
        assert c.gpu.occupancy >= spec.occupancy_threshold
    assert prov.predicted_cost <= greedy_groups(model).total * (1 + 1e-9)
    sched = ts.solve_schedule(pipe, "h100", {o: [1536, 1024] for o in pipe.output_names},
                              method="beam")
    assert sched.provenance.method == "beam" and sched.target == "cuda"


@pytest.mark.parametrize("name", ["blur", "unsharp"])
def test_solve_schedule_beam_compiles_and_matches_reference(name):
    app = get_app(name)
    params = dict(getattr(app, "SMALL_BUILD", {}))
    sizes = list(app.SMALL_SIZE)
    pipe, est = app.build(sizes=sizes, **params)
    sched = ts.solve_schedule(pipe, "host", est, method="beam", time_limit=5)
    prov = sched.provenance
    assert prov.method == "beam" and prov.beam.beam_width == 32
    assert prov.predicted_cost > 0 and prov.beam.states_expanded > 0 and prov.solve_time is not None
    inputs = app.make_inputs(sizes, seed=0, **params)
    got = ts.compile(pipe, sched).realize(sizes, **inputs)
    want = ts.reference.realize(pipe, sizes, **inputs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bad_options_name_the_option():
    pipe = random_dag_pipeline([[], [0]], 2)
    est = {"s1": [64, 48]}
    with pytest.raises(ts.SolverError, match="unknown beam option 'solver'"):
        ts.solve_schedule(pipe, "host", est, method="beam", solver="pulp")
    with pytest.raises(ts.SolverError, match="beam_width"):
        solve_beam(_model(pipe), beam_width=0)
    with pytest.raises(ts.SolverError, match="menu"):
        solve_beam(_model(pipe), menu="everything")
    assert "beam" in ts.solver.available_methods()
