"""Patterns over expressions, and tables of rewrite rules keyed by them.

A rule is ``(pattern, fn)``.  A pattern is a tree of :class:`Pat` nodes:
``op("min", x, c)`` matches a ``min`` BinOp whose second operand is a Const,
binding the operands to ``x`` and ``c``.  A name used twice must bind the same
node (Exprs are hash-consed, so that is structural equality).  When a pattern
matches, ``fn(ctx, **bindings)`` returns the replacement, or None to decline;
the next rule of the node's key is tried then.

This is the style of tinygrad's PatternMatcher and of Halide's ``rewrite(...)``
rules: every rule is one line of data plus, where it needs one, a guard.  The
table is indexed by the root's key (``"add"``, ``"Not"``, ``"Cast"``...), so a
node tries only the rules that can match it.
"""
from __future__ import annotations

from ..model import expr as E

__all__ = ["Pat", "W", "K", "op", "not_", "select", "cast", "intrinsic", "RuleTable", "key_of"]


def key_of(e) -> str:
    """The table key of a node: its op for BinOps, its name for Intrinsics, else its class."""
    if type(e) is E.BinOp:
        return e.op
    if type(e) is E.Intrinsic:
        return "call:" + e.name
    return type(e).__name__


class Pat:
    """A pattern node: ``key`` (None: anything), operand patterns, a binding name, a test."""

    __slots__ = ("key", "args", "name", "test")

    def __init__(self, key=None, args=None, name=None, test=None):
        self.key, self.args, self.name, self.test = key, args, name, test

    def compile(self):
        """A function ``m(e) -> dict | None`` (the bindings) for this pattern at a root
        already known to have its key: Python source generated once per rule, as Halide
        generates C++ from its rewrite rules, so matching costs a few attribute reads."""
        lines, consts, bound = [], {}, {}
        self._emit("e", True, lines, consts, bound)
        names = ", ".join(f"{n!r}: {v}" for n, v in bound.items())
        src = "def m(e):\n" + "".join("    " + ln + "\n" for ln in lines)
        src += f"    return {{{names}}}\n"
        env = {"key_of": key_of, **consts}
        exec(compile(src, "<pattern>", "exec"), env)
        return env["m"]

    def _emit(self, v, root, lines, consts, bound):
        if self.key is not None and not root:
            lines.append(f"if key_of({v}) != {self.key!r}: return None")
        if self.test is not None:
            t = f"_t{len(consts)}"
            consts[t] = self.test
            lines.append(f"if not {t}({v}): return None")
        if self.args is not None:
            for i, (p, f) in enumerate(zip(self.args, _fields_of(self, len(self.args)))):
                kid = f"{v}_{i}"
                if f is None:
                    lines.append(f"if len({v}.args) != {len(self.args)}: return None")
                    lines.append(f"{kid} = {v}.args[{i}]")
                else:
                    lines.append(f"{kid} = {v}.{f}")
                p._emit(kid, False, lines, consts, bound)
        if self.name is not None:
            if self.name in bound:
                lines.append(f"if {v} is not {bound[self.name]}: return None")
            else:
                bound[self.name] = v


def _fields_of(p: Pat, n: int):
    """The attribute holding each operand (None: an Intrinsic's ``args``)."""
    if p.key is None or p.key not in _NODE_FIELDS:
        if p.key is not None and p.key.startswith("call:"):
            return (None,) * n
        return ("a", "b")            # a key-less operator pattern: the test says BinOp
    return _NODE_FIELDS[p.key]


_NODE_FIELDS = {"Not": ("a",), "Select": ("cond", "true_value", "false_value"),
                "Cast": ("value",)}


def W(name: str, test=None) -> Pat:
    """A wildcard: any node, bound to ``name``."""
    return Pat(name=name, test=test)


def K(name: str, test=None) -> Pat:
    """A constant, bound to ``name`` (``test`` on the Const node)."""
    if test is None:
        return Pat(name=name, test=lambda e: type(e) is E.Const)
    return Pat(name=name, test=lambda e: type(e) is E.Const and test(e))


def op(name: str, a: Pat, b: Pat, bind: str | None = None) -> Pat:
    return Pat(name, (a, b), bind)


def not_(a: Pat, bind: str | None = None) -> Pat:
    return Pat("Not", (a,), bind)


def select(c: Pat, t: Pat, f: Pat, bind: str | None = None) -> Pat:
    return Pat("Select", (c, t, f), bind)


def cast(a: Pat, bind: str | None = None) -> Pat:
    return Pat("Cast", (a,), bind)


def intrinsic(name: str, *args: Pat, bind: str | None = None) -> Pat:
    return Pat("call:" + name, tuple(args), bind)


class RuleTable:
    """Rules grouped by the key of their pattern's root, tried in the order given.
    ``base``: a table whose rules are tried after this one's (a simplification mode:
    a few rules of its own in front of the ordinary ones)."""

    def __init__(self, base: "RuleTable | None" = None):
        self.by_key: dict[str, list] = {}
        self.base = base
        self.trace: set | None = None      # a set: the names of the rules that fire

    def add(self, pattern: Pat, fn, keys=None) -> None:
        """Add ``(pattern, fn)`` under its root's key, or under each of ``keys``
        (for a root pattern that leaves the op open, like ``W("e")``)."""
        matcher = pattern.compile()
        for k in keys or (pattern.key,):
            self.by_key.setdefault(k, []).append((matcher, fn))

    def rewrite(self, ctx, e):
        """The first replacement a rule gives for ``e``, or None."""
        key = key_of(e)
        for matcher, fn in self.by_key.get(key, ()):
            env = matcher(e)
            if env is not None:
                r = fn(ctx, **env)
                if r is not None:
                    if self.trace is not None:
                        self.trace.add(fn.__name__)
                    return r
        return None if self.base is None else self.base.rewrite(ctx, e)

    def names(self) -> set:
        own = {fn.__name__ for rules in self.by_key.values() for _, fn in rules}
        return own if self.base is None else own | self.base.names()
