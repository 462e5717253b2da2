"""The host CPU as an LLVM target: one-time initialization and target machines.

Design
------
* LLVM is initialized the way numba does it: ``initialize_native_target()`` and
  ``initialize_native_asmprinter()``, once per process, under a lock. We never call
  ``llvm.initialize()``: in llvmlite 0.50 it is deprecated and *raises*.
* A :class:`Target` bundles a :class:`TargetInfo` (the plain facts that identify the code
  we generate: triple, CPU name, feature string, data layout; also part of every cache
  key) with a factory for LLVM ``TargetMachine`` objects.
* Two kinds of target machine are handed out, because of an llvmlite ownership rule:
  ``create_mcjit_compiler(module, tm)`` makes the execution engine *own* ``tm`` (it sets
  ``tm._owned``), so a machine given to an engine must never be shared.
  :meth:`Target.machine` is the shared one used for optimization, object emission and
  assembly printing (callers serialize on :data:`LLVM_LOCK`); :meth:`Target.new_machine`
  makes a fresh one for each engine.
* Code model: ``codemodel="jitdefault"`` (the large model on 64-bit hosts) and
  ``reloc="default"``, ``jit=True``, like numba's JIT target machine. The large model makes
  the emitted object code independent of where MCJIT places its sections, so an object
  emitted in one process can be loaded from the disk cache into another.

:func:`host_target` is the lazily created, process-wide host target. :func:`make_target`
builds one with an explicit CPU and features (e.g. ``cpu="x86-64", features=""`` for a
baseline build, or to honour a hardware spec).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

__all__ = ["LLVM_LOCK", "TargetInfo", "Target", "initialize_llvm", "host_target",
           "make_target"]

#: Serializes all use of LLVM's global context and of shared target machines. llvmlite's
#: ctypes calls release the GIL, so two Python threads could otherwise parse or optimize
#: in the global LLVMContext at the same time, which LLVM does not allow.
LLVM_LOCK = threading.RLock()

_init_lock = threading.Lock()
_initialized = False
_host: "Target | None" = None


def initialize_llvm() -> None:
    """Initialize LLVM's native target and asm printer once (thread-safe, idempotent)."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


@dataclass(frozen=True)
class TargetInfo:
    """What identifies the machine code we produce. Plain strings, hashable, picklable."""

    triple: str
    cpu_name: str
    features: str
    data_layout: str

    def cache_fields(self) -> tuple[str, str, str]:
        """The fields that go into a cache key (the data layout follows from them)."""
        return (self.triple, self.cpu_name, self.features)

    def has_feature(self, name: str) -> bool:
        """True if ``+name`` is in the feature string, e.g. ``has_feature("avx2")``."""
        return f"+{name}" in self.features.split(",")


class Target:
    """A target triple + CPU + features, able to create LLVM target machines."""

    def __init__(self, triple: str, cpu_name: str, features: str, opt_level: int = 3):
        initialize_llvm()
        self._llvm_target = llvm.Target.from_triple(triple)
        self._cpu = cpu_name
        self._features = features
        self.opt_level = opt_level
        self._machine = self.new_machine()
        self.info = TargetInfo(
            triple=triple,
            cpu_name=cpu_name,
            features=features,
            data_layout=str(self._machine.target_data),
        )

    def new_machine(self) -> llvm.TargetMachine:
        """A fresh target machine, e.g. to hand to (and be owned by) an execution engine."""
        return self._llvm_target.create_target_machine(
            cpu=self._cpu,
            features=self._features,
            opt=self.opt_level,
            reloc="default",
            codemodel="jitdefault",
            jit=True,
        )

    def machine(self) -> llvm.TargetMachine:
        """The shared target machine for optimizing and emitting; hold LLVM_LOCK."""
        return self._machine

    def __repr__(self) -> str:
        return f"Target({self.info.triple!r}, cpu={self.info.cpu_name!r})"


def window_lanes(info) -> int:
    """The most 32-bit lanes ``info``'s CPU permutes by a vector of lane numbers in one
    instruction (``vpermps``): 16 with AVX-512F, 8 with AVX2, else 0."""
    if info.has_feature("avx512f"):
        return 16
    return 8 if info.has_feature("avx2") else 0


def make_target(cpu_name: str | None = None, features: str | None = None,
                triple: str | None = None) -> Target:
    """A target for this process's triple with the given CPU/features (host ones if None)."""
    initialize_llvm()
    with LLVM_LOCK:
        triple = triple or llvm.get_process_triple()
        if cpu_name is None:
            cpu_name = llvm.get_host_cpu_name()
        if features is None:
            features = llvm.get_host_cpu_features().flatten()
        return Target(triple, cpu_name, features)


def host_target() -> Target:
    """The process-wide target for the host CPU, created on first use (thread-safe)."""
    global _host
    if _host is None:
        with LLVM_LOCK:
            if _host is None:
                _host = make_target()
    return _host


def runtime_engine(ir_text: str, target: Target | None = None):
    """An MCJIT engine holding a runtime module written in LLVM IR (the parallel runtime,
    the thread pool, the heap cache), verified and finalized for ``target`` (the host's
    by default).  The caller keeps the engine alive as long as its code is used, and
    holds ``LLVM_LOCK``."""
    target = target or host_target()
    mod = llvm.parse_assembly(ir_text)
    mod.triple = target.info.triple
    mod.data_layout = target.info.data_layout
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, target.new_machine())
    engine.finalize_object()
    return engine
