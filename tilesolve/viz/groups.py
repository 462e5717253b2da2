"""Per-group pictures: a group's tile drawn over its output, and the predicted cost of
every group split into its terms (``Cost.terms()``), beside the measured time."""
from __future__ import annotations

from .svg import document, el, text

__all__ = ["tile_svg", "cost_svg", "time_text", "TERM_COLOURS"]

TERM_COLOURS = {"arith": "#4e79a7", "lanes": "#a0cbe8", "registers": "#f28e2b",
                "reduction": "#ffbe7d", "l1": "#59a14f", "loads": "#e15759",
                "stores": "#ff9d9a", "parallel": "#b07aa1", "overhead": "#9c755f",
                "streams": "#edc948"}
BOX_W, BOX_H = 240, 150
MAX_LINES = 64               # grid lines drawn per dimension; beyond, the first tile only


def time_text(ms: float) -> str:
    """Milliseconds as short text: ``12.3 ms``, ``0.25 ms``, under 0.1 ms in µs."""
    return f"{ms * 1e3:.3g} µs" if ms < 0.1 else f"{ms:.3g} ms"


def tile_svg(tiling, extent, colour: str = "#dbe9f6") -> str:
    """The output's first two dimensions as a rectangle with the tile grid over it.

    ``tiling``: per dimension a tile extent or None (untiled); ``extent``: the output's
    extent per dimension, or None when unknown (no estimates: the tile is drawn at the
    corner of a nominal rectangle and only labelled)."""
    tiling = list(tiling)
    if not tiling:
        return document(BOX_W, 30, text(4, 18, "a scalar output: no tiles"), class_="tile")
    known = extent is not None
    ext = list(extent) if known else []
    w_pts = ext[0] if known else None
    h_pts = (ext[1] if len(ext) > 1 else 1) if known else None
    tw = tiling[0]
    th = tiling[1] if len(tiling) > 1 else None
    parts = []
    if known:
        s = min(BOX_W / w_pts, BOX_H / h_pts)
        W, H = max(w_pts * s, 4.0), max(h_pts * s, 8.0)
        sx, sy = W / w_pts, H / h_pts
        parts.append(el("rect", x=0.5, y=0.5, width=W, height=H, fill="#fafafa",
                        stroke="#333", class_="extent"))
        cw = (tw or w_pts) * sx
        ch = (th or h_pts) * sy
        parts.append(el("rect", x=0.5, y=0.5, width=min(cw, W), height=min(ch, H),
                        fill=colour, stroke="#334", class_="first-tile"))
        for step, size, span, vertical in ((tw, w_pts, H, True), (th, h_pts, W, False)):
            if not step or step >= size or size / step > MAX_LINES:
                continue
            k = step
            while k < size:
                at = 0.5 + k * (sx if vertical else sy)
                parts.append(el("line", x1=at if vertical else 0.5, y1=0.5 if vertical else at,
                                x2=at if vertical else span + 0.5,
                                y2=span + 0.5 if vertical else at, stroke="#667",
                                stroke_width=0.6, class_="grid"))
                k += step
        size_text = " x ".join(str(e) for e in ext)
    else:
        W, H = BOX_W * 0.8, BOX_H * 0.6
        parts.append(el("rect", x=0.5, y=0.5, width=W, height=H, fill="#fafafa", stroke="#999",
                        stroke_dasharray="5 3", class_="extent"))
        parts.append(el("rect", x=0.5, y=0.5, width=W / 4 if tw else W,
                        height=H / 4 if th else H, fill=colour, stroke="#334",
                        class_="first-tile"))
        size_text = "extent unknown (no estimates)"
    tile_text = " x ".join("all" if t is None else str(t) for t in tiling)
    parts.append(text(0, H + 16, f"output {size_text}", font_size=11))
    parts.append(text(0, H + 30, f"tile {tile_text}", font_size=11))
    if known and any(t and e / t > MAX_LINES for t, e in zip(tiling[:2], ext[:2])):
        parts.append(text(0, H + 44, f"(grid finer than {MAX_LINES} a side: first tile only)",
                          font_size=10, fill="#666"))
    return document(round(max(W, 180) + 2), round(H + 48), *parts, class_="tile")


def cost_svg(rows) -> str:
    """One row per group: its predicted cost as a share of the whole, in coloured
    segments by term, and (when measured) its share of the measured time below it.

    ``rows``: ``(label, terms dict, measured ms or None)`` per group."""
    label_w = max([150] + [7 * len(label) + 12 for label, _, _ in rows])
    bar_w, row_h = 420, 22
    total = sum(sum(max(v, 0.0) for v in t.values()) for _, t, _ in rows) or 1.0
    measured_total = sum(ms for _, _, ms in rows if ms is not None)
    any_measured = any(ms is not None for _, _, ms in rows)
    per = row_h * (2 if any_measured else 1) + 8
    legend_h = 22
    parts = []
    lx = 0
    for name, colour in TERM_COLOURS.items():
        parts.append(el("rect", x=lx, y=4, width=12, height=12, fill=colour))
        parts.append(text(lx + 16, 14, name, font_size=11))
        lx += 16 + 7 * len(name) + 14
    if any_measured:
        parts.append(el("rect", x=lx, y=4, width=12, height=12, fill="#888"))
        parts.append(text(lx + 16, 14, "measured", font_size=11))
    for k, (label, terms, ms) in enumerate(rows):
        y = legend_h + 6 + k * per
        parts.append(text(0, y + 15, label, font_size=12))
        x = label_w
        group_total = sum(max(v, 0.0) for v in terms.values())
        for name, v in terms.items():
            if v <= 0:
                continue
            w = bar_w * v / total
            parts.append(el("rect", el("title", f"{label}: {name} {v:.4g}"), x=x, y=y + 3,
                            width=w, height=row_h - 6, fill=TERM_COLOURS.get(name, "#bbb"),
                            class_="term", data_term=name))
            x += w
        parts.append(text(x + 6, y + 15, f"{group_total:.4g} ({100 * group_total / total:.1f}%)",
                          font_size=11))
        if ms is not None:
            share = ms / measured_total if measured_total else 0.0
            w = bar_w * share
            parts.append(el("rect", el("title", f"{label}: measured {time_text(ms)} a run"),
                            x=label_w, y=y + row_h + 3, width=w, height=row_h - 6, fill="#888",
                            class_="measured"))
            parts.append(text(label_w + w + 6, y + row_h + 15,
                              f"{time_text(ms)} ({100 * share:.1f}%)", font_size=11))
    width = max(label_w + bar_w + 150, lx + 90)
    return document(width, legend_h + 10 + len(rows) * per, *parts, class_="costs")
