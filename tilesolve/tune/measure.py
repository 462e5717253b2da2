"""Measuring one candidate schedule for ``autotune``: compile, time, check.

Timing is ``tilesolve bench``'s (``bench.runner.time_runs`` and
``reusing_output``): one warm-up call, then a few timed calls writing into the
warm-up's output buffer; the minimum is the measurement.  The number of timed
calls adapts so that one candidate takes about ``PER_CANDIDATE_SHARE`` of the
budget (between ``MIN_RUNS`` and ``MAX_RUNS``).

Checking: each candidate's output is compared once with ``ts.reference``
(``bench.runner.compare``: integers exactly, floats within 1e-4 relative).  When
the tuned size has at most ``CHECK_POINTS`` output points, the timed output itself
is compared (the reference is computed once, at that size); otherwise the
candidate is also run once at a small size (each dimension at most
``CHECK_EXTENT``) on the same inputs, and compared there.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..errors import SolverError

__all__ = ["Bench"]

CHECK_POINTS = 1 << 18
CHECK_EXTENT = 64
PER_CANDIDATE_SHARE = 0.03
MIN_RUNS, MAX_RUNS = 3, 10


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


class Bench:
    """The inputs, reference and timing of one tuning (see the module docstring)."""

    def __init__(self, pipeline, problem, inputs, seed: int, budget_s: float = 60.0):
        from ..backend.cpu.parallel import resolve_num_threads
        from ..bench.runner import transcendentals
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
        self.allowance_s = max(0.05, PER_CANDIDATE_SHARE * budget_s)
        self.runs = MIN_RUNS
        points = sum(math.prod(s) for s in self.sizes.values())
        self.separate = points > CHECK_POINTS
        self.check_sizes = ({o: [min(v, CHECK_EXTENT) for v in s] for o, s in self.sizes.items()}
                            if self.separate else self.sizes)
        self.reference = self._reference()

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
        from ..bench.runner import compare
        ok, err, tol = compare(out, self.reference, int_slack=self.int_slack)
        return None if ok else (f"differs from the reference at {self.check_sizes} "
                                f"(max error {err:g}, tolerance {tol})")

    def measure(self, schedule) -> tuple:
        """``(fastest ms or None, every run's ms, error or None)`` for ``schedule``."""
        from ..backend.compile import compile as ts_compile
        from ..bench.runner import reusing_output, time_runs
        try:
            fast = ts_compile(self.pipeline, schedule)
        except Exception as e:      # noqa: BLE001 - recorded, never chosen
            return None, [], f"compile: {_first_line(e)}"
        try:
            if self.separate:
                bad = self._check(fast.realize(self.check_sizes, **self.inputs))
                if bad:
                    return None, [], bad
            times, out = time_runs(reusing_output(fast, self.sizes, self.inputs), self.runs)
            if not self.separate:
                bad = self._check(out)
                if bad:
                    return None, times, bad
        except Exception as e:      # noqa: BLE001
            return None, [], f"run: {_first_line(e)}"
        best = min(times)
        self.runs = int(min(MAX_RUNS, max(MIN_RUNS, self.allowance_s / max(best / 1e3, 1e-6))))
        return best, times, None
