"""Interleaved timing for the benchmark scripts run as ``python benchmarks/NAME.py``."""
from __future__ import annotations

import math
import time


def fastest(runs: dict, rounds: int) -> dict:
    """Seconds of the fastest run of each callable of ``runs``, timed in ``rounds``
    interleaved rounds: each round runs every callable twice and times the second
    run, so a slow spell of the machine costs every build alike."""
    best = dict.fromkeys(runs, math.inf)
    for _ in range(rounds):
        for k, run in runs.items():
            run()
            t0 = time.perf_counter()
            run()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best
