"""Optimize LLVM IR, turn it into native code in this process, and cache it on disk.

Design
------
One path loads code, whether it was just compiled or came from the cache::

    IR text --optimize()--> optimized ModuleRef --tm.emit_object()--> ELF object bytes
                                                                     |      ^
                                                            DiskCache.store  DiskCache.load
                                                                     v      |
    MCJIT engine (empty module) <--add_object_file-- ObjectFileRef.from_data(bytes)

The engine is created over an *empty* module and the object is added with
``engine.add_object_file``; MCJIT's RuntimeDyld relocates it and resolves external symbols
(``ts_rt_*``, libm, ...) from the process. So a cache hit in a fresh process parses,
optimizes and code-generates nothing. The engine (and with it the code) lives exactly as
long as its :class:`JitModule`: keep that object alive while you call its addresses.

:func:`optimize` runs LLVM's new pass manager at O3 with loop and SLP vectorization for the
target machine, after setting the module's triple and data layout (so the vectorizer's
cost model knows the vector widths).

Cache entries are one file per key, ``<sha256>.tsobj``: a magic line, the sha256 of the
payload, then the object and the optimized IR text (so ``llvm_ir()``/``assembly()`` still
work on a hit). The key hashes the *unoptimized* IR text, the triple, CPU name, feature
string, opt level, llvmlite and LLVM versions, a format number and any build options
passed as ``key_extra`` (``("profile",)`` for profiled builds). Writes go to a temp file
in the same directory and are published with ``os.replace`` (atomic on POSIX), so
concurrent writers and readers never see half a file; a file that fails the magic or
digest check is counted in ``DiskCache.corrupt``, ignored, and overwritten by the rebuild.

All LLVM work happens under :data:`~tilesolve.backend.cpu.target.LLVM_LOCK` (llvmlite
uses one global LLVMContext and ctypes releases the GIL). Calling the compiled functions
needs no lock.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Union

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from . import heap
from .llvm_passes import run_o3
from .llvm_split import split_module
from .parallel import install_runtime
from .target import LLVM_LOCK, Target, host_target

__all__ = ["optimize", "JitModule", "DiskCache", "CacheEntry", "default_cache_dir",
           "CACHE_FORMAT"]

CACHE_FORMAT = 2
_MAGIC = b"TSOBJ%03d\n" % CACHE_FORMAT
_SUFFIX = ".tsobj"

IRInput = Union[str, ir.Module]

# A module of at least this many lines of IR is compiled in parts side by side
# (``llvm_split.py``): below it, starting a worker costs more than it saves.
SPLIT_LINES = 12000
_WORKER = Path(__file__).with_name("llvm_worker.py")
PART_MARK = "; ---- tilesolve: the next part of the module ----"


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """``$TILESOLVE_CACHE_DIR`` if set and non-empty, else ``~/.cache/tilesolve/llvm``."""
    explicit = environ.get("TILESOLVE_CACHE_DIR", "")
    if explicit:
        return Path(explicit).expanduser()
    home = environ.get("HOME")
    base = Path(home) if home else Path.home()
    return base / ".cache" / "tilesolve" / "llvm"


def _ir_text(module: IRInput) -> str:
    return module if isinstance(module, str) else str(module)


UNROLL_THRESHOLD: int | None = None
"""LLVM's loop-unroll size threshold; None leaves LLVM's own (300 at O3) and LLVM's
options untouched (llvmlite's LLVM is shared with anything else in the process, numba
included).  A number is set with ``llvm.set_option`` before each optimization and
becomes part of the compile cache key (``benchmarks/ab.py --set unroll_threshold=N`` varies it).
A lower threshold keeps LLVM from fully unrolling 16-trip loops of vectors: that made
blur's hand schedule on one thread 1.6x faster, but over the solvers' schedules of all
15 apps it changed nothing on average (geomean 1.000 at 100, 0.89-1.07 per schedule):
see docs/architecture.md, "Loop unrolling"."""

_UNROLL_SET: list = [None]


def _apply_unroll_threshold(value: int | None) -> None:
    """Set LLVM's (process-wide) unroll threshold when asked to; hold LLVM_LOCK.  Back
    to None after a number: LLVM's O3 value, 300."""
    if value is None and _UNROLL_SET[0] is None:
        return
    value = 300 if value is None else int(value)
    if _UNROLL_SET[0] != value:
        llvm.set_option("tilesolve", f"-unroll-threshold={value}")
        _UNROLL_SET[0] = value


def unroll_threshold(requested: int | None = None) -> int | None:
    """The unroll threshold a build uses: ``requested`` (a schedule's), else
    :data:`UNROLL_THRESHOLD`; None is LLVM's own."""
    return UNROLL_THRESHOLD if requested is None else int(requested)


