"""Greedy agglomerative grouping with joint tile-size choice (Mullapudi 2016)."""
from .grouping import GreedyResult, best_tiling, greedy_groups  # noqa: F401
