"""Halide's own autoschedulers, run on a translated pipeline.

    hp = th.translate(pipe)
    set_estimates(hp, [W, H], inputs)                 # outputs, inputs, Params
    seconds, source = autoschedule(hp, "mullapudi2016", parallelism=16)

The autoschedulers are plugins shipped inside the ``halide`` package
(``lib*/libautoschedule_<name>.so``), loaded once with ``hl.load_plugin``:

* ``mullapudi2016``: Mullapudi et al., SIGGRAPH 2016 (grouping + tiling with
  an analytical model: the closest relative of tilesolve's solver);
  parameters ``parallelism``, ``last_level_cache_size``, ``balance``.
* ``adams2019``: Adams et al., SIGGRAPH 2019 (beam search with a learned cost
  model; the weights ship inside the plugin); ``parallelism``.
* ``li2018``: Li et al., SIGGRAPH Asia 2018 (the gradient autoscheduler, a
  simple greedy heuristic); ``parallelism``.
* ``anderson2021`` (GPU targets only, so not in ``AUTOSCHEDULERS``, which the CPU
  bench runs): Anderson et al., PACT 2021 (beam search with a learned GPU cost
  model); ``parallelism`` is the GPU's SM count.  ``benchmarks/gpu_halide.py``
  runs it on a CUDA target.
"""
from __future__ import annotations

import glob
import os
import time

from ..errors import TilesolveError
from .halide import hl_module, native_stdout_to_stderr
from .halide_common import _halide_message

__all__ = ["AUTOSCHEDULERS", "GPU_AUTOSCHEDULERS", "plugin_path", "load_autoscheduler", "set_estimates", "autoschedule"]

# our name -> (Halide's registered name, plugin file stem)
AUTOSCHEDULERS = {
    "mullapudi2016": ("Mullapudi2016", "autoschedule_mullapudi2016"),
    "adams2019": ("Adams2019", "autoschedule_adams2019"),
    "li2018": ("Li2018", "autoschedule_li2018"),
}
# autoschedulers that need a GPU target (a CPU target makes them fail)
GPU_AUTOSCHEDULERS = {
    "anderson2021": ("Anderson2021", "autoschedule_anderson2021"),
}
_ALL = {**AUTOSCHEDULERS, **GPU_AUTOSCHEDULERS}
_LOADED: set = set()


def plugin_path(name: str) -> str:
    """The plugin library of autoscheduler ``name`` inside the installed halide package."""
    name = name.lower()
    if name not in _ALL:
        raise TilesolveError(f"unknown Halide autoscheduler {name!r}; known: {', '.join(_ALL)}")
    hl = hl_module()
    root = os.path.dirname(hl.__file__)
    stem = _ALL[name][1]
    for pattern in (f"lib*/lib{stem}.so", f"lib*/lib{stem}.dylib", f"**/lib{stem}.*", f"**/{stem}.dll"):
        hits = sorted(glob.glob(os.path.join(root, pattern), recursive=True))
        if hits:
            return hits[0]
    raise TilesolveError(f"Halide autoscheduler {name}: no plugin lib{stem} in {root} "
                         "(this halide package does not ship it)")


def load_autoscheduler(name: str) -> str:
    """Load ``name``'s plugin once; returns Halide's registered name for it."""
    hl = hl_module()
    name = name.lower()
    if name not in _LOADED:
        path = plugin_path(name)
        try:
            hl.load_plugin(path)
        except Exception as exc:
            raise TilesolveError(f"Halide autoscheduler {name}: loading {path} failed: "
                                 f"{_halide_message(exc)}") from None
        _LOADED.add(name)
    return _ALL[name][0]


def set_estimates(hp, sizes, inputs: dict, params: dict | None = None) -> None:
    """Estimates for the autoschedulers: the outputs over ``[0, size)``, each input
    over its array's shape (axes reversed), each Param at its value (or default)."""
    hl = hp.hl
    src = hp.source
    for name in src.output_names:
        s = sizes[name] if isinstance(sizes, dict) else sizes
        hp.funcs[name].set_estimates([hl.Range(0, int(v)) for v in s])
    for name, img in hp.images.items():
        if name not in inputs:
            raise TilesolveError(f"set_estimates: no array for input {name!r}")
        shape = inputs[name].shape
        img.set_estimates([hl.Range(0, int(v)) for v in reversed(shape)])
    params = params or {}
    for name, p in src.params.items():
        v = params.get(name, p.default)
        if v is not None:
            hp.params[name].set_estimate(v)


def autoschedule(hp, name: str, parallelism: int, **extra) -> tuple[float, str]:
    """Run autoscheduler ``name`` on ``hp`` (estimates set first); ``(seconds, source)``.

    ``extra`` are further autoscheduler parameters (strings or numbers)."""
    hl = hp.hl
    registered = load_autoscheduler(name)
    params = {"parallelism": str(int(parallelism))}
    params.update({k: str(v) for k, v in extra.items()})
    t0 = time.perf_counter()
    try:
        with native_stdout_to_stderr():
            result = hp.pipeline.apply_autoscheduler(hp.target(),
                                                     hl.AutoschedulerParams(registered, params))
    except Exception as exc:
        raise TilesolveError(f"Halide autoscheduler {name} failed: {_halide_message(exc)}") from None
    seconds = time.perf_counter() - t0
    hp.schedule_source = getattr(result, "schedule_source", "")
    return seconds, hp.schedule_source
