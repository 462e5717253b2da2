"""One large LLVM module as parts that compile side by side.

llvmlite serializes every call into LLVM behind one lock, so a module is optimized and
code-generated on one core however many the machine has.  A large module (a pipeline of
tens of Funcs, each with its parallel bodies) is therefore split by function into parts;
``jit.JitModule`` compiles one part in this process and the others in worker processes
(``llvm_worker.py``), then loads every part's object into the same engine, whose linker
resolves the calls between them.

A part holds the module's header (target, declarations, metadata, attribute groups), its
own functions, and a declaration of each function of another part that it calls.  A
function called from another part loses its ``internal`` linkage; the others keep it.
A parallel loop's ``*.body`` stays with its ``*.worker`` (the worker calls it, and
inlines it).
"""
from __future__ import annotations

import re

_DEFINE = re.compile(r'^define (?:internal )?.*?@"([^"]+)"\(')


def _family(name: str) -> str:
    for suffix in (".body", ".worker"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _declaration(define_line: str, name: str) -> str:
    """``declare`` for the function whose ``define`` line this is (its signature up to
    the parameter list's closing parenthesis; parameter names are allowed there)."""
    start = define_line.index(f'@"{name}"(') + len(name) + 4
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(define_line[i], 0)
        i += 1
    head = define_line[len("define "):i]
    if head.startswith("internal "):
        head = head[len("internal "):]
    return "declare " + head


def split_module(text: str, parts: int) -> list[str] | None:
    """``text`` as ``parts`` modules of about equal size, or None when it has too few
    functions for that."""
    header, funcs, cur = [], [], None
    for line in text.splitlines():
        if cur is None:
            m = _DEFINE.match(line)
            if m is None:
                header.append(line)
                continue
            cur = (m.group(1), [line])
            continue
        cur[1].append(line)
        if line == "}":
            funcs.append(cur)
            cur = None
    if cur is not None:
        return None                                   # not the printer's layout
    families: dict = {}
    for name, lines in funcs:
        families.setdefault(_family(name), []).append((name, lines))
    if len(families) < parts:
        return None
    groups, loads = [[] for _ in range(parts)], [0] * parts
    for fam in sorted(families.values(), key=lambda fs: -sum(len(ls) for _, ls in fs)):
        k = loads.index(min(loads))
        groups[k].extend(fam)
        loads[k] += sum(len(ls) for _, ls in fam)
    owner = {name: k for k, g in enumerate(groups) for name, _ in g}
    bodies = ["\n".join(line for _, ls in g for line in ls) for g in groups]
    called = [{n for n in owner if owner[n] != k and f'@"{n}"' in bodies[k]}
              for k in range(parts)]
    shared = set().union(*called)
    defines = {name: lines[0] for name, lines in funcs}
    out = []
    for k, g in enumerate(groups):
        lines = list(header)
        lines += [_declaration(defines[n], n) for n in sorted(called[k])]
        for name, ls in g:
            first = ls[0]
            if name in shared and first.startswith("define internal "):
                first = "define " + first[len("define internal "):]
            lines.append(first)
            lines.extend(ls[1:])
        out.append("\n".join(lines) + "\n")
    return out
