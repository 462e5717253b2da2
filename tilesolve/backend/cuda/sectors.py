"""The memory traffic of a CUDA program run on the CPU shim, counted in 32-byte sectors.

``EmulatedPipeline(..., count_sectors=True)`` (or ``emulate.run(..., count_sectors=True)``)
builds the kernels with every global buffer parameter wrapped (``cudasim::Global`` in
``cuda_cpu_shim.h``): each load and store records its sector, and the accesses of a warp
(32 consecutive threads of a block, ``threadIdx.x`` fastest) at one access site and
iteration form one warp-level memory instruction, as on the GPU.  The report gives, per
launch and buffer, three counts of sectors for loads and for stores:

* ``sectors``: summed over warp instructions: what the load/store unit requests (a
  coalesced warp reading 32 floats: 4; a stride-2 read: 8; misaligned: 5);
* ``block_sectors``: distinct within each block, summed over blocks (an L1 that keeps
  everything a block touches);
* ``launch_sectors``: distinct within the launch (an L2 that keeps everything: DRAM
  traffic with no reuse lost).

The *compulsory* traffic is every input read once and every output written once, in
sectors; ``MemoryReport.ratio()`` divides a count by it.  Shared and per-thread
memory is not global and is not counted.  The counts describe the kernels' code as
written: two loads of the same element from one thread count twice (nvcc may merge
them), and a thread's loop trip counts group its accesses by occurrence.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import TilesolveError
from .prepared import LaunchRecord

__all__ = ["SECTOR_BYTES", "Traffic", "BufferTraffic", "LaunchTraffic", "MemoryReport",
           "LEVELS", "sectors_of"]

SECTOR_BYTES = 32
LEVELS = ("sectors", "block_sectors", "launch_sectors")
FIELDS = ("requests", "sectors", "block_sectors", "launch_sectors", "bytes")


def sectors_of(nbytes: int) -> int:
    """Sectors a buffer of ``nbytes`` spans (starting on a sector boundary)."""
    return -(-int(nbytes) // SECTOR_BYTES)


@dataclass(frozen=True)
class Traffic:
    """One direction (loads or stores) of one buffer in one launch."""

    requests: int = 0          # warp-level memory instructions
    sectors: int = 0           # sectors summed over those instructions
    block_sectors: int = 0     # sectors distinct within a block, summed over blocks
    launch_sectors: int = 0    # sectors distinct within the launch
    bytes: int = 0             # bytes the threads accessed

    def __add__(self, o: "Traffic") -> "Traffic":
        return Traffic(*(getattr(self, f) + getattr(o, f) for f in FIELDS))

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class BufferTraffic:
    param: str                 # the kernel's parameter
    buffer: str                # the buffer passed
    loads: Traffic
    stores: Traffic


@dataclass(frozen=True)
class LaunchTraffic:
    """One launch: the launch recorder's record and its traffic per buffer."""

    record: LaunchRecord
    buffers: tuple             # BufferTraffic per buffer parameter

    def total(self) -> Traffic:
        out = Traffic()
        for b in self.buffers:
            out = out + b.loads + b.stores
        return out


@dataclass(frozen=True)
class MemoryReport:
    """What one realize on the CPU shim launched and the sectors it moved."""

    program: str
    launches: tuple            # LaunchTraffic per launch, in order
    inputs: dict               # input buffer name -> bytes
    outputs: dict              # output buffer name -> bytes
    output_points: int         # points of all outputs

    @property
    def compulsory_sectors(self) -> int:
        """Every input read once and every output written once, in sectors."""
        return sum(sectors_of(n) for n in (*self.inputs.values(), *self.outputs.values()))

    def total(self) -> Traffic:
        out = Traffic()
        for launch in self.launches:
            out = out + launch.total()
        return out

    def sectors(self, level: str = "sectors") -> int:
        """Sectors moved at ``level`` (one of ``LEVELS``), loads and stores."""
        if level not in LEVELS:
            raise TilesolveError(f"MemoryReport: level {level!r} is not one of {', '.join(LEVELS)}")
        return getattr(self.total(), level)

    def per_output_point(self, level: str = "sectors") -> float:
        return self.sectors(level) / max(1, self.output_points)

    def ratio(self, level: str = "sectors") -> float:
        """Sectors at ``level`` over the compulsory sectors."""
        return self.sectors(level) / max(1, self.compulsory_sectors)

    def by_buffer(self, level: str = "sectors") -> dict:
        """Buffer name -> (load sectors, store sectors) at ``level``, over all launches."""
        out: dict = {}
        for launch in self.launches:
            for b in launch.buffers:
                ld, st = out.get(b.buffer, (0, 0))
                out[b.buffer] = (ld + getattr(b.loads, level), st + getattr(b.stores, level))
        return out

    def text(self) -> str:
        """A table: one line per launch, then the totals against the compulsory traffic."""
        lines = [f"{'kernel':40s} {'grid':>16s} {'block':>12s} {'requests':>9s} "
                 f"{'sectors':>9s} {'per req':>7s} {'block':>9s} {'launch':>9s}"]
        for launch in self.launches:
            r, t = launch.record, launch.total()
            lines.append(f"{r.kernel[:40]:40s} {'x'.join(map(str, r.grid)):>16s} "
                         f"{'x'.join(map(str, r.block)):>12s} {t.requests:9d} {t.sectors:9d} "
                         f"{t.sectors_per_request:7.2f} {t.block_sectors:9d} "
                         f"{t.launch_sectors:9d}")
        c = self.compulsory_sectors
        lines.append(f"compulsory {c} sectors ({c / max(1, self.output_points):.3f} per output "
                     f"point); " + ", ".join(f"{lv} {self.ratio(lv):.2f}x" for lv in LEVELS))
        return "\n".join(lines)
