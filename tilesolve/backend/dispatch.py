"""A compiled pipeline per size class, dispatched on the sizes of each ``realize``.

``ts.compile(pipe, classes)`` for a ``model.schedule_classes.SizeClasses`` compiles
each class's schedule once (code generated for one class never runs for another) and
returns a :class:`DispatchedPipeline`: its ``realize`` picks the class from the sizes
of the classes' output (``SizeClasses.schedule_for``) and runs that build.
"""
from __future__ import annotations

from ..model.schedule_classes import SizeClasses


class DispatchedPipeline:
    def __init__(self, classes: SizeClasses, builds: list):
        self.classes = classes
        self.pipeline = classes.pipeline
        self._by_schedule = {id(c.schedule): b for c, b in zip(classes.classes, builds)}
        self.builds = tuple(builds)

    def build_for(self, sizes):
        """The compiled pipeline that ``realize(sizes, ...)`` runs."""
        from ..reference import output_sizes
        out = output_sizes(self.pipeline, sizes)[self.classes.output]
        return self._by_schedule[id(self.classes.schedule_for(out))]

    def realize(self, sizes, **kwargs):
        return self.build_for(sizes).realize(sizes, **kwargs)

    def __repr__(self) -> str:
        return (f"<DispatchedPipeline of {self.classes.output}: {len(self.builds)} size "
                f"classes>")


def compile_classes(compile_one, classes: SizeClasses, **options) -> DispatchedPipeline:
    """Each class's schedule compiled by ``compile_one(pipeline, schedule, **options)``."""
    builds = [compile_one(classes.pipeline, c.schedule, **options) for c in classes.classes]
    return DispatchedPipeline(classes, builds)
