"""Compile CUDA C with nvcc (no GPU needed) and check ptxas's resource report against a spec.

    nv = find_nvcc()                                   # None if there is none
    res = compile_cuda_source(src, load_spec("h100"))  # cubin + per-kernel resources
    res.kernels["blur_k0"].registers                   # from -Xptxas -v
    check_resources(res, spec, program)                # LoweringError naming the kernel

nvcc is found on the PATH, then under ``$CUDA_HOME``/``$CUDA_PATH``, then in
``/usr/local/cuda``.  The architecture comes from the spec's
``compute_capability`` ("9.0" -> ``sm_90``).  ptxas's report lines look like::

    ptxas info    : Compiling entry function 'blur_k0' for 'sm_90'
    ptxas info    : Function properties for blur_k0
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 14 registers, used 1 barriers, 1152 bytes smem, 372 bytes cmem[0]
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LoweringError, SpecError

__all__ = ["find_nvcc", "arch_of", "KernelResources", "CompileResult", "compile_cuda_source",
           "parse_ptxas", "check_resources", "NvccError"]


class NvccError(LoweringError):
    """nvcc is missing or rejected the generated code."""


def find_nvcc() -> str | None:
    """The nvcc executable, or None."""
    path = shutil.which("nvcc")
    if path:
        return path
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    p = Path("/usr/local/cuda/bin/nvcc")
    return str(p) if p.is_file() else None


def arch_of(spec_or_cc) -> str:
    """``sm_XY`` from a HardwareSpec (its ``compute_capability``) or a "X.Y" string."""
    cc = getattr(spec_or_cc, "compute_capability", spec_or_cc)
    name = getattr(spec_or_cc, "name", str(spec_or_cc))
    if not cc:
        raise SpecError(f"spec {name}: field compute_capability is missing; the CUDA backend needs "
                        "it (e.g. \"9.0\") to choose the GPU architecture")
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*([a-z]?)\s*", str(cc))
    if not m:
        raise SpecError(f"spec {name}: field compute_capability is {cc!r}; expected \"major.minor\" "
                        "such as \"9.0\"")
    return f"sm_{m.group(1)}{m.group(2)}{m.group(3)}"


@dataclass(frozen=True, slots=True)
class KernelResources:
    name: str
    registers: int
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0


@dataclass(frozen=True)
class CompileResult:
    arch: str
    output: str                 # "cubin" or "ptx"
    binary: bytes
    kernels: dict = field(default_factory=dict)      # name -> KernelResources
    log: str = ""


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARS = re.compile(r"used (\d+) barriers")


def parse_ptxas(log: str) -> dict:
    """Per-kernel resources from the text of ``nvcc -Xptxas -v`` (stderr)."""
    out: dict = {}
    cur = None
    info: dict = {}
    for line in log.splitlines():
        m = _ENTRY.search(line) or _PROPS.search(line)
        if m:
            if cur != m.group(1):
                cur = m.group(1)
                info = out.setdefault(cur, {"name": cur, "registers": 0})
            continue
        if cur is None:
            continue
        m = _FRAME.search(line)
        if m:
            info["stack_bytes"], info["spill_stores"], info["spill_loads"] = map(int, m.groups())
        m = _USED.search(line)
        if m:
            info["registers"] = int(m.group(1))
            s = _SMEM.search(line)
            info["shared_bytes"] = int(s.group(1)) if s else 0
            b = _BARS.search(line)
            info["barriers"] = int(b.group(1)) if b else 0
    return {k: KernelResources(**v) for k, v in out.items()}


def compile_cuda_source(source: str, spec_or_arch, output: str = "cubin", fmad: bool = False,
                        extra_flags=(), name: str = "kernels") -> CompileResult:
    """Compile ``source`` for the spec's architecture (or an ``sm_XY`` string).

    ``fmad=False`` (the default) keeps float ``a*b + c`` as two rounded IEEE
    operations, as the reference computes it; ``True`` lets nvcc contract to FMA.
    """
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output must be 'cubin' or 'ptx', got {output!r}")
    nvcc = find_nvcc()
    if nvcc is None:
        raise NvccError("nvcc was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin); install "
                        "the CUDA toolkit to compile the CUDA backend's kernels")
    arch = spec_or_arch if isinstance(spec_or_arch, str) and spec_or_arch.startswith("sm_") \
        else arch_of(spec_or_arch)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{name}.cu"
        src.write_text(source)
        dst = Path(tmp) / f"{name}.{output}"
        cmd = [nvcc, f"-{output}", f"-arch={arch}", "-Xptxas", "-v", "-std=c++17",
               f"--fmad={'true' if fmad else 'false'}", *extra_flags, "-o", str(dst), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        log = r.stdout + r.stderr
        if r.returncode != 0:
            raise NvccError(f"nvcc failed on the CUDA code of {name} for {arch}:\n{log[-4000:]}")
        binary = dst.read_bytes()
    return CompileResult(arch, output, binary, parse_ptxas(log), log)


def check_resources(result: CompileResult, spec, program=None) -> None:
    """``LoweringError`` naming the kernel when it breaks one of the spec's limits.

    Checked: registers per thread, static shared memory per block, and (when the
    block size is known at compile time, from ``program``) threads per block and
    registers per block against the SM's register file.
    """
    if not getattr(spec, "is_gpu", False):
        raise SpecError(f"spec {getattr(spec, 'name', spec)} is not a GPU spec; the CUDA backend "
                        "needs one (e.g. load_spec('h100'))")
    blocks = {}
    if program is not None:
        blocks = {k.name: k.block_const for k in program.kernels}
    for name, res in result.kernels.items():
        if res.registers > spec.max_registers_per_thread:
            raise LoweringError(f"kernel {name}: {res.registers} registers per thread, over "
                                f"{spec.name}'s limit of {spec.max_registers_per_thread}")
        if res.shared_bytes > spec.shared_mem_per_block_bytes:
            raise LoweringError(f"kernel {name}: {res.shared_bytes} bytes of shared memory per "
                                f"block, over {spec.name}'s limit of "
                                f"{spec.shared_mem_per_block_bytes}; use smaller tiles")
        block = blocks.get(name)
        if block:
            threads = block[0] * block[1] * block[2]
            if threads > spec.max_threads_per_block:
                raise LoweringError(f"kernel {name}: {threads} threads per block "
                                    f"({block[0]}x{block[1]}x{block[2]}), over {spec.name}'s "
                                    f"limit of {spec.max_threads_per_block}")
            regs = getattr(spec, "registers_per_sm", None)
            if regs and res.registers * threads > regs:
                raise LoweringError(f"kernel {name}: {res.registers} registers x {threads} threads "
                                    f"= {res.registers * threads} per block, over the "
                                    f"{regs} registers of one {spec.name} SM; the launch would fail")
