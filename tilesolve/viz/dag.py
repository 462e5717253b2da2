"""The pipeline DAG as SVG: Funcs and inputs as nodes, producer -> consumer edges, the
solver's groups drawn as clusters, inlined Funcs dashed.

The layout is layered, left to right.  Each group (with the Funcs inlined into it)
is one box laid out inside; the boxes and the nodes outside any group are layered by
``nx.topological_generations`` of the graph they make (strongly connected parts of it,
which a legal schedule does not have, are drawn as one box), and a column is ordered
by where its producers are (the mean height of their centres), which keeps most edges
short and few of them crossing.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from .groups import time_text
from .svg import document, el, text

__all__ = ["dag_svg", "GROUP_COLOURS", "group_colour"]

GROUP_COLOURS = ("#dbe9f6", "#fde3c8", "#d9f0d3", "#eadcf0", "#fbe0e6", "#f6f0c4",
                 "#d5eeee", "#e8e0d4")
NODE_H, NODE_GAP, COL_GAP, BLOCK_GAP, PAD, TITLE_H = 26, 10, 28, 56, 10, 18
CHAR_W, TITLE_CHAR_W = 7.0, 6.2      # pixels a character at 12 and 11 pixels


def group_colour(i: int) -> str:
    return GROUP_COLOURS[i % len(GROUP_COLOURS)]


@dataclass
class _Block:
    nodes: list                  # node names, pipeline order
    groups: list                 # indices of the groups in it
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0
    y: float = 0.0


def _node_w(label: str) -> float:
    return CHAR_W * len(label) + 20


def _blocks(graph: nx.DiGraph, order: list, groups) -> tuple:
    """The boxes to lay out: one per group (its members and the inlined Funcs between
    them), one per other node: ``(condensed graph of the boxes, its node -> _Block)``."""
    owner = {m: i for i, g in enumerate(groups) for m in g.members if m in graph}
    item = {n: ("g", owner[n]) if n in owner else ("n", n) for n in graph}
    items = nx.DiGraph()
    items.add_nodes_from(item.values())
    items.add_edges_from((item[u], item[v]) for u, v in graph.edges if item[u] != item[v])
    cond = nx.condensation(items)
    rank = {n: k for k, n in enumerate(order)}
    blocks = {}
    for c in cond.nodes:
        mem = cond.nodes[c]["members"]
        nodes = sorted((n for n in graph if item[n] in mem), key=lambda n: rank[n])
        blocks[c] = _Block(nodes, sorted(i for kind, i in mem if kind == "g"))
    return cond, blocks


def _inner(graph: nx.DiGraph, block: _Block, label, title, pos: dict) -> None:
    """Lay out a block's nodes in columns (relative positions) and size the block."""
    sub = graph.subgraph(block.nodes)
    boxed = bool(block.groups)
    x = PAD if boxed else 0.0
    top = (PAD + TITLE_H) if boxed else 0.0
    tallest = 0.0
    rank = {n: k for k, n in enumerate(block.nodes)}
    for layer in nx.topological_generations(sub):
        layer = sorted(layer, key=lambda n: rank[n])
        w = max(_node_w(label(n)) for n in layer)
        y = top
        for n in layer:
            pos[n] = [x, y, w]
            y += NODE_H + NODE_GAP
        tallest = max(tallest, y - NODE_GAP - top)
        x += w + COL_GAP
    block.width = x - COL_GAP + (PAD if boxed else 0.0)
    block.height = top + tallest + (PAD if boxed else 0.0)
    if boxed:
        block.width = max(block.width, TITLE_CHAR_W * max(len(title(i)) for i in block.groups)
                          + 2 * PAD)


