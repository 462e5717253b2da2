"""Compile one part of a split LLVM module in a process of its own (``llvm_split.py``).

Run as a script by ``jit.JitModule`` (not imported: it loads llvmlite only, so it starts
in a fraction of a second).  stdin: a JSON line (``triple``, ``cpu``, ``features``,
``opt``, ``unroll``), then the part's IR text.  stdout: the object code's length (8
bytes, little-endian), the object code, then the optimized IR text.  A failure exits
non-zero with LLVM's message on stderr; the caller then compiles the part itself.
"""
from __future__ import annotations

import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import llvmlite.binding as llvm  # noqa: E402
from llvm_passes import run_o3  # noqa: E402


def main() -> None:
    head, _, ir_text = sys.stdin.buffer.read().partition(b"\n")
    opts = json.loads(head)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    if opts["unroll"] is not None:
        llvm.set_option("tilesolve", f"-unroll-threshold={int(opts['unroll'])}")
    machine = llvm.Target.from_triple(opts["triple"]).create_target_machine(
        cpu=opts["cpu"], features=opts["features"], opt=int(opts["opt"]), reloc="default",
        codemodel="jitdefault", jit=True)
    mod = llvm.parse_assembly(ir_text.decode())
    mod.triple = opts["triple"]
    mod.data_layout = str(machine.target_data)
    mod.verify()
    run_o3(mod, machine)
    obj = machine.emit_object(mod)
    out = sys.stdout.buffer
    out.write(struct.pack("<Q", len(obj)))
    out.write(obj)
    out.write(str(mod).encode())
    out.flush()


if __name__ == "__main__":
    main()
