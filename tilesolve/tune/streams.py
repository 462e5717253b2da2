"""Fit the cost model's ``streams`` weight (the spec's ``cost_params.stream_miss_loads``) to
this machine.

The ``streams`` term (``solver/cost_terms.py``) charges a tile that touches more
rows of memory than the hardware prefetcher follows: the runs it starts cold
cost ``stream_miss_loads`` extra loads a word.  How many streams a prefetcher
keeps, and what a cold run costs, differ from one core to the next: on the Intel
Xeon the term was fitted on, blur's tiles 128 x 64 ran 1.6x slower than 128 x 16;
on an AMD EPYC, 128 x 256 ran as fast as 128 x 16, and the term's ranking of the
same tiles fell to a Spearman rho of 0.11 (0.34 without it).  So calibration
measures it.

The measurement: a two-stage stencil (``rows_v`` of ``rows_h``, three taps each,
the second across rows) over an image larger than the caches, its producer
computed per tile of the output, at tiles of one width and several heights (a
taller tile touches more rows at once) and a narrower width; each schedule is
built from its (group, tiling) column, so the model prices exactly what runs,
checked against the reference and timed.  Each time is then explained as
``scale * (rest + w * streams)``, ``streams`` being the term at ``w = 1``: the
``w`` with the least RMS error in log time (the scale fitted in closed form for
each) is the fitted ``stream_miss_loads``.  As with ``load_cost``, the value moves
only when it explains the times at least ``MIN_FIT_GAIN`` better than the base's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional

import numpy as np

__all__ = ["StreamsFit", "fit_stream_weight", "streams_case", "measure_streams",
           "stream_pipeline"]

FULL_SIZE = (6400, 4800)          # 123 MB in and out: past any core's caches
QUICK_SIZE = (1024, 768)
FULL_TILES = ((128, 8), (128, 16), (128, 32), (128, 64), (128, 128), (128, 256),
              (32, 16), (32, 64), (32, 256))
QUICK_TILES = ((128, 8), (128, 64), (32, 128))
WEIGHTS = np.concatenate([np.arange(0.0, 4.0, 0.125), np.arange(4.0, 24.01, 0.5)])


@dataclass
class StreamsFit:
    """What ``fit_stream_weight`` found: the weight before and after, and the errors."""

    before: float                 # the base spec's weight (its built-in value if unset)
    best: float                   # the weight with the least error
    fitted: bool                  # whether ``best`` explains the times well enough to use
    error_before: float           # RMS log error with the best scale, at ``before``
    error_best: float
    samples: int
    notes: List[str] = field(default_factory=list)

    @property
    def value(self) -> float:
        return self.best if self.fitted else self.before

    def how(self, size, threads) -> str:
        """One line for the spec's comment: what was measured and fitted."""
        what = (f"{self.samples} tilings of a 2-stage stencil over {size[0]}x{size[1]} "
                f"float32, {threads} threads")
        errs = f"log-error {self.error_before:.3f} at {self.before:g} -> {self.error_best:.3f} " \
               f"at {self.best:g}"
        if self.fitted:
            return f"fitted to {what}; {errs}"
        why = "; ".join(self.notes) or "the times do not support a fit"
        return f"kept ({self.before:g}): {why}; {what}; {errs}"


def stream_pipeline():
    """``rows_v(x, y)``: three rows of ``rows_h`` (three columns of ``input``) averaged."""
    import tilesolve as ts
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    h, v = ts.Func("rows_h"), ts.Func("rows_v")
    h[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) * (1.0 / 3.0)
    v[x, y] = (h[x, y] + h[x, y + 1] + h[x, y + 2]) * (1.0 / 3.0)
    return ts.Pipeline(v)


