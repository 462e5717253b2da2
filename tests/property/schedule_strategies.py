"""Random legal schedules for a Pipeline (Hypothesis), shared by the lowering
and backend property tests.

``schedules(pipe)`` draws, consumers first, for every Func:

* a compute level: inline, root, or ``compute_at`` any loop of a consumer's
  pure stage (after that consumer's own splits, so tile loops are chosen
  too), sometimes with ``store_root`` or ``store_at`` an outer loop;
* for every stage: up to ``max_directives`` of split (factors that do and do
  not divide the extents, every tail strategy), tile, reorder, fuse,
  vectorize (4-32 lanes), unroll, parallel.

A directive the Schedule rejects (``ScheduleError``: illegal tail, RVar
reorder, parallel update...) is left out, so the result is always legal.
``gpu=True`` makes a "cuda" schedule that may also map loops to GPU blocks and
threads (for the CPU emulation of GPU schedules), among them the solver's block /
thread / serial form: a loop split into blocks and a tile, the tile into threads
and an unrolled serial loop inside each thread (of 2 or 4 points sometimes vectorized:
float2/float4 accesses), sometimes with another loop's short run (2 or 3 points,
guarded) unrolled inside the thread too.

In GPU schedules, inputs are sometimes wrapped (``Schedule.wrap``) for some of their
callers, the wrappers scheduled like the other Funcs (inside a block: an input staged
there), and a Func computed at a loop is sometimes stored in shared memory.

From a test in tests/property: ``from schedule_strategies import schedules``.
"""
from __future__ import annotations

from hypothesis import strategies as st

import tilesolve as ts
from tilesolve.errors import ScheduleError

FACTORS = (1, 2, 3, 4, 5, 7, 8, 16)
TAILS = ("auto", "auto", "shift_inward", "guard_with_if", "round_up")


def _attempt(fn) -> bool:
    try:
        fn()
        return True
    except ScheduleError:
        return False


def _loops(s, name, stage=0) -> list:
    """Current loop names of a stage, innermost first."""
    return list(s.func_schedule(name).stages[stage].loop_names())


def _stage_directives(draw, s, name, stage, handle, max_directives, gpu):
    fresh = [0]

    def new(base):
        fresh[0] += 1
        return f"{base.replace('.', '_')}_{fresh[0]}"

    for _ in range(draw(st.integers(0, max_directives))):
        loops = _loops(s, name, stage)
        if not loops:
            return
        what = draw(st.sampled_from(["split", "tile", "reorder", "fuse", "vectorize",
                                     "unroll", "parallel"]
                                    + (["gpu", "gpu_serial"] if gpu else [])))
        v = draw(st.sampled_from(loops))
        if what == "split":
            f, tail = draw(st.sampled_from(FACTORS)), draw(st.sampled_from(TAILS))
            _attempt(lambda: handle.split(v, new(v + "o"), new(v + "i"), f, tail=tail))
        elif what == "tile" and len(loops) >= 2:
            i = draw(st.integers(0, len(loops) - 2))
            a, b = loops[i], loops[i + 1]
            fa, fb = draw(st.sampled_from(FACTORS)), draw(st.sampled_from(FACTORS))
            _attempt(lambda: handle.tile(a, b, new(a + "o"), new(b + "o"), new(a + "i"),
                                         new(b + "i"), fa, fb, tail=draw(st.sampled_from(TAILS))))
        elif what == "reorder" and len(loops) >= 2:
            _attempt(lambda: handle.reorder(*draw(st.permutations(loops))))
        elif what == "fuse" and len(loops) >= 2:
            i = draw(st.integers(0, len(loops) - 2))
            _attempt(lambda: handle.fuse(loops[i], loops[i + 1], new("t")))
        elif what == "vectorize":
            w = draw(st.sampled_from([None, 4, 8, 16, 32]))
            _attempt(lambda: handle.vectorize(v, w) if w else handle.vectorize(v))
        elif what == "unroll":
            _attempt(lambda: handle.unroll(v, draw(st.integers(2, 4))))
        elif what == "parallel":
            _attempt(lambda: handle.parallel(v))
        elif what == "gpu":
            f = draw(st.sampled_from([2, 4, 8]))
            _attempt(lambda: handle.gpu_tile(v, new(v + "b"), new(v + "t"), f))
        elif what == "gpu_serial":
            _serial_tile(draw, handle, loops, v, new)


