"""Facts about a pipeline: interval bounds, required regions, the simplifier."""
