"""The GPU cost model's memos change no cost (solver/cost_gpu.py, solver/gpu_sectors.py).

Each member's counts kept per menu (``gpu_costs``' ``memo``) and shared by the problems
of one pipeline (``cost_gpu._COUNTS``), and ``site_sectors``' answers shared by problems
(``gpu_sectors._SHARED``), give every column of every group the cost, block and
mappings it has when computed with nothing kept: on a fresh problem, and on a second
problem of the same pipeline (another inlining choice) that finds them kept.
"""
from __future__ import annotations

import pytest

import tilesolve as ts
from tilesolve.apps import APPS
from tilesolve.solver import cost_gpu, gpu_sectors
from tilesolve.solver.cost import CostModel
from tilesolve.solver.problem import Problem
from tilesolve.solver.space import Group

H100 = ts.load_spec("h100")


def _forget():
    cost_gpu._COUNTS.clear()
    cost_gpu._CONTEXTS.clear()
    gpu_sectors._SHARED.clear()


def _groups(problem) -> list:
    """Every Func alone, and with each of its producers that only it reads."""
    out = []
    for f in problem.funcs:
        out.append(Group.singleton(f))
        for q in sorted(problem.funcs):
            if q != f and not problem.is_output(q) and problem.consumers.get(q) == {f}:
                out.append(Group(f, frozenset({f, q})))
    return out


def _kept(problem, groups) -> dict:
    model = CostModel(problem)
    return {g: [(c.total, c.gpu) for c in (model.costs(g).cost(i)
                                           for i in range(len(model.menu(g.output).tilings)))]
            for g in groups}


def _afresh(problem, groups) -> dict:
    model = CostModel(problem)
    out = {}
    for g in groups:
        _forget()
        menu = model.menu(g.output)
        costs = cost_gpu.gpu_costs(model, g, menu.facts.group(g.members), menu.tilings,
                                   menu.n_tiles)
        out[g] = [(c.total, c.gpu) for c in costs]
    return out


@pytest.mark.parametrize("app,sizes", [("harris", [256, 192]),
                                       ("local_laplacian", [256, 192, 3])])
def test_kept_counts_give_the_costs_computed_afresh(app, sizes):
    pipe, est = APPS[app].build(sizes)
    first = Problem(pipe, H100, est)
    groups = _groups(first)
    _forget()
    kept = _kept(first, groups)
    # a problem of the same pipeline with one more Func inlined finds the first's counts
    name = next(n for n in sorted(first.funcs) if not first.is_output(n)
                and not first.has_updates(n) and n not in first.update_readers)
    second = Problem(pipe, H100, first.estimates, params=first.param_values,
                     inlined=first.inlined | {name})
    groups2 = _groups(second)
    kept2 = _kept(second, groups2)
    assert kept == _afresh(Problem(pipe, H100, est), groups)
    assert kept2 == _afresh(Problem(pipe, H100, first.estimates, params=first.param_values,
                                    inlined=first.inlined | {name}), groups2)
