"""tilesolve's time over each of Halide's autoschedulers', per app and autoscheduler
(``tilesolve bench --plot`` draws them: ``tilesolve.viz.bench_plot``).

Unlike ``summary.best_vs_halide`` (each app's best tilesolve row over its best Halide row)
this keeps one tilesolve method and every autoscheduler apart, and says why a pair has
no ratio.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TilesolveError
from .summary import HALIDE_PREFIX, _ms

__all__ = ["BenchRatios", "bench_ratios"]


@dataclass(frozen=True)
class BenchRatios:
    ours: str                    # the tilesolve method compared
    series: tuple                # Halide autoschedulers, in the order first met
    apps: tuple                  # apps with a tilesolve time, in the order first met
    ratio: dict                  # (app, autoscheduler) -> ours / theirs (ms over ms)
    missing: dict                # (app, autoscheduler) -> why there is no ratio


def bench_ratios(records, ours: str | None = None) -> BenchRatios:
    """For each app, the fastest run of tilesolve method ``ours`` (default: the first
    solver method of the records, naive left out) over that of each
    ``halide-<autoscheduler>`` row; ``records``: a bench JSON's (plain dicts)."""
    ts_rows = [r for r in records if r.get("backend") == "tilesolve-cpu"
               and r.get("method") != "naive"]
    methods = list(dict.fromkeys(r.get("method") for r in ts_rows))
    if ours is None:
        if not methods:
            raise TilesolveError("bench ratios: the records hold no tilesolve solver rows (only "
                                 "naive, or none): nothing to compare")
        ours = methods[0]
    elif ours not in methods:
        raise TilesolveError(f"bench ratios: no rows of tilesolve method {ours!r}; the records "
                             f"have {', '.join(methods) or 'none'}")
    series = list(dict.fromkeys(r["method"][len(HALIDE_PREFIX):] for r in records
                                if str(r.get("method", "")).startswith(HALIDE_PREFIX)))
    if not series:
        raise TilesolveError("bench ratios: the records hold no Halide autoscheduler rows; run "
                             "`tilesolve bench --compare-halide --json FILE`")
    mine = {r["app"]: r for r in ts_rows if r.get("method") == ours}
    theirs = {(r["app"], r["method"][len(HALIDE_PREFIX):]): r for r in records
              if str(r.get("method", "")).startswith(HALIDE_PREFIX)}
    ratio, missing = {}, {}
    for app, r in mine.items():
        a = _ms(r)
        for s in series:
            h = theirs.get((app, s))
            b = _ms(h) if h is not None else None
            if a is not None and b is not None:
                ratio[(app, s)] = a / b
            else:
                why = (r if a is None else h or {}).get("detail") or "no row"
                missing[(app, s)] = f"{ours if a is None else s}: {why}"
    return BenchRatios(ours, tuple(series), tuple(mine), ratio, missing)
