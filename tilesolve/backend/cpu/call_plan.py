"""Repeated ``realize`` calls with the same shapes: the checked arguments, kept.

A ``CompiledPipeline.realize`` checks its arguments, evaluates the regions the code reads
and packs the shapes and scalars of the entry.  All of that depends only on the sizes
asked for, each array's shape, strides and dtype, and the Params' values.  So once a call
has passed every check, its packed arguments are kept under that *signature*; a later call
with the same signature only allocates its outputs (or checks that the ``out=`` arrays are
writeable and overlap neither each other nor an input), gathers the data pointers and runs
the code.  Anything else (a ``ts.Buffer``, ``mins=``, sizes by name, numpy scalars as
Params, a profiled build, an input that had to be copied) takes the full path each time.
"""
from __future__ import annotations

import numpy as np

__all__ = ["CallPlan", "signature", "MISS"]

MISS = object()          # the plan does not apply to this call: take the full path


def _array_key(a: np.ndarray) -> tuple:
    return (a.shape, a.strides, a.dtype)


def signature(sizes, out, kwargs: dict):
    """The hashable signature of a call, or None when such a call is not kept."""
    if type(sizes) not in (list, tuple) or not all(type(s) is int for s in sizes):
        return None
    if out is None:
        out_key = None
    elif type(out) is np.ndarray:
        out_key = (_array_key(out),)
    elif type(out) in (list, tuple) and all(type(o) is np.ndarray for o in out):
        out_key = tuple(_array_key(o) for o in out)
    else:
        return None
    items = []
    for k, v in kwargs.items():
        t = type(v)
        if t is np.ndarray:
            items.append((k, v.shape, v.strides, v.dtype))
        elif t is float:
            items.append((k, v.hex()))           # -0.0 and 0.0 differ, nan is never equal
        elif t is int or t is bool:
            items.append((k, t, v))
        else:
            return None
    return (tuple(sizes), out_key, tuple(items))


def _span(a: np.ndarray) -> tuple:
    """The bytes ``a`` may touch, as offsets from its data pointer: ``(lo, hi)``."""
    if not all(a.shape):
        return (0, 0)
    lo = sum((e - 1) * s for e, s in zip(a.shape, a.strides) if s < 0)
    hi = sum((e - 1) * s for e, s in zip(a.shape, a.strides) if s > 0)
    return (lo, hi + a.itemsize)


class CallPlan:
    """What a checked call left for the next one with its signature."""

    __slots__ = ("sources", "out_specs", "scalar_outputs", "in_spans", "out_spans",
                 "cdims", "cscal")

    def __init__(self, buffer_names, images: dict, outputs: dict, output_names, scalar_flags,
                 cdims, cscal):
        out_index = {n: i for i, n in enumerate(output_names)}
        # each buffer argument: (True, input name) or (False, output index)
        self.sources = tuple((True, n) if n in images else (False, out_index[n])
                             for n in buffer_names)
        self.out_specs = tuple((outputs[n].shape, outputs[n].dtype) for n in output_names)
        self.scalar_outputs = tuple(scalar_flags)
        self.in_spans = tuple((n, _span(a)) for n, a in images.items())
        self.out_spans = tuple(_span(outputs[n]) for n in output_names)
        self.cdims, self.cscal = cdims, cscal

    def arrays(self, out, kwargs: dict):
        """The outputs to write, and every buffer argument in order; MISS when an
        ``out=`` array is not writeable or overlaps another array (the full path says
        which, or copies the input)."""
        if out is None:
            outs = [np.empty(shape, dt) for shape, dt in self.out_specs]
        else:
            outs = [out] if type(out) is np.ndarray else list(out)
            ranges = []
            for o, (lo, hi) in zip(outs, self.out_spans):
                if not o.flags.writeable:
                    return MISS, None
                p = o.ctypes.data
                ranges.append((p + lo, p + hi))
            spans = [(kwargs[n].ctypes.data + lo, kwargs[n].ctypes.data + hi)
                     for n, (lo, hi) in self.in_spans]
            for i, (a, b) in enumerate(ranges):
                for c, d in ranges[i + 1:] + spans:
                    if a < d and c < b:
                        return MISS, None
        return outs, [kwargs[key] if is_input else outs[key]
                      for is_input, key in self.sources]

    def shaped(self, outs):
        """The outputs as ``realize`` returns them (``reference.shaped_outputs``)."""
        outs = [a.reshape(()) if s else a for a, s in zip(outs, self.scalar_outputs)]
        return outs[0] if len(outs) == 1 else tuple(outs)
