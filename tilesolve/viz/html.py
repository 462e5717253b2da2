"""``Schedule.to_html()``: one self-contained HTML page picturing a schedule.

The page holds the pipeline DAG with the solver's groups as clusters (``dag.py``),
the predicted cost of each group split into its terms, beside the measured time when a
profile is given (``groups.cost_svg``), and a card per group: its tile drawn over its
output (``groups.tile_svg``), the cost terms and why it is fused
(``GroupRecord.why_fused``).  Everything is inline (SVG and CSS): the page fetches
nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from html import escape

from ..errors import TilesolveError
from .dag import dag_svg, group_colour
from .groups import cost_svg, tile_svg, time_text

__all__ = ["schedule_html", "schedule_groups", "measured_ms"]

CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.summary td { padding: 0 1em 0 0; }
.scroll { overflow-x: auto; border: 1px solid #ddd; padding: 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 14px; }
.card { border: 1px solid #bbb; border-radius: 6px; padding: 8px 12px; min-width: 260px; }
.card h3 { font-size: 1em; margin: 0 0 6px 0; }
.card table { border-collapse: collapse; font-size: 0.85em; }
.card td { padding: 1px 8px 1px 0; } .num { text-align: right; }
.why { font-size: 0.85em; color: #333; max-width: 460px; }
.legend span { margin-right: 1.2em; }
"""


def schedule_groups(schedule) -> tuple:
    """The solver's groups of ``schedule`` (GroupRecords), from a solved schedule's
    provenance or the plain dict a JSON round trip gives; () for a schedule by hand."""
    from ..solver.provenance import Provenance
    prov = getattr(schedule, "provenance", None)
    if not prov:
        return ()
    if not isinstance(prov, Mapping):
        raise TilesolveError(f"to_html: the schedule's provenance is a "
                             f"{type(prov).__name__}, not a mapping of its fields")
    return Provenance.from_dict(prov).groups