def optimize(module: IRInput, target: Target | None = None,
             unroll: int | None = None) -> llvm.ModuleRef:
    """Parse ``module`` (IR text or an ``llvmlite.ir.Module``), verify it, run O3 on it
    (``unroll``: the unroll threshold, see :func:`unroll_threshold`).

    Raises ``RuntimeError`` with LLVM's message if the IR does not parse or verify.
    """
    target = target or host_target()
    text = _ir_text(module)
    with LLVM_LOCK:
        mod = llvm.parse_assembly(text)
        mod.triple = target.info.triple
        mod.data_layout = target.info.data_layout
        mod.verify()
        _apply_unroll_threshold(unroll_threshold(unroll))
        run_o3(mod, target.machine())
        return mod


@dataclass(frozen=True)
class CacheEntry:
    """What the cache stores for one key."""

    objects: tuple           # object code, one per part of the module
    optimized_ir: str        # the parts' optimized IR, joined by PART_MARK lines


class DiskCache:
    """An on-disk cache of object code, shareable between processes.

    ``hits``/``misses`` count lookups in this process; ``corrupt`` counts entries that were
    present but unreadable (and are rebuilt).
    """

    def __init__(self, directory: Union[str, os.PathLike]):
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    @staticmethod
    def key(ir_text: str, target: Target, extra: tuple = ()) -> str:
        """The cache key; ``extra``: more build options (e.g. ``("profile",)``), which
        leave the key of a build without them unchanged."""
        h = hashlib.sha256()
        parts = (f"tilesolve-cpu/{CACHE_FORMAT}", llvmlite.__version__,
                 ".".join(map(str, llvm.llvm_version_info)), *target.info.cache_fields(),
                 f"O{target.opt_level}", *extra)
        for part in parts:
            h.update(part.encode())
            h.update(b"\0")
        h.update(ir_text.encode())
        return h.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / (key + _SUFFIX)

    def load(self, key: str) -> CacheEntry | None:
        """The entry for ``key``, or None if absent or corrupted."""
        try:
            blob = self.path(key).read_bytes()
        except OSError:
            self.misses += 1
            return None
        entry = _decode(blob)
        if entry is None:
            self.corrupt += 1
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def store(self, key: str, entry: CacheEntry) -> bool:
        """Write ``entry`` atomically; on an OS error warn and return False."""
        payload = struct.pack("<Q", len(entry.objects)) + b"".join(
            struct.pack("<Q", len(o)) + o for o in entry.objects) + entry.optimized_ir.encode()
        blob = _MAGIC + hashlib.sha256(payload).digest() + payload
        tmp = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=key[:16], suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, self.path(key))
            return True
        except OSError as exc:
            warnings.warn(f"tilesolve: cannot write LLVM cache entry in {self.directory}: "
                          f"{exc}", RuntimeWarning, stacklevel=2)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False

    def __repr__(self) -> str:
        return (f"DiskCache({str(self.directory)!r}, hits={self.hits}, "
                f"misses={self.misses}, corrupt={self.corrupt})")


def _worker_result(returncode: int, out: bytes, err: bytes):
    """``(object code, optimized IR)`` from a worker's output, or None if it failed."""
    if returncode != 0 or len(out) < 8:
        return None
    (n,) = struct.unpack_from("<Q", out)
    if 8 + n > len(out):
        return None
    try:
        return bytes(out[8:8 + n]), out[8 + n:].decode()
    except UnicodeDecodeError:
        return None


