"""A Schedule as the Python code a user would write, and ``explain()``.

    # tilesolve schedule for pipeline outputs: blur_y
    xo, yo, xi, yi = ts.Var("xo"), ts.Var("yo"), ts.Var("xi"), ts.Var("yi")
    s[blur_y].tile(x, y, xo, yo, xi, yi, 256, 32).parallel(yo).vectorize(xi, 16)
    s[blur_x].compute_at(blur_y, xo).vectorize(x, 16)

The wraps (``s.wrap("input", ["blur_x"])``) come first, in recorded order; a wrapper's
chain is written ``s["input_in_blur_x"]...`` (no Python variable holds it).  Then one
chain per stage, consumers before producers (the order in which the
calls are valid: a ``compute_at`` names loops its consumer's chain made);
within a chain the calls keep their recorded order.  If that grouping would
not rebuild the same schedule (a rare order dependence between Funcs), the
directives are printed in recorded order instead.  Loop names the algorithm
does not define are declared at the top; provenance becomes comment lines.
"""
from __future__ import annotations

from .schedule_types import Directive


def _arg(a, quoted=()) -> str:
    """One argument; a Func name in ``quoted`` (a wrapper: no Python variable holds it)
    is written as a string."""
    kind, v = a
    if kind == "var" or (kind == "func" and v.isidentifier() and v not in quoted):
        return v
    if kind in ("str", "func"):
        return '"' + v + '"'
    return str(v)


def _head(d: Directive, quoted=()) -> str:
    if d.method == "wrap":
        return "s"
    h = f"s[{d.func}]" if d.func.isidentifier() and d.func not in quoted else f's["{d.func}"]'
    return h if d.stage == 0 else f"{h}.update({d.stage - 1})"


def _call(d: Directive, quoted=()) -> str:
    if d.method == "wrap":      # s.wrap("input", ["blur_x"], name="...")
        parts = ['"' + d.func + '"']
        if d.args:
            parts.append("[" + ", ".join('"' + v + '"' for _, v in d.args) + "]")
        parts += [f"{k}={_arg(v)}" for k, v in d.kwargs]
        return f".wrap({', '.join(parts)})"
    parts = [_arg(a, quoted) for a in d.args] + [f"{k}={_arg(v)}" for k, v in d.kwargs]
    return f".{d.method}({', '.join(parts)})"


def _grouped(s) -> list:
    """The wraps first (in recorded order: a later one may wrap an earlier wrapper), then
    one chain per stage, consumers before producers."""
    order = {n: i for i, n in enumerate(reversed(s.view.order()))}
    groups: dict = {}
    wraps = []
    for d in s.directives:
        if d.method == "wrap":
            wraps.append([d])
        else:
            groups.setdefault((d.func, d.stage), []).append(d)
    keys = sorted(groups, key=lambda k: (order[k[0]], k[1]))
    return wraps + [groups[k] for k in keys]


def _rebuilds(s, chains) -> bool:
    from ..errors import ScheduleError
    from .schedule import Schedule
    from .schedule_io import replay
    t = Schedule(s.pipeline, s.target)
    try:
        replay(t, [d for chain in chains for d in chain])
    except ScheduleError:
        return False
    return t.func_schedules() == s.func_schedules()


def chains(s) -> list:
    """The directives grouped into printed chains (lists of Directives)."""
    grouped = _grouped(s)
    if _rebuilds(s, grouped):
        return grouped
    out: list = []
    for d in s.directives:
        if out and (out[-1][-1].func, out[-1][-1].stage) == (d.func, d.stage) \
                and "wrap" not in (d.method, out[-1][-1].method):
            out[-1].append(d)
        else:
            out.append([d])
    return out


def _known_names(pipeline) -> set:
    names = set()
    for f in pipeline.funcs.values():
        names.update(a.name for a in f.pure.args)
        for u in f.updates:
            if u.rdom is not None:
                names.update(rv.name for rv in u.rdom.rvars())
    return names


def provenance_lines(prov: dict) -> list:
    """Comment lines summarizing provenance (solver, cost, time, gap...)."""
    if not prov:
        return []
    head = []
    if "method" in prov:
        head.append(f"solver: {prov['method']}")
    if "status" in prov:
        head.append(f"status {prov['status']}")
    if "predicted_cost" in prov:
        head.append(f"predicted cost {_num(prov['predicted_cost'])}")
    if "solve_time" in prov:
        head.append(f"solve {_num(prov['solve_time'])} s")
    if "gap" in prov and prov["gap"] is not None:
        head.append(f"gap {_num(prov['gap'])}")
    if prov.get("fallback"):
        head.append(f"fallback: {prov['fallback']}")
    return [f"# {', '.join(head)}"] if head else []


