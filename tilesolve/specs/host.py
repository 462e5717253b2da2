"""Detect the CPU this process runs on and describe it as a HardwareSpec.

Everything comes from Linux's sysfs and ``/proc/cpuinfo``; whatever is missing
falls back to a conservative default (documented in ``SCHEMA.md``).  Memory
bandwidth is measured once with numpy (a multi-threaded copy of a 256 MiB
array) and cached as JSON in the directory the caller passes; this module
reads no environment variable (the public entry point decides the directory).
"""
from __future__ import annotations

import json
import os
import platform
import re
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

from ..heap_limit import limit_from_env
from .spec import HardwareSpec

__all__ = ["detect_host", "measure_memory_bandwidth", "host_fingerprint", "DEFAULT_BANDWIDTH_GBS",
           "CALIBRATED_FILE", "FINGERPRINT_PREFIX"]

DEFAULT_BANDWIDTH_GBS = 10.0  # conservative: below any DDR4 dual-channel system
DEFAULT_CACHES = (  # conservative L1d and L2 when sysfs says nothing
    {"level": 1, "size_bytes": 32 * 1024, "shared": False, "line_bytes": 64},
    {"level": 2, "size_bytes": 256 * 1024, "shared": False, "line_bytes": 64},
)
DEFAULT_CLOCK_GHZ = 2.0
DEFAULT_VECTOR_BITS = 128  # every 64-bit x86 (SSE2) and ARM (NEON) core has this
LOAD_COST = 40.0  # Halide's Mullapudi2016 default "balance"
VECTOR_MULTIPLE = 2  # two vector pipes on common cores: keep both busy
CACHE_FILE = "host.json"
CACHE_FORMAT = 1
CALIBRATED_FILE = "host.yaml"  # written by `tilesolve calibrate` beside CACHE_FILE
FINGERPRINT_PREFIX = "# machine: "  # the calibrated file's line naming the machine it describes


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _parse_cpu_list(text: str) -> List[int]:
    """Parse a sysfs CPU list such as ``0-3,8,10-11``."""
    cpus: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _parse_size(text: str) -> Optional[int]:
    """Parse a sysfs cache size such as ``48K`` or ``2M`` into bytes."""
    m = re.fullmatch(r"(\d+)\s*([KMG]?)B?", text.strip(), re.IGNORECASE)
    if not m:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
    return int(m.group(1)) * scale


def _core_key(sys_cpu: Path, cpu: int) -> Optional[tuple]:
    topo = sys_cpu / f"cpu{cpu}" / "topology"
    core, pkg = _read(topo / "core_id"), _read(topo / "physical_package_id")
    if core is None:
        return None
    return (pkg or "0", core)


def _count_cores(sys_cpu: Path, cpus: Sequence[int]) -> int:
    """Distinct physical cores among ``cpus`` (SMT siblings count once)."""
    keys = {_core_key(sys_cpu, c) for c in cpus}
    if None in keys:
        return len(cpus)
    return len(keys)


def _detect_caches(sys_cpu: Path, cpu: int) -> List[dict]:
    """Data/unified cache levels of ``cpu`` from sysfs; [] if unavailable."""
    by_level: Dict[int, dict] = {}
    for index in sorted((sys_cpu / f"cpu{cpu}" / "cache").glob("index*")):
        kind, level = _read(index / "type"), _read(index / "level")
        size = _parse_size(_read(index / "size") or "")
        if kind not in ("Data", "Unified") or not (level or "").isdigit() or not size:
            continue
        sharers = _parse_cpu_list(_read(index / "shared_cpu_list") or str(cpu))
        line = _read(index / "coherency_line_size") or ""
        line_bytes = int(line) if line.isdigit() and int(line) > 0 else 64
        if line_bytes & (line_bytes - 1):
            line_bytes = 64
        by_level[int(level)] = {
            "level": int(level), "size_bytes": size,
            "shared": _count_cores(sys_cpu, sharers) > 1, "line_bytes": line_bytes,
        }
    levels = sorted(by_level)
    if not levels or levels[0] != 1:
        return []
    return [by_level[lv] for lv in levels]


def _cpuinfo_fields(text: str) -> Dict[str, List[str]]:
    fields: Dict[str, List[str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), []).append(value.strip())
    return fields


def _vector_bits(flags: Set[str]) -> int:
    """SIMD width from CPU feature flags (x86 ``flags`` or ARM ``Features``)."""
    if "avx512f" in flags:
        return 512
    if "avx2" in flags or "avx" in flags:
        return 256
    return DEFAULT_VECTOR_BITS


