"""A schedule for a range of sizes: one Schedule per size class of the outputs.

``solve_schedule(pipe, spec, {"out": ([256, 256], [8192, 8192])})`` returns a
``SizeClasses``: the classes cut the range by the outputs' *scale*, the geometric mean
of the extents of the first output, and each class has the schedule the solver chose
for it.  ``ts.compile`` builds every class's code once and dispatches each ``realize``
on the sizes it is given; sizes outside the range go to the nearest class (every
schedule runs at any size).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ScheduleError
from .schedule import Schedule


def scale_of(sizes) -> float:
    """The geometric mean of ``sizes`` (a list of extents), the quantity classes cut."""
    sizes = [max(1, int(v)) for v in sizes] or [1]
    return math.exp(sum(math.log(v) for v in sizes) / len(sizes))


@dataclass(frozen=True)
class SizeClass:
    """Outputs whose scale lies in ``[lo, hi)`` run ``schedule``; ``sizes`` are the
    sample sizes the class was chosen from, ``ratio`` its worst predicted cost there
    over the best the solver found for those sizes."""
    lo: float
    hi: float
    schedule: Schedule
    sizes: tuple
    ratio: float


@dataclass
class SizeClasses:
    pipeline: object
    output: str                       # the output whose sizes choose the class
    classes: tuple                    # of SizeClass, by increasing scale
    ranges: dict                      # name -> (min sizes, max sizes) as given
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.classes:
            raise ScheduleError("SizeClasses needs at least one class")

    @property
    def target(self) -> str:
        return self.classes[0].schedule.target

    def schedule_for(self, sizes) -> Schedule:
        """The schedule of the class whose scale range holds ``sizes`` (the output's
        extents); the first or last class outside the range."""
        s = scale_of(sizes)
        for c in self.classes:
            if s < c.hi:
                return c.schedule
        return self.classes[-1].schedule

    def worst_ratio(self) -> float:
        return max(c.ratio for c in self.classes)

    def explain(self) -> str:
        lines = [f"size classes of {self.output} (by the geometric mean of its extents), "
                 f"over {', '.join(f'{n} {lo} .. {hi}' for n, (lo, hi) in self.ranges.items())};"
                 f" worst predicted cost over the best found for a sample size: "
                 f"{self.worst_ratio():.3f}x"]
        for i, c in enumerate(self.classes):
            hi = "inf" if math.isinf(c.hi) else f"{c.hi:.0f}"
            lines.append(f"class {i}: scale [{c.lo:.0f}, {hi}), chosen from sizes "
                         f"{list(map(list, c.sizes))}, worst ratio {c.ratio:.3f}")
            lines += ["    " + ln for ln in str(c.schedule).splitlines() if ln.strip()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()
