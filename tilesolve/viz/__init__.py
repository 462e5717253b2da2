"""Pictures of schedules and bench results, as self-contained HTML and SVG.

* ``schedule_html(schedule, estimates=, profile=)`` (``Schedule.to_html``; ``tilesolve
  explain APP --html FILE``): the pipeline DAG with the solver's groups as clusters,
  each group's tile over its output, the predicted cost split per group and, after
  profiling, the measured time per Func beside it (``html.py``);
* ``write_plot(path, ratios)`` (``tilesolve bench --plot FILE``): tilesolve's time over each of
  Halide's autoschedulers, per app, on a log scale (``bench_plot.py``).

The drawing is SVG written here (``svg.py``) with a layered layout over networkx, so
nothing beyond the package's dependencies is needed; it sits above the phases and reads
the solver's records (``solver.provenance``) and the region inference.
"""
from .html import schedule_html

__all__ = ["schedule_html"]
