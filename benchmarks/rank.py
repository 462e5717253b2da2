"""The cost model's ranking of schedules against measured times: Spearman's rho per app.

    # CPU (this machine): gather each app's candidates, compile, check, time them here
    python benchmarks/rank.py build --spec host [--apps a,b] [--per-app 10] [--rounds 8]
                                    [--gather-s 20] [--json OUT]
    # GPU, in gpu_bench.py's phases: here (nvcc, no GPU) the candidates as cubins ...
    python benchmarks/rank.py build --spec h100 --out build/gpu_rank [--also-spec FILE]
    # ... on the GPU machine: python3 benchmarks/gpu_bench.py run --builds build/gpu_rank
    #     --json rank.json; then anywhere, rho per app (--schedules: priced by today's
    #     model; --launch-us: what a launch cost the runtime that measured them)
    python benchmarks/rank.py rank rank.json [--schedules results/gpu_h100_rank_schedules_*.json]
                                             [--launch-us 200] [--columns] [--detail]
    # re-price measured CPU schedules with the current model, offline
    python benchmarks/rank.py offline [FILE] [--app NAME] [--detail] [--all] [--no-climb]
    # how well any model can rank them here: the measurements' agreement with themselves
    python benchmarks/rank.py ceiling [FILE] [--app NAME] [--rounds 8] [--spec host]
    # the machine's noise against the model's error, over two or more timing runs
    python benchmarks/rank.py pooled RUN_A.json RUN_B.json [...] [--app NAME]
    # the interpreted host plan of stored GPU schedules
    python benchmarks/rank.py host SCHEDULES.json --out OUT
    # tuning databases (ts.autotune's) as the JSON offline, ceiling and pooled read
    python benchmarks/rank.py export OUT.json DB.sqlite [DB.sqlite ...]

Candidates (``build``) are autotune's Gatherer on the spec (greedy, beam, the ILP on each
tile menu, the neighbours of the two best), up to ``--per-app`` spread evenly over the
predicted costs.  CPU timing: ``--rounds`` rounds, each in a new random order, the second
of two runs timed, into one output buffer as ``ts.autotune`` times.  ``rho model`` is
against the fastest time over the rounds; ``rho retest`` between the even and the odd
rounds (the measurement's agreement with itself: the most any model can show).  ``build
--json`` and ``export`` write the same shape (``tunings``, ``measurements``
with each ``schedule_json``), which ``offline``, ``ceiling`` and ``pooled`` read.

``--set NAME=VALUE`` (``rank`` with ``--schedules``, ``offline``, ``ceiling``, ``pooled``) changes a cost parameter
(``docs/cost_params.md``) of the spec the schedules are priced under, so a change to the
model is judged against measured times before anything is compiled.  ``pooled``: per app,
``runs`` is the mean rho between pairs of runs (below 0.85: ``noise``, no model can be
shown to reach the target there), ``pooled`` the model's rho against the geometric mean
of the runs' times.  Wall-clock times need a quiet machine; nothing here is asserted.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import signal
import statistics
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tilesolve as ts  # noqa: E402
from tilesolve.apps import APPS, get_app  # noqa: E402
from tilesolve.tune.stats import spearman  # noqa: E402
from cost_sets import cost_sets  # noqa: E402

DEFAULT = HERE / "results" / "autotune_measurements_2026-11-24.json"
MIN_POINTS = 5       # schedules a tuning needs for its rho to count in the median
MIN_COMMON = 4       # schedules two runs must share for their rho to count
TARGET = 0.85
TERMS = ("arith", "lanes", "registers", "reduction", "l1", "loads", "stores", "parallel",
         "streams", "overhead")


def _fmt(v) -> str:
    return "   n/a" if v is None else f"{v:6.2f}"


def _load(path) -> dict:
    return json.loads(Path(path).read_text())


def _same(a, b) -> bool:
    """The same directives (the header lines carry the solver's costs and times)."""
    body = lambda s: [ln for ln in str(s).splitlines() if not ln.startswith("#")]  # noqa: E731
    return body(a) == body(b)


# -- candidates and timing -----------------------------------------------------------------
def spread_candidates(pipe, est, spec, per_app: int, seconds: float):
    """(problem, up to ``per_app`` distinct modelled candidates of autotune's Gatherer on
    ``spec``), the best predicted first, the rest evenly spaced over the ranking."""
    from tilesolve.solver.inline_refine import refine_inlining
    from tilesolve.solver.problem import Problem
    from tilesolve.tune.candidates import MENUS, Gatherer
    problem = refine_inlining(Problem(pipe, spec, est))[0]
    g = Gatherer(problem, k=4)
    g.greedy()
    g.beam(min(5.0, seconds / 4))
    g.ilp(None, min(10.0, seconds / 4))
    for menu in MENUS:
        g.ilp(menu, min(5.0, seconds / 8))
    stop = time.perf_counter() + seconds / 4
    for base in g.bases()[:2]:
        g.neighbours(base, stop)
    ranked = sorted((c for c in g.candidates()
                     if c.predicted_cost is not None and math.isfinite(c.predicted_cost)),
                    key=lambda c: (c.predicted_cost, c.hash))
    if len(ranked) > per_app:
        picks = sorted({round(i * (len(ranked) - 1) / (per_app - 1)) for i in range(per_app)})
        ranked = [ranked[i] for i in picks]
    return problem, ranked


def time_rounds(builds: list, inputs: dict, sizes, rounds: int, seed: int,
                out=None) -> np.ndarray:
    """Seconds [round, build]: each round in a new order, the second of two runs.  With
    ``out`` (an output of the pipeline, as ``realize`` returns it), every run writes
    into it, as ``ts.autotune`` times: a fresh output's page faults are left out."""
    rng = random.Random(seed)
    res = np.full((rounds, len(builds)), np.inf)
    order = list(range(len(builds)))
    kw = {} if out is None else {"out": out}
    for r in range(rounds):
        rng.shuffle(order)
        for i in order:
            builds[i].realize(sizes, **kw, **inputs)
            t0 = time.perf_counter()
            builds[i].realize(sizes, **kw, **inputs)
            res[r, i] = time.perf_counter() - t0
    return res


def _timed(name, builds, costs, inputs, sizes, rounds, first) -> tuple:
    """(seconds [round, build], the record of rho model / retest, spread, fastest)."""
    t = time_rounds(builds, inputs, sizes, rounds, seed=len(builds), out=first)
    best, even, odd = t.min(axis=0), t[0::2].min(axis=0), t[1::2].min(axis=0)
    return t, {"app": name, "schedules": len(builds),
               "rho_model": spearman(costs, list(best)),
               "rho_retest": spearman(list(even), list(odd)),
               "spread": float(best.max() / best.min()), "fastest_ms": float(best.min() * 1e3)}


# -- build: CPU ------------------------------------------------------------------------------
def study(name: str, spec, per_app: int, rounds: int, gather_s: float, log) -> tuple:
    from tilesolve.bench.runner import Case, _tolerance
    from tilesolve.tune.check import compare
    app = get_app(name)
    case = Case(app, app.PAPER_SIZE, {}, 0)
    pipe, est = case.pipeline, case.estimates
    t0 = time.perf_counter()
    _, cands = spread_candidates(pipe, est, spec, per_app, gather_s)
    log(f"{name}: {len(cands)} candidates gathered in {time.perf_counter() - t0:.0f} s")
    rtol, atol = _tolerance(app)
    inputs, sizes = case.inputs, list(case.sizes)
    builds, first = [], None
    for c in cands:
        b = ts.compile(pipe, c.schedule)
        got = b.realize(sizes, **inputs)
        if first is None:
            first = got
        else:
            ok, err, tol = compare(got, first, rtol, atol, 1)
            if not ok:
                raise AssertionError(f"{name}: {c.source} differs from {cands[0].source} "
                                     f"by {err} ({tol})")
        builds.append(b)
    log(f"{name}: compiled and checked, timing {rounds} rounds")
    costs = [c.predicted_cost for c in cands]
    t, rec = _timed(name, builds, costs, inputs, sizes, rounds, first)
    best, even, odd = t.min(axis=0), t[0::2].min(axis=0), t[1::2].min(axis=0)
    rec["best_predicted_ms"] = float(best[0] * 1e3)
    key = f"cpu_rank:{name}"
    tuning = {"key": key, "app": name, "build_params": {},
              "estimates": {k: list(v) for k, v in est.items()}, "spec_name": spec.name,
              "spec": spec.to_dict(), "threads": builds[0].num_threads}
    rows = [{"key": key, "schedule_json": c.schedule.to_json(), "source": c.source,
             "predicted_cost": c.predicted_cost, "measured_ms": float(best[i] * 1e3),
             "ms_even": float(even[i] * 1e3), "ms_odd": float(odd[i] * 1e3),
             "error": None, "note": None} for i, c in enumerate(cands)]
    return tuning, rows, rec


def build_cpu(a, spec) -> None:
    doc = {"description": f"rank.py build --spec {a.spec} --per-app {a.per_app} "
                          f"--rounds {a.rounds}", "tunings": [], "measurements": [],
           "records": []}
    print(f"{'app':<16} {'n':>3} {'rho model':>9} {'rho retest':>10} {'spread':>7} "
          f"{'fastest ms':>10} {'best pred ms':>12}", flush=True)
    for name in (a.apps or ",".join(APPS)).split(","):
        try:
            tuning, rows, rec = study(name, spec, a.per_app, a.rounds, a.gather_s,
                                      lambda s: print(f"  [{s}]", file=sys.stderr, flush=True))
        except AssertionError:             # a schedule computed something else: a bug
            raise
        except Exception as e:             # reported; the other apps still run
            print(f"{name:<16} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        doc["tunings"].append(tuning)
        doc["measurements"] += rows
        doc["records"].append(rec)
        print(f"{name:<16} {rec['schedules']:>3} {_fmt(rec['rho_model']):>9} "
              f"{_fmt(rec['rho_retest']):>10} {rec['spread']:6.2f}x {rec['fastest_ms']:10.2f} "
              f"{rec['best_predicted_ms']:12.2f}", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(doc, indent=1))


# -- build and rank: GPU ---------------------------------------------------------------------
def gpu_candidates(pipe, est, spec, per_app: int, seconds: float):
    """``spread_candidates`` on ``spec``: (Candidate, its schedule as
    ``ts.solve_schedule`` would give it: each producer whose per-block buffer has no
    constant size computed at root)."""
    from tilesolve.driver import lowerable_schedule
    from tilesolve.solver import Solution
    problem, ranked = spread_candidates(pipe, est, spec, per_app, seconds)
    return [(c, lowerable_schedule(pipe, Solution(problem, list(c.columns),
                                                  c.schedule.provenance))
             if c.columns else c.schedule)
            for c in ranked]


def _save(outdir, name, sname, sizes, sched, spec, extra):
    import gpu_bench as GB
    from tilesolve.backend import cuda as C
    t0 = time.perf_counter()
    b = C.build_cuda(*sched, spec)
    serial = sum("single GPU thread" in n for n in b.program.notes)
    rec = {"app": name, "schedule": sname, "sizes": list(sizes), "build_kw": {},
           "schedule_text": str(sched[1]), "build": b, "serial_kernels": serial, **extra}
    (outdir / f"{name}__{sname}.pkl").write_bytes(GB._deep(GB.pickle.dumps, rec))
    print(f"  {name}/{sname}: predicted {extra.get('predicted_cost')}, "
          f"{len(b.program.kernels)} kernels, built in {time.perf_counter() - t0:.1f} s",
          flush=True)


def build_gpu(a, spec) -> None:
    import gpu_bench as GB
    also = ts.load_spec(a.also_spec) if a.also_spec else None
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, GB._alarm)
    for name in (a.apps or ",".join(GB.DEFAULT_APPS)).split(","):
        app = APPS[name]
        pipe, est = app.build(app.PAPER_SIZE)
        jobs = []
        try:
            for i, (c, sched) in enumerate(gpu_candidates(pipe, est, spec, a.per_app,
                                                          a.gather_s)):
                jobs.append((f"cand{i:02d}", sched,
                             {"predicted_cost": c.predicted_cost, "source": c.source}))
        except Exception as e:                   # reported; the other apps still built
            print(f"  {name}: gathering failed: {type(e).__name__}: {str(e)[:200]}")
        if also is not None:
            base = ts.solve_schedule(pipe, spec, estimates=est)
            other = ts.solve_schedule(pipe, also, estimates=est)
            if not _same(base, other):
                jobs.append(("solver", base, {"spec": spec.name}))
                jobs.append((f"solver@{Path(a.also_spec).stem}", other,
                             {"spec": str(a.also_spec)}))
        for sname, sched, extra in jobs:
            signal.alarm(a.timeout)
            try:
                _save(outdir, name, sname, app.PAPER_SIZE, (pipe, sched), spec, extra)
            except GB._Timeout:
                print(f"  {name}/{sname}: lowering + compiling took over {a.timeout} s")
            except Exception as e:
                print(f"  {name}/{sname}: FAILED {type(e).__name__}: {str(e)[:300]}")
            finally:
                signal.alarm(0)


def build(a) -> None:
    spec = ts.load_spec(a.spec)
    if a.per_app is None:
        a.per_app = 8 if spec.is_gpu else 10
    (build_gpu if spec.is_gpu else build_cpu)(a, spec)


# -- GPU: stored schedules priced again, their interpreted host plan --------------------------
# A schedule that ran is read back into the groups it ran as: every Func computed at root
# with ``gpu_tile`` is a group's output, tiled as its ``gpu_tile`` says, with the Funcs
# computed at it (``compute_at(out, ...)``) as its members.  Producers the solver had put
# in a group but that lowering sent to root (their per-block buffer has no constant size)
# are their own groups there.  Each group is priced with ``CostModel.cost`` (its terms
# summed: ``solver.predict.cost_of_terms``); the schedule's prediction is the sum.
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



def _tie(cost: float) -> float:
    """A prediction to 6 significant digits: the same kernels priced along two paths
    (a candidate and the same directives under another name) differ in the last bits,
    and rho must count them as the tie they are (averaged ranks), not as an order."""
    return float(f"{cost:.6g}")


def rank(a) -> None:
    """Rho per app of gpu_bench.py run's measurements."""
    rows = _load(a.json)["results"]
    now = None
    if a.schedules:
        stored = _load(a.schedules)["rows"]
        spec = ts.load_spec(a.spec)
        if a.launch_us is not None:
            spec = spec.replace(launch_overhead_us=a.launch_us)
        if a.set:
            spec = spec.with_cost_params(**cost_sets(a.set))
        now = reprice(stored, spec, columns=a.columns)
    by_app: dict = {}
    for r in rows:
        if r.get("predicted_cost") is not None and r.get("ok") and r.get("gpu_ms"):
            if now is not None:
                if (r["app"], r["schedule"]) not in now:
                    continue
                r = {**r, "stored_cost": r["predicted_cost"],
                     "predicted_cost": now[(r["app"], r["schedule"])]}
            by_app.setdefault(r["app"], []).append(r)
    table = {}
    head = " stored" if now is not None else ""
    print(f"{'app':16s} {'n':>3s} {'rho':>6s}{head} {'spread':>7s}  fastest / best predicted")
    for app, rs in sorted(by_app.items()):
        rho = spearman([_tie(r["predicted_cost"]) for r in rs], [r["gpu_ms"] for r in rs])
        fast = min(r["gpu_ms"] for r in rs)
        best = min(rs, key=lambda r: r["predicted_cost"])["gpu_ms"]
        spread = max(r["gpu_ms"] for r in rs) / fast
        table[app] = {"n": len(rs), "rho": rho, "spread": spread, "best_predicted_ms": best,
                      "fastest_ms": fast}
        old = ""
        if now is not None:
            was = spearman([_tie(r["stored_cost"]) for r in rs], [r["gpu_ms"] for r in rs])
            table[app]["stored_rho"] = was
            old = f" {'-' if was is None else format(was, '6.2f'):>6s}"
        print(f"{app:16s} {len(rs):3d} {'-' if rho is None else format(rho, '6.2f'):>6s}{old} "
              f"{spread:6.2f}x  {fast:.3f} / {best:.3f} ms")
        if a.detail:
            for r in sorted(rs, key=lambda r: r["gpu_ms"]):
                print(f"    {r['schedule']:8s} {r['gpu_ms']:9.3f} ms  predicted "
                      f"{r['predicted_cost']:12.2f}  {r.get('source', '')}")
    good = [k for k, t in table.items() if t["rho"] is not None and t["rho"] >= 0.8]
    print(f"rho >= 0.8 on {len(good)} of {len(table)} apps")
    ab = [r for r in rows if r["schedule"].startswith("solver") and r.get("gpu_ms")]
    for r in sorted(ab, key=lambda r: (r["app"], r["schedule"])):
        print(f"A/B {r['app']:16s} {r['schedule']:24s} {r['gpu_ms']:9.3f} ms  "
              f"{'ok' if r.get('ok') else 'WRONG'}")
    if a.out:
        Path(a.out).write_text(json.dumps({"rho": table, "ab": ab}, indent=1))


def host(a) -> None:
    """Time the interpreted host plan of every stored GPU schedule."""
    rows = _load(a.schedules)["rows"]
    if a.apps:
        rows = [r for r in rows if r["app"] in a.apps.split(",")]
    got = interpreted_host_ms(rows, a.repeats)
    Path(a.out).write_text(json.dumps(
        {"what": "interpreted host plan per realize on the no-op device (ms, median)",
         "rows": [{"app": k[0], "schedule": k[1], "host_ms": ms, "launches": n}
                  for k, (ms, n) in got.items()]}, indent=1))


# -- offline: re-price measured CPU schedules -------------------------------------------------
def _is_variant(row) -> bool:
    return row["predicted_cost"] is None


def _is_climb(row) -> bool:
    return (row.get("note") or "").startswith("climb")


def price_tuning(tuning: dict, rows: list, include_variants: bool = False,
                 spec=None, sets=None) -> dict:
    """Price ``rows`` (measurements of ``tuning``) with the current model, under ``spec``
    (default: the one the tuning recorded) with the cost parameters ``sets`` changed.

    Returns {"points": [(cost, ms, source, costs)], "rows": the row of each point,
    "variants": n, "unpriced": n, "failed": n, "sizes": the output's}."""
    from tilesolve.model.schedule import Schedule
    from tilesolve.solver.cost import CostModel
    from tilesolve.solver.predict import cost_of_terms, schedule_costs
    from tilesolve.solver.problem import Problem
    from tilesolve.specs.spec import HardwareSpec
    app = get_app(tuning["app"])
    pipe, _ = app.build(None, **tuning["build_params"])
    est = {k: list(v) for k, v in tuning["estimates"].items()}
    if spec is None:
        stored = dict(tuning["spec"])
        if "stream_miss_loads" in stored:     # recorded before it became a cost parameter
            stored["cost_params"] = {"stream_miss_loads": stored.pop("stream_miss_loads")}
        spec = HardwareSpec.from_dict(stored, source="stored spec")
    if sets:
        spec = spec.with_cost_params(**sets)
    model = CostModel(Problem(pipe, spec, est))
    out = {"points": [], "rows": [], "variants": 0, "unpriced": 0, "failed": 0,
           "sizes": est[pipe.output_names[0]]}
    for row in rows:
        if row["error"] is not None or row["measured_ms"] is None:
            out["failed"] += 1
            continue
        if _is_variant(row):
            out["variants"] += 1
            if not include_variants:
                continue
        sched = Schedule.from_json(row["schedule_json"], pipe)
        try:
            costs = schedule_costs(model, sched)
        except Exception:                     # no recorded groups, or not this problem's
            out["unpriced"] += 1
            continue
        out["points"].append((sum(cost_of_terms(c) for c in costs), row["measured_ms"],
                              row["source"], costs))
        out["rows"].append(row)
    return out


def _by_key(doc) -> dict:
    out: dict = {}
    for row in doc["measurements"]:
        out.setdefault(row["key"], []).append(row)
    return out


def offline(a) -> None:
    """Print rho per tuning of an export, priced by the current model."""
    doc, sets = _load(a.file), cost_sets(a.set)
    by_key = _by_key(doc)
    result = {}
    print(f"{'tuning':<42} {'n':>3} {'var':>4} {'unpr':>4} {'rho':>6} {'rho@day':>8}")
    for t in doc["tunings"]:
        if a.app and t["app"] not in a.app:
            continue
        rows = [r for r in by_key.get(t["key"], []) if not (a.no_climb and _is_climb(r))]
        res = price_tuning(t, rows, a.all, sets=sets)
        pts = res["points"]
        rho = spearman([p for p, *_ in pts], [m for _, m, *_ in pts])
        day = [(r["predicted_cost"], r["measured_ms"]) for r in rows
               if r["error"] is None and r["measured_ms"] is not None
               and isinstance(r["predicted_cost"], (int, float))
               and math.isfinite(r["predicted_cost"])]
        rho_day = spearman([p for p, _ in day], [m for _, m in day])
        small = " (small build)" if t["build_params"] else ""
        name = f"{t['app']}{small} {'x'.join(str(s) for s in res['sizes'])}"
        result[name] = (rho, len(pts))
        print(f"{name:<42} {len(pts):>3} {res['variants']:>4} {res['unpriced']:>4} "
              f"{_fmt(rho)} {_fmt(rho_day):>8}")
        if a.detail:
            print("      ms      predicted  " + " ".join(f"{n:>9}" for n in TERMS) + "  source")
            for cost, ms, src, costs in sorted(pts, key=lambda p: p[1]):
                terms = [sum(c.terms()[n] for c in costs) for n in TERMS]
                print(f"{ms:8.3f} {cost:14.5g}  " + " ".join(f"{v:9.3g}" for v in terms)
                      + f"  {src}")
    counted = [r for r, n in result.values() if r is not None and n >= MIN_POINTS]
    if counted:
        print(f"median rho over {len(counted)} tunings with >= {MIN_POINTS} schedules: "
              f"{statistics.median(counted):.3f} (min {min(counted):.2f})")


# -- ceiling: the measurements' agreement with themselves -------------------------------------
def _one_per_app(doc: dict, counts: dict, apps) -> list:
    """Each app's tuning at its largest size (no build parameters), with the most
    measurements there (the latest of equals)."""
    best: dict = {}
    for t in doc["tunings"]:
        if t["build_params"] or (apps and t["app"] not in apps):
            continue
        area = int(np.prod(next(iter(t["estimates"].values()))))
        key = (area, counts.get(t["key"], 0))
        if t["app"] not in best or key >= best[t["app"]][0]:
            best[t["app"]] = (key, t)
    return [t for _, t in best.values()]


def ceiling(a) -> None:
    """The schedules of each app's largest tuning timed again here in ``--rounds``
    shuffled rounds: the model's rho (``--spec``: host, a spec name, or ``stored``)
    against the fastest times, and the retest rho of even against odd rounds."""
    from tilesolve.model.schedule import Schedule
    from tilesolve.tune.check import compare
    doc, sets = _load(a.file), cost_sets(a.set)
    by_key = _by_key(doc)
    spec = None if a.spec == "stored" else ts.load_spec(a.spec)
    records = []
    print(f"{'app':<16} {'n':>3} {'rho model':>9} {'rho retest':>10} {'spread':>7} "
          f"{'fastest ms':>10}")
    for tuning in _one_per_app(doc, {k: len(v) for k, v in by_key.items()}, a.app):
        priced = price_tuning(tuning, by_key.get(tuning["key"], []), spec=spec, sets=sets)
        if len(priced["points"]) < MIN_POINTS:
            continue
        app = get_app(tuning["app"])
        pipe, _ = app.build(None)
        sizes = list(priced["sizes"])
        inputs = app.make_inputs(sizes, seed=0)
        builds, costs, first = [], [], None
        for (cost, *_), row in zip(priced["points"], priced["rows"]):
            c = ts.compile(pipe, Schedule.from_json(row["schedule_json"], pipe),
                           num_threads=tuning["threads"])
            got = c.realize(sizes, **inputs)
            if first is None:
                first = got
            elif not compare(got, first)[0]:
                raise AssertionError(f"{tuning['app']}: a schedule's output differs")
            builds.append(c)
            costs.append(cost)
        print(f"  [{tuning['app']}: {len(builds)} schedules compiled, timing {a.rounds} "
              "rounds]", file=sys.stderr)
        t, rec = _timed(tuning["app"], builds, costs, inputs, sizes, a.rounds, first)
        rec.update(sizes=sizes, ms=[float(v * 1e3) for v in t.min(axis=0)], predicted=costs)
        records.append(rec)
        print(f"{rec['app']:<16} {rec['schedules']:>3} {_fmt(rec['rho_model']):>9} "
              f"{_fmt(rec['rho_retest']):>10} {rec['spread']:6.2f}x {rec['fastest_ms']:10.2f}",
              flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"file": Path(a.file).name, "rounds": a.rounds,
                                            "spec": a.spec, "records": records}, indent=1))


