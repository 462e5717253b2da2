"""Typed provenance of a solved schedule: how it was made and what each group costs.

``solve_schedule`` returns a Schedule whose ``provenance`` is a
:class:`Provenance`.  The Schedule (``tilesolve.model``) knows nothing of the
solver: it holds the object opaquely and reads it only through the read-only
mapping protocol every provenance offers (``"method" in p``, ``p["gap"]``,
``p.get(...)``, iteration over the keys), so ``print(schedule)`` and
``schedule.explain()`` work for solver and hand-written provenance alike.  A
:class:`GroupRecord` prints itself (``explain()`` shows each group with its
cost split).

At the JSON boundary a provenance is a plain dict: ``to_dict()`` writes it
(``Schedule.to_json`` calls it) and :meth:`Provenance.from_dict` reads it
back; ``Provenance == dict`` compares the dict forms, so a schedule read back
from JSON (whose provenance is the plain dict) equals the one written.

Keys of the mapping view are the fields that are set (not None, not empty).
Costs are in the cost model's units (see ``solver.cost``), times in seconds.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .space import Cost, GpuCost  # noqa: F401  (GpuCost re-exported)

__all__ = ["Provenance", "GroupRecord", "IlpStats", "BeamStats", "BeamRun", "Candidate",
           "Cost", "GpuCost", "plain"]


def plain(v):
    """A JSON-able form of ``v``: records to dicts, tuples to lists, non-finite
    floats to None (JSON has no infinity)."""
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _record_dict(obj) -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if v is None or (isinstance(v, (tuple, dict)) and not v):
            continue
        out[f.name] = plain(v)
    return out


def _num(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class GroupRecord:
    """One group of the answer: output, members, tiling and its cost split."""

    output: str
    members: tuple               # sorted, output included
    tiling: tuple                # per pure dim of the output: tile extent or None
    cost: Cost
    apart: dict | None = None    # fused groups: the cost terms of the members apart

    def to_dict(self) -> dict:
        out = {"output": self.output, "members": list(self.members),
               "tiling": list(self.tiling), "cost": self.cost.to_dict()}
        if self.apart is not None:
            out["apart"] = dict(self.apart)
        return out

    @staticmethod
    def from_dict(d: dict) -> "GroupRecord":
        return GroupRecord(d["output"], tuple(d["members"]), tuple(d["tiling"]),
                           Cost.from_dict(d["cost"]), d.get("apart"))

    def why_fused(self) -> str | None:
        """Why the group is fused, in the model's terms: its cost against its members
        each at root at its own best tiling, and the terms that moved most."""
        if self.apart is None or len(self.members) < 2:
            return None
        mine, apart = self.cost.terms(), self.apart
        total_apart = sum(apart.values())
        delta = {k: mine.get(k, 0.0) - apart.get(k, 0.0) for k in set(mine) | set(apart)}
        moved = sorted((k for k in delta if delta[k]), key=lambda k: -abs(delta[k]))[:3]
        saved = total_apart - sum(mine.values())
        pct = 100.0 * saved / total_apart if total_apart else 0.0
        terms = ", ".join(f"{k} {delta[k]:+.3g}" for k in moved)
        return (f"fused: {sum(mine.values()):.6g} against {total_apart:.6g} apart (saves "
                f"{pct:.1f}%): {terms}")

    def tiling_text(self) -> str:
        """``16x8``, ``*x1x*`` (``*``: that dimension untiled) or ``untiled``."""
        return "untiled" if all(t is None for t in self.tiling) else "x".join(
            "*" if t is None else str(t) for t in self.tiling)

    def lines(self) -> list:
        prods = [m for m in self.members if m != self.output]
        tl = self.tiling_text()
        head = self.output + (f" <- {', '.join(prods)}" if prods else "")
        why = self.why_fused()
        return [f"{head}   tile {tl}, {self.cost.n_tiles} tiles"] + [
            "    " + ln for ln in self.cost.describe_lines() + ([why] if why else [])]

    def __str__(self) -> str:
        return "\n".join(self.lines())


@dataclass(frozen=True)
class IlpStats:
    """What the exact model was and how it was solved."""

    solver: str                  # "cp-sat", "pulp-cbc", "pulp-highs"
    columns: int                 # (group, tiling) columns in the model
    groups_enumerated: int
    enumeration_cut: bool        # a cap or the deadline stopped group enumeration
    build_time: float            # greedy + enumeration + costing, seconds
    solver_time: float | None = None

    def to_dict(self) -> dict:
        return _record_dict(self)

    def __str__(self) -> str:
        return (f"{self.solver}, {self.columns} columns from {self.groups_enumerated} groups"
                f"{' (enumeration cut)' if self.enumeration_cut else ''}, build "
                f"{self.build_time:.3g} s, solve {_num(self.solver_time)} s")


@dataclass(frozen=True)
class BeamRun:
    """One pass of the beam search."""

    label: str                   # "coarse", "freeze-1", "restart-1", ...
    hash_depth: int
    seed: int
    frozen: int                  # Funcs whose decision was frozen
    best_cost: float             # best answer so far after this pass

    def to_dict(self) -> dict:
        return _record_dict(self)


@dataclass(frozen=True)
class BeamStats:
    beam_width: int
    states_expanded: int
    states_generated: int
    passes: int
    runs: tuple                  # of BeamRun
    source: str                  # "beam" or "greedy": which answer was returned
    menu: str
    seed: int
    timed_out: bool
    greedy_time: float           # seconds greedy took (not limited by the time limit)
    search_time: float           # seconds of the whole beam solve, greedy included

    def to_dict(self) -> dict:
        return _record_dict(self)

    def __str__(self) -> str:
        return (f"width {self.beam_width}, {self.passes} passes, {self.states_expanded} states "
                f"expanded, answer from {self.source}{', timed out' if self.timed_out else ''}")


@dataclass(frozen=True)
class Candidate:
    """A method ``auto`` ran, with its answer's predicted cost."""

    method: str
    predicted_cost: float
    solve_time: float
    status: str | None = None
    chosen: bool = False
    worst_ratio: float | None = None     # auto's tie: its largest cost over the best answer's
    # among the perturbed models (solver/robust.py)

    def to_dict(self) -> dict:
        return _record_dict(self)

    def __str__(self) -> str:
        st = f" ({self.status})" if self.status else ""
        worst = ("" if self.worst_ratio is None else
                 f", at worst {self.worst_ratio:.3g}x the best under a perturbed model")
        return (f"{self.method}{st}: cost {self.predicted_cost:.6g} in {self.solve_time:.3g} s"
                + worst + (" [chosen]" if self.chosen else ""))

    __repr__ = __str__


