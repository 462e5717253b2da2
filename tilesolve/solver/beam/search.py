"""One pass of beam search over groupings (Adams 2019, Anderson 2021).

``beam_pass`` keeps the ``width`` best states (``State.rank``: fewest
infeasible groups, then cost, then the canonical text, so ties break the
same way every run) after each decision.  Options:

* ``frozen``: Func -> decision; those Funcs get only that decision
  (Anderson 2021 §3.2: decisions of cheap parts are frozen from an earlier
  pass and the search spends its width on the expensive parts);
* ``pin``: a full decision sequence (greedy's answer) whose states are kept
  in the beam at every depth even when they rank below the width, so the
  final beam always holds that answer;
* ``settle``: after each step the kept states' newly closed groups are
  costed exactly (``Space.settle``), so ranking uses exact costs wherever
  a group can no longer change;
* ``deadline``: a ``time.perf_counter()`` value; once passed, each state in
  the beam is completed by making every remaining Func its own group (their
  singleton costs are already known), so a pass always ends with complete
  states.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from .state import NEW, Space


@dataclass
class PassStats:
    expanded: int = 0        # states whose successors were generated
    generated: int = 0       # successor states built (legal ones)
    timed_out: bool = False


def beam_pass(space: Space, width: int, frozen: dict | None = None, pin=None,
              deadline: float | None = None, stats: PassStats | None = None,
              settle: bool = False) -> list:
    """The final states of one pass, best first."""
    stats = stats if stats is not None else PassStats()
    pinned = space.follow(pin) if pin is not None else None
    beam = [space.root()]
    n = len(space.order)
    for depth in range(n):
        if deadline is not None and time.perf_counter() > deadline:
            stats.timed_out = True
            beam = [_complete(space, s) for s in beam]
            break
        cands: dict = {}
        for s in beam:
            stats.expanded += 1
            for c in space.children(s, frozen):
                stats.generated += 1
                cands.setdefault(c.key, c)
        ranked = sorted(cands.values(), key=lambda c: c.rank())[:max(1, width)]
        if pinned is not None:
            p = pinned[depth]
            if all(c.key != p.key for c in ranked):
                ranked.append(p)
        if settle:
            ranked = sorted((space.settle(c) for c in ranked), key=lambda c: c.rank())
        beam = ranked
    return sorted(beam, key=lambda c: c.rank())


def _complete(space: Space, s):
    while not space.done(s):
        s = space.child(s, NEW)
    return s
