"""Lowering: Pipeline + Schedule -> loop IR (``ir.py``).

    lowered = lower(pipeline, schedule)        # a LoweredPipeline
    out = run(lowered, [W, H], input=arr)      # the checking interpreter

See ``lower.py`` for the list of passes.
"""
from .interpret import interpret, run  # noqa: F401
from .ir import LoweredPipeline  # noqa: F401
from .lower import lower  # noqa: F401
from .regions import check_inputs, input_regions  # noqa: F401
from .verify import verify  # noqa: F401

__all__ = ["lower", "verify", "interpret", "run", "input_regions", "check_inputs",
           "LoweredPipeline"]
