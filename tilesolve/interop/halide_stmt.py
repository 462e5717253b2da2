"""Halide's lowered statement for one of our schedules: the other compiler's loop nest.

    from tilesolve.interop.halide_stmt import halide_lowered_stmt
    text = halide_lowered_stmt(pipe, schedule)     # Halide's Stmt, as text

The pipeline is translated (``halide.translate``), the schedule replayed as Halide
scheduling calls (``halide_schedule.apply_schedule``; None keeps Halide's default), and
``Pipeline.compile_to_lowered_stmt`` writes Halide's lowered program for the bridge's
JIT target (the one ``tilesolve bench --compare-halide`` compiles for) to a temporary
file, which is read back. Nothing is compiled to machine code and nothing runs, so a
schedule Halide would reject at run time still prints. ``tilesolve explain --ir`` puts
it beside our loop IR.
"""
from __future__ import annotations

import os
import tempfile

from ..errors import TilesolveError

__all__ = ["halide_lowered_stmt"]


def halide_lowered_stmt(pipeline, schedule=None) -> str:
    """Halide's lowered statement (text) of ``pipeline`` under ``schedule``.

    Raises ``TilesolveError`` when Halide does not import (saying why), cannot express
    the pipeline or refuses the schedule."""
    from .halide import _halide_message, native_stdout_to_stderr, translate
    hp = translate(pipeline)
    if schedule is not None:
        hp.apply_schedule(schedule)
    hl = hp.hl
    args = list(hp.images.values()) + list(hp.params.values())
    with tempfile.TemporaryDirectory(prefix="tilesolve-stmt-") as d:
        path = os.path.join(d, f"{pipeline.output_names[0]}.stmt")
        try:
            with native_stdout_to_stderr():
                hp.pipeline.compile_to_lowered_stmt(path, args, hl.StmtOutputFormat.Text,
                                                    hp.target())
        except Exception as exc:
            raise TilesolveError(f"Halide could not lower the pipeline: "
                                 f"{_halide_message(exc)}") from None
        with open(path) as f:
            return f.read()
