"""The byte limit of the runtime's heap cache (``backend/cpu/heap.py``), which the
cost model also reads: a root buffer larger than it is mapped afresh, and faulted in
page by page, on every ``realize`` (``solver.cost.first_touch_words``).

``TILESOLVE_HEAP_CACHE_MB`` sets it; by default it is ``DEFAULT_LIMIT_MB``, or an
eighth of the machine's memory where that is less.
"""
from __future__ import annotations

import os

DEFAULT_LIMIT_MB = 1024


def default_limit() -> int:
    """``DEFAULT_LIMIT_MB``, or an eighth of the machine's memory where that is less."""
    limit = DEFAULT_LIMIT_MB << 20
    try:
        limit = min(limit, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8)
    except (AttributeError, ValueError, OSError):
        pass
    return max(0, limit)


def limit_from_env(environ=None) -> int:
    """The cache's byte limit from ``TILESOLVE_HEAP_CACHE_MB`` (default: :func:`default_limit`)."""
    environ = os.environ if environ is None else environ
    raw = environ.get("TILESOLVE_HEAP_CACHE_MB", "").strip()
    if not raw:
        return default_limit()
    try:
        mb = int(raw)
    except ValueError:
        mb = -1
    if mb < 0:
        raise ValueError(f"TILESOLVE_HEAP_CACHE_MB must be a non-negative integer (MB), got {raw!r}")
    return mb << 20
