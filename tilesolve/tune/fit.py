"""Fit the cost model's free parameters to measured run times.

``fit_spec(spec, samples) -> (new_spec, FitReport)``; each sample is
``(pipeline, schedule, estimates, measured_ms)`` with a *solved* schedule (its
``provenance.groups`` names the (group, tiling) columns the model prices; see
``solver.predict``).

What is fitted, and why this way
--------------------------------
On a CPU spec the model's cost of a fixed schedule is linear in ``load_cost``
but for two terms: every term but ``loads``, ``stores``, ``streams`` and ``overlap``
is independent of it, ``loads`` and ``stores`` are ``load_cost`` times a number of
words, ``streams`` is ``load_cost`` times its unprefetched words, scaled by how
memory-bound the tile is, which moves with ``load_cost``, and ``overlap`` is a share of
the smaller of the memory time and the arithmetic moving it (``PricedSample.cost``
keeps both exact).  So each sample is priced **once**, with the starting spec, and
split into ``compute`` (arithmetic, lanes, registers, reductions, L1, parallel
waves, tile overhead), ``words`` (memory traffic), the streams and the overlap
columns; for any ``load_cost`` L the prediction is ``PricedSample.cost(L)``
(``compute + L * words`` plus the streams terms, less the overlaps) and the time is
``scale`` times it:

* ``load_cost``, the balance between memory and arithmetic: a 1-D search on
  log L (a log grid, then golden-section refinement);
* ``scale`` (milliseconds per cost unit): for a given L the best log-scale is
  the mean log residual, in closed form.

The error minimised is the RMS of the natural-log residual (a ratio: 0.1 is
about 10 % off), so fast and slow samples weigh alike.  ``load_cost`` moves
only when the data support it: enough samples, a memory share of the
predicted cost that varies between them (otherwise any L fits as well as any
other), and a best fit that explains them at least ``MIN_FIT_GAIN`` (10 %)
better than the starting value (a flat error curve is no evidence: see the
constant's comment); the report says why it did not move.  On a GPU spec only the scale is
fitted (its model has no ``load_cost``).

The CPU model reads no other continuous spec field: cores, threads, caches,
vector width and the parallelism threshold are hardware facts or hard
constraints of the solver, not weights, so they are not fitted here.

No scipy: numpy and a few hundred evaluations of a closed form.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..errors import TilesolveError
from .stats import spearman as rank_correlation

__all__ = ["fit_spec", "FitReport", "price_samples", "spearman", "PricedSample"]

MIN_SAMPLES_FOR_LOAD_COST = 4
# load_cost moves only where it explains the samples this much better (relative log
# error).  Measured: on the 2-core development machine, calibrate's random pipelines
# gave 0.46 -> 0.43 (7 %) for 15.4 against the default 40, and the schedules of the
# 15 benchmark apps solved with 15.4 ran 1.28x slower (geomean over the 11 whose
# schedule changed; nl_means 2.96x, max_filter 2.63x; benchmarks/ab.py --set spec=SPEC.yaml):
# a flat fit is no evidence.
MIN_FIT_GAIN = 0.10
MIN_MEMORY_SHARE_SPREAD = 0.05   # below: every load_cost explains the data as well
LOAD_COST_RANGE = (0.25, 4000.0)
_GRID = 241


@dataclass(frozen=True)
class PricedSample:
    """One sample priced with the starting spec: ``compute + L * words`` cost units,
    plus its columns' ``streams`` terms: per column ``(m, c, w)``, the unprefetched
    words (times ``cost_params.stream_miss_loads``), the compute and the memory words, whose term
    at load cost ``L`` is ``L * m * clip(1 - c / (L * w), 0, 1)``; less its columns'
    ``overlaps``: per column ``(a, w)``, the arithmetic of the stages that move memory and
    the memory words, whose term is ``share * min(a, L * w)`` (``cost.hidden_arithmetic``,
    ``share`` = ``cost_params.memory_overlap``)."""

    compute: float
    words: float
    measured_ms: float
    streams: tuple = ()
    overlaps: tuple = ()
    share: float = 0.0

    def cost(self, L: float) -> float:
        total = self.compute + L * self.words
        for m, c, w in self.streams:
            total += L * m * min(1.0, max(0.0, 1.0 - c / max(L * w, 1e-300)))
        for a, w in self.overlaps:
            total -= self.share * min(a, L * w)
        return total


@dataclass
class FitReport:
    """What ``fit_spec`` fitted and how well the model explains the samples.

    Errors are RMS natural-log residuals with the best scale for each
    ``load_cost`` (before: the starting spec's ``load_cost``); Spearman
    correlations are between predicted cost and measured time.
    """

    n_samples: int
    fitted: Tuple[str, ...]
    load_cost_before: Optional[float]
    load_cost_after: Optional[float]
    scale_ms_per_unit: float
    log_error_before: float
    log_error_after: float
    spearman_before: float
    spearman_after: float
    load_cost_range: Optional[Tuple[float, float]] = None
    notes: List[str] = field(default_factory=list)
    applied: bool = True          # False: calibrate kept the base's load_cost (see there)

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line: the fitted values and the error before and after."""
        parts = [f"{self.n_samples} samples"]
        if self.load_cost_after is not None:
            moved = "kept" if "load_cost" not in self.fitted else (
                "fitted" if self.applied else "fitted, not applied")
            parts.append(f"load_cost {self.load_cost_before:g} -> {self.load_cost_after:.4g} "
                         f"({moved})")
        parts.append(f"scale {self.scale_ms_per_unit:.4g} ms/unit")
        parts.append(f"log-error {self.log_error_before:.3f} -> {self.log_error_after:.3f}")
        parts.append(f"Spearman {self.spearman_before:.3f} -> {self.spearman_after:.3f}")
        return ", ".join(parts)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation of ``a`` and ``b`` (nan where ``stats.spearman`` gives
    None: fewer than 3 pairs, or a constant side)."""
    r = rank_correlation(list(a), list(b))
    return float("nan") if r is None else r


def price_samples(spec, samples) -> List[PricedSample]:
    """Price every sample once with ``spec``: its compute part and its memory words.

    Samples that share a pipeline, estimates and inlining choices share one ``Problem``."""
    from ..solver.cost import CostModel
    from ..solver.predict import cost_of_terms, schedule_costs, schedule_problem

    models: dict = {}
    out = []
    for i, sample in enumerate(samples):
        try:
            pipeline, schedule, estimates, ms = sample
        except (TypeError, ValueError):
            raise TilesolveError(f"fit_spec: sample {i} must be (pipeline, schedule, estimates, "
                                 f"measured_ms), got {sample!r}") from None
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not ms > 0 \
                or not math.isfinite(ms):
            raise TilesolveError(f"fit_spec: sample {i}: measured_ms must be a positive "
                                 f"number, got {ms!r}")
        prov = getattr(schedule, "provenance", None)
        inlined = tuple(sorted(prov.get("inlined") or ())) if prov is not None else ()
        key = (id(pipeline), repr(sorted((k, list(v)) for k, v in (estimates or {}).items())),
               inlined)
        model = models.get(key)
        if model is None:
            model = models[key] = CostModel(schedule_problem(pipeline, spec, estimates, schedule))
        costs = schedule_costs(model, schedule)
        total = sum(cost_of_terms(c) for c in costs)
        if spec.is_gpu:
            out.append(PricedSample(total, 0.0, float(ms)))
            continue
        L0 = spec.load_cost
        memory = sum(c.loads + c.stores for c in costs)
        streams = tuple((c.stream_misses / L0, c.arith + c.lanes, (c.loads + c.stores) / L0)
                        for c in costs if c.stream_misses)
        overlaps = tuple((c.moving, (c.loads + c.stores) / L0) for c in costs if c.overlap)
        out.append(PricedSample(total - memory - sum(c.streams for c in costs)
                                + sum(c.overlap for c in costs), memory / L0,
                                float(ms), streams, overlaps, spec.cost_params.memory_overlap))
    return out


def _fit_scale(pred: np.ndarray, y: np.ndarray) -> Tuple[float, float]:
    """(RMS log error, best log-scale) of predictions ``pred`` against log times ``y``."""
    r = y - np.log(pred)
    shift = float(r.mean())
    return float(np.sqrt(np.mean((r - shift) ** 2))), shift


def _predict(priced, L: float) -> np.ndarray:
    """Every sample's predicted cost at load cost ``L``."""
    return np.array([p.cost(L) for p in priced])


def _search_load_cost(priced, y) -> Tuple[float, float, Tuple[float, float]]:
    """Best L on a log grid, refined by golden section: (L, error, near-best range)."""
    lo, hi = math.log(LOAD_COST_RANGE[0]), math.log(LOAD_COST_RANGE[1])
    grid = np.linspace(lo, hi, _GRID)
    errs = np.array([_fit_scale(_predict(priced, math.exp(g)), y)[0] for g in grid])
    k = int(np.argmin(errs))
    a, b = grid[max(0, k - 1)], grid[min(len(grid) - 1, k + 1)]
    phi = (math.sqrt(5) - 1) / 2
    f = lambda g: _fit_scale(_predict(priced, math.exp(g)), y)[0]  # noqa: E731
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(60):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = f(d)
    g = (a + b) / 2
    best_err = f(g)
    near = np.append(grid[errs <= best_err * 1.05 + 1e-3], g)
    span = (math.exp(near.min()), math.exp(near.max()))
    return math.exp(g), best_err, span


def fit_spec(spec, samples, *, overhead_ms: float = 0.0, apply_load_cost: bool = True):
    """Fit ``spec``'s free cost parameters to ``samples``; returns ``(new_spec, FitReport)``.

    ``samples``: ``(pipeline, schedule, estimates, measured_ms)`` tuples; each
    schedule must be a solved one (``provenance.groups``).  ``overhead_ms``: a
    fixed cost of each measured call outside the compiled code (argument checks,
    Python), subtracted from every time first (times are kept at least 1 % of
    what they were).  ``new_spec`` is ``spec`` with the fitted ``load_cost``
    (CPU); the scale has no spec field and lives in the report.  With
    ``apply_load_cost=False`` the fitted ``load_cost`` is only reported
    (``FitReport.applied`` False): ``new_spec`` keeps the starting one, and the
    scale is that of the starting spec.
    """
    from ..specs import load_spec
    spec = load_spec(spec)
    samples = list(samples)
    if not samples:
        raise TilesolveError("fit_spec: no samples to fit (expected a list of (pipeline, "
                             "schedule, estimates, measured_ms))")
    priced = price_samples(spec, samples)
    compute = np.array([p.compute for p in priced])
    words = np.array([p.words for p in priced])
    ms = np.array([p.measured_ms for p in priced])
    ms = np.maximum(ms - float(overhead_ms), 0.01 * ms)
    y = np.log(ms)
    notes: List[str] = []
    if spec.is_gpu:
        err, shift = _fit_scale(compute, y)
        rho = spearman(compute, ms)
        notes.append("GPU spec: only the scale is fitted (the GPU model has no load_cost)")
        return spec, FitReport(len(priced), ("scale",), None, None, math.exp(shift), err, err,
                               rho, rho, None, notes)
    L0 = float(spec.load_cost)
    pred0 = _predict(priced, L0)
    if np.any(pred0 <= 0):
        raise TilesolveError("fit_spec: a sample's predicted cost is not positive; is its "
                             "schedule empty?")
    err0, _ = _fit_scale(pred0, y)
    rho0 = spearman(pred0, ms)
    share = L0 * words / pred0
    L, err, span, fitted = L0, err0, None, ("scale",)
    if len(priced) < MIN_SAMPLES_FOR_LOAD_COST:
        notes.append(f"load_cost kept: {len(priced)} samples, at least "
                     f"{MIN_SAMPLES_FOR_LOAD_COST} are needed")
    elif not np.any(words > 0) or share.max() - share.min() < MIN_MEMORY_SHARE_SPREAD:
        notes.append("load_cost kept: the memory share of the predicted cost hardly varies "
                     f"between samples ({share.min():.2f}..{share.max():.2f}); every "
                     "load_cost explains them alike")
    else:
        L, err, span = _search_load_cost(priced, y)
        fitted = ("load_cost", "scale")
        if L <= LOAD_COST_RANGE[0] * 1.01 or L >= LOAD_COST_RANGE[1] * 0.99:
            notes.append(f"load_cost kept: the best fit ({L:.4g}, log-error {err:.3f}) is at "
                         f"the edge of the searched range {LOAD_COST_RANGE}, so the samples "
                         "are explained by something else than the balance of memory and "
                         "arithmetic (other load on the machine, or a term the model lacks)")
            L, err, fitted = L0, err0, ("scale",)
        elif err > err0 * (1.0 - MIN_FIT_GAIN):
            notes.append(f"load_cost kept: the best fit ({L:.4g}, log-error {err:.3f}) explains "
                         f"the samples only {100.0 * (1.0 - err / err0) if err0 > 0 else 0.0:.0f} % "
                         f"better than {L0:g} (log-error {err0:.3f}); it moves for "
                         f"{100 * MIN_FIT_GAIN:.0f} % or more")
            L, err, fitted = L0, err0, ("scale",)
    pred = _predict(priced, L)
    applied = "load_cost" in fitted and apply_load_cost
    _, shift = _fit_scale(pred if applied else pred0, y)    # the scale of the spec returned
    new_spec = spec.replace(load_cost=round(L, 3)) if applied else spec
    report = FitReport(len(priced), fitted, L0, round(L, 3) if "load_cost" in fitted else L0,
                       math.exp(shift), err0, err, rho0, spearman(pred, ms), span, notes,
                       applied or "load_cost" not in fitted)
    return new_spec, report