# -- pooled: two or more timing runs ----------------------------------------------------------
def _schedule_key(row) -> str:
    s = row["schedule_json"]
    return s if isinstance(s, str) else json.dumps(s, sort_keys=True)


def _times(doc) -> dict:
    app_of = {t["key"]: t["app"] for t in doc["tunings"]}
    return {(app_of[r["key"]], _schedule_key(r)): r["measured_ms"] for r in doc["measurements"]
            if r["error"] is None and r["measured_ms"] is not None}


def compare_runs(docs: list, apps=None, sets=None) -> list:
    """Per app of the last run: {app, n, runs (the mean rho over the pairs of runs that
    share ``MIN_COMMON`` schedules or more), runs_min, model (its rho against each run),
    pooled}.  ``n`` and ``pooled`` cover the last run's schedules, each at the geometric
    mean of the runs that measured it."""
    times = [_times(d) for d in docs]
    rows_last = _by_key({"measurements": [r for r in docs[-1]["measurements"]
                                          if r["error"] is None and r["measured_ms"] is not None]})
    out = []
    for t in docs[-1]["tunings"]:
        if apps and t["app"] not in apps:
            continue
        res = price_tuning(t, rows_last.get(t["key"], []), sets=sets)
        cost = [c for c, *_ in res["points"]]
        keys = [(t["app"], _schedule_key(r)) for r in res["rows"]]
        pooled = [math.exp(statistics.mean(math.log(ms[k]) for ms in times if k in ms))
                  for k in keys]
        pairs = []
        for x, y in combinations(times, 2):
            common = [k for k in x if k[0] == t["app"] and k in y]
            if len(common) >= MIN_COMMON:
                v = spearman([x[k] for k in common], [y[k] for k in common])
                if v is not None:
                    pairs.append(v)
        model = []
        for ms in times:
            have = [(c, ms[k]) for c, k in zip(cost, keys) if k in ms]
            model.append(spearman([c for c, _ in have], [m for _, m in have])
                         if len(have) >= MIN_COMMON else None)
        out.append({"app": t["app"], "n": len(cost),
                    "runs": statistics.mean(pairs) if pairs else None,
                    "runs_min": min(pairs) if pairs else None,
                    "model": model, "pooled": spearman(cost, pooled)})
    return out


