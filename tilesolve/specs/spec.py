"""The hardware spec value: what the scheduler knows about a machine.

A :class:`HardwareSpec` is immutable and always valid: its constructor runs the
same checks as the YAML loader (see :mod:`tilesolve.specs.schema` and
``SCHEMA.md``), so a spec built by hand, loaded from a file or detected on the
host obeys the same rules.  Fields of the other kind (GPU fields of a CPU spec
and vice versa) are ``None``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

from ..errors import SpecError
from .cost_params import CostParams, overrides

__all__ = ["CacheLevel", "HardwareSpec"]


@dataclass(frozen=True)
class CacheLevel:
    """One level of a CPU's data cache hierarchy, as seen by one core.

    ``size_bytes`` is the whole cache's size; ``shared`` says whether several
    cores share it (then each core's share is ``size_bytes / cores``).
    """

    level: int
    size_bytes: int
    shared: bool
    line_bytes: int


@dataclass(frozen=True)
class HardwareSpec:
    """A validated description of one CPU or NVIDIA GPU (see ``SCHEMA.md``).

    ``source`` (the file or origin the spec came from, used in error messages)
    takes no part in equality.
    """

    # --- common -----------------------------------------------------------
    name: str
    kind: str
    description: str
    clock_ghz: float
    memory_bandwidth_gbs: float
    cost_params: Optional[CostParams] = None
    # --- CPU ----------------------------------------------------------------
    cores: Optional[int] = None
    threads: Optional[int] = None
    vector_bits: Optional[int] = None
    caches: Optional[Tuple[CacheLevel, ...]] = None
    parallelism_threshold: Optional[int] = None
    load_cost: Optional[float] = None
    vector_multiple: Optional[int] = None
    cache_for_tiles: Optional[int] = None
    heap_cache_bytes: Optional[int] = None
    # --- GPU ----------------------------------------------------------------
    compute_capability: Optional[str] = None
    sm_count: Optional[int] = None
    warp_size: Optional[int] = None
    max_threads_per_block: Optional[int] = None
    max_threads_per_sm: Optional[int] = None
    max_blocks_per_sm: Optional[int] = None
    shared_mem_per_block_bytes: Optional[int] = None
    shared_mem_per_sm_bytes: Optional[int] = None
    registers_per_sm: Optional[int] = None
    max_registers_per_thread: Optional[int] = None
    register_allocation_unit: Optional[int] = None
    l2_bytes: Optional[int] = None
    occupancy_threshold: Optional[float] = None
    launch_overhead_us: Optional[float] = None
    # the GPU cost model's hardware numbers (optional: None is solver.cost_gpu's default)
    warp_schedulers_per_sm: Optional[int] = None
    l1_bytes_per_cycle: Optional[float] = None
    l2_bandwidth_gbs: Optional[float] = None
    dram_latency_cycles: Optional[float] = None
    block_overhead_cycles: Optional[float] = None
    barrier_cycles: Optional[float] = None
    # --- provenance (not compared) -----------------------------------------
    source: Optional[str] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        from .schema import normalize  # late import: schema imports this module

        clean = normalize(self._raw_fields(), self.source or "<HardwareSpec>")
        for key, value in clean.items():
            object.__setattr__(self, key, value)

    # --- construction and conversion -------------------------------------
    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "HardwareSpec":
        """Build a spec from a plain mapping (e.g. parsed YAML), validating it.

        Raises :class:`SpecError` naming ``source``, the field and what was
        expected.
        """
        from .schema import normalize

        clean = normalize(data, source, warn=False)     # the constructor warns
        return cls(**clean, source=source)

    def to_dict(self) -> dict:
        """The spec as plain data (only its kind's fields), in schema order."""
        from .schema import fields_for_kind, is_optional

        out: dict = {}
        for name in fields_for_kind(self.kind):
            value = getattr(self, name)
            if value is None and is_optional(name):
                continue
            if name == "caches":
                value = [dataclasses.asdict(c) for c in value]
            if name == "cost_params":
                value = overrides(value, self.kind)
                if not value:
                    continue
            out[name] = value
        return out

    def replace(self, **changes: Any) -> "HardwareSpec":
        """A copy with some fields changed, validated like a loaded spec."""
        return dataclasses.replace(self, **changes)

    def with_cost_params(self, **changes: Any) -> "HardwareSpec":
        """A copy whose ``cost_params`` has ``changes`` on top of this spec's
        (``SpecError`` naming ``cost_params.NAME`` for a bad one)."""
        return self.replace(cost_params={**overrides(self.cost_params, self.kind), **changes})

    def _raw_fields(self) -> dict:
        """This spec's non-None fields, caches turned back into mappings."""
        raw = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "source" or value is None:
                continue
            if f.name == "caches" and isinstance(value, (list, tuple)):
                value = [dataclasses.asdict(c) if isinstance(c, CacheLevel) else c
                         for c in value]
            raw[f.name] = value
        return raw

    # --- kind ---------------------------------------------------------------
    @property
    def is_gpu(self) -> bool:
        """True for a GPU spec."""
        return self.kind == "gpu"

    @property
    def is_cpu(self) -> bool:
        """True for a CPU spec."""
        return self.kind == "cpu"

    def _where(self) -> str:
        return self.source or self.name

    # --- caches -------------------------------------------------------------
    def cache_bytes(self, level: int) -> int:
        """Size in bytes of cache ``level`` (a GPU has only level 2, its L2)."""
        if self.is_gpu:
            if level == 2:
                return self.l2_bytes
            raise SpecError(f"{self._where()}: field 'l2_bytes': a GPU spec describes "
                            f"only cache level 2, not level {level!r}")
        for cache in self.caches:
            if cache.level == level:
                return cache.size_bytes
        known = ", ".join(str(c.level) for c in self.caches)
        raise SpecError(f"{self._where()}: field 'caches': expected a cache of level "
                        f"{level!r}, the spec has levels {known}")

    def cache_level(self, level: int) -> CacheLevel:
        """The :class:`CacheLevel` of ``level`` (CPU specs only)."""
        self.cache_bytes(level)  # raises a clear SpecError when absent
        return next(c for c in self.caches if c.level == level)

    @property
    def last_level_cache_bytes(self) -> int:
        """Size of the largest-numbered cache level (the L2 on a GPU)."""
        return self.l2_bytes if self.is_gpu else self.caches[-1].size_bytes

    @property
    def tile_cache_bytes(self) -> int:
        """Bytes one tile's working set may occupy.

        CPU: one core's share of cache level ``cache_for_tiles`` (the whole
        size if private, ``size / cores`` if shared, since every core works on
        a tile at once).  GPU: the shared memory one block may use.
        """
        if self.is_gpu:
            return self.shared_mem_per_block_bytes
        cache = self.cache_level(self.cache_for_tiles)
        return cache.size_bytes // self.cores if cache.shared else cache.size_bytes

    # --- vectors and parallelism ---------------------------------------------
    def vector_lanes(self, dtype_bytes: int) -> int:
        """SIMD lanes of a ``dtype_bytes``-wide type (1 on a GPU: SIMT threads)."""
        if isinstance(dtype_bytes, bool) or not isinstance(dtype_bytes, int) or dtype_bytes <= 0:
            raise ValueError(f"dtype_bytes must be a positive int, got {dtype_bytes!r}")
        if self.is_gpu:
            return 1
        return max(1, self.vector_bits // (8 * dtype_bytes))

    def innermost_tile_multiple(self, dtype_bytes: int) -> int:
        """What innermost tile extents must be a multiple of.

        CPU: ``vector_lanes(dtype_bytes) * vector_multiple``; GPU: ``warp_size``
        (a block's innermost thread extent fills whole warps).
        """
        if self.is_gpu:
            return self.warp_size
        return self.vector_lanes(dtype_bytes) * self.vector_multiple

    @property
    def max_warps_per_sm(self) -> Optional[int]:
        """Resident warps per SM (GPU), None for a CPU."""
        return self.max_threads_per_sm // self.warp_size if self.is_gpu else None

    def occupancy(self, threads_per_block: int, registers_per_thread: int = 32,
                  shared_bytes_per_block: int = 0) -> float:
        """Theoretical occupancy (resident warps / max warps per SM) of a kernel.

        Follows the CUDA occupancy calculator: registers are allocated per warp
        in units of ``register_allocation_unit``; resident blocks are limited by
        threads, registers, shared memory and ``max_blocks_per_sm``.  Returns
        0.0 when one block does not fit at all.
        """
        if not self.is_gpu:
            raise SpecError(f"{self._where()}: field 'kind': occupancy needs a gpu spec, "
                            f"got a {self.kind} spec")
        if threads_per_block <= 0 or threads_per_block > self.max_threads_per_block:
            return 0.0
        if registers_per_thread > self.max_registers_per_thread:
            return 0.0
        warps = -(-threads_per_block // self.warp_size)
        unit = self.register_allocation_unit
        regs_per_warp = -(-registers_per_thread * self.warp_size // unit) * unit
        by_threads = self.max_warps_per_sm // warps
        by_regs = (self.registers_per_sm // regs_per_warp) // warps if regs_per_warp else by_threads
        by_smem = (self.shared_mem_per_sm_bytes // shared_bytes_per_block
                   if shared_bytes_per_block > 0 else self.max_blocks_per_sm)
        if shared_bytes_per_block > self.shared_mem_per_block_bytes:
            by_smem = 0
        blocks = min(self.max_blocks_per_sm, by_threads, by_regs, by_smem)
        return blocks * warps / self.max_warps_per_sm