def _serial_tile(draw, handle, loops, v, new) -> None:
    """``v`` split into blocks and a tile of ``f * t`` points, the tile into ``f``
    threads computing ``t`` points each in an unrolled loop (of 2 or 4 points, sometimes
    vectorized: float2/float4 accesses); maybe another loop's short run unrolled inside
    the thread as well (a colour channel)."""
    f, t = draw(st.sampled_from([2, 4, 8])), draw(st.sampled_from([2, 3, 4]))
    b, i, th, se = new(v + "b"), new(v + "i"), new(v + "t"), new(v + "s")
    if not (_attempt(lambda: handle.split(v, b, i, f * t))
            and _attempt(lambda: handle.split(i, th, se, t))):
        return
    inner = [se]
    others = [u for u in loops if u != v]
    if others and draw(st.booleans()):
        u = draw(st.sampled_from(others))
        uo, ui = new(u + "o"), new(u + "i")
        k = draw(st.sampled_from([2, 3]))
        if (_attempt(lambda: handle.split(u, uo, ui, k, tail="guard_with_if"))
                and _attempt(lambda: handle.reorder(ui, se, th))):
            inner.insert(0, ui)
    if _attempt(lambda: handle.gpu_blocks(b)) and _attempt(lambda: handle.gpu_threads(th)):
        vector = t in (2, 4) and draw(st.booleans())     # float2/float4 accesses
        for w in inner:
            _attempt(lambda: handle.vectorize(w) if vector and w == se else handle.unroll(w))


def _level(draw, s, pipe, name, h):
    consumers = [c for c in pipe.consumers(name) if c in pipe.funcs
                 and not s.func_schedule(c).is_inline()]
    choices = ["inline", "root"] + (["at", "at"] if consumers else [])
    level = draw(st.sampled_from(choices))
    if level == "inline":
        _attempt(h.compute_inline)
        return
    if level == "root":
        _attempt(h.compute_root)
        return
    c = draw(st.sampled_from(consumers))
    loops = _loops(s, c)
    i = draw(st.integers(0, len(loops) - 1))
    if not _attempt(lambda: h.compute_at(c, loops[i])):
        _attempt(h.compute_root)
        return
    store = draw(st.sampled_from(["same", "same", "root", "outer"]))
    if store == "root":
        _attempt(h.store_root)
    elif store == "outer" and i + 1 < len(loops):
        j = draw(st.integers(i + 1, len(loops) - 1))
        _attempt(lambda: h.store_at(c, loops[j]))
    if not _attempt(s.validate):       # another consumer reads it outside that loop
        _attempt(h.store_root)
        _attempt(h.compute_root)


def _wraps(draw, s, pipe) -> None:
    """In a third of the schedules, each input wrapped (``Schedule.wrap``) for a random
    non-empty subset of the Funcs that call it; the wrappers are then scheduled like
    any Func (a wrapper computed inside a GPU block is its input staged there)."""
    if not draw(st.sampled_from([False, False, True]), label="wrap inputs"):
        return
    for inp in sorted(pipe.images):
        callers = pipe.consumers(inp)
        if not callers:
            continue
        chosen = draw(st.lists(st.sampled_from(callers), min_size=1, max_size=len(callers),
                               unique=True), label=f"wrap {inp} for")
        _attempt(lambda: s.wrap(inp, chosen))


def _shared(draw, s, name, h) -> None:
    """A Func computed inside a GPU block loop (and outside its thread loops) may be
    stored in shared memory."""
    if s.func_schedule(name).compute.kind != "at" or not draw(st.booleans(), label="shared"):
        return
    _attempt(lambda: h.store_in("shared"))


@st.composite
def schedules(draw, pipe, max_directives: int = 3, gpu: bool = False):
    """A random legal Schedule of ``pipe`` (see the module docstring)."""
    s = ts.Schedule(pipe, target="cuda" if gpu else "cpu")
    if gpu:
        _wraps(draw, s, pipe)
        pipe = s.view
    for name in reversed(pipe.order()):
        f = pipe.func(name)
        h = s[name]
        if not pipe.is_output(name):
            _level(draw, s, pipe, name, h)
            if gpu:
                _shared(draw, s, name, h)
        if s.func_schedule(name).is_inline():
            continue
        stages = [h] + [h.update(i) for i in range(len(f.updates))]
        for k, stage in enumerate(stages):
            _stage_directives(draw, s, name, k, stage, max_directives, gpu)
    s.validate()
    return s
