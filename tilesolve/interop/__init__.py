"""Bridges to other systems.

* ``halide``: translate a Pipeline (and a Schedule) into Halide's Python API,
  run Halide's autoschedulers on it, and time the result.  Optional: it needs
  ``import halide`` (``pip install tilesolve[halide]``); ``halide.available()``
  says whether it works and why not.
"""
