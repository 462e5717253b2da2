"""Beam search over groupings and tilings (Adams 2019, Anderson 2021), on the
same space and cost model as greedy and the ILP.

``solve_beam(model, time_limit, seed, **options) -> (columns, provenance)``;
see ``solve.py`` for the passes, ``state.py`` for the decisions,
``search.py`` for one pass and ``tiling_search.py`` for per-group tilings.
"""
from .solve import solve_beam  # noqa: F401