def _decode(blob: bytes) -> CacheEntry | None:
    head = len(_MAGIC) + 32
    if len(blob) < head + 8 or not blob.startswith(_MAGIC):
        return None
    digest, payload = blob[len(_MAGIC):head], blob[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    (count,) = struct.unpack_from("<Q", payload)
    pos, objects = 8, []
    for _ in range(count):
        if pos + 8 > len(payload):
            return None
        (n,) = struct.unpack_from("<Q", payload, pos)
        if pos + 8 + n > len(payload):
            return None
        objects.append(bytes(payload[pos + 8:pos + 8 + n]))
        pos += 8 + n
    try:
        text = payload[pos:].decode()
    except UnicodeDecodeError:
        return None
    return CacheEntry(tuple(objects), text)


class JitModule:
    """Native code for one LLVM module, loaded into this process.

    ``JitModule(ir_text, target=None, cache=None, key_extra=(), unroll=None, workers=None)``
    (``unroll``: LLVM's unroll threshold, see :func:`unroll_threshold`; part of the key;
    ``workers``: how many processes compile a module of at least :data:`SPLIT_LINES`
    lines, in parts (``llvm_split.py``); None: two where the machine has two cores, 1:
    this process alone); then ``address(name)`` gives a function pointer for ctypes.
    Attributes: ``cache_hit`` (True if the object came from ``cache``), ``key`` (the cache
    key, computed even without a cache), ``compile_seconds`` (wall time of the
    constructor) and ``timings`` (seconds per phase: optimize and codegen in this process,
    wait for the workers, load).
    """

    def __init__(self, ir_text: IRInput, target: Target | None = None,
                 cache: DiskCache | None = None, key_extra: tuple = (),
                 unroll: int | None = None, workers: int | None = None):
        t0 = time.perf_counter()
        self.workers = min(2, os.cpu_count() or 1) if workers is None else max(1, int(workers))
        self.target = target or host_target()
        self.cache = cache
        self.unroll = unroll_threshold(unroll)
        text = _ir_text(ir_text)
        extra = tuple(key_extra) + (() if self.unroll is None else (f"unroll{self.unroll}",))
        self.key = DiskCache.key(text, self.target, extra)
        self.timings: dict[str, float] = {}
        entry = cache.load(self.key) if cache is not None else None
        self.cache_hit = entry is not None
        if entry is not None:
            try:
                self._engine = self._load(entry.objects)
            except RuntimeError:
                # The digest matched but LLVM rejected the object (e.g. a foreign file):
                # treat it like any corrupted entry.
                cache.corrupt += 1
                cache.hits -= 1
                cache.misses += 1
                entry, self.cache_hit = None, False
        if entry is None:
            entry = self._compile(text)
            if cache is not None:
                cache.store(self.key, entry)
            self._engine = self._load(entry.objects)
        self._optimized_ir = entry.optimized_ir
        self._assembly: str | None = None
        self.compile_seconds = time.perf_counter() - t0

    def _compile(self, text: str) -> CacheEntry:
        parts = None
        if self.workers > 1 and text.count("\n") >= SPLIT_LINES:
            parts = split_module(text, self.workers)
        if parts is None:
            obj, optimized = self._compile_part(text)
            return CacheEntry((obj,), optimized)
        workers = [self._spawn(p) for p in parts[1:]]
        try:
            results = [self._compile_part(parts[0])]
        except BaseException:
            for proc, _, _ in workers:
                if proc is not None:
                    proc.kill()
            raise
        t = time.perf_counter()
        for (proc, thread, box), part in zip(workers, parts[1:]):
            got = None
            if proc is not None:
                thread.join()
                got = _worker_result(proc.returncode, *box)
            results.append(got if got is not None else self._compile_part(part))
        self.timings["wait"] = time.perf_counter() - t
        return CacheEntry(tuple(o for o, _ in results),
                          f"\n{PART_MARK}\n".join(ir for _, ir in results))

    def _compile_part(self, text: str) -> tuple:
        with LLVM_LOCK:
            t = time.perf_counter()
            mod = optimize(text, self.target, self.unroll)
            optimized = str(mod)
            self.timings["optimize"] = self.timings.get("optimize", 0.0) + \
                time.perf_counter() - t
            t = time.perf_counter()
            obj = self.target.machine().emit_object(mod)
            self.timings["codegen"] = self.timings.get("codegen", 0.0) + \
                time.perf_counter() - t
        return obj, optimized

    def _spawn(self, part: str):
        """A worker process compiling ``part`` (``llvm_worker.py``), fed from a thread:
        ``(process, thread, [stdout, stderr])``; process None when none could start."""
        if not sys.executable:
            return None, None, None
        info = self.target.info
        head = json.dumps({"triple": info.triple, "cpu": info.cpu_name,
                           "features": info.features, "opt": self.target.opt_level,
                           "unroll": self.unroll})
        try:
            proc = subprocess.Popen([sys.executable, str(_WORKER)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError:
            return None, None, None
        box = [b"", b""]

        def feed():
            box[:] = proc.communicate((head + "\n" + part).encode())
        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        return proc, thread, box

    def _load(self, objects) -> llvm.ExecutionEngine:
        install_runtime()        # ts_rt_* must resolve before relocation
        heap.install()
        t = time.perf_counter()
        with LLVM_LOCK:
            holder = llvm.parse_assembly("")
            holder.triple = self.target.info.triple
            holder.data_layout = self.target.info.data_layout
            engine = llvm.create_mcjit_compiler(holder, self.target.new_machine())
            for code in objects:
                obj = llvm.ObjectFileRef.from_data(code)
                if not obj._ptr:
                    raise RuntimeError("LLVM rejected the object code")
                engine.add_object_file(obj)
            engine.finalize_object()
        self.timings["load"] = time.perf_counter() - t
        return engine

    def address(self, name: str) -> int:
        """The address of function ``name``; ``KeyError`` if the module has none."""
        with LLVM_LOCK:
            addr = self._engine.get_function_address(name)
        if not addr:
            raise KeyError(f"no function {name!r} in the compiled module")
        return addr

    def llvm_ir(self) -> str:
        """The optimized LLVM IR text (also available after a cache hit)."""
        return self._optimized_ir

    def assembly(self) -> str:
        """Target assembly for the optimized IR (generated on first request)."""
        if self._assembly is None:
            with LLVM_LOCK:
                self._assembly = "\n".join(
                    self.target.machine().emit_assembly(llvm.parse_assembly(part))
                    for part in self._optimized_ir.split(PART_MARK))
        return self._assembly

    def __repr__(self) -> str:
        return (f"JitModule(key={self.key[:12]}, cache_hit={self.cache_hit}, "
                f"compile_seconds={self.compile_seconds:.3f})")
