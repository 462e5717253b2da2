"""The cost model's prediction for a whole schedule, under any spec.

A solved schedule records its groups in ``provenance.groups`` (output, members,
tiling; ``GroupRecord`` objects, or plain dicts after a JSON round trip).
:func:`schedule_costs` prices those columns again with a ``CostModel`` built for
another spec, which is what calibration needs: the schedule that was measured
stays fixed while the spec's parameters move.

The prediction is the sum of each column's cost terms (``Cost.terms()``), not
``Cost.total``: a measured schedule has run, so the solver's hard constraints
(cache capacity, parallelism threshold) that make a column infeasible for
*choosing* do not apply to *predicting* it; its terms stay finite.

Schedules without recorded groups (written by hand) cannot be priced: the
model prices (group, tiling) columns, not arbitrary loop nests.
"""
from __future__ import annotations

from ..errors import SolverError
from .cost import CostModel
from .problem import Problem
from .space import Group, Tiling

__all__ = ["schedule_columns", "schedule_costs", "predict_cost", "cost_of_terms",
           "schedule_problem"]


def _record_fields(rec) -> tuple:
    """(output, members, tiling, GPU points per thread or None) of a group record."""
    if isinstance(rec, dict):
        gpu = (rec.get("cost") or {}).get("gpu") or {}
        serial = gpu.get("serial")
        return (rec["output"], tuple(rec["members"]), tuple(rec["tiling"]),
                None if serial is None else tuple(serial))
    gpu = rec.cost.gpu if rec.cost is not None else None
    return rec.output, tuple(rec.members), tuple(rec.tiling), getattr(gpu, "serial", None)


def schedule_columns(schedule) -> list:
    """The (Group, Tiling) columns a solved schedule records, in its order.

    Raises ``SolverError`` for a schedule without recorded groups."""
    prov = getattr(schedule, "provenance", None)
    groups = None
    if prov is not None:
        try:
            groups = prov.get("groups")
        except AttributeError:
            groups = None
    if not groups:
        raise SolverError("the schedule records no groups (provenance.groups): only "
                          "schedules made by the solver (solve_schedule, "
                          "schedule_from_columns) can be priced by the cost model")
    out = []
    for rec in groups:
        output, members, tiling, serial = _record_fields(rec)
        out.append((Group(output, frozenset(members)), Tiling(tuple(tiling), serial)))
    return out


def cost_of_terms(cost) -> float:
    """The sum of a Cost's terms: its total, ignoring the solver's hard constraints."""
    return float(sum(cost.terms().values()))


def schedule_costs(model: CostModel, schedule) -> list:
    """The ``Cost`` of each recorded column of ``schedule`` under ``model``'s spec."""
    problem = model.problem
    out = []
    for group, tiling in schedule_columns(schedule):
        missing = sorted(m for m in group.members if m not in problem.funcs)
        if missing:
            raise SolverError(f"the schedule's group {group} has Func {missing[0]}, which the "
                              "problem inlines or does not have (a schedule of another "
                              "pipeline, or other estimates?)")
        out.append(model.cost(group, tiling))
    return out


def schedule_problem(pipeline, spec, estimates, schedule) -> Problem:
    """The Problem a solved ``schedule`` was made in: its recorded inlining choices
    (``provenance.inlined``, which ``inline_refine`` may have extended), else the
    default ones."""
    prov = getattr(schedule, "provenance", None)
    try:
        inlined = prov.get("inlined") if prov is not None else None
        if inlined is None and prov is not None and prov.get("groups"):
            inlined = ()              # a solved schedule that inlined nothing
    except AttributeError:
        inlined = None
    return Problem(pipeline, spec, estimates,
                   inlined=frozenset(inlined) if inlined is not None else None)


def predict_cost(pipeline, schedule, spec, estimates) -> float:
    """Predicted cost of a solved ``schedule`` of ``pipeline`` on ``spec`` (a
    HardwareSpec or a spec name) for ``estimates``, in the model's units."""
    from ..specs import load_spec
    model = CostModel(schedule_problem(pipeline, load_spec(spec), estimates, schedule))
    return sum(cost_of_terms(c) for c in schedule_costs(model, schedule))
