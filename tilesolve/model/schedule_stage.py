"""Loop transformations of one stage, as functions ``StageSchedule -> StageSchedule``.

Each checks its legality first and raises ``ScheduleError`` naming the Func,
the stage and the loop (``StageFacts.where``).  ``dims`` are innermost first.

split(x, xo, xi, 4)::

    for y:                      for y:
      for x in [0, W):    ->      for xo in [0, ceil(W / 4)):
        f(x, y)                     for xi in [0, 4):
                                      f(xo * 4 + xi, y)   # + tail handling

reorder(y, x) (innermost first) on loops ``x, y``: ``for x: for y: f(x, y)``.
fuse(x, y, t): ``for t in [0, W * H): f(t % W, t / W)``.
"""
from __future__ import annotations

from ..errors import ScheduleError
from .schedule_facts import StageFacts
from .schedule_types import LOOP_KINDS, TAIL_STRATEGIES, Dim, Fuse, Split, StageSchedule

PARALLEL_KINDS = ("parallel", "vectorized", "gpu_block", "gpu_thread")


def seen_names(facts: StageFacts, st: StageSchedule) -> set:
    """Every loop name the stage has ever had (original and introduced)."""
    names = set(facts.loops)
    for t in st.transforms:
        names.update((t.outer, t.inner) if isinstance(t, Split) else (t.fused,))
    return names


def origins(facts: StageFacts, st: StageSchedule) -> dict:
    """For each current loop, the original loops it iterates (a frozenset)."""
    org = {n: frozenset((n,)) for n in facts.loops}
    for t in st.transforms:
        if isinstance(t, Split):
            o = org.pop(t.old)
            org[t.outer] = org[t.inner] = o
        else:
            o = org.pop(t.inner) | org.pop(t.outer)
            org[t.fused] = o
    return org


def _fate(st: StageSchedule, name: str) -> str:
    """What happened to a loop that no longer exists (for error messages)."""
    for t in reversed(st.transforms):
        if isinstance(t, Split) and t.old == name and name not in (t.outer, t.inner):
            return f"it was already split into {t.outer} and {t.inner}"
        if isinstance(t, Fuse) and name in (t.inner, t.outer) and name != t.fused:
            return f"it was fused into {t.fused}"
    return "it no longer exists"


def find_loop(facts: StageFacts, st: StageSchedule, name: str, action: str) -> int:
    """The index of loop ``name`` in ``st.dims`` or a ScheduleError."""
    i = st.index(name)
    if i >= 0:
        return i
    loops = ", ".join(st.loop_names()) or "(none)"
    if name in seen_names(facts, st):
        why = _fate(st, name)
        raise ScheduleError(f"{facts.where}: cannot {action} loop {name}: {why}; "
                            f"its loops are {loops} (innermost first)")
    raise ScheduleError(f"{facts.where}: cannot {action} loop {name}: no such loop; "
                        f"valid loops are {loops} (innermost first)")


def _check_new_name(facts, st, name, allowed, action):
    if name in allowed:
        return
    if not isinstance(name, str) or not name.isidentifier():
        raise ScheduleError(f"{facts.where}: {action}: new loop name {name!r} must be an identifier")
    if name in seen_names(facts, st):
        raise ScheduleError(f"{facts.where}: {action}: the name {name} is already used by a "
                            "loop of this stage; pick a fresh name")


def split(facts: StageFacts, st: StageSchedule, old: str, outer: str, inner: str,
          factor: int, tail: str = "auto") -> StageSchedule:
    act = f"split({old}, {outer}, {inner}, {factor})"
    i = find_loop(facts, st, old, "split")
    if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
        raise ScheduleError(f"{facts.where}: {act}: the factor must be a positive int, got {factor!r}")
    if tail not in TAIL_STRATEGIES:
        raise ScheduleError(f"{facts.where}: {act}: tail must be one of {TAIL_STRATEGIES}, got {tail!r}")
    if outer == inner:
        raise ScheduleError(f"{facts.where}: {act}: the outer and inner loops need different names")
    for n in (outer, inner):
        _check_new_name(facts, st, n, (old,), act)
    d = st.dims[i]
    if d.kind != "serial":
        raise ScheduleError(f"{facts.where}: {act}: loop {old} is already marked {d.kind}; "
                            "split loops before marking them")
    if d.is_rvar and tail in ("round_up", "shift_inward"):
        raise ScheduleError(f"{facts.where}: {act}: tail={tail!r} would compute reduction points "
                            f"twice or past the RDom for RVar loop {old}; use guard_with_if")
    if facts.is_update and tail in ("shift_inward", "round_up"):
        # as in Halide: an update is not idempotent (f += ...), and the points a tail
        # recomputes (shift_inward) or adds past the region (round_up) may be points
        # another iteration computes or has computed (store_root, sliding windows)
        what = "recomputes points" if tail == "shift_inward" else "updates points past the region"
        raise ScheduleError(f"{facts.where}: {act}: tail={tail!r} {what}, which changes an "
                            f"update's result; use guard_with_if")
    if facts.is_output and tail == "round_up":
        raise ScheduleError(f"{facts.where}: {act}: tail='round_up' would write past the end of "
                            f"output {facts.func}; use guard_with_if or shift_inward")
    dims = list(st.dims)
    dims[i:i + 1] = [Dim(inner, "serial", d.is_rvar), Dim(outer, "serial", d.is_rvar)]
    return StageSchedule(st.transforms + (Split(old, outer, inner, factor, tail),), tuple(dims))


