"""Shared by the lowering tests: one schedule run through the loop-IR interpreter and the
compiled code, both against the reference (imported as ``lowering_checks``, as the
property tests import ``strategies``)."""
import numpy as np

import tilesolve as ts
from tilesolve.lower.interpret import run as interpret_run
from tilesolve.lower.lower import lower


def check_lowered(pipe, s, w, h, seed, rtol):
    """Lower ``pipe`` with ``s``; the interpreter's and the compiled code's results on a
    random float32 ``input`` of ``w`` x ``h`` equal the reference.  The lowered program."""
    a = np.random.default_rng(seed).random((h, w), dtype=np.float32)
    ref = ts.reference.realize(pipe, [w, h], input=a)
    low = lower(pipe, s)
    np.testing.assert_allclose(interpret_run(low, [w, h], input=a), ref, rtol=rtol)
    out = ts.compile(pipe, s).realize([w, h], input=a)
    np.testing.assert_allclose(out, ref, rtol=rtol)
    return low
