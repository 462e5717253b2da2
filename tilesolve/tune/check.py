"""Checking an output against the reference: ``compare`` (the tolerance every measured
schedule is held to) and ``transcendentals`` (the math calls that widen it by one for
integer outputs).  ``autotune`` checks each candidate with these; so does the bench."""
from __future__ import annotations

import numpy as np

from ..model import expr as E
from ..model.pipeline import definition_exprs
from ..model.visit import walk

__all__ = ["compare", "transcendentals"]

TRANSCENDENTAL = ("exp", "log", "pow", "sin", "cos", "tan", "atan2")


def transcendentals(pipe) -> list:
    """The transcendental math functions ``pipe`` calls (sorted names)."""
    found = set()
    for f in pipe.funcs.values():
        for d in f.definitions():
            for e in definition_exprs(d):
                found.update(n.name for n in walk(e)
                             if isinstance(n, E.Intrinsic) and n.name in TRANSCENDENTAL)
    return sorted(found)


def compare(out, ref, rtol: float = 1e-4, atol: float = 1e-4, int_slack: int = 0) -> tuple:
    """``(ok, max_error, tolerance text)``: integers exactly (within ``int_slack``),
    floats within ``atol * max(1, max|ref|) + rtol * |ref|`` (NaN matches NaN).

    ``int_slack`` is 1 for pipelines with transcendental math: no two math
    libraries agree on the last bit of exp or pow, and an integer cast of such
    a value then differs by one."""
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    if len(outs) != len(refs):
        return False, float("inf"), f"{len(outs)} outputs instead of {len(refs)}"
    ok, worst, text = True, 0.0, "exact"
    for o, r in zip(outs, refs):
        o, r = np.asarray(o), np.asarray(r)
        if o.shape != r.shape:
            return False, float("inf"), f"shape {o.shape} instead of {r.shape}"
        if r.size == 0:
            continue
        if r.dtype.kind in "biu":
            d = np.abs(o.astype(np.int64) - r.astype(np.int64))
            worst = max(worst, float(d.max()))
            ok = ok and bool(d.max() <= int_slack) and o.dtype == r.dtype
            if int_slack:
                text = f"integers within {int_slack}"
        else:
            o64, r64 = o.astype(np.float64), r.astype(np.float64)
            finite = np.isfinite(r64)
            scale = max(1.0, float(np.abs(r64[finite]).max())) if finite.any() else 1.0
            close = np.isclose(o64, r64, rtol=rtol, atol=atol * scale, equal_nan=True)
            d = np.abs(o64 - r64)
            d = d[~np.isnan(d)]
            worst = max(worst, float(d.max()) if d.size else 0.0)
            ok = ok and bool(close.all())
            text = f"rtol {rtol:g}, atol {atol:g} x max|ref|"
    return ok, worst, text
