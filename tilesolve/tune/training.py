"""The training set of calibration: random pipelines, several schedules each, measured.

The benchmark apps (``tilesolve/apps``) are what the cost model is judged on, so
calibration never trains on them.  Instead a seeded generator builds small float32
pipelines of the kinds image code is made of:

* a chain of 1-4 stencils, each with random taps (offsets in [-2, 2]^2, 2-9 of
  them, along x, along y or both) and random weights summing to 1;
* then, by the case's kind, a 2x downsample ([1 2 1]/4 along x and y), that
  downsample followed by a 2x upsample (the mean of the two nearest coarse
  pixels), or a sum over an RDom (an update ``acc(x, y) += s(x, y + r)``);

all read from a repeat-edge input.  Each pipeline gets the greedy schedule and
variations built from the same columns (``solver.schedule_gen``), so the cost
model can price all of them: every Func in a group of its own ("unfused"),
greedy's groups with another tiling ("retiled"), and every Func at root untiled
("root").  Their memory traffic differs a lot, which is what lets ``fit`` tell
``load_cost`` from the scale.

Every compiled schedule is checked once against ``tilesolve.reference``; a
mismatch raises ``TrainingMismatch`` (a compiler bug is never a sample).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import TilesolveError

__all__ = ["TrainingCase", "TrainingMismatch", "random_pipeline", "schedule_variants",
           "build_cases", "measure_cases", "check_case", "KINDS"]

KINDS = ("stencils", "down", "down_up", "rdom_sum")


class TrainingMismatch(TilesolveError):
    """A compiled training schedule's output differs from the reference."""


@dataclass
class TrainingCase:
    """One random pipeline, its sizes and inputs, and the schedules to measure."""

    name: str
    kind: str
    description: str
    pipeline: object
    sizes: List[int]                     # output sizes, innermost first
    estimates: dict
    inputs: dict                         # name -> numpy array
    schedules: List[Tuple[str, object]] = field(default_factory=list)   # (label, Schedule)


def _stencil(ts, rng, name, src, x, y):
    """One stencil over ``src`` with random taps; returns (Func, text)."""
    axis = rng.choice(["x", "y", "xy"])
    if axis == "x":
        offsets = [(dx, 0) for dx in range(-2, 3)]
    elif axis == "y":
        offsets = [(0, dy) for dy in range(-2, 3)]
    else:
        offsets = [(dx, dy) for dx in range(-2, 3) for dy in range(-2, 3)]
    n = int(rng.integers(2, min(9, len(offsets)) + 1))
    picks = sorted(rng.choice(len(offsets), size=n, replace=False).tolist())
    weights = rng.random(n) + 0.1
    weights = weights / weights.sum()
    f = ts.Func(name)
    e = None
    for w, k in zip(weights, picks):
        dx, dy = offsets[k]
        term = float(round(w, 6)) * src[x + dx, y + dy]
        e = term if e is None else e + term
    f[x, y] = e
    return f, f"{axis} stencil of {n} taps"


def random_pipeline(rng: np.random.Generator, index: int, size: Sequence[int],
                    kind: Optional[str] = None):
    """A random pipeline: ``(pipeline, estimates, input shape (numpy order), kind, text)``.

    ``size``: the output's [W, H]; ``kind``: one of ``KINDS`` (random if None)."""
    import tilesolve as ts
    kind = kind or str(rng.choice(KINDS))
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    w, h = int(size[0]), int(size[1])
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    cur = ts.boundary.repeat_edge(inp)
    parts = []
    for s in range(int(rng.integers(1, 5))):
        cur, text = _stencil(ts, rng, f"p{index}_s{s}", cur, x, y)
        parts.append(text)
    in_w, in_h = w, h
    if kind in ("down", "down_up"):
        dx, dn = ts.Func(f"p{index}_downx"), ts.Func(f"p{index}_down")
        dx[x, y] = (cur[2 * x - 1, y] + 2.0 * cur[2 * x, y] + cur[2 * x + 1, y]) * 0.25
        dn[x, y] = (dx[x, 2 * y - 1] + 2.0 * dx[x, 2 * y] + dx[x, 2 * y + 1]) * 0.25
        cur = dn
        parts.append("2x downsample")
        if kind == "down":
            in_w, in_h = 2 * w, 2 * h
        else:
            ux, up = ts.Func(f"p{index}_upx"), ts.Func(f"p{index}_up")
            ux[x, y] = (cur[x / 2, y] + cur[(x + 1) / 2, y]) * 0.5
            up[x, y] = (ux[x, y / 2] + ux[x, (y + 1) / 2]) * 0.5
            cur = up
            parts.append("2x upsample")
    elif kind == "rdom_sum":
        k = int(rng.integers(3, 9))
        acc = ts.Func(f"p{index}_sum")
        r = ts.RDom((0, k), name=f"r{index}")
        acc[x, y] = ts.cast(ts.float32, 0)
        acc[x, y] = acc[x, y] + cur[x, y + r.x]
        cur = acc
        parts.append(f"sum over an RDom of {k}")
    out = ts.Func(f"p{index}_out")
    out[x, y] = cur[x, y]
    pipe = ts.Pipeline(out)
    estimates = {out.name: [w, h], "input": [in_w, in_h]}
    return pipe, estimates, (in_h, in_w), kind, ", then ".join(parts)


