"""Measuring candidate schedules for ``autotune``: compile, check, then time in rounds.

The protocol is a careful benchmark harness's, robust to the machine's speed
drifting over a tuning (on a shared VM the same schedule varies by 15-25% from
one minute to the next):

1. **Prepare** (``Bench.prepare``): compile the candidate, run it once at the tuned
   size (the warm-up run: first-call costs, and an estimate of one run's length
   for the budget) and check it once against ``ts.reference``.  Compile time is
   not run time: every candidate is prepared before any is timed.
2. **Rounds** (``Bench.run``, driven by ``autotune``): in each round every live
   candidate runs once, timed, in a freshly shuffled order (a seeded RNG), so that
   drift spreads over all candidates instead of correlating with the order they
   were produced in.  A candidate's figure is the minimum over its rounds; the
   median and the spread are kept too (``Timing``).

Every timed run writes into one output buffer shared by all candidates (the
outputs' shapes and types do not depend on the schedule): the timed runs compare
the code, not the page faults of a fresh output, and memory does not grow with
the number of candidates.  (A checked run writes into a fresh output of its own.)

Checking (``tune.check.compare``: integers exactly, floats within 1e-4
relative): when the tuned size has at most ``CHECK_POINTS`` output points, the
warm-up run's output itself is compared (the reference is computed once, at that
size); otherwise the candidate is also run once at a small size (each dimension
at most ``CHECK_EXTENT``) on the same inputs, and compared there.
"""
from __future__ import annotations

import inspect
import math
import os
import statistics
import time
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from .check import compare, transcendentals

__all__ = ["Bench", "Prepared", "Timing"]

CHECK_POINTS = 1 << 18
CHECK_EXTENT = 64
MIN_RUNS = 3          # Bench.measure's timed runs (one candidate alone, outside the rounds)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def random_input(t, sizes, rng) -> np.ndarray:
    """A random array of tilesolve type ``t`` and sizes (innermost first): floats in
    [0, 1), unsigned integers over their range up to 16 bits, signed ones in [0, 128)."""
    shape = tuple(reversed(sizes))
    dt = t.dtype
    if t.is_float():
        return rng.random(shape).astype(dt)
    if t.is_bool():
        return rng.random(shape) < 0.5
    hi = min(1 << t.bits, 1 << 16) if t.is_uint() else 128
    return rng.integers(0, hi, shape).astype(dt)


@dataclass(frozen=True)
class Timing:
    """One candidate's timed runs, summarised: ``min_ms`` is its figure."""

    rounds: int            # timed runs (one per round it took part in)
    min_ms: float
    median_ms: float
    spread: float          # (slowest - fastest) / fastest over the rounds

    @classmethod
    def of(cls, times) -> "Timing":
        lo, hi = min(times), max(times)
        return cls(len(times), lo, statistics.median(times), (hi - lo) / lo if lo > 0 else 0.0)

    @property
    def noise(self) -> float:
        """(median - min) / min: how far a typical run is from the best one."""
        return (self.median_ms - self.min_ms) / self.min_ms if self.min_ms > 0 else 0.0


@dataclass
class Prepared:
    """A compiled, checked candidate, ready to be timed (``Bench.run``)."""

    schedule: object
    call: object           # one run at the tuned size, into the shared output
    warm_ms: float         # the warm-up run's length (an estimate of one run's)


