"""Baseline GPU schedules for any pipeline: what benchmarks compare the solver against
and what the tests run the apps with.

``gpu_root_schedule(pipe)``: every Func computed at root, its two innermost pure
Vars ``gpu_tile``'d (16x16 by default; one Var: 256 threads), further pure Vars
on ``gpu_blocks`` (three block dimensions at most).  Update stages tile their
pure Vars the same way, so each thread runs the whole reduction of its point;
an update with no pure Var stays serial (one GPU thread: slow, but correct).

``gpu_inline_schedule(pipe)``: Funcs inlined where the default allows
(everything but outputs and Funcs with updates), the rest as above.
"""
from __future__ import annotations

from ...model import expr as E
from ...model.schedule import Schedule

__all__ = ["gpu_root_schedule", "gpu_inline_schedule"]


def _tile(handle, vars_, tile, tag):
    """gpu_tile the first two of ``vars_`` (Var names), gpu_blocks the next one."""
    if not vars_:
        return
    if len(vars_) == 1:
        v = vars_[0]
        handle.gpu_tile(v, f"{v}_{tag}o", f"{v}_{tag}i", tile[0] * tile[1])
        return
    x, y = vars_[0], vars_[1]
    handle.gpu_tile(x, y, f"{x}_{tag}o", f"{y}_{tag}o", f"{x}_{tag}i", f"{y}_{tag}i", tile[0], tile[1])
    if len(vars_) > 2:
        handle.gpu_blocks(vars_[2])


def _schedule(pipe, tile, root_all: bool) -> Schedule:
    s = Schedule(pipe, target="cuda")
    for name, f in pipe.funcs.items():
        if root_all or f.updates or pipe.is_output(name):
            if not pipe.is_output(name):
                s[f].compute_root()
            _tile(s[f], [a.name for a in f.args], tile, "p")
            for k, u in enumerate(f.updates):
                pure = [a.name for a in u.args if isinstance(a, E.Var)]
                _tile(s[f].update(k), pure, tile, f"u{k}")
    return s


def gpu_root_schedule(pipe, tile=(16, 16)) -> Schedule:
    """Every Func at root, each stage's pure Vars on GPU blocks and threads."""
    return _schedule(pipe, tile, True)


def gpu_inline_schedule(pipe, tile=(16, 16)) -> Schedule:
    """The default inlining, every realized Func's stages on GPU blocks and threads."""
    return _schedule(pipe, tile, False)
