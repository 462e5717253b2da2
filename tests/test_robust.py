"""auto's tie-break (solver/robust.py): when the ILP's and beam's answers differ and
are within ``cost_params.auto_tie`` in model cost, the answer whose worst cost over
the perturbed models is closest to the best is kept, and the provenance says so."""
import dataclasses

import pytest

import tilesolve as ts
from tilesolve.apps.validation import PIPELINES
from tilesolve.solver import CostModel, Problem
from tilesolve.solver.greedy import greedy_groups
from tilesolve.solver.robust import perturbed_problems, robust_choice
from tilesolve.specs import load_spec

# without the overlap of memory and arithmetic, laplacian_blend's ILP and beam answers
# differ: what the tie-break needs
SPEC = load_spec("xeon-e5-2620v3").with_cost_params(memory_overlap=0.0)


def _with(**params):
    return dataclasses.replace(SPEC, cost_params=dataclasses.replace(SPEC.cost_params, **params))


def _two_answers(spec):
    """Two different answers for laplacian_blend on one model: auto's ILP and beam."""
    p, est = PIPELINES["laplacian_blend"].build()
    s = ts.solve_schedule(p, spec, est, method="auto")
    return p, est, s


def test_a_tie_is_broken_by_the_worst_ratio_over_the_perturbed_models():
    p, est, s = _two_answers(_with(auto_tie=10.0))          # every pair is a tie
    prov = s.provenance
    ratios = [c.worst_ratio for c in prov.candidates]
    assert len(prov.candidates) == 2 and all(r is not None and r >= 1.0 for r in ratios)
    chosen = [c for c in prov.candidates if c.chosen]
    assert chosen[0].worst_ratio == min(ratios)
    assert "within 1000% in model cost" in prov.robust and "14 models" in prov.robust
    assert "at worst" in s.explain() and "within 1000%" in s.explain()


def test_the_ratios_are_the_answers_costs_under_each_perturbed_model():
    p, est = PIPELINES["laplacian_blend"].build()
    problem = Problem(p, _with(auto_tie=10.0), est)
    model = CostModel(problem)
    from tilesolve.solver.beam import solve_beam
    from tilesolve.solver.ilp import solve_ilp
    ilp_cols, ilp_prov = solve_ilp(model, time_limit=20, seed=0)
    beam_cols, beam_prov = solve_beam(model, time_limit=5, seed=0)
    answers = [(ilp_cols, ilp_prov.predicted_cost), (beam_cols, beam_prov.predicted_cost)]
    pick, worst, how = robust_choice(model, answers)
    scenarios = perturbed_problems(problem)
    assert len(scenarios) == 14
    want = [1.0, 1.0]
    for _, prob in scenarios:                 # priced afresh, with the full menus
        m = CostModel(prob)
        costs = [sum(m.cost(g, t).total for g, t, *_ in cols) for cols, _ in answers]
        want = [max(w, c / min(costs)) for w, c in zip(want, costs)]
    assert ilp_cols != beam_cols                      # two different answers
    assert worst == pytest.approx(tuple(want))
    assert pick == min(range(2), key=lambda i: (round(want[i], 9), answers[i][1], i))


def test_no_tie_break_without_a_tie_or_with_one_answer():
    p, est = PIPELINES["laplacian_blend"].build()
    model = CostModel(Problem(p, _with(auto_tie=0.0), est))
    g = greedy_groups(model)
    assert robust_choice(model, [(g.columns, g.total), (g.columns, g.total)]) == (0, None, None)
    strict = CostModel(Problem(p, _with(auto_tie=0.0), est))
    far = [(g.columns, g.total), (g.columns[:1], g.total * 2)]
    assert robust_choice(strict, far) == (0, None, None)