def _clock_ghz(sys_cpu: Path, cpu: int, info: Dict[str, List[str]]) -> float:
    khz = _read(sys_cpu / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq") or ""
    if khz.isdigit() and int(khz) > 0:
        return int(khz) / 1e6
    mhz = []
    for value in info.get("cpu mhz", []):
        try:
            mhz.append(float(value))
        except ValueError:
            pass
    return max(mhz) / 1000 if mhz and max(mhz) > 0 else DEFAULT_CLOCK_GHZ


def measure_memory_bandwidth(nbytes: int = 256 << 20, workers: int = 1,
                             budget_s: float = 1.5) -> float:
    """Copy bandwidth in GB/s: read + write bytes of a numpy copy, best run.

    ``workers`` threads each copy a slice (numpy releases the GIL), so the
    figure approaches what all cores can pull from memory.  Runs at least
    twice and stops once ``budget_s`` is spent (the first run also pays page
    faults, so it rarely wins).
    """
    import numpy as np

    src = np.ones(nbytes // 8, dtype=np.float64)
    dst = np.zeros_like(src)
    bounds = np.linspace(0, src.size, max(1, workers) + 1).astype(int)
    slices = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def copy(part: slice) -> None:
        np.copyto(dst[part], src[part])

    best, start, runs = float("inf"), time.perf_counter(), 0
    while runs < 2 or (runs < 8 and time.perf_counter() - start < budget_s):
        pool = [threading.Thread(target=copy, args=(part,)) for part in slices]
        t0 = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return round(2 * src.nbytes / best / 1e9, 2)


def _fingerprint(model: str, threads: int) -> str:
    return f"{platform.node()}|{platform.machine()}|{model}|{threads}"


def _model_name(info: Dict[str, List[str]]) -> str:
    return (info.get("model name") or info.get("hardware") or [""])[0] or \
        platform.processor() or platform.machine() or "unknown CPU"


def _usable_cpus(cpus: Optional[Sequence[int]]) -> List[int]:
    if cpus is None:
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cpus = list(range(os.cpu_count() or 1))
    return sorted(cpus) or [0]


def host_fingerprint(*, cpuinfo: Path = Path("/proc/cpuinfo"),
                     cpus: Optional[Sequence[int]] = None) -> str:
    """What identifies this machine in the caches: host name, architecture, CPU model
    and usable threads (a cached measurement or calibration of another is ignored)."""
    info = _cpuinfo_fields(_read(Path(cpuinfo)) or "")
    return _fingerprint(_model_name(info), len(_usable_cpus(cpus)))


def _cached_bandwidth(cache_dir: Path, fingerprint: str) -> Optional[float]:
    try:
        data = json.loads((cache_dir / CACHE_FILE).read_text())
        value = data["memory_bandwidth_gbs"]
        if (data.get("format") == CACHE_FORMAT and data.get("machine") == fingerprint
                and isinstance(value, (int, float)) and value > 0):
            return float(value)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _store_bandwidth(cache_dir: Path, fingerprint: str, value: float) -> None:
    record = {"format": CACHE_FORMAT, "machine": fingerprint,
              "memory_bandwidth_gbs": value, "method": "numpy copy, 256 MiB, read+write",
              "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache_dir / f".{CACHE_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, cache_dir / CACHE_FILE)
    except OSError:
        pass  # an unwritable cache only costs a re-measurement next time


def _bandwidth(measure: bool, cache_dir: Optional[Path], fingerprint: str,
               workers: int) -> tuple:
    """(GB/s, how it was obtained) honoring the on-disk cache."""
    if not measure:
        return DEFAULT_BANDWIDTH_GBS, "default, not measured"
    if cache_dir is not None:
        cached = _cached_bandwidth(cache_dir, fingerprint)
        if cached is not None:
            return cached, "measured"
    try:
        value = measure_memory_bandwidth(workers=workers)
    except (MemoryError, ValueError, ZeroDivisionError, RuntimeError):
        return DEFAULT_BANDWIDTH_GBS, "default, measurement failed"
    if cache_dir is not None:
        _store_bandwidth(cache_dir, fingerprint, value)
    return value, "measured"


def detect_host(*, measure_bandwidth: bool = True, cache_dir: Optional[Path] = None,
                sys_cpu: Path = Path("/sys/devices/system/cpu"),
                cpuinfo: Path = Path("/proc/cpuinfo"),
                cpus: Optional[Sequence[int]] = None) -> HardwareSpec:
    """Describe this machine's CPU as a validated ``kind: cpu`` HardwareSpec.

    ``cache_dir``: where the measured bandwidth is cached (None: no caching).
    ``sys_cpu``, ``cpuinfo`` and ``cpus`` (the usable CPU ids) exist so tests
    can point detection at a fake machine.
    """
    sys_cpu, cpuinfo = Path(sys_cpu), Path(cpuinfo)
    cpus = _usable_cpus(cpus)
    info = _cpuinfo_fields(_read(cpuinfo) or "")
    flags = set(" ".join(info.get("flags", []) + info.get("features", [])).split())
    model = _model_name(info)
    threads = len(cpus)
    cores = _count_cores(sys_cpu, cpus)
    caches = _detect_caches(sys_cpu, cpus[0]) or [dict(c) for c in DEFAULT_CACHES]
    levels = [c["level"] for c in caches]
    gbs, how = _bandwidth(measure_bandwidth, None if cache_dir is None else Path(cache_dir),
                          _fingerprint(model, threads), min(threads, 32))
    return HardwareSpec.from_dict({
        "name": "host",
        "kind": "cpu",
        "description": f"this machine: {model}, {cores} cores / {threads} threads "
                       f"(detected; memory bandwidth {how})",
        "clock_ghz": round(_clock_ghz(sys_cpu, cpus[0], info), 3),
        "memory_bandwidth_gbs": gbs,
        "cores": cores,
        "threads": threads,
        "vector_bits": _vector_bits(flags),
        "caches": caches,
        "parallelism_threshold": 2 * threads,
        "load_cost": LOAD_COST,
        "vector_multiple": VECTOR_MULTIPLE,
        "cache_for_tiles": 2 if 2 in levels else levels[-1],
        "heap_cache_bytes": limit_from_env(),
    }, source="host (detected)")
