"""Run compiled pipelines chunk by chunk on Dask, with exact halos from bounds inference.

    import dask.array as da, tilesolve as ts
    fast = ts.compile(pipe, sched)
    out = ts.distributed.to_dask(fast, [W, H], chunks=(2048, 2048), input=da.from_zarr("in.zarr"))
    out.to_zarr("out.zarr")            # or ts.distributed.store(out, zarr_array): fewer tasks

Needs the optional extra ``pip install 'tilesolve[dask]'`` (Dask is imported only when a
graph is built).  See docs/distributed.md.

Importing this package gives the CPU backend's ``CompiledPipeline`` the method
``compiled.to_dask(sizes, chunks, **inputs)``, the same call as :func:`to_dask`
(``tilesolve.driver``, behind ``ts.compile``, imports it: the backend never imports
this package).
"""
from ..backend.cpu.compiled import CompiledPipeline
from .api import chunk_plan, chunk_regions, to_dask, warm_up  # noqa: F401
from .store import store  # noqa: F401
from .worker import process_stats  # noqa: F401

__all__ = ["to_dask", "store", "warm_up", "chunk_regions", "chunk_plan", "process_stats", "attach"]


def attach(cls) -> None:
    """Give ``cls`` (a compiled-pipeline class of another backend) the method
    ``to_dask(sizes, chunks=None, **inputs)`` that calls :func:`to_dask`, unless it has one
    already."""
    if hasattr(cls, "to_dask"):
        return

    def method(self, sizes, chunks=None, **kw):
        return to_dask(self, sizes, chunks, **kw)
    method.__doc__ = to_dask.__doc__
    method.__name__ = "to_dask"
    method.__qualname__ = f"{cls.__name__}.to_dask"
    cls.to_dask = method


attach(CompiledPipeline)