def pooled(a) -> None:
    if len(a.runs) < 2:
        raise SystemExit("pooled: give at least two runs")
    rows = compare_runs([_load(f) for f in a.runs], a.app, cost_sets(a.set))
    print(f"{'app':<16} {'n':>3} {'runs':>6} {'min':>6} {'pooled':>6}  model per run")
    for r in rows:
        flag = "  noise" if r["runs"] is not None and r["runs"] < TARGET else ""
        per = " ".join(_fmt(v).strip() for v in r["model"])
        print(f"{r['app']:<16} {r['n']:>3} {_fmt(r['runs'])} {_fmt(r['runs_min'])} "
              f"{_fmt(r['pooled'])}  {per}{flag}")
    got = [r["pooled"] for r in rows if r["pooled"] is not None]
    if got:
        print(f"pooled rho: mean {statistics.mean(got):.3f}, {sum(p >= TARGET for p in got)}"
              f" of {len(got)} apps >= {TARGET}; runs >= {TARGET}: "
              f"{sum(r['runs'] is not None and r['runs'] >= TARGET for r in rows)}")


# -- export: tuning databases to JSON ---------------------------------------------------------
def export(a) -> None:
    """The measurements of tuning databases as the JSON ``offline``, ``ceiling`` and
    ``pooled`` read.  Each tuning's pipeline is named by the app of ``tilesolve.apps``
    whose build (default parameters, or its ``SMALL_BUILD``) encodes to the same pipeline
    hash; tunings of other pipelines are skipped (and listed)."""
    import hashlib
    import sqlite3
    from tilesolve.tune.db import pipeline_json
    known = {}
    for name, mod in APPS.items():
        for sizes, params in ((None, {}), (getattr(mod, "SMALL_SIZE", None),
                                           getattr(mod, "SMALL_BUILD", None) or {})):
            pipe, _ = mod.build(sizes, **params)
            known.setdefault(hashlib.sha256(pipeline_json(pipe).encode()).hexdigest(),
                             (name, params))
    tunings, rows = [], []
    for db in a.dbs:
        c = sqlite3.connect(db)
        for key, ph, est, spec_name, spec, threads, created in c.execute(
                "SELECT key, pipeline_hash, estimates_json, spec_name, spec_json, threads, "
                "created FROM tunings ORDER BY created"):
            if ph not in known:
                print(f"skipped tuning {key[:12]}: not a pipeline of tilesolve.apps",
                      file=sys.stderr)
                continue
            app, params = known[ph]
            tunings.append({"key": key, "app": app, "build_params": params,
                            "estimates": json.loads(est), "spec_name": spec_name,
                            "spec": json.loads(spec), "threads": threads, "created": created,
                            "pipeline_hash": ph})
            cols = {r[1] for r in c.execute("PRAGMA table_info(measurements)")}
            note = "note" if "note" in cols else "NULL"      # a version 1 file has none
            for sh, sj, src, pc, ms, err, at, nt in c.execute(
                    "SELECT schedule_hash, schedule_json, source, predicted_cost, measured_ms, "
                    f"error, measured_at, {note} FROM measurements WHERE key = ? "
                    "ORDER BY measured_at, rowid", (key,)):
                if pc is not None and pc == float("inf"):
                    pc = "inf"
                rows.append({"key": key, "app": app, "build_params": params,
                             "estimates": json.loads(est), "source": src, "schedule_hash": sh,
                             "schedule_json": sj, "predicted_cost": pc, "measured_ms": ms,
                             "error": err, "measured_at": at, "note": nt})
    Path(a.out).write_text(json.dumps({"description": "", "tunings": tunings,
                                       "measurements": rows}, indent=1))
    print(f"{len(tunings)} tunings, {len(rows)} measurements")