def streams_case(spec, quick: bool = False, seed: int = 0):
    """The training case: the pipeline, its input and one schedule per tiling, each
    built from its (group, tiling) column (``training.TrainingCase``)."""
    from ..solver.cost import CostModel
    from ..solver.problem import Problem
    from ..solver.space import Group, Tiling
    from .training import TrainingCase, _columns_schedule
    w, h = QUICK_SIZE if quick else FULL_SIZE
    pipe = stream_pipeline()
    est = {"rows_v": [w, h], "input": [w + 2, h + 2]}
    problem = Problem(pipe, spec, est)
    model = CostModel(problem)
    group = Group("rows_v", frozenset({"rows_h", "rows_v"}))
    rng = np.random.default_rng(seed)
    case = TrainingCase("streams", "stencils", "2-stage 3-tap stencil, producer per tile",
                        pipe, [w, h], est,
                        {"input": rng.random((h + 2, w + 2), dtype=np.float32)})
    for tx, ty in (QUICK_TILES if quick else FULL_TILES):
        t = Tiling((tx, ty))
        case.schedules.append((f"{tx}x{ty}", _columns_schedule(
            problem, [(group, t, model.cost(group, t))], f"{tx}x{ty}")))
    return case


def _split(spec, samples):
    """Per sample, (the cost without the term, the term at weight 1)."""
    from .fit import price_samples
    unit = price_samples(spec.with_cost_params(stream_miss_loads=1.0), samples)
    L = float(spec.load_cost)
    rest = np.array([p.compute + L * p.words for p in unit])
    term = np.array([p.cost(L) for p in unit]) - rest
    return rest, np.maximum(term, 0.0)


def fit_stream_weight(spec, samples, *, overhead_ms: float = 0.0) -> StreamsFit:
    """The ``stream_miss_loads`` that best explains ``samples`` (``(pipeline,
    schedule, estimates, measured_ms)``, solved schedules with recorded columns)
    on ``spec``; ``overhead_ms`` is subtracted from every time first."""
    from .fit import MIN_FIT_GAIN, _fit_scale       # load_cost's evidence rule
    _error = lambda pred, y: _fit_scale(pred, y)[0]  # noqa: E731 (RMS log error, best scale)
    before = spec.cost_params.stream_miss_loads
    ms = np.array([float(s[3]) for s in samples])
    ms = np.maximum(ms - float(overhead_ms), 0.01 * ms)
    y = np.log(ms)
    rest, term = _split(spec, samples)
    err0 = _error(rest + before * term, y)
    notes = []
    if len(samples) < 3:
        notes.append(f"{len(samples)} samples, at least 3 are needed")
        return StreamsFit(before, before, False, err0, err0, len(samples), notes)
    share = term / (rest + term)
    if share.max() - share.min() < 0.05:
        notes.append("the term's share of the cost at weight 1 hardly varies between the "
                     f"tilings ({share.min():.2f}..{share.max():.2f}); every weight explains "
                     "them alike")
        return StreamsFit(before, before, False, err0, err0, len(samples), notes)
    errs = np.array([_error(rest + w * term, y) for w in WEIGHTS])
    k = int(np.argmin(errs))
    best, err = float(WEIGHTS[k]), float(errs[k])
    fitted = err <= err0 * (1.0 - MIN_FIT_GAIN)
    if not fitted:
        notes.append(f"the best weight explains the times only "
                     f"{100.0 * (1.0 - err / err0) if err0 > 0 else 0.0:.0f} % better; it moves "
                     f"for {100 * MIN_FIT_GAIN:.0f} % or more")
    elif k == len(WEIGHTS) - 1:
        notes.append(f"the best weight is at the edge of the searched range ({best:g})")
    return StreamsFit(before, best, fitted, err0, err, len(samples), notes)


def measure_streams(spec, *, quick: bool = False, repeat: int = 5, overhead_ms: float = 0.0,
                    progress: Optional[Callable[[str], None]] = None):
    """Build, check and time the streams case on this machine and fit its weight:
    ``(StreamsFit, a microbench.Measurement for the spec's comment)``."""
    from .microbench import Measurement
    from .training import measure_cases
    case = streams_case(spec, quick=quick)
    samples = measure_cases([case], repeat=repeat, overhead_ms=overhead_ms, progress=progress)
    fit = fit_stream_weight(spec, samples, overhead_ms=overhead_ms)
    how = fit.how(case.sizes, spec.threads or spec.cores or 1)
    return fit, Measurement("stream_miss_loads", fit.value, "loads", how)
