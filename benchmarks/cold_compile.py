"""A cold compile of a pipeline, phase by phase: solve, lowering, tilesolve's code
generation, LLVM's optimization and LLVM's machine code.

    python benchmarks/cold_compile.py [--app laplacian_blend] [--method greedy]
                                      [--spec xeon-e5-2620v3]

The app is looked up in the app suite, then in the validation suite; each phase runs once
in a fresh process state (nothing cached on disk, so the figure is what a new user's
first ``ts.compile`` costs).  Prints the seconds of each phase, the Funcs, and the lines
of LLVM IR before and after optimization.  A module of ``jit.SPLIT_LINES`` lines or more
is compiled in parts by ``--workers`` processes (default 2 on a machine with 2 cores or
more): the LLVM lines are then this process's part, and "waiting for workers" the time
it waited for the others after finishing its own.
"""
from __future__ import annotations

import argparse
import time

import tilesolve as ts
from tilesolve.apps import APPS
from tilesolve.apps.validation import PIPELINES
from tilesolve.backend.cpu.codegen import generate
from tilesolve.backend.cpu.jit import SPLIT_LINES, JitModule
from tilesolve.backend.cpu.target import host_target
from tilesolve.lower import lower


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app", default="laplacian_blend")
    ap.add_argument("--method", default="greedy")
    ap.add_argument("--spec", default="xeon-e5-2620v3")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes compiling a large module (default: 2 on 2+ cores)")
    args = ap.parse_args(argv)
    app = {**APPS, **PIPELINES}[args.app]
    pipe, est = app.build()
    t = time.perf_counter()
    s = ts.solve_schedule(pipe, args.spec, est, method=args.method)
    solve = time.perf_counter() - t
    t = time.perf_counter()
    lowered = lower(pipe, s)
    low = time.perf_counter() - t
    tgt = host_target()
    t = time.perf_counter()
    gen = generate(lowered, tgt.info.triple, tgt.info.data_layout)
    cg = time.perf_counter() - t
    jm = JitModule(gen.ir_text, tgt, cache=None, workers=args.workers)
    tm = jm.timings
    wait = tm.get("wait", 0.0)
    total = low + cg + tm["optimize"] + tm["codegen"] + wait + tm["load"]
    print(f"{args.app} ({len(pipe.funcs)} Funcs), {args.method} on {args.spec}")
    print(f"  solve               {solve:7.2f} s")
    print(f"  lowering            {low:7.2f} s")
    print(f"  code generation     {cg:7.2f} s  ({len(gen.ir_text.splitlines())} lines of IR)")
    print(f"  LLVM optimization   {tm['optimize']:7.2f} s  "  # this process's part
          f"({len(jm.llvm_ir().splitlines())} lines after, all parts)")
    print(f"  LLVM machine code   {tm['codegen']:7.2f} s")
    print(f"  waiting for workers {wait:7.2f} s  ({jm.workers} processes compile a module "
          f"of >= {SPLIT_LINES} lines in parts)")
    print(f"  compile (no solve)  {total:7.2f} s")


if __name__ == "__main__":
    main()
