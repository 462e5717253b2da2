"""Partial schedules of the beam search: groupings decided output-first.

The search decides the Funcs of ``problem.funcs`` in reverse topological
order (outputs first), so when a Func is decided all its consumers already
are.  Each decision is one of

* ``NEW``: the Func starts a new group, as that group's output; or
* ``JOIN``: the Func joins the group of its consumers — legal only when
  all its consumers are in ONE group and ``problem.can_join_group(f, its output)`` (the
  condition of ``ilp.columns.enumerate_groups`` and of greedy's merges).

Every legal partition is reachable this way and each is reached by exactly
one sequence of decisions.  A group is *closed* once no undecided Func can
ever join it (no undecided joinable producer of a member has all its
decided consumers inside the group); it can no longer change.  The cost
of a state is the sum, over its groups, of the cost of the group's best
tiling: exact (the full menu) for closed groups once ``settle`` has seen
them, and for open groups their current ``TilingSearch.quick`` cost — an
estimate (later joins change it, and quick is an upper bound of exact).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..space import Group

NEW, JOIN = "new", "join"


@dataclass(frozen=True, slots=True)
class State:
    """A partial grouping: the first ``depth`` Funcs of the decision order."""

    depth: int
    owner: tuple            # per Func (problem order): the output of its group, or None
    groups: tuple           # Groups, sorted by output name
    decisions: tuple        # NEW / JOIN per decided Func, in decision order
    cost: float             # finite part of the sum of group costs
    infeasible: int         # groups with no feasible tiling (singletons only)
    key: str                # canonical text of the grouping (tie-breaker)
    closed: frozenset = frozenset()   # outputs of closed groups (costed exactly)

    def rank(self) -> tuple:
        """Sort key: fewest infeasible groups, then cost, then canonical text."""
        return (self.infeasible, self.cost, self.key)

def canonical(groups) -> str:
    return ";".join(str(g) for g in groups)


class Space:
    """The decision order and the facts the transitions need, for one Problem."""

    def __init__(self, problem, costs):
        self.problem = problem
        self.costs = costs                              # a TilingSearch
        self.funcs = tuple(problem.funcs)
        self.index = {f: i for i, f in enumerate(self.funcs)}
        self.order = tuple(reversed(self.funcs))        # decision order
        self.consumers = {f: tuple(sorted(problem.consumers[f])) for f in self.funcs}
        self.joinable = {f: not problem.is_output(f) and bool(problem.consumers[f])
                         for f in self.funcs}
        self.producers = {f: tuple(sorted(p for p in problem.callees[f] if p in self.index))
                          for f in self.funcs}

    def root(self) -> State:
        return State(0, (None,) * len(self.funcs), (), (), 0.0, 0, "")

    def done(self, s: State) -> bool:
        return s.depth == len(self.order)

    def join_target(self, s: State, f: str) -> str | None:
        """The output of the one group holding all of ``f``'s consumers, if
        ``f`` may join it."""
        if not self.joinable[f]:
            return None
        outs = {s.owner[self.index[c]] for c in self.consumers[f]}
        if len(outs) != 1:
            return None
        target = outs.pop()
        return target if self.problem.can_join_group(f, target) else None

    def child(self, s: State, decision: str) -> State | None:
        """The state after deciding the next Func; None if illegal or if a
        joined group has no feasible tiling."""
        f = self.order[s.depth]
        owner = list(s.owner)
        groups = list(s.groups)
        cost, bad = s.cost, s.infeasible
        if decision == JOIN:
            out = self.join_target(s, f)
            if out is None:
                return None
            k = next(i for i, g in enumerate(groups) if g.output == out)
            old = groups[k]
            new = Group(out, old.members | {f})
            best = self.costs.quick(new)
            if best is None:
                return None
            prev = self.costs.quick(old)
            if prev is None:
                bad -= 1
            else:
                cost -= prev[1].total
            cost += best[1].total
            groups[k] = new
        else:
            out = f
            new = Group.singleton(f)
            best = self.costs.quick(new)
            if best is None:
                bad += 1
            else:
                cost += best[1].total
            groups.append(new)
            groups.sort(key=lambda g: g.output)
        owner[self.index[f]] = out
        return State(s.depth + 1, tuple(owner), tuple(groups), s.decisions + (decision,),
                     cost, bad, canonical(groups), s.closed)

    def settle(self, s: State) -> State:
        """``s`` with its newly closed groups costed exactly (``full`` instead
        of ``quick``): they can no longer change, so their cost is final."""
        cost, closed = s.cost, set(s.closed)
        for g in s.groups:
            if g.output in closed or not self.closed(s, g):
                continue
            closed.add(g.output)
            if len(g.members) > 1:          # singletons are already exact
                q, f = self.costs.quick(g), self.costs.full(g)
                if q is not None and f is not None:     # infeasible: counted in ``bad``
                    cost += f[1].total - q[1].total
        if len(closed) == len(s.closed):
            return s
        return State(s.depth, s.owner, s.groups, s.decisions, cost, s.infeasible, s.key,
                     frozenset(closed))

    def children(self, s: State, frozen: dict | None = None) -> list:
        """Legal successors; a frozen Func gets only its frozen decision (or
        NEW when that decision is no longer legal)."""
        f = self.order[s.depth]
        want = (frozen or {}).get(f)
        if want is not None:
            c = self.child(s, want)
            return [c if c is not None else self.child(s, NEW)]
        out = [self.child(s, NEW)]
        j = self.child(s, JOIN)
        if j is not None:
            out.append(j)
        return out

    def follow(self, decisions) -> list:
        """The states along a full decision sequence (NEW where a JOIN is illegal)."""
        s, path = self.root(), []
        for d in decisions:
            s = self.child(s, d) or self.child(s, NEW)
            path.append(s)
        return path

    def decisions_of(self, columns) -> tuple:
        """The decision sequence that builds the grouping of ``columns``."""
        out_of = {m: g.output for g, _, _ in columns for m in g.members}
        return tuple(NEW if out_of[f] == f else JOIN for f in self.order)

    def closed(self, s: State, g: Group) -> bool:
        """Can no undecided Func ever join ``g``?"""
        for m in g.members:
            for p in self.producers[m]:
                i = self.index[p]
                if s.owner[i] is not None or not self.joinable[p]:
                    continue
                decided = [s.owner[self.index[c]] for c in self.consumers[p]
                           if s.owner[self.index[c]] is not None]
                if all(o == g.output for o in decided):
                    return False
        return True
