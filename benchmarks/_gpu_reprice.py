"""Price measured GPU schedules again with the current cost model (``rank.py rank
--schedules``).

A schedule that ran is read back into the groups it ran as: every Func computed at root
with ``gpu_tile`` is a group's output, tiled as its ``gpu_tile`` says, with the Funcs
computed at it (``compute_at(out, ...)``) as its members.  Producers the solver had put
in a group but that lowering sent to root (their per-block buffer has no constant size)
are their own groups there.  Each group is priced with ``CostModel.cost`` (its terms
summed: ``solver.predict.cost_of_terms``); the schedule's prediction is the sum.
"""
from __future__ import annotations

import re

LINE = re.compile(r"^s\[(\w+)\]\.(.*)$")
CALL = re.compile(r"\.?(\w+)\(([^()]*)\)")


def ran_columns(problem, text: str) -> list:
    """(Group, Tiling) of each kernel group of the printed GPU schedule ``text``."""
    from tilesolve.solver.space import Group, Tiling
    roots, members = {}, {}
    for ln in text.splitlines():
        m = LINE.match(ln.strip())
        if not m or ".update(" in ln:
            continue
        name, rest = m.groups()
        calls = CALL.findall(rest)
        kinds = [c[0] for c in calls]
        if "compute_at" in kinds:
            out = dict(calls)["compute_at"].split(",")[0].strip()
            members.setdefault(out, set()).add(name)
        elif "gpu_tile" in kinds:
            args = [a.strip() for a in dict(calls)["gpu_tile"].split(",")]
            sizes = [int(a) for a in args if a.isdigit()]
            names = args[:len(sizes)]
            roots[name] = dict(zip(names, sizes))
    out = []
    for name, tile in roots.items():
        pure = [v.name for v in problem.func(name).pure.args]
        region = problem.regions[name]
        sizes = [tile.get(v) for v in pure]
        tiled = [i for i, s in enumerate(sizes) if s is not None]
        wide = [i for i, (lo, hi) in enumerate(region) if hi > lo and i > max(tiled)]
        if len(tiled) == 1 and wide:            # the menu's one-row tiles: (a, 1)
            sizes[wide[0]] = 1
        group = Group(name, frozenset({name} | _closure(members, name)))
        out.append((group, Tiling(tuple(sizes))))
    return out


def _closure(members: dict, out: str) -> set:
    got, todo = set(), [out]
    while todo:
        for m in members.get(todo.pop(), ()):
            if m not in got:
                got.add(m)
                todo.append(m)
    return got


def reprice(rows: list, spec, columns: bool = False) -> dict:
    """(app, schedule) -> the current model's prediction of each stored schedule row
    (``gpu_h100_rank_schedules_*.json``): of the groups it ran as, or with ``columns``
    of the solver's columns as recorded (what the solver saw)."""
    from tilesolve.apps import APPS
    from tilesolve.solver.cost import CostModel
    from tilesolve.solver.predict import cost_of_terms
    from tilesolve.solver.problem import Problem
    from tilesolve.solver.space import Group, Tiling
    out, models = {}, {}
    for r in rows:
        app = r["app"]
        key = (app, tuple(r["inlined"]))
        if key not in models:
            mod = APPS[app]
            pipe, est = mod.build(mod.PAPER_SIZE)
            models[key] = CostModel(Problem(pipe, spec, est, inlined=frozenset(r["inlined"])))
        model = models[key]
        if columns:
            cols = [(Group(g["output"], frozenset(g["members"])), Tiling(tuple(g["tiling"])))
                    for g in r["groups"]]
        else:
            cols = ran_columns(model.problem, r["schedule_text"])
        out[(app, r["schedule"])] = sum(cost_of_terms(model.cost(g, t)) for g, t in cols)
    return out


def schedule_of(pipe, text: str):
    """The cuda Schedule a printed schedule ``text`` describes (its directives run)."""
    import tilesolve as ts
    s = ts.Schedule(pipe, target="cuda")
    ns = {"ts": ts, "s": s}
    for name, f in pipe.funcs.items():
        ns[name] = f
        for d in f.definitions():
            ns.update({a.name: a for a in d.args if isinstance(a, ts.Var)})
    exec("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")), ns)  # noqa: S102
    return s


def interpreted_host_ms(rows: list, repeats: int = 10) -> dict:
    """(app, schedule) -> (host ms of the interpreted host plan on the no-op device, launches)
    of each stored schedule row at the paper size: what the runtime of the stored
    measurements spent on the host per realize (``plan.run_plan``, every HostLet evaluated
    with numpy, unprepared launches, every buffer allocated and freed), on this machine."""
    from tilesolve.apps import APPS
    from tilesolve.backend import cuda as C
    out, inputs = {}, {}
    for r in rows:
        mod = APPS[r["app"]]
        pipe, _ = mod.build(mod.PAPER_SIZE)
        if r["app"] not in inputs:
            inputs = {r["app"]: mod.make_inputs(mod.PAPER_SIZE)}
        fast = C.noop_cuda(pipe, schedule_of(pipe, r["schedule_text"]), interpreted=True)
        t = fast.benchmark(mod.PAPER_SIZE, repeats=repeats, warmup=2, **inputs[r["app"]])
        out[(r["app"], r["schedule"])] = (t.host_ms, t.launches)
        print(f"  {r['app']}/{r['schedule']}: {t.launches} launches, {t.host_ms:.3f} ms", flush=True)
    return out

