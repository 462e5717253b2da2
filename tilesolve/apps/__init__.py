"""The benchmark pipelines: Halide's app suite (Mullapudi 2016, Sioutas 2020).

Every app module has the same interface:

* ``build(sizes=None, **params) -> (Pipeline, estimates)``: the algorithm, and
  estimates (output and input name -> sizes, innermost first) at ``sizes``,
  the paper's sizes when None;
* ``PAPER_SIZE``, ``SMALL_SIZE``: output sizes, innermost first;
  ``SMALL_BUILD`` (optional): build parameters that shrink the app for tests;
* ``make_inputs(sizes, seed=0, **params)``: a seeded dict of input arrays
  (numpy axes reversed) and Param values, ready for ``realize(pipe, sizes, **d)``;
* ``numpy_reference(inputs, sizes, **params)``: the output computed with plain
  numpy, written independently of the DSL version.

    from tilesolve.apps import get_app
    app = get_app("blur")
    pipe, est = app.build()

Two more suites follow the same protocol (``suite(name)``): ``validation``
(``tilesolve/apps/validation``: pipelines nobody tuned the autoscheduler for) and
``random`` (``random_pipelines``: seeded random pipelines).
"""
from __future__ import annotations

from types import ModuleType

from . import (bilateral_grid, blur, camera_pipe, conv_layer, harris, hist_eq, iir_blur, lens_blur,
               interpolate, local_laplacian, matmul, max_filter, nl_means, stencil_chain,
               unsharp)

APPS: dict[str, ModuleType] = {
    "blur": blur,
    "unsharp": unsharp,
    "harris": harris,
    "camera_pipe": camera_pipe,
    "local_laplacian": local_laplacian,
    "bilateral_grid": bilateral_grid,
    "interpolate": interpolate,
    "hist_eq": hist_eq,
    "max_filter": max_filter,
    "nl_means": nl_means,
    "conv_layer": conv_layer,
    "matmul": matmul,
    "iir_blur": iir_blur,
    "stencil_chain": stencil_chain,
    "lens_blur": lens_blur,
}


def list_apps() -> list[str]:
    """The app names, in the order of the papers' tables."""
    return list(APPS)


def get_app(name: str) -> ModuleType:
    """The app module called ``name`` (see ``list_apps()``)."""
    try:
        return APPS[name]
    except KeyError:
        raise KeyError(f"no app named {name!r}; the apps are: {', '.join(APPS)}") from None


SUITES = ("apps", "validation", "random")


def suite(name: str, random_count: int = 5, random_seed: int = 0) -> dict:
    """The pipelines of suite ``name`` (``SUITES``) by name, each with the app protocol:
    ``apps`` (``APPS``), ``validation`` or ``random`` (seeds ``random_seed`` ..
    ``random_seed + random_count - 1``)."""
    if name == "apps":
        return dict(APPS)
    if name == "validation":
        from .validation import PIPELINES
        return dict(PIPELINES)
    if name == "random":
        from .random_pipelines import random_suite
        return random_suite(random_count, random_seed)
    raise KeyError(f"no suite named {name!r}; the suites are: {', '.join(SUITES)}")
