"""One registry of the memory that compiled pipelines keep between realizes.

``tilesolve.release_memory()`` gives all of it back: the CPU runtime's cache of large
heap blocks (``backend/cpu/heap.py``) and the device buffers every compiled CUDA
pipeline keeps for its launch plans (``backend/cuda/runtime.py``).  Each holder
registers itself here when its module is imported or the holder is made, so this
module imports no backend (and importing it costs nothing): a backend never
imported holds nothing to release.

    register_releaser(fn)      # fn() -> bytes freed; kept for the process (module caches)
    register_holder(obj)       # obj.release_memory() -> bytes freed; held weakly
"""
from __future__ import annotations

import threading
import weakref

__all__ = ["register_releaser", "register_holder", "release_memory"]

_lock = threading.Lock()
_releasers: list = []
_holders: "weakref.WeakSet" = weakref.WeakSet()


def register_releaser(fn) -> None:
    """``fn()`` (returning the bytes it freed) runs on every ``release_memory()``."""
    with _lock:
        if fn not in _releasers:
            _releasers.append(fn)


def register_holder(obj) -> None:
    """``obj.release_memory()`` runs on every ``release_memory()`` while ``obj`` lives
    (the registry holds it weakly: a holder that is collected drops out)."""
    with _lock:
        _holders.add(obj)


def release_memory() -> int:
    """Free every cached block of the CPU runtime and every device buffer that compiled
    CUDA pipelines keep between realizes (they are allocated again at the next realize
    that needs them); the bytes given back."""
    with _lock:
        fns, holders = list(_releasers), list(_holders)
    freed = 0
    for fn in fns:
        freed += int(fn() or 0)
    for h in holders:
        freed += int(h.release_memory() or 0)
    return freed