_NESTED = {"ilp": IlpStats, "beam": BeamStats}


@dataclass(frozen=True, eq=False)
class Provenance(Mapping):
    """How a solver made a schedule (read-only; a mapping of its set fields)."""

    method: str                          # "greedy", "ilp", "beam" or "auto"
    predicted_cost: float                # the model cost of the answer
    status: str | None = None            # ILP: "optimal"/"feasible"/why it failed
    objective: float | None = None       # ILP objective of the answer
    bound: float | None = None           # ILP best bound
    gap: float | None = None             # (objective - bound) / objective
    fallback: str | None = None          # the method whose answer was used instead
    fallback_reason: str | None = None
    greedy_cost: float | None = None     # the greedy answer's cost (the incumbent)
    merges: int | None = None            # greedy: merges applied
    cost_evaluations: int | None = None  # columns costed
    ilp: IlpStats | None = None
    beam: BeamStats | None = None
    candidates: tuple = ()               # auto: every method run (Candidate)
    robust: str | None = None            # auto: how a tie between its answers was broken
    solve_time: float | None = None      # wall seconds of solve_schedule
    spec: str | None = None
    groups: tuple = ()                   # of GroupRecord, in pipeline order
    inlined: tuple = ()                  # Funcs inlined (before grouping, or after: inline_refine)
    rank: int | None = None              # k best: 0 for the best answer, 1 for the next...
    extra: dict = field(default_factory=dict)   # keys from JSON this version does not know

    # -- mapping view --------------------------------------------------------------
    def _keys(self) -> list:
        return [f.name for f in dataclasses.fields(self) if f.name != "extra"
                and getattr(self, f.name) is not None
                and not (isinstance(getattr(self, f.name), (tuple, dict)) and not getattr(self, f.name))
                ] + list(self.extra)

    def __getitem__(self, key):
        if key in self.extra:
            return self.extra[key]
        if key == "extra" or key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other) -> bool:
        if isinstance(other, (Provenance, Mapping)):
            od = other.to_dict() if isinstance(other, Provenance) else dict(other)
            return self.to_dict() == od
        return NotImplemented

    __hash__ = None

    def replace(self, **changes) -> "Provenance":
        return dataclasses.replace(self, **changes)

    # -- the plain dict at the JSON boundary ----------------------------------------------
    def to_dict(self) -> dict:
        out = {k: plain(getattr(self, k)) for k in self._keys() if k not in self.extra}
        out.update({k: plain(v) for k, v in self.extra.items()})
        return out

    @staticmethod
    def from_dict(d: Mapping) -> "Provenance":
        if isinstance(d, Provenance):
            return d
        names = {f.name for f in dataclasses.fields(Provenance)} - {"extra"}
        kw, extra = {}, {}
        for k, v in d.items():
            if k not in names:
                extra[k] = v
            elif k == "groups":
                kw[k] = tuple(GroupRecord.from_dict(g) for g in v)
            elif k == "candidates":
                kw[k] = tuple(Candidate(**c) for c in v)
            elif k == "beam":
                kw[k] = BeamStats(**{**v, "runs": tuple(BeamRun(**r) for r in v.get("runs", ()))})
            elif k in _NESTED:
                kw[k] = _NESTED[k](**v)
            elif k == "inlined":
                kw[k] = tuple(v)
            else:
                kw[k] = v
        kw.setdefault("method", "unknown")
        kw.setdefault("predicted_cost", math.nan)
        if kw["predicted_cost"] is None:
            kw["predicted_cost"] = math.inf
        return Provenance(**kw, extra=extra)

    # -- text ------------------------------------------------------------------------
    def explain_lines(self) -> list:
        """The provenance in words, one item per line (groups last)."""
        out = []
        for k in self._keys():
            if k == "groups":
                continue
            v = self[k]
            if k == "candidates":
                out.append("candidates:")
                out.extend(f"  {c}" for c in v)
            elif isinstance(v, tuple):
                out.append(f"{k}: {', '.join(str(x) for x in v)}")
            else:
                out.append(f"{k}: {_num(v)}")
        if self.groups:
            out.append("groups:")
            for i, g in enumerate(self.groups):
                ls = g.lines()
                out.append(f"  group {i}: {ls[0]}")
                out.extend("  " + ln for ln in ls[1:])
        return out

    def __str__(self) -> str:
        return "\n".join(self.explain_lines())

    def __repr__(self) -> str:
        return (f"Provenance(method={self.method!r}, predicted_cost={self.predicted_cost!r}, "
                f"status={self.status!r}, {len(self.groups)} groups)")