def measured_ms(profile) -> dict:
    """Func -> measured milliseconds per run, from ``CompiledPipeline.profile()``."""
    funcs = profile.get("funcs") if isinstance(profile, Mapping) else None
    if not isinstance(funcs, Mapping):
        raise TilesolveError("to_html: profile= takes the dict of compiled.profile() (with "
                             f"'funcs': name -> {{'ms': ...}}), got {type(profile).__name__}")
    runs = max(1, int(profile.get("runs") or 1))
    try:
        return {n: float(v["ms"]) / runs for n, v in funcs.items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise TilesolveError(f"to_html: profile['funcs'] has an entry without a number "
                             f"'ms': {exc}") from None


def _extents(pipeline, estimates) -> dict:
    """Func -> extent per dimension, from the estimates (or every output's
    ``set_estimates``); {} when there are none."""
    if estimates is None:
        outs = [pipeline.func(n) for n in pipeline.output_names]
        if not all(getattr(f, "estimates", None) for f in outs):
            return {}
        estimates = {f.name: f.estimates for f in outs}
    from ..solver.problem import Problem
    regions = Problem(pipeline, None, estimates, inline=False).regions
    return {n: [hi - lo + 1 for lo, hi in box] for n, box in regions.items()}


def _summary(schedule, groups) -> str:
    prov = getattr(schedule, "provenance", None) or {}
    rows = [("outputs", ", ".join(schedule.pipeline.output_names)),
            ("Funcs", str(len(getattr(schedule, "view", schedule.pipeline).funcs))),
            ("target", str(getattr(schedule, "target", "cpu")))]
    for k in ("method", "spec", "predicted_cost", "status", "gap"):
        if k in prov:
            v = prov[k]
            rows.append((k.replace("_", " "), f"{v:.6g}" if isinstance(v, float) else str(v)))
    rows.append(("groups", str(len(groups)) if groups else "none (written by hand)"))
    return ("<table class=\"summary\">" + "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in rows) + "</table>")


def _card(i, g, extent, ms) -> str:
    prods = [m for m in g.members if m != g.output]
    head = escape(g.output) + (f" &larr; {escape(', '.join(prods))}" if prods else "")
    terms = "".join(f"<tr><td>{escape(k)}</td><td class=\"num\">{v:.4g}</td></tr>"
                    for k, v in g.cost.terms().items() if v)
    why = g.why_fused()
    timed = ""
    if ms is not None:
        timed = ("<table><tr><td><b>measured</b></td><td class=\"num\">a run</td></tr>" +
                 "".join(f"<tr><td>{escape(m)}</td><td class=\"num\">{time_text(ms[m])}</td></tr>"
                         for m in g.members if m in ms) + "</table>")
    return (f"<div class=\"card\" data-group=\"{i}\" style=\"background:"
            f"linear-gradient({group_colour(i)} 0, {group_colour(i)} 34px, #fff 34px)\">"
            f"<h3>group {i}: {head}</h3>"
            f"{tile_svg(g.tiling, extent, group_colour(i))}"
            f"<div>{g.cost.n_tiles} tile{'s' if g.cost.n_tiles != 1 else ''}, predicted cost "
            f"{g.cost.total:.6g}</div>"
            f"<table>{terms}</table>"
            + (f"<p class=\"why\">{escape(why)}</p>" if why else "")
            + timed + "</div>")


def schedule_html(schedule, *, estimates=None, profile=None, title=None) -> str:
    """The HTML page of ``schedule``.  ``estimates``: output (and input) sizes, as given
    to ``solve_schedule``, for the extents under the tiles (default: the outputs'
    ``set_estimates``, else the tiles are drawn on a nominal output); ``profile``: the
    dict of ``compiled.profile()`` (a build with ``profile=True``) to show the measured
    time per Func beside the prediction; ``title``: the page's heading."""
    pipeline = getattr(schedule, "view", schedule.pipeline)    # with its wrapper Funcs
    groups = schedule_groups(schedule)
    ms = measured_ms(profile) if profile is not None else None
    inlined = {n for n in pipeline.order() if schedule.func_schedule(n).is_inline()}
    extents = _extents(pipeline, estimates)
    title = title or f"schedule of {', '.join(pipeline.output_names)}"
    captions = {i: f"{g.output}, " + ("" if all(t is None for t in g.tiling) else "tile ")
                + g.tiling_text() for i, g in enumerate(groups)}
    body = [f"<h1>{escape(title)}</h1>", _summary(schedule, groups),
            "<h2>Pipeline</h2>",
            "<p class=\"legend\"><span>boxes: Funcs (bold: outputs)</span><span>rounded grey: "
            "inputs</span><span>dashed: inlined</span><span>shaded clusters: the solver's "
            "groups (one loop nest each)</span>"
            + ("<span>times: measured, a run</span>" if ms is not None else "") + "</p>",
            "<div class=\"scroll\">"
            f"{dag_svg(pipeline, groups, inlined, captions=captions, measured=ms)}</div>"]
    if groups:
        rows = [(f"group {i}: {g.output}", g.cost.terms(),
                 None if ms is None else sum(ms.get(m, 0.0) for m in g.members))
                for i, g in enumerate(groups)]
        body += ["<h2>Predicted cost per group" + (" and measured time" if ms is not None
                                                    else "") + "</h2>",
                 "<p>Each bar is the group's share of the predicted cost, split by term"
                 + ("; the grey bar below it is its share of the measured time" if ms is not None
                    else "") + ".</p>",
                 f"<div class=\"scroll\">{cost_svg(rows)}</div>",
                 "<h2>Groups</h2><div class=\"cards\">"]
        body += [_card(i, g, extents.get(g.output), ms) for i, g in enumerate(groups)]
        body.append("</div>")
    if ms is not None:
        grouped = {m for g in groups for m in g.members}
        rest = {n: v for n, v in ms.items() if n not in grouped}
        if rest:
            body.append("<h2>Measured, outside the groups</h2><table>" + "".join(
                f"<tr><td>{escape(n)}</td><td class=\"num\">{time_text(v)}</td></tr>"
                for n, v in rest.items()) + "</table>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
