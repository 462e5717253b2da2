"""Interval analysis: Intervals and Boxes, bounds of expressions, required regions.

    from tilesolve.analysis.intervals import Interval, Box, bounds_of, boxes_required, required_regions
"""
from .bounds import Bounder, as_interval, bounds_of, type_interval  # noqa: F401
from .interval import Box, Interval  # noqa: F401
from .regions import INDEX_LIMIT, boxes_required, func_value_bounds, required_regions  # noqa: F401

__all__ = ["Interval", "Box", "bounds_of", "boxes_required", "required_regions",
           "func_value_bounds", "type_interval", "as_interval", "Bounder", "INDEX_LIMIT"]
