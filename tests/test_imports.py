"""The package's import graph: no cycles between its parts, no private names taken
across them, and the phases in order.

Every module of tilesolve/ is read with ``ast`` (imports at the top and inside
functions alike; relative imports resolved).  A *part* is a top-level subpackage or
module of tilesolve (``model``, ``solver``, ``bench``, ``driver``, ``errors``, ...) or
the package itself.  ``import tilesolve as ts`` counts as importing what each ``ts.X``
the module uses comes from (``ts.compile``: ``tilesolve.driver``, through the lazy
table of ``tilesolve/__init__.py``).

* no cycle between parts (each is reported with the module pairs that make it);
* no private name (``_name``, or a name in a ``_module``) imported from another part;
* the phases ``model -> analysis -> solver -> lower -> backend`` import only from
  their left, and from the modules placed beside them in ``LEVEL``.  Everything
  else (tune, bench, distributed, interop, apps, driver, cli, ...) sits above the
  phases: it may import any part, and no phase imports it.

An arrow that cannot go yet is listed in ``KNOWN_EXCEPTIONS`` with its reason; the
list can only shrink: an exception that no rule needs any more fails the test.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tilesolve"

PHASES = ("model", "analysis", "solver", "lower", "backend")

# A part with a level imports only parts of a level no higher than its own (the phases
# have one each, so a phase imports only from its left).  Parts without one sit above.
LEVEL = {
    "errors": 0, "heap_limit": 0, "memory": 0, "specs": 0,   # below every phase
    "model": 1,
    "analysis": 2,
    "reference": 2, "reference_updates": 2,   # the numpy oracle: model + interval engine
    "solver": 3,
    "lower": 4,
    "backend": 5,
}

# (importing module, imported module): why the arrow is still there.  None now; an entry
# that no rule needs any more fails test_known_exceptions_are_still_needed.
KNOWN_EXCEPTIONS: dict = {}


@dataclass(frozen=True)
class Import:
    src: str            # importing module
    dst: str            # imported module
    name: str | None    # the name imported from it (None: the module itself)
    line: int

    def __str__(self):
        what = f" ({self.name})" if self.name else ""
        return f"{self.src}:{self.line} -> {self.dst}{what}"


def part(module: str) -> str:
    """``tilesolve.solver.ilp.x`` -> ``solver``; the package itself -> ``tilesolve``."""
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else bits[0]


def read_modules(root: Path = PACKAGE) -> dict:
    """Module name -> (path, parsed tree) of every module under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        bits = list(rel.parts)
        is_package = bits[-1] == "__init__"
        if is_package:
            bits.pop()
        out[".".join(bits)] = (is_package, ast.parse(path.read_text(), str(path)))
    return out


def _facade(modules: dict) -> dict:
    """Name -> module behind it, for the names ``tilesolve`` offers: its own imports,
    and the lazy table of its ``__getattr__`` (``{"name": ("module", attr)}``)."""
    names = {}
    _, tree = modules["tilesolve"]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            base = "tilesolve" + (f".{node.module}" if node.module else "")
            for a in node.names:
                full = f"{base}.{a.name}"
                names[a.asname or a.name] = full if full in modules else base
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
              and any(isinstance(t, ast.Name) and t.id == "lazy" for t in node.targets)):
            for key, (mod, _attr) in ast.literal_eval(node.value).items():
                names[key] = mod
    return names


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    bits = module.split(".") if is_package else module.split(".")[:-1]
    bits = bits[:len(bits) - (node.level - 1)]
    return ".".join(bits + ([node.module] if node.module else []))


def read_imports(modules: dict) -> list:
    """Every import of a tilesolve module by a tilesolve module."""
    facade = _facade(modules)
    out = []

    def add(src, dst, name, line):
        if dst == "tilesolve" and name is not None and src != "tilesolve":
            dst = facade.get(name, "tilesolve")
        out.append(Import(src, dst, name, line))

    for src, (is_package, tree) in modules.items():
        aliases = {}                       # local name -> "tilesolve" for `import tilesolve as ts`
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _absolute(src, is_package, node)
                if base.split(".")[0] != "tilesolve":
                    continue
                for a in node.names:
                    full = f"{base}.{a.name}"
                    if full in modules:
                        add(src, full, None, node.lineno)
                    else:
                        add(src, base, a.name, node.lineno)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] != "tilesolve":
                        continue
                    if a.name == "tilesolve":
                        aliases[a.asname or a.name] = node.lineno
                    else:
                        add(src, a.name, None, node.lineno)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "import_module" and node.args
                  and isinstance(node.args[0], ast.Constant)
                  and str(node.args[0].value).startswith("tilesolve.")):
                add(src, node.args[0].value, None, node.lineno)
        if aliases:
            used = False
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in aliases):
                    add(src, "tilesolve", node.attr, node.lineno)
                    used = True
            if not used:
                add(src, "tilesolve", None, min(aliases.values()))
    return out