def _columns_schedule(problem, columns, label: str):
    from ..solver.provenance import Provenance
    from ..solver.predict import cost_of_terms
    from ..solver.schedule_gen import schedule_from_columns
    cost = sum(cost_of_terms(c) for _, _, c in columns)
    return schedule_from_columns(problem, columns, Provenance(label, cost))


def schedule_variants(pipeline, spec, estimates, variants: int = 2) -> List[Tuple[str, object]]:
    """Greedy's schedule and up to ``variants`` distinct variations of it (see the
    module docstring), all with recorded columns; identical schedules appear once."""
    from ..solver.cost import CostModel
    from ..solver.greedy import greedy_groups
    from ..solver.problem import Problem
    from ..solver.space import Group, Tiling
    problem = Problem(pipeline, spec, estimates)
    model = CostModel(problem)
    greedy = greedy_groups(model).columns
    out, seen = [], set()

    def add(label, columns):
        key = tuple((g, t) for g, t, _ in columns)
        if key not in seen:
            seen.add(key)
            out.append((label, _columns_schedule(problem, columns, label)))

    add("greedy", greedy)
    candidates = []
    unfused = []
    for f in problem.funcs:
        g = Group.singleton(f)
        best = model.best(g)
        t = best[0] if best else Tiling.untiled(len(problem.regions[f]))
        unfused.append((g, t, model.cost(g, t)))
    candidates.append(("unfused", unfused))
    retiled = []
    for g, t, c in greedy:
        alt = [(t2, c2) for t2, c2 in model.cheapest(g, 40)
               if t2 != t and max(c2.n_tiles, c.n_tiles) >= 4 * min(c2.n_tiles, c.n_tiles)]
        t2, c2 = alt[0] if alt else (t, c)
        retiled.append((g, t2, c2))
    candidates.append(("retiled", retiled))
    root = []
    for f in problem.funcs:
        g, t = Group.singleton(f), Tiling.untiled(len(problem.regions[f]))
        root.append((g, t, model.cost(g, t)))
    candidates.append(("root", root))
    for label, cols in candidates:
        if len(out) > variants:
            break
        add(label, cols)
    return out


def build_cases(spec, n: int, *, seed: int = 0, size: Sequence[int] = (256, 256),
                variants: int = 2) -> List[TrainingCase]:
    """``n`` random pipelines (the kinds in turn, so each appears), their inputs and
    schedules; nothing is compiled.  Same ``seed``, same cases."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        pipe, est, shape, kind, text = random_pipeline(rng, i, size, KINDS[i % len(KINDS)])
        inputs = {"input": rng.random(shape, dtype=np.float32)}
        case = TrainingCase(f"train_{i}", kind, text, pipe, list(size), est, inputs)
        case.schedules = schedule_variants(pipe, spec, est, variants)
        cases.append(case)
    return cases


def check_case(case: TrainingCase, label: str, got: np.ndarray, ref: np.ndarray) -> None:
    """Raise ``TrainingMismatch`` unless ``got`` equals ``ref`` to float tolerance."""
    scale = max(1.0, float(np.max(np.abs(ref))))
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) if got.shape == ref.shape \
        else float("inf")
    if not err <= 1e-4 * scale:
        raise TrainingMismatch(f"training pipeline {case.name} ({case.description}), schedule "
                               f"{label!r}: the compiled output differs from the reference by "
                               f"{err:.3g} (shape {got.shape} vs {ref.shape}); a compiler bug, "
                               "not a sample")


def measure_cases(cases: Sequence[TrainingCase], *, repeat: int = 5,
                  overhead_ms: float = 0.0, deadline: Optional[float] = None,
                  progress: Optional[Callable[[str], None]] = None) -> list:
    """Compile, check and time every schedule of every case.

    Returns ``(pipeline, schedule, estimates, measured_ms)`` samples (the minimum
    of ``repeat`` timed calls after a warm-up, output buffer reused).  Stops
    starting new cases once ``deadline`` (a ``time.perf_counter()`` value) has
    passed.  ``overhead_ms`` only feeds the progress lines."""
    import tilesolve as ts
    from ..reference import realize as reference_realize
    samples = []
    for case in cases:
        if deadline is not None and time.perf_counter() > deadline and samples:
            break
        ref = np.asarray(reference_realize(case.pipeline, case.sizes, **case.inputs),
                         dtype=np.float64)
        for label, sched in case.schedules:
            fast = ts.compile(case.pipeline, sched)
            out = fast.realize(case.sizes, **case.inputs)
            check_case(case, label, np.asarray(out), ref)
            times = []
            for _ in range(max(1, repeat)):
                t0 = time.perf_counter()
                fast.realize(case.sizes, out=out, **case.inputs)
                times.append((time.perf_counter() - t0) * 1e3)
            ms = min(times)
            samples.append((case.pipeline, sched, case.estimates, ms))
            if progress is not None:
                progress(f"{case.name} {label:<8} {ms:8.3f} ms (median "
                         f"{statistics.median(times):.3f}; call overhead {overhead_ms:.3f})"
                         f"  {case.description}")
    return samples
