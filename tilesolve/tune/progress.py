"""A progress log on stderr: one line per step, stamped with the elapsed time.

    p = Progress()
    with p.step("harris / ilp: solving"):
        ...
    # [   12.4s] harris / ilp: solving
    # [   19.0s] harris / ilp: solving: done in 6.6s     (steps over slow_s only)

A step that takes longer than ``slow_s`` also prints a line when it ends, so
a long run never looks hung and the log shows where the time went.  Nothing
but the standard library; ``enabled=False`` makes it silent.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager

__all__ = ["Progress"]


def _stamp(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:7.1f}s"
    m, s = divmod(seconds, 60)
    return f"{int(m):3d}m{s:04.1f}s"


class Progress:
    """Timestamped step lines on ``stream`` (stderr by default)."""

    def __init__(self, stream=None, enabled: bool = True, slow_s: float = 5.0):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.slow_s = slow_s
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def log(self, message: str) -> None:
        if self.enabled:
            self.stream.write(f"[{_stamp(self.elapsed())}] {message}\n")
            self.stream.flush()

    @contextmanager
    def step(self, message: str):
        """Log ``message`` now; log again at the end if it took over ``slow_s``."""
        self.log(message)
        t = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - t
            if took > self.slow_s:
                self.log(f"{message}: done in {took:.1f}s")
