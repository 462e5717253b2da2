"""LLVM's optimization pipeline for generated code, in one place.

Used by ``jit.optimize`` in this process and by ``llvm_worker.py``, the process that
compiles part of a large module beside it; so this module imports llvmlite only.
"""
from __future__ import annotations

import llvmlite.binding as llvm


def run_o3(mod, machine) -> None:
    """Run the new pass manager at O3, with loop and SLP vectorization and unrolling, over
    ``mod`` for ``machine`` (its vector widths feed the vectorizers' cost models)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(machine, pto)
    pb.getModulePassManager().run(mod, pb)