def dag_svg(pipeline, groups, inlined, *, captions=None, measured=None) -> str:
    """The DAG of ``pipeline`` as an ``<svg>`` element.

    ``groups``: GroupRecords (their order numbers the clusters); ``inlined``: names of
    inlined Funcs; ``captions``: group index -> text after "group i" on its box;
    ``measured``: Func -> ms, shown in each node's label."""
    graph = pipeline.graph
    order = list(nx.lexicographical_topological_sort(graph))
    measured = measured or {}

    def label(n):
        return f"{n}  {time_text(measured[n])}" if n in measured else n

    def title(i):
        cap = (captions or {}).get(i, "")
        return f"group {i}" + (f": {cap}" if cap else "")

    cond, blocks = _blocks(graph, order, groups)
    pos = {}
    for b in blocks.values():
        _inner(graph, b, label, title, pos)
    x = 0.0
    centre = {}
    columns = []
    for layer in nx.topological_generations(cond):
        def bary(c):
            ys = [centre[p] for p in cond.predecessors(c) if p in centre]
            return sum(ys) / len(ys) if ys else 0.0
        layer = sorted(layer, key=lambda c: (bary(c), blocks[c].nodes[0]))
        y = 0.0
        for c in layer:
            b = blocks[c]
            b.x, b.y = x, y
            centre[c] = y + b.height / 2
            y += b.height + BLOCK_GAP / 2
        columns.append((layer, y - BLOCK_GAP / 2))
        x += max(blocks[c].width for c in layer) + BLOCK_GAP
    height = max(h for _, h in columns)
    for layer, h in columns:             # centre each column on the tallest
        for c in layer:
            blocks[c].y += (height - h) / 2
    margin = 12
    absolute = {}
    for b in blocks.values():
        for n in b.nodes:
            rx, ry, w = pos[n]
            absolute[n] = (margin + b.x + rx, margin + b.y + ry, w)
    parts = [el("defs", el("marker", el("path", d="M0,0 L8,4 L0,8 z", fill="#666"),
                           id="arrow", markerWidth=8, markerHeight=8, refX=8, refY=4,
                           orient="auto"))]
    for c, b in blocks.items():
        for i in b.groups:
            if len(b.groups) == 1:
                bx, by, bw, bh = margin + b.x, margin + b.y, b.width, b.height
            else:                        # not from a legal schedule: each group's bounds
                mine = [absolute[m] for m in groups[i].members if m in absolute]
                bx = min(p[0] for p in mine) - PAD
                by = min(p[1] for p in mine) - PAD - TITLE_H
                bw = max(p[0] + p[2] for p in mine) + PAD - bx
                bh = max(p[1] for p in mine) + NODE_H + PAD - by
            parts.append(el(
                "g", el("title", title(i)),
                el("rect", x=bx, y=by, width=bw, height=bh, rx=6, fill=group_colour(i),
                   stroke="#7a8aa0", stroke_width=1.2),
                text(bx + 6, by + 14, title(i), font_size=11, fill="#334"),
                class_="cluster", data_group=i))
    for u, v in graph.edges:
        x1, y1, w1 = absolute[u]
        x2, y2, _ = absolute[v]
        x1, y1, y2 = x1 + w1, y1 + NODE_H / 2, y2 + NODE_H / 2
        dx = max(20.0, (x2 - x1) / 2)
        parts.append(el("path", d=f"M{x1:.1f},{y1:.1f} C{x1 + dx:.1f},{y1:.1f} "
                                  f"{x2 - dx:.1f},{y2:.1f} {x2:.1f},{y2:.1f}",
                        fill="none", stroke="#666", stroke_width=1, marker_end="url(#arrow)",
                        class_="edge", data_from=u, data_to=v))
    for n in order:
        parts.append(_node(n, absolute[n], pipeline, inlined, label(n)))
    width = max(margin + b.x + b.width for b in blocks.values()) + margin
    return document(round(width), round(height + 2 * margin), *parts, class_="dag")


def _node(n, at, pipeline, inlined, label) -> str:
    x, y, w = at
    if n in pipeline.images:
        kind, fill, dash, tip = "input", "#f2f2f2", None, f"{n}: input"
    elif n in inlined:
        kind, fill, dash, tip = "inlined", "#ffffff", "4 3", f"{n}: inlined into its consumers"
    else:
        kind, fill, dash, tip = "func", "#ffffff", None, n
    if pipeline.is_output(n):
        kind, tip = kind + " output", tip + " (output)"
    return el("g", el("title", tip),
              el("rect", x=x, y=y, width=w, height=NODE_H, rx=13 if kind == "input" else 3,
                 fill=fill, stroke="#223" if "output" in kind else "#556",
                 stroke_width=2.2 if "output" in kind else 1, stroke_dasharray=dash),
              text(x + w / 2, y + NODE_H / 2 + 4, label, text_anchor="middle",
                   font_style="italic" if kind == "inlined" else None),
              class_=f"node {kind}", data_func=n)
