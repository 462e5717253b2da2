"""The exact model, independent of the solver that solves it.

Variables: one binary ``x[j]`` per column j = (group, tiling).
Constraints:

* **cover**: every non-inlined Func is in exactly one chosen column's group
  (``sum_{j: f in group_j} x[j] == 1``) — a partition of the pipeline into
  groups, each with one tiling;
* **memory budget** (coupling): the bytes of root-level intermediates — the
  buffers of chosen groups whose output is not a pipeline output — sum to at
  most ``memory_budget_bytes`` (default: unlimited; ``solve_schedule(...,
  memory_budget_bytes=N)`` sets it).  Fusing more producers into tiles lowers
  this sum, so a tight budget forces fusion even where it costs recompute;
* **kernel launches** (GPU specs): each chosen column pays the spec's
  ``launch_overhead_us`` (already inside its cost), so fewer, larger kernels
  win when kernels are short.

Objective: minimize the sum of the chosen columns' costs.  CP-SAT needs
integer coefficients: costs are scaled by ``scale`` so the largest column
costs about 1e12 and rounded (relative error <= 1e-12 of the largest; a tie
within that may resolve either way).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Formulation:
    columns: list              # of Column
    funcs: tuple               # Func names to cover
    cover: dict                # func -> [column index]
    budget: float | None       # memory budget in bytes, or None
    scale: float

    def int_cost(self, j: int) -> int:
        return int(round(self.columns[j].cost.total * self.scale))

    def objective(self, chosen) -> float:
        return sum(self.columns[j].cost.total for j in chosen)

    def check(self, chosen) -> None:
        """Raise AssertionError unless ``chosen`` is a feasible solution."""
        for f in self.funcs:
            n = sum(1 for j in chosen if f in self.columns[j].group.members)
            assert n == 1, f"{f} covered {n} times"
        if self.budget is not None:
            assert sum(self.columns[j].root_bytes for j in chosen) <= self.budget


def formulate(problem, columns, memory_budget_bytes=None) -> Formulation:
    columns = [c for c in columns if math.isfinite(c.cost.total)]
    cover = {f: [] for f in problem.funcs}
    for j, c in enumerate(columns):
        for m in c.group.members:
            cover[m].append(j)
    top = max((c.cost.total for c in columns), default=1.0) or 1.0
    scale = 1e12 / top
    return Formulation(columns, tuple(problem.funcs), cover, memory_budget_bytes, scale)
