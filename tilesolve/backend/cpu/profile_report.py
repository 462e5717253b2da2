"""The Python half of profiling: counters per call, totals over calls, the report.

A profiled ``CompiledPipeline`` owns one :class:`Profiler`. Each ``realize`` takes a fresh,
zeroed counters array from :meth:`Profiler.counters` (so concurrent calls never share
one), runs the kernel, and hands the array back to :meth:`Profiler.record`, which sums
its thread rows and adds them to the totals (under a lock). ``profile()`` is the totals
(and the last call alone) in milliseconds; ``profile_report()`` prints them as a table.
``reset()`` zeroes the totals.

Ticks become seconds with :func:`ticks_per_second`: the timer's own unit for
``clock_gettime`` (nanoseconds); for ``rdtsc``, a frequency measured once per process by
reading the compiled module's own timer before and after a 20 ms sleep, against
``time.perf_counter`` (a read costs well under a microsecond, so the error is about
1e-4).
"""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

from .profile import HEADER, OTHER, RUN, ProfileLayout

__all__ = ["Profiler", "ticks_per_second"]

_freq_lock = threading.Lock()
_frequency: dict = {}


def ticks_per_second(timer: str, ticks_address: int) -> float:
    """Timer ticks per second (measured once per process for ``rdtsc``)."""
    if timer == "clock_gettime":
        return 1e9
    with _freq_lock:
        if timer not in _frequency:
            ticks = ctypes.CFUNCTYPE(ctypes.c_int64)(ticks_address)
            c0, p0 = ticks(), time.perf_counter()
            time.sleep(0.02)
            c1, p1 = ticks(), time.perf_counter()
            _frequency[timer] = max(1.0, (c1 - c0) / (p1 - p0))
        return _frequency[timer]


class Profiler:
    """Counters and totals of one profiled compiled pipeline."""

    def __init__(self, name: str, layout: ProfileLayout, ticks_address: int, num_threads: int):
        self.name, self.layout = name, layout
        self.ticks_address = ticks_address
        self.rows = max(1, int(num_threads))
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget every call recorded so far."""
        with self._lock:
            self._total = np.zeros(self.layout.stride, np.int64)
            self._last = None
            self._runs = 0

    def counters(self, num_threads: int) -> np.ndarray:
        """A zeroed counters array for one call of ``num_threads`` threads (element 0:
        the number of rows, one per thread)."""
        rows = max(1, int(num_threads))
        c = np.zeros(self.layout.size(rows), np.int64)
        c[0] = rows
        return c

    def record(self, counters: np.ndarray) -> None:
        """Add one call's counters (summed over the thread rows) to the totals."""
        rows = int(counters[0])
        row = counters[HEADER:].reshape(rows, self.layout.stride).sum(axis=0)
        with self._lock:
            self.rows = rows
            self._total += row
            self._last = row
            self._runs += 1

    # -- results -----------------------------------------------------------------------
    def data(self) -> dict:
        """The totals over every call since the compile (or ``reset``), in ms; ``last``:
        the same for the last call alone (None before the first); ``num_threads``: the
        thread count of the last call."""
        with self._lock:
            total, last, runs, rows = self._total.copy(), self._last, self._runs, self.rows
        scale = 1e3 / ticks_per_second(self.layout.timer, self.ticks_address)
        out = self._convert(total, scale)
        out.update(pipeline=self.name, runs=runs, num_threads=rows,
                   timer=self.layout.timer, ticks_per_second=1e3 / scale,
                   last=None if last is None else self._convert(last, scale))
        return out

    def _convert(self, row: np.ndarray, scale: float) -> dict:
        lay = self.layout
        ms = lambda ticks: max(0.0, float(ticks) * scale)        # noqa: E731
        funcs = {}
        for name in lay.funcs:
            k = lay.func_slot(name)
            funcs[name] = {"ms": ms(row[k]), "entries": int(row[k + 1])}
        regions = {}
        for loop, owner in lay.regions:
            k = lay.region_slot(loop)
            if row[k + 4] == 0:
                continue           # never started a team (nested: ran serially)
            cap = int(row[k + 3])
            regions[loop] = {"func": owner, "wall_ms": ms(row[k + 1]), "idle_ms": ms(row[k]),
                             "busy_ms": ms(row[k + 2]), "entries": int(row[k + 4]),
                             "utilization": (min(1.0, int(row[k + 2]) / cap) if cap > 0
                                             else None)}
        return {"total_ms": ms(row[RUN]), "funcs": funcs, "parallel": regions,
                "other_ms": ms(row[OTHER])}

    def report(self) -> str:
        """The totals as a table: one row per Func (self time), per parallel region
        (its idle time, and its wall time and utilization), and the rest."""
        d = self.data()
        total = d["total_ms"]
        pct = (lambda v: 100.0 * v / total) if total > 0 else (lambda v: 0.0)   # noqa: E731
        runs = d["runs"]
        head = (f"profile of {self.name}: {runs} run{'s' * (runs != 1)}, {total:.3f} ms in "
                f"all ({total / max(1, runs):.3f} ms per run), {d['num_threads']} threads, "
                f"timer {d['timer']} ({d['ticks_per_second'] / 1e9:.3f} GHz)")
        rows = [("Func", "total ms", "% run", "entries", "utilization")]
        for name, f in sorted(d["funcs"].items(), key=lambda kv: -kv[1]["ms"]):
            rows.append((name, f"{f['ms']:.3f}", f"{pct(f['ms']):.1f}", str(f["entries"]), ""))
        for loop, r in d["parallel"].items():
            util = "-" if r["utilization"] is None else f"{100 * r['utilization']:.1f}%"
            rows.append((f"[parallel {loop} in {r['func'] or '-'}: idle]", f"{r['idle_ms']:.3f}",
                         f"{pct(r['idle_ms']):.1f}", str(r["entries"]),
                         f"{util} of {r['wall_ms']:.3f} ms wall"))
        rows.append(("(other)", f"{d['other_ms']:.3f}", f"{pct(d['other_ms']):.1f}", "", ""))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = [head]
        for r in rows:
            lines.append("  ".join([r[0].ljust(widths[0])] +
                                   [c.rjust(w) for c, w in zip(r[1:4], widths[1:4])] +
                                   [r[4]]).rstrip())
        lines.append("Funcs: time in their own produce regions (nested producers excluded); in "
                     "a parallel region each thread's time counts / team size, so the rows "
                     "add up to the run; utilization = busy thread time / (wall x threads).")
        return "\n".join(lines)