def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="gather candidates; CPU: time them here, GPU: cubins")
    b.add_argument("--spec", default="host")
    b.add_argument("--apps", default=None, help="default: every app")
    b.add_argument("--per-app", type=int, default=None,
                   help="candidates per app (default: 10 on a CPU, 8 on a GPU)")
    b.add_argument("--gather-s", type=float, default=20.0, help="seconds of gathering per app")
    b.add_argument("--rounds", type=int, default=8, help="CPU: timing rounds")
    b.add_argument("--json", help="CPU: write the measurements here")
    b.add_argument("--out", default="build/gpu_rank", help="GPU: the builds' directory")
    b.add_argument("--also-spec", default=None, help="GPU: a second spec for the solver's A/B")
    b.add_argument("--timeout", type=int, default=300, help="GPU: seconds per build")
    r = sub.add_parser("rank", help="rho of gpu_bench.py run's measurements")
    r.add_argument("json", help="gpu_bench.py run's --json output over the builds")
    r.add_argument("--out", default=None, help="write the table as JSON")
    r.add_argument("--schedules", default=None,
                   help="the measured schedules (results/gpu_h100_rank_schedules_*.json): price "
                        "them with the current model instead of the stored predictions")
    r.add_argument("--columns", action="store_true",
                   help="with --schedules: price the solver's columns, not the groups that ran")
    r.add_argument("--spec", default="h100", help="with --schedules: the spec to price for")
    r.add_argument("--launch-us", type=float, default=None,
                   help="with --schedules: the cost of a launch in the runtime the measurements "
                        "were taken with (default: the spec's launch_overhead_us)")
    r.add_argument("--detail", action="store_true", help="each schedule's time and prediction")
    r.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="with --schedules: change a cost parameter before pricing (repeatable)")
    o = sub.add_parser("offline", help="re-price measured CPU schedules")
    c = sub.add_parser("ceiling", help="time measured CPU schedules again here")
    for q in (o, c):
        q.add_argument("file", nargs="?", default=str(DEFAULT))
    o.add_argument("--detail", action="store_true", help="every schedule's terms")
    o.add_argument("--all", action="store_true",
                   help="price the serial/vec2x variants too (as their base)")
    o.add_argument("--no-climb", action="store_true",
                   help="leave out the schedules autotune's climb measured")
    c.add_argument("--rounds", type=int, default=8)
    c.add_argument("--spec", default="host",
                   help="host (this machine), a spec name, or 'stored' (the tuning's own)")
    c.add_argument("--json", help="write the records here")
    pl = sub.add_parser("pooled", help="noise against the model over two or more runs")
    pl.add_argument("runs", nargs="+", metavar="RUN.json", help="two or more build --json runs")
    for q in (o, c, pl):
        q.add_argument("--app", action="append", help="only this app (repeatable)")
        q.add_argument("--set", action="append", metavar="NAME=VALUE",
                       help="change a cost parameter before pricing (repeatable)")
    h = sub.add_parser("host", help="time the interpreted host plan of stored GPU schedules")
    h.add_argument("schedules", help="results/gpu_h100_rank_schedules_*.json")
    h.add_argument("--out", required=True)
    h.add_argument("--apps", default="")
    h.add_argument("--repeats", type=int, default=10)
    e = sub.add_parser("export", help="tuning databases' measurements as offline's JSON")
    e.add_argument("out", metavar="OUT.json")
    e.add_argument("dbs", nargs="+", metavar="DB.sqlite")
    a = p.parse_args(argv)
    {"build": build, "rank": rank, "offline": offline, "ceiling": ceiling, "pooled": pooled,
     "host": host, "export": export}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
