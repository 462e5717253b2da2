"""Backends: loop IR -> native code.  ``cpu/`` (llvmlite) today; ``cuda/`` later.

The public entry point is :func:`tilesolve.backend.compile.compile` (``ts.compile``).
"""
