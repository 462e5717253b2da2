"""``tilesolve bench --plot FILE``: tilesolve's run time over each of Halide's
autoschedulers', per app, as ratios on a log scale (below 1: tilesolve is faster).

``bench_ratios(records, ours=None)`` reads the records of a bench JSON (plain dicts,
``bench.table.read_json``): for each app, the fastest run (``run_ms_min``) of the
tilesolve method ``ours`` (default: the first solver method of the run, naive left out)
over that of each ``halide-<autoscheduler>`` row.  ``write_plot(path, doc, ours)``
draws them: ``.svg`` and ``.html`` with the SVG writer here, ``.png`` and ``.pdf`` with
matplotlib (an optional extra: ``pip install tilesolve[viz]``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..errors import TilesolveError
from .svg import document, el, text

__all__ = ["BenchRatios", "bench_ratios", "plot_svg", "write_plot"]

SERIES_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f")
HALIDE_PREFIX = "halide-"


@dataclass(frozen=True)
class BenchRatios:
    ours: str                    # the tilesolve method compared
    series: tuple                # Halide autoschedulers, in the order first met
    apps: tuple                  # apps with a tilesolve time, in the order first met
    ratio: dict                  # (app, autoscheduler) -> ours / theirs (ms over ms)
    missing: dict                # (app, autoscheduler) -> why there is no ratio


def _ok_ms(r) -> float | None:
    v = r.get("run_ms_min")
    return float(v) if r.get("status") == "ok" and isinstance(v, (int, float)) and v > 0 else None


def bench_ratios(records, ours: str | None = None) -> BenchRatios:
    ts_rows = [r for r in records if r.get("backend") == "tilesolve-cpu"
               and r.get("method") != "naive"]
    methods = list(dict.fromkeys(r.get("method") for r in ts_rows))
    if ours is None:
        if not methods:
            raise TilesolveError("bench plot: the records hold no tilesolve solver rows (only "
                                 "naive, or none): nothing to compare")
        ours = methods[0]
    elif ours not in methods:
        raise TilesolveError(f"bench plot: no rows of tilesolve method {ours!r}; the records "
                             f"have {', '.join(methods) or 'none'}")
    series = list(dict.fromkeys(r["method"][len(HALIDE_PREFIX):] for r in records
                                if str(r.get("method", "")).startswith(HALIDE_PREFIX)))
    if not series:
        raise TilesolveError("bench plot: the records hold no Halide autoscheduler rows; run "
                             "`tilesolve bench --compare-halide --json FILE`")
    mine = {r["app"]: r for r in ts_rows if r.get("method") == ours}
    theirs = {(r["app"], r["method"][len(HALIDE_PREFIX):]): r for r in records
              if str(r.get("method", "")).startswith(HALIDE_PREFIX)}
    ratio, missing = {}, {}
    for app, r in mine.items():
        a = _ok_ms(r)
        for s in series:
            h = theirs.get((app, s))
            b = _ok_ms(h) if h is not None else None
            if a is not None and b is not None:
                ratio[(app, s)] = a / b
            else:
                why = (r if a is None else h or {}).get("detail") or "no row"
                missing[(app, s)] = f"{ours if a is None else s}: {why}"
    return BenchRatios(ours, tuple(series), tuple(mine), ratio, missing)


def _title(br: BenchRatios) -> str:
    return (f"tilesolve ({br.ours}) run time / Halide autoscheduler's, per app "
            "(log scale; below 1: tilesolve faster)")


def plot_svg(br: BenchRatios) -> str:
    """The grouped bar chart as an ``<svg>`` element: one bar per (app, autoscheduler)."""
    vals = list(br.ratio.values()) or [1.0]
    lo = 2.0 ** math.floor(math.log2(min(min(vals), 1.0) / 1.05))
    hi = 2.0 ** math.ceil(math.log2(max(max(vals), 1.0) * 1.05))
    left, top, plot_h, bar_w, gap = 56, 46, 280, 14, 18
    group_w = bar_w * len(br.series) + gap
    legend_w = sum(16 + 7 * (len(s) + 3) + 14 for s in br.series)
    width = left + max(group_w * len(br.apps), 7 * len(_title(br)), legend_w) + 20
    bottom = top + plot_h

    def y(v):
        return top + plot_h * (math.log2(hi) - math.log2(v)) / (math.log2(hi) - math.log2(lo))

    parts = [text(left, 16, _title(br), font_size=13)]
    lx = left
    for k, s in enumerate(br.series):
        parts.append(el("rect", x=lx, y=24, width=12, height=12,
                        fill=SERIES_COLOURS[k % len(SERIES_COLOURS)]))
        parts.append(text(lx + 16, 34, f"vs {s}", font_size=11))
        lx += 16 + 7 * (len(s) + 3) + 14
    t = lo
    while t <= hi * 1.0001:
        parts.append(el("line", x1=left, y1=y(t), x2=width - 20, y2=y(t),
                        stroke="#333" if t == 1.0 else "#ddd",
                        stroke_width=1.2 if t == 1.0 else 0.8))
        tick = f"1/{round(1 / t)}" if t < 1 else f"{t:g}"
        parts.append(text(left - 6, y(t) + 4, tick, font_size=10, text_anchor="end"))
        t *= 2
    for i, app in enumerate(br.apps):
        x0 = left + i * group_w + gap / 2
        for k, s in enumerate(br.series):
            x = x0 + k * bar_w
            r = br.ratio.get((app, s))
            if r is None:
                why = br.missing.get((app, s), "")
                parts.append(el("g", el("title", f"{app} vs {s}: no ratio ({why})"),
                                text(x + bar_w / 2, y(1.0) - 3, "x", font_size=10,
                                     text_anchor="middle", fill="#a00"), class_="missing",
                                data_app=app, data_series=s))
                continue
            y0, y1 = sorted((y(1.0), y(r)))
            parts.append(el("rect", el("title", f"{app} vs {s}: {r:.3g}x"), x=x, y=y0,
                            width=bar_w - 2, height=max(y1 - y0, 1.0),
                            fill=SERIES_COLOURS[k % len(SERIES_COLOURS)], class_="bar",
                            data_app=app, data_series=s, data_ratio=f"{r:.4g}"))
        cx = x0 + bar_w * len(br.series) / 2
        parts.append(text(cx, bottom + 12, app, font_size=11, text_anchor="end",
                          transform=f"rotate(-40 {cx:.1f} {bottom + 12})"))
    return document(width, bottom + 110, *parts, class_="bench-plot")


def _plot_matplotlib(path: str, br: BenchRatios) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TilesolveError(f"bench plot {path}: .png and .pdf need matplotlib (pip install "
                             "tilesolve[viz]); .svg and .html do not") from None
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(br.apps) * len(br.series)), 4.5))
    w = 0.8 / len(br.series)
    for k, s in enumerate(br.series):
        xs = [i + k * w for i, a in enumerate(br.apps) if (a, s) in br.ratio]
        ax.bar(xs, [br.ratio[(a, s)] - 1 for a in br.apps if (a, s) in br.ratio], w,
               bottom=1, label=f"vs {s}", color=SERIES_COLOURS[k % len(SERIES_COLOURS)])
    ax.set_yscale("log", base=2)
    ax.axhline(1.0, color="#333", lw=1)
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(br.apps))], br.apps, rotation=40,
                  ha="right")
    ax.set_title(_title(br), fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_plot(path: str, doc: dict, ours: str | None = None) -> BenchRatios:
    """Draw the ratios of the bench ``doc`` (``read_json``'s dict) to ``path``; the
    format follows its extension (.svg, .html, .png, .pdf)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".svg", ".html", ".png", ".pdf"):
        raise TilesolveError(f"bench plot {path}: give a .svg, .html, .png or .pdf file name")
    br = bench_ratios(doc.get("records", []), ours)
    if ext in (".png", ".pdf"):
        _plot_matplotlib(path, br)
        return br
    svg = plot_svg(br)
    if ext == ".html":
        from html import escape
        svg = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
               f"{escape(_title(br))}</title></head><body>{svg}</body></html>\n")
    with open(path, "w") as f:
        f.write(svg)
    return br
