"""``tilesolve bench --plot FILE``: tilesolve's run time over each of Halide's
autoschedulers', per app, as ratios on a log scale (below 1: tilesolve is faster).

``write_plot(path, ratios)`` draws a ``bench.ratios.BenchRatios`` (or anything with its
fields: ``ours``, ``series``, ``apps``, ``ratio``, ``missing``): ``.svg`` and ``.html``
with the SVG writer here, ``.png`` and ``.pdf`` with matplotlib (an optional extra:
``pip install tilesolve[viz]``).
"""
from __future__ import annotations

import math
import os

from ..errors import TilesolveError
from .svg import document, el, text

__all__ = ["plot_svg", "write_plot", "check_plot_path"]

SERIES_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f")


def _title(br) -> str:
    return (f"tilesolve ({br.ours}) run time / Halide autoscheduler's, per app "
            "(log scale; below 1: tilesolve faster)")


def plot_svg(br) -> str:
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


def _plot_matplotlib(path: str, br) -> None:
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


def check_plot_path(path: str) -> str:
    """The plot's format from ``path``'s extension; a TilesolveError for any other."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".svg", ".html", ".png", ".pdf"):
        raise TilesolveError(f"bench plot {path}: give a .svg, .html, .png or .pdf file name")
    return ext


def write_plot(path: str, br) -> None:
    """Draw the ratios ``br`` to ``path``; the format follows its extension."""
    ext = check_plot_path(path)
    if ext in (".png", ".pdf"):
        _plot_matplotlib(path, br)
        return
    svg = plot_svg(br)
    if ext == ".html":
        from html import escape
        svg = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
               f"{escape(_title(br))}</title></head><body>{svg}</body></html>\n")
    with open(path, "w") as f:
        f.write(svg)
