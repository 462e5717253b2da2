"""The project's exception types, defined in one place.

Every message names the Func, dimension, field or argument at fault.
"""


class TilesolveError(Exception):
    """Base class of every error tilesolve raises on purpose."""


class PipelineError(TilesolveError):
    """A malformed algorithm: undefined Func, wrong arity, cycle, bad types..."""


class BoundsError(PipelineError):
    """Bounds inference failed, e.g. a data-dependent index with no bound."""


class ScheduleError(TilesolveError):
    """An illegal schedule directive; names the Func and the loop (``func``: the Func's
    name, where the error is about one Func)."""

    def __init__(self, *args, func: str | None = None):
        super().__init__(*args)
        self.func = func


class SpecError(TilesolveError):
    """A bad hardware spec; names the file, the field and what was expected."""


class SpecWarning(UserWarning):
    """A hardware spec value that is legal but unusual; names the file and field."""


class RealizeError(TilesolveError):
    """Bad arguments to realize(): missing input, wrong dtype, rank or size."""


class LoweringError(TilesolveError):
    """A schedule that passed validation could not be lowered (a bug or a gap)."""


class SolverError(TilesolveError):
    """The scheduler could not produce a schedule (e.g. missing estimates)."""


class ChunkingError(PipelineError):
    """A pipeline that cannot be computed chunk by chunk (``tilesolve.distributed``):
    names the Func and why (e.g. a reduction over the whole input that is not associative)."""


class ChunkingWarning(UserWarning):
    """A chunked pipeline that runs correctly but reads much more input per chunk than its
    share (large halos relative to the chunks, e.g. deep pyramids on a small image)."""
