"""A small SVG writer: elements as escaped text, no layout of its own.

``el("rect", x=0, y=0, width=10, height=5, fill="#ccc")`` is one element;
``el("g", child, child, class_="node")`` nests (a trailing ``_`` is dropped from an
attribute name and other ``_`` become ``-``: ``stroke_width`` -> ``stroke-width``).
``text(x, y, "a < b")`` escapes its text; ``document(w, h, *children)`` is a whole
``<svg>`` element, inline in HTML or written as a file.
"""
from __future__ import annotations

from html import escape

__all__ = ["el", "text", "document", "fmt"]


def fmt(v) -> str:
    """A number as short text (SVG coordinates: two decimals at most)."""
    if isinstance(v, float):
        s = f"{v:.2f}".rstrip("0").rstrip(".")
        return "0" if s in ("-0", "") else s
    return str(v)


def _attr(name: str) -> str:
    return name.rstrip("_").replace("_", "-")


def el(tag: str, *children, **attrs) -> str:
    """One element; ``children`` are already-written elements (strings)."""
    a = "".join(f' {_attr(k)}="{escape(fmt(v), quote=True)}"'
                for k, v in attrs.items() if v is not None)
    body = "".join(children)
    return f"<{tag}{a}>{body}</{tag}>" if body else f"<{tag}{a}/>"


def text(x, y, s: str, **attrs) -> str:
    """A ``<text>`` element holding ``s`` (escaped)."""
    a = "".join(f' {_attr(k)}="{escape(fmt(v), quote=True)}"'
                for k, v in attrs.items() if v is not None)
    return f'<text x="{fmt(x)}" y="{fmt(y)}"{a}>{escape(str(s), quote=False)}</text>'


def document(width, height, *children, **attrs) -> str:
    """A whole ``<svg>`` element of ``width`` x ``height`` pixels."""
    return el("svg", *children, xmlns="http://www.w3.org/2000/svg", width=width, height=height,
              viewBox=f"0 0 {fmt(width)} {fmt(height)}", font_family="sans-serif",
              font_size=12, **attrs)