def fuse(facts: StageFacts, st: StageSchedule, inner: str, outer: str, fused: str) -> StageSchedule:
    act = f"fuse({inner}, {outer}, {fused})"
    i = find_loop(facts, st, inner, "fuse")
    j = find_loop(facts, st, outer, "fuse")
    if j != i + 1:
        raise ScheduleError(
            f"{facts.where}: {act}: loop {outer} must be the loop just outside {inner} "
            f"(loops innermost first: {', '.join(st.loop_names())}); reorder first")
    a, b = st.dims[i], st.dims[j]
    for d in (a, b):
        if d.kind != "serial":
            raise ScheduleError(f"{facts.where}: {act}: loop {d.var} is already marked {d.kind}; "
                                "fuse loops before marking them")
    if a.is_rvar != b.is_rvar:
        raise ScheduleError(f"{facts.where}: {act}: cannot fuse an RVar loop with a pure loop")
    _check_new_name(facts, st, fused, (inner, outer), act)
    dims = list(st.dims)
    dims[i:j + 1] = [Dim(fused, "serial", a.is_rvar)]
    return StageSchedule(st.transforms + (Fuse(inner, outer, fused),), tuple(dims))


def _check_order(facts: StageFacts, st: StageSchedule, new_dims, act: str) -> None:
    """Loops whose relative order changed must be free to move."""
    org = origins(facts, st)
    old_pos = {d.var: k for k, d in enumerate(st.dims)}
    new_pos = {d.var: k for k, d in enumerate(new_dims)}
    names = [d.var for d in st.dims]
    for p in range(len(names)):
        for q in range(p + 1, len(names)):
            a, b = names[p], names[q]
            if (old_pos[a] < old_pos[b]) == (new_pos[a] < new_pos[b]):
                continue
            dep = (org[a] | org[b]) & facts.dependent
            if dep:
                v = sorted(dep)[0]
                raise ScheduleError(
                    f"{facts.where}: {act}: the update reads {facts.func} at another {v} "
                    f"coordinate, so the order of loops {a} and {b} must stay")
            if org[a] & facts.rvars and org[b] & facts.rvars and not facts.assoc_safe:
                raise ScheduleError(
                    f"{facts.where}: {act}: reordering RVar loops {a} and {b} may change the "
                    f"result: the update is not of the form {facts.func}[...] op e "
                    "(op in + * min max, e not reading it)")
    _check_gpu_nesting(facts, new_dims, act)


def reorder(facts: StageFacts, st: StageSchedule, names, act: str = "") -> StageSchedule:
    act = act or f"reorder({', '.join(names)})"
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if list(names).count(n) > 1})[0]
        raise ScheduleError(f"{facts.where}: {act}: loop {dup} is listed twice")
    idx = [find_loop(facts, st, n, "reorder") for n in names]
    dims = list(st.dims)
    for slot, n in zip(sorted(idx), names):
        dims[slot] = st.dims[st.index(n)]
    dims = tuple(dims)
    _check_order(facts, st, dims, act)
    return StageSchedule(st.transforms, dims)


def _check_gpu_nesting(facts, dims, act):
    blocks = [k for k, d in enumerate(dims) if d.kind == "gpu_block"]
    threads = [k for k, d in enumerate(dims) if d.kind == "gpu_thread"]
    if blocks and threads and min(blocks) < max(threads):
        raise ScheduleError(
            f"{facts.where}: {act}: gpu_block loop {dims[min(blocks)].var} is inside gpu_thread "
            f"loop {dims[max(threads)].var}; block loops must be outside thread loops")
    for kind, ks in (("gpu_block", blocks), ("gpu_thread", threads)):
        if len(ks) > 3:
            raise ScheduleError(f"{facts.where}: {act}: at most 3 {kind} loops, got "
                                f"{', '.join(dims[k].var for k in ks)}")


def mark(facts: StageFacts, st: StageSchedule, name: str, kind: str, act: str = "") -> StageSchedule:
    """Set how loop ``name`` runs (``kind`` in LOOP_KINDS)."""
    assert kind in LOOP_KINDS
    act = act or f"{kind}({name})"
    i = find_loop(facts, st, name, {"serial": "mark serial"}.get(kind, f"mark {kind}"))
    d = st.dims[i]
    if kind in PARALLEL_KINDS:
        org = origins(facts, st)[name]
        if d.is_rvar:
            raise ScheduleError(
                f"{facts.where}: {act}: loop {name} iterates an RDom; running it as {kind} would "
                "race on the reduction (rfactor, which would make this legal, is not supported)")
        dep = org & facts.dependent
        if dep:
            raise ScheduleError(
                f"{facts.where}: {act}: the update reads {facts.func} at another "
                f"{sorted(dep)[0]} coordinate, so loop {name} cannot run as {kind}")
    if kind == "vectorized":
        other = [e.var for e in st.dims if e.kind == "vectorized" and e.var != name]
        if other:
            raise ScheduleError(f"{facts.where}: {act}: loop {other[0]} is already vectorized; "
                                "one vectorized loop per stage")
    dims = list(st.dims)
    dims[i] = Dim(d.var, kind, d.is_rvar)
    dims = tuple(dims)
    _check_gpu_nesting(facts, dims, act)
    return StageSchedule(st.transforms, dims)