def _num(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def schedule_code(s) -> str:
    lines = [f"# tilesolve schedule for pipeline outputs: {', '.join(s.pipeline.output_names)}"
             + ("" if s.target == "cpu" else f" (target {s.target})")]
    lines += provenance_lines(s.provenance)
    cs = chains(s)
    known = _known_names(s.pipeline)
    new: list = []
    for chain in cs:
        for d in chain:
            for kind, v in d.args:
                if kind == "var" and v not in known and v not in new:
                    new.append(v)
    if new:
        lines.append(", ".join(new) + " = " + ", ".join(f'ts.Var("{n}")' for n in new))
    quoted = set(s.wrappers)
    for chain in cs:
        lines.append(_head(chain[0], quoted) + "".join(_call(d, quoted) for d in chain))
    if not cs:
        lines.append("# default schedule: outputs computed at root, every other Func inlined")
    if s.codegen:
        lines.append("s.set_codegen(" + ", ".join(f"{k}={v!r}" for k, v in
                                                  sorted(s.codegen.items())) + ")")
    return "\n".join(lines) + "\n"


def _func_summary(s, name) -> list:
    fs = s.func_schedule(name)
    if fs.compute.kind == "inline":
        return [f"{name}: inlined into its consumers"]
    where = "at root" if fs.compute.kind == "root" else f"at {fs.compute}"
    store = "" if fs.store == fs.compute else f", stored {fs.store}"
    mem = "" if fs.memory == "auto" else f", in {fs.memory} memory"
    out = [f"{name}: computed {where}{store}{mem}"]
    for k, st in enumerate(fs.stages):
        label = "pure" if k == 0 else f"update {k - 1}"
        loops = ", ".join(d.var if d.kind == "serial" else f"{d.var} {d.kind}"
                          for d in reversed(st.dims))
        out.append(f"  {label} loops (outer to inner): {loops or '(none)'}")
    return out


def _group_lines(i: int, g) -> list:
    """A solver's group record (see solver.schedule_gen) in words."""
    if not isinstance(g, dict) or "output" not in g:
        return [f"  group {i}: {g}"]
    prods = [m for m in g.get("members", []) if m != g["output"]]
    tiling = g.get("tiling") or []
    tl = "untiled" if all(t is None for t in tiling) else "x".join(
        "*" if t is None else str(t) for t in tiling)
    c = g.get("cost") or {}
    head = f"  group {i}: {g['output']}" + (f" <- {', '.join(prods)}" if prods else "")
    out = [head + f"   tile {tl}, {c.get('n_tiles', '?')} tiles"]
    if c:
        line = (f"    cost {_num(c.get('total', 0))} = arithmetic {_num(c.get('arith', 0))}"
                f" (recompute x{c.get('recompute', 1.0):.3f}) + loads {_num(c.get('loads', 0))}"
                f" + stores {_num(c.get('stores', 0))}")
        if c.get("overhead"):
            line += f" + launch {_num(c['overhead'])}"
        out.append(line)
        gpu = c.get("gpu")
        if gpu:
            block = "x".join(str(b) for b in gpu.get("block", []))
            out.append(f"    gpu: {gpu.get('threads')} threads per block ({block}), shared "
                       f"{gpu.get('shared_bytes')} B, occupancy {gpu.get('occupancy', 0):.2f}, "
                       f"{gpu.get('blocks_per_sm')} blocks/SM, {gpu.get('active_sms')} SMs busy")
        else:
            out.append(f"    footprint per tile {c.get('footprint_bytes', 0)} B")
    return out


def explain(s) -> str:
    """Provenance (every key), then what each Func does, producers first."""
    p = s.provenance
    lines = []
    if p:
        lines.append("How this schedule was made:")
        for k in sorted(p):
            if k == "groups":
                continue
            lines.append(f"  {k}: {_num(p[k]) if not isinstance(p[k], (dict, list)) else p[k]}")
        groups = p.get("groups") or []
        if groups:
            lines.append("Groups (one loop nest each; producers computed per tile of the output):")
        for i, g in enumerate(groups):
            lines.extend(_group_lines(i, g))
    else:
        lines.append("Written by hand (no provenance).")
    lines.append(f"Target: {s.target}")
    for name, (src, cons) in s.wrappers.items():
        lines.append(f"{name}: wraps {src} for {', '.join(cons)}")
    for name in s.view.order():
        lines.extend(_func_summary(s, name))
    return "\n".join(lines) + "\n"