# -- the rules: each returns a list of messages --------------------------------------------
def cycles(imports) -> list:
    """Each cycle between parts (a strongly connected set of them), with its imports."""
    graph: dict = {}
    for i in imports:
        a, b = part(i.src), part(i.dst)
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):                       # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for comp in found:
        inside = sorted(str(i) for i in imports
                        if part(i.src) in comp and part(i.dst) in comp
                        and part(i.src) != part(i.dst))
        out.append(f"cycle between {', '.join(sorted(comp))}:\n    " + "\n    ".join(inside))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_names(imports) -> list:
    out = []
    for i in imports:
        if part(i.src) == part(i.dst):
            continue
        modules = i.dst.split(".")[2:]
        if (i.name and _private(i.name)) or any(_private(m) for m in modules):
            out.append(f"private name across parts: {i}")
    return out


def phase_order(imports) -> list:
    out = []
    for i in imports:
        a, b = part(i.src), part(i.dst)
        if a == b or a not in LEVEL:
            continue
        if b not in LEVEL:
            out.append(f"{a} imports {b}, which sits above the phases: {i}")
        elif LEVEL[b] > LEVEL[a]:
            out.append(f"{a} imports {b}, to its right: {i}")
    return out


RULES = (cycles, private_names, phase_order)


@pytest.fixture(scope="module")
def imports():
    return read_imports(read_modules())


def allowed(imports, exceptions=KNOWN_EXCEPTIONS) -> list:
    return [i for i in imports if (i.src, i.dst) not in exceptions]


@pytest.mark.parametrize("rule", RULES, ids=[r.__name__ for r in RULES])
def test_rule(imports, rule):
    bad = rule(allowed(imports))
    assert not bad, "\n".join(bad)


def stale_exceptions(imports, exceptions) -> list:
    """The exceptions that no import needs: gone, or breaking no rule."""
    base = allowed(imports, exceptions)
    out = []
    for pair in exceptions:
        mine = [i for i in imports if (i.src, i.dst) == pair]
        if not mine:
            out.append(f"{pair[0]} no longer imports {pair[1]}: drop it from KNOWN_EXCEPTIONS")
        elif not any(rule(base + mine) for rule in RULES):
            out.append(f"{pair[0]} -> {pair[1]} breaks no rule: drop it from KNOWN_EXCEPTIONS")
    return out


def test_known_exceptions_are_still_needed(imports):
    stale = stale_exceptions(imports, KNOWN_EXCEPTIONS)
    assert not stale, "\n".join(stale)


def test_the_reader_sees_what_the_rules_are_about(imports):
    """The reader finds relative, function-level and ``ts.X`` imports, and each rule
    flags the arrow it is about (so the tests above can fail)."""
    seen = {(i.src, i.dst) for i in imports}
    assert ("tilesolve.solver", "tilesolve.solver.beam") in seen          # inside a function
    assert ("tilesolve.apps.validation.matvec", "tilesolve.model.func") in seen  # ts.Func
    assert ("tilesolve.bench.methods", "tilesolve.driver") in seen
    fake = [Import("tilesolve.tune.x", "tilesolve.bench.y", "f", 1),
            Import("tilesolve.bench.y", "tilesolve.tune.z", "g", 2)]
    assert "tilesolve.tune.x:1 -> tilesolve.bench.y (f)" in cycles(fake)[0]
    assert private_names([Import("tilesolve.tune.x", "tilesolve.solver.y", "_f", 1)])
    assert private_names([Import("tilesolve.tune.x", "tilesolve.apps._common", None, 1)])
    assert not private_names([Import("tilesolve.bench.x", "tilesolve", "__version__", 1)])
    assert phase_order([Import("tilesolve.model.x", "tilesolve.analysis.y", "f", 1)])
    assert phase_order([Import("tilesolve.backend.x", "tilesolve.distributed", None, 1)])
    assert not phase_order([Import("tilesolve.backend.x", "tilesolve.lower.y", "f", 1)])
    against = Import("tilesolve.model.x", "tilesolve.analysis.y", "f", 1)
    fine = Import("tilesolve.lower.x", "tilesolve.model.y", "f", 1)
    assert not stale_exceptions([against], {("tilesolve.model.x", "tilesolve.analysis.y"): ""})
    assert stale_exceptions([fine], {("tilesolve.lower.x", "tilesolve.model.y"): ""})
    assert stale_exceptions([fine], {("tilesolve.model.x", "tilesolve.analysis.y"): ""})