class Bench:
    """The inputs, reference and timing of one tuning (see the module docstring)."""

    def __init__(self, pipeline, problem, inputs, seed: int, budget_s: float = 60.0):
        from ..backend.cpu.parallel import resolve_num_threads
        self.pipeline = pipeline
        self.sizes = {o: list(problem.estimates[o]) for o in pipeline.output_names}
        self.input_sizes = {}
        for img in pipeline.images:
            if img in problem.estimates:
                self.input_sizes[img] = list(problem.estimates[img])
            elif img in problem.regions:
                self.input_sizes[img] = [hi + 1 for _, hi in problem.regions[img]]
        self.inputs = self._inputs(inputs or {}, seed)
        try:
            self.threads = resolve_num_threads(os.environ)
        except ValueError as e:
            raise SolverError(f"autotune: {e}") from None
        self.int_slack = 1 if transcendentals(pipeline) else 0
        points = sum(math.prod(s) for s in self.sizes.values())
        self.separate = points > CHECK_POINTS
        self.check_sizes = ({o: [min(v, CHECK_EXTENT) for v in s] for o, s in self.sizes.items()}
                            if self.separate else self.sizes)
        self.reference = self._reference()
        self._out = None                 # the output buffer every candidate writes into

    def sizes_key(self) -> dict:
        """The effective estimates: every output's and every input's sizes."""
        return {**self.sizes, **self.input_sizes}

    def _inputs(self, given: dict, seed: int) -> dict:
        p = self.pipeline
        for name in given:
            if name not in p.images and name not in p.params:
                raise SolverError(f"autotune: inputs names {name!r}, which is neither an input "
                                  f"({', '.join(p.images) or 'none'}) nor a Param "
                                  f"({', '.join(p.params) or 'none'}) of the pipeline")
        rng = np.random.default_rng(seed)
        out = dict(given)
        for name, img in p.images.items():
            if name not in out:
                if name not in self.input_sizes:
                    raise SolverError(f"autotune: the size of input {name!r} cannot be inferred; "
                                      "give it in estimates")
                out[name] = random_input(img.type, self.input_sizes[name], rng)
        for name, prm in p.params.items():
            if name not in out and prm.default is None:
                raise SolverError(f"autotune: Param {name!r} has no default; pass its value in "
                                  f"inputs={{{name!r}: ...}}")
        return out

    def _reference(self):
        from ..reference import realize
        try:
            return realize(self.pipeline, self.check_sizes, **self.inputs)
        except Exception as e:      # noqa: BLE001 - said in the pipeline's own words
            raise SolverError(f"autotune: the reference cannot run at {self.check_sizes} on "
                              f"these inputs ({_first_line(e)}); pass inputs= that suit the "
                              "pipeline") from None

    def _check(self, out) -> str | None:
        ok, err, tol = compare(out, self.reference, int_slack=self.int_slack)
        return None if ok else (f"differs from the reference at {self.check_sizes} "
                                f"(max error {err:g}, tolerance {tol})")

    def _call(self, fast):
        """One run of ``fast`` at the tuned size, writing into the shared output."""
        if "out" not in inspect.signature(fast.realize).parameters:
            return lambda: fast.realize(self.sizes, **self.inputs)   # e.g. the CUDA runtime

        def call():
            r = fast.realize(self.sizes, out=self._out, **self.inputs)
            if self._out is None:
                self._out = r
            return r
        return call

    def prepare(self, schedule) -> tuple:
        """``(Prepared or None, error or None)``: compile ``schedule``, run it once at
        the tuned size (the warm-up) and check it against the reference."""
        from ..backend.compile import compile as ts_compile
        try:
            fast = ts_compile(self.pipeline, schedule)
        except Exception as e:      # noqa: BLE001 - recorded, never chosen
            return None, f"compile: {_first_line(e)}"
        try:
            if self.separate:
                bad = self._check(fast.realize(self.check_sizes, **self.inputs))
                if bad:
                    return None, bad
            call = self._call(fast)
            t = time.perf_counter()
            if self.separate:
                call()
            else:       # a fresh output: what the check sees is this candidate's own writing
                out = fast.realize(self.sizes, **self.inputs)
            warm_ms = (time.perf_counter() - t) * 1e3
            if not self.separate:
                bad = self._check(out)
                if bad:
                    return None, bad
                if self._out is None and "out" in inspect.signature(fast.realize).parameters:
                    self._out = out
        except Exception as e:      # noqa: BLE001
            return None, f"run: {_first_line(e)}"
        return Prepared(schedule, call, warm_ms), None

    def run(self, prepared: Prepared) -> float:
        """One timed run of a prepared candidate, in milliseconds."""
        t = time.perf_counter()
        prepared.call()
        return (time.perf_counter() - t) * 1e3

    def run_warm(self, prepared: Prepared) -> float:
        """A run untimed, then one timed, in milliseconds: the second finds the caches
        and the runtime's heap cache as a caller realizing again and again does."""
        prepared.call()
        t = time.perf_counter()
        prepared.call()
        return (time.perf_counter() - t) * 1e3

    def measure(self, schedule) -> tuple:
        """One candidate alone, outside the rounds: ``(fastest ms or None, every timed
        run's ms, error or None)`` after a warm-up, over ``MIN_RUNS`` runs."""
        prepared, error = self.prepare(schedule)
        if prepared is None:
            return None, [], error
        try:
            times = [self.run(prepared) for _ in range(MIN_RUNS)]
        except Exception as e:      # noqa: BLE001
            return None, [], f"run: {_first_line(e)}"
        return min(times), times, None
