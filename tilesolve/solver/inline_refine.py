"""Inlining revisited after grouping.

``choose_inlined`` decides before grouping, by counting work only: a Func whose
inlining would evaluate it more often than once per point stays a Func, on the
assumption that a group will hold it in cache.  When no group can (its consumers
end up in different groups), it is computed at root: a whole-region buffer written
to memory and read back by each consumer.  local_laplacian's ``gPyramid_0`` (the
image remapped at every intensity level, 8 copies of the image, 200 MB at the paper
size) is read by the next pyramid level and by the Laplacian level 0; computed at
root it costs more memory traffic than recomputing it inside its two readers.

So after a greedy grouping, each large Func the grouping left at root is tried
inlined, and so is each producer computed inside a group (``inline_members``) whose
arithmetic would then overlap memory traffic: a member that reads and writes only
in-cache buffers runs while memory idles, and inlined into a stage that moves memory
(``cost_terms.moves_memory``) its arithmetic overlaps that traffic
(``cost.hidden_arithmetic``).
For each trial the problem is made again with the Func inlined, grouped again by
greedy, and the cheapest answer in the cost model is kept when it is at least
``inline_min_gain`` cheaper.  Up to ``inline_rounds`` rounds, each trying at most
``inline_trials`` roots, largest first, and ``inline_member_trials`` members, the most
arithmetic first (the spec's ``cost_params``).
Only Funcs ``choose_inlined`` could inline qualify (pure, not an output, no
updates, not read at a data-dependent index or by an update), only roots whose
region is larger than the spec's cache for tiles (smaller ones stay in cache
anyway), and only those that inlining would evaluate at most ``inline_max_recompute``
times per point (``inline.recompute_factors``): a stencil inlined into a stencil
multiplies its work by the footprint, which no saved memory traffic repays, and
each trial costs a greedy grouping.

GPU specs run the same trials on roots only, ``gpu_inline_trials`` a round (a GPU
greedy grouping of local_laplacian takes seconds): there ``gPyramid_0`` inlined into its
readers' kernels saves 2.7x of the DRAM sectors at the launch level.
"""
from __future__ import annotations

from ..model import expr as E
from ..model.visit import walk
from .cost_terms import moves_memory
from .inline import data_dependent, recompute_factors

def _read_at_data_dependent_index(problem, name: str) -> bool:
    for c in problem.consumers.get(name, ()):
        for d in problem.definitions[c]:
            for e in (d.value,) + tuple(d.args):
                for n in walk(e):
                    if isinstance(n, E.Call) and n.target.name == name and data_dependent(n):
                        return True
    return False


def _would_overlap(problem, group, name: str) -> bool:
    """Whether inlining member ``name`` can put its arithmetic under memory traffic:
    it moves memory itself (its readers would, once it is inlined into them), or every
    reader does.  Inlining any other member only recomputes it in cache."""
    return moves_memory(problem, group, name) or all(
        moves_memory(problem, group, c) for c in problem.consumers[name] if c in group.members)


def candidates(problem, result, tried=frozenset()) -> list:
    """The Funcs of greedy's ``result`` (but those ``tried``) to try inlining in one
    round: up to ``inline_trials`` (``gpu_inline_trials`` on a GPU spec) at root whose
    buffer outgrows the cache for tiles, largest first; then, on a CPU spec with
    ``inline_members``, up to ``inline_member_trials`` producers computed inside a group
    whose arithmetic inlining would overlap with memory traffic (``_would_overlap``),
    the most arithmetic first."""
    cp = problem.spec.cost_params
    roots, members = [], []
    for cols in result.columns:
        group = cols[0]
        for name in sorted(group.members):
            if (problem.is_output(name) or problem.has_updates(name) or name in tried
                    or name in problem.update_readers or name in problem.keep):
                continue
            if name == group.output:
                size = problem.region_points(name) * problem.bytes_per_point(name)
                if size > problem.spec.tile_cache_bytes:
                    roots.append((size, name))
            elif (cp.inline_members and not problem.spec.is_gpu
                  and _would_overlap(problem, group, name)):
                (ops, loads), _ = problem.stage_info[name]
                members.append((problem.region_points(name) * (ops + loads), name))
    out = [n for _, n in roots + members if not _read_at_data_dependent_index(problem, n)]
    factors = recompute_factors(problem.pipeline, problem.regions, problem.inlined, out)

    def pick(ranked, most, count):
        return [n for _, n in sorted(ranked, reverse=True)
                if n in factors and factors[n] <= most][:count]
    trials = cp.gpu_inline_trials if problem.spec.is_gpu else cp.inline_trials
    return (pick(roots, cp.inline_max_recompute, trials)
            + pick(members, cp.inline_member_recompute, cp.inline_member_trials))


def refine_inlining(problem):
    """(problem, its CostModel, greedy result) after the inlining trials above (the
    given problem, its model and greedy grouping when no trial pays).  The model
    keeps greedy's answer, so the solvers that start from it do not group again."""
    from .cost import CostModel
    from .greedy import greedy_groups
    from .problem import Problem
    model = CostModel(problem)
    result = greedy_groups(model)
    cp = problem.spec.cost_params
    tried: set = set()
    for _ in range(cp.inline_rounds):
        names = candidates(problem, result, tried)
        best = None
        for name in names:
            tried.add(name)
            trial = Problem(problem.pipeline, problem.spec, problem.estimates,
                            params=problem.param_values, inlined=problem.inlined | {name},
                            fixed=problem.fixed)
            m = CostModel(trial)
            r = greedy_groups(m)
            if r.total < result.total * (1.0 - cp.inline_min_gain) and (best is None
                                                             or r.total < best[2].total):
                best = (trial, m, r)
        if best is None:
            break
        problem, model, result = best
    return problem, model, result
