"""A solver rule on and off: each app's solved schedule with the rule as shipped and
with the rule's earlier form, compiled and timed in one process.

    python benchmarks/solver_rules.py --rule rdom-unroll|row-var|row-histograms|k-panel-order|
                                             strided-reads|scatters|float-pow2-div
                                      [--apps matmul,conv_layer] [--methods greedy,ilp]
                                      [--rounds 7] [--sizes 4096,1024 --param k=2048]

Rules (the earlier form in brackets):

* ``rdom-unroll``: ``register_block.rdom_unroll`` keeps a block's accumulators and the
  operands its unrolled RDom steps load within the vector registers [unroll by 4
  whatever the block];
* ``row-var``: ``register_block._row_score`` picks the register block's row Var by the
  L1 accesses a step [the first pure Var after x];
* ``row-histograms``: ``schedule_gen._parallel_vectors`` runs a root update with one
  pure dimension in parallel over its vectors [serial];
* ``k-panel-order``: ``register_block.x_inside`` puts a K-blocked update's x block
  loop inside its row block loop when the x panel fits in half the L2 [rows inside].

Rules:

* ``strided-reads``: ``cost_terms.strided_cost`` prices transposed reads [free];
* ``scatters``: ``access.stage_accesses`` counts the lane-by-lane accesses besides
  transposed reads; the lanes term prices scattered writes (``SCATTER_LANE_OPS``; a
  gathered read is priced ``GATHER_LANE_OPS``, 0: see ``cost_terms``) [none counted].

Rules:

* ``float-pow2-div``: a float divided by a constant power of two costs 1, the multiply
  LLVM makes of it [the float division's 4].  It changes local_laplacian's schedules
  only: greedy 51.16 / 50.59 ms, ILP 53.45 / 54.31 (noise); interpolate's ``/ 2.0``
  upsampling keeps its schedule.

``--sizes`` (with ``--param NAME=INT`` for the app's build parameters) replaces the
paper size; the estimates are those sizes.

Apps whose schedules the rule does not change are reported as such.  Otherwise the two
builds are checked equal (``allclose``) and timed in interleaved rounds, each build run
twice and the second timed, fastest run kept.  (greedy, ms, earlier / shipped:
rdom-unroll matmul 125.7 / 102.4 and 132.5 / 104.6; row-var conv_layer 34.9 / 23.1,
38.4 / 23.7 and 39.6 / 23.4, the only app it changes since Vars of fewer than 8 points
are no row candidates; row-histograms hist_eq 8.05 / 6.11 and 8.13 / 5.96;
k-panel-order matmul 106.7 / 91.9.)
"""
from __future__ import annotations

import argparse
import contextlib
import importlib

import numpy as np
from _rounds import fastest

import tilesolve as ts
from tilesolve.apps import APPS, get_app


RULES = {
    # rule: [(module, attribute, the earlier form made from the shipped one), ...]
    "rdom-unroll": [("tilesolve.solver.register_block", "rdom_unroll",
                     lambda shipped: lambda inner_extent, *rest, **kw: shipped(inner_extent))],
    "row-var": [("tilesolve.solver.register_block", "_row_score",
                 lambda shipped: lambda calls, x, row: 0.0)],
    "row-histograms": [("tilesolve.solver.schedule_gen", "_parallel_vectors",
                        lambda shipped: lambda *args, **kwargs: None)],
    "k-panel-order": [("tilesolve.solver.register_block", "x_inside",
                       lambda shipped: lambda *args, **kwargs: False)],
    "strided-reads": [("tilesolve.solver.cost_terms", "strided_cost",
                       lambda shipped: lambda *args, **kwargs: 0.0)],
    "scatters": [("tilesolve.solver.access", "stage_accesses",
                 lambda shipped: lambda *args, **kwargs: (shipped(*args, **kwargs)[0], 0, 0))],
    "float-pow2-div": [("tilesolve.analysis.costs", "_is_pow2_const",
                        lambda shipped: lambda e: shipped(e) and e.type.is_integral())],
}


@contextlib.contextmanager
def earlier(rule: str):
    """The rule's earlier form in place of the shipped one, meanwhile."""
    saved = []
    for mod_name, attr, make in RULES[rule]:
        mod = importlib.import_module(mod_name)
        shipped = getattr(mod, attr)
        saved.append((mod, attr, shipped))
        setattr(mod, attr, make(shipped))
    try:
        yield
    finally:
        for mod, attr, shipped in saved:
            setattr(mod, attr, shipped)


def _body(schedule) -> str:
    return str(schedule).split("\n", 2)[2]      # without the solver's header lines


def measure(rule: str, name: str, method: str, rounds: int, sizes=None, params=None) -> str:
    app = get_app(name)
    params = dict(params or {})
    sizes = list(sizes or app.PAPER_SIZE)
    pipe, est = app.build(sizes, **params)
    inputs = app.make_inputs(sizes, seed=0, **params)
    if sizes != list(app.PAPER_SIZE) or params:      # estimates at the sizes asked for
        est = {**{o: list(sizes) for o in pipe.output_names},
               **{n: list(reversed(a.shape)) for n, a in inputs.items()
                  if isinstance(a, np.ndarray)}}
    with earlier(rule):
        old = ts.solve_schedule(pipe, "host", estimates=est, method=method)
    new = ts.solve_schedule(pipe, "host", estimates=est, method=method)
    if _body(old) == _body(new):
        return f"{name:16s} {method:6s} same schedule"
    builds = {"earlier": ts.compile(pipe, old), "shipped": ts.compile(pipe, new)}
    outs = {k: b.realize(sizes, **inputs) for k, b in builds.items()}
    if not np.allclose(outs["earlier"], outs["shipped"], rtol=1e-4, atol=1e-3):
        raise SystemExit(f"{name} {method}: the two builds differ")
    best = fastest({k: (lambda b=b, k=k: b.realize(sizes, out=outs[k], **inputs))
                    for k, b in builds.items()}, rounds)
    return (f"{name:16s} {method:6s} earlier {best['earlier'] * 1e3:8.2f} ms  shipped "
            f"{best['shipped'] * 1e3:8.2f} ms  ratio {best['shipped'] / best['earlier']:.3f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rule", choices=sorted(RULES), required=True)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--methods", default="greedy")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sizes", help="output sizes, innermost first (default: the paper's)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=INT")
    args = ap.parse_args(argv)
    sizes = [int(v) for v in args.sizes.split(",")] if args.sizes else None
    params = {}
    for item in args.param:
        key, _, value = item.partition("=")
        params[key] = int(value)
    for name in args.apps.split(","):
        for method in args.methods.split(","):
            print(measure(args.rule, name, method, args.rounds, sizes, params), flush=True)


if __name__ == "__main__":
    main()
