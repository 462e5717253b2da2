"""The space every solver searches: groups of Funcs and tilings of a group.

A **group** is one output Func plus producers computed per tile of it
(overlapped tiling).  Every member but the output has all its consumers
inside the group (Mullapudi 2016's condition, generalized from pairwise
merges to any such set), so no Func is computed in two loop nests.

A **tiling** gives, for each pure dimension of the group's output (innermost
first), the tile extent; ``None`` in a dimension leaves it untiled (the whole
extent).  ``Tiling.untiled(n)`` is the whole region: no tile loops at all.
On a GPU the tile is what one thread block computes: its first two tiled
dimensions map to threads, each thread computing ``serial[d]`` points of dimension
``d`` one after another (an unrolled loop inside the thread; ``serial`` None: one
point a thread), and a tile extent in a dimension past those two (a small one,
such as colour channels) runs whole inside each thread, unrolled, rather than on
the grid (``solver.tilings``).

A **column** is a (group, tiling) pair with its cost from ``solver.cost``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class Group:
    output: str
    members: frozenset          # includes ``output``

    @staticmethod
    def singleton(name: str) -> "Group":
        return Group(name, frozenset([name]))

    def producers(self) -> frozenset:
        """Members computed per tile of the output."""
        return self.members - {self.output}

    def __str__(self) -> str:
        inner = sorted(self.producers())
        return self.output + (f"<{', '.join(inner)}>" if inner else "")


@dataclass(frozen=True, slots=True)
class Tiling:
    sizes: tuple                # per pure dim of the output: int tile extent, or None
    serial: tuple | None = None  # GPU, per pure dim: points a thread computes (None: all 1)

    @staticmethod
    def untiled(dims: int) -> "Tiling":
        return Tiling((None,) * dims)

    def is_untiled(self) -> bool:
        return all(s is None for s in self.sizes)

    def serial_of(self, d: int) -> int:
        """Points of dimension ``d`` each GPU thread computes one after another."""
        return 1 if self.serial is None or d >= len(self.serial) else int(self.serial[d])

    def threads_of(self, d: int) -> int:
        """GPU threads along tiled dimension ``d``: its tile extent over its serial factor."""
        return int(self.sizes[d]) // self.serial_of(d)

    def __str__(self) -> str:
        if self.is_untiled():
            return "untiled"
        text = "x".join("*" if s is None else str(s) for s in self.sizes)
        if self.serial is not None:
            text += " serial " + "x".join(str(s) for s in self.serial)
        return text


@dataclass(frozen=True)
class GpuCost:
    """The GPU side of a column's cost (Sioutas 2020): its thread block and occupancy."""

    threads: int                # threads per block (grown to the largest member region)
    block: tuple                # block extents in the tiled dimensions
    shared_bytes: int           # shared memory per block (members other than the output)
    registers: int              # registers per thread assumed
    occupancy: float            # active warps / max warps per SM
    blocks_per_sm: int
    active_sms: int
    blocks: int                 # blocks in the grid
    serial: tuple | None = None  # the tiling's points per thread per dimension (None: 1)
    spread: tuple = ()          # ((producer, serial run), ...) spread over the block's threads
    staged: tuple = ()          # buffers outside the kernel copied into shared memory first
    in_registers: tuple = ()    # producers computed in each thread, in registers

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["block"] = list(self.block)
        if self.spread:
            d["spread"] = [list(x) for x in self.spread]
        else:
            del d["spread"]
        if self.staged:
            d["staged"] = list(self.staged)
        else:
            del d["staged"]
        if self.in_registers:
            d["in_registers"] = list(self.in_registers)
        else:
            del d["in_registers"]
        if self.serial is None:
            del d["serial"]
        else:
            d["serial"] = list(self.serial)
        return d

    @staticmethod
    def from_dict(d: dict) -> "GpuCost":
        serial = d.get("serial")
        return GpuCost(**{**d, "block": tuple(d["block"]),
                          "serial": None if serial is None else tuple(serial),
                          "spread": tuple(tuple(x) for x in d.get("spread", ())),
                          "staged": tuple(d.get("staged", ())),
                          "in_registers": tuple(d.get("in_registers", ()))})


@dataclass(frozen=True)
class Cost:
    """The predicted cost of one column, split into its terms.

    ``total`` is what solvers minimize; ``feasible`` is False (with
    ``reason``) when a hard constraint of the spec is violated.  For CPU specs
    the unit is one arithmetic operation (Mullapudi 2016); for GPU specs it is
    thread-cycles per active thread (Sioutas 2020), plus launch overhead.
    """

    total: float
    arith: float = 0.0          # arithmetic, redundant recompute included
    loads: float = 0.0          # load_cost * words loaded from memory
    stores: float = 0.0         # load_cost * words stored to memory
    overhead: float = 0.0       # per-tile overhead (CPU) / kernel launches (GPU)
    feasible: bool = True
    reason: str = ""
    n_tiles: int = 1
    footprint_bytes: int = 0    # per tile: intermediates + inputs (CPU) / shared memory (GPU)
    recompute: float = 1.0      # points computed / points needed, over members
    gpu: GpuCost | None = None
    # CPU terms beyond Mullapudi 2016 (``solver.cost_terms``), in the same unit:
    lanes: float = 0.0          # vector lanes wasted (short inner extents, tails, scalar stages)
    parallel: float = 0.0       # the last wave of tasks on the workers (serial stages: all of it)
    l1: float = 0.0             # producers' buffers re-read from beyond L1
    registers: float = 0.0      # spills of stages loading more values than vector registers
    reduction: float = 0.0      # accumulator stores and RDom loop overhead of update stages
    streams: float = 0.0        # memory words a tile moves beyond the prefetcher's streams
    stream_misses: float = 0.0  # those misses before scaling by how memory-bound the tile is
    overlap: float = 0.0        # arithmetic hidden under the memory traffic (subtracted)
    moving: float = 0.0         # arithmetic of the stages that move the memory traffic

    def terms(self) -> dict:
        """The named terms whose sum is ``total`` (for a feasible column)."""
        return {"arith": self.arith, "lanes": self.lanes, "registers": self.registers,
                "reduction": self.reduction, "l1": self.l1, "loads": self.loads,
                "stores": self.stores, "parallel": self.parallel, "overhead": self.overhead,
                "streams": self.streams, "overlap": -self.overlap}

    def to_dict(self) -> dict:
        """Plain data (non-finite numbers become None: JSON has no infinity)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "gpu":
                if v is not None:
                    out["gpu"] = v.to_dict()
                continue
            if f.name == "reason" and not v:
                continue
            out[f.name] = None if isinstance(v, float) and not math.isfinite(v) else v
        return out

    @staticmethod
    def from_dict(d: dict) -> "Cost":
        kw = {k: v for k, v in d.items() if k in _COST_FIELDS}
        if kw.get("total", 0.0) is None:
            kw["total"] = math.inf
        if kw.get("gpu") is not None:
            kw["gpu"] = GpuCost.from_dict(kw["gpu"])
        return Cost(**kw)

    def describe_lines(self) -> list:
        """The cost split in words (``explain()`` prints these per group)."""
        line = (f"cost {self.total:.6g} = arithmetic {self.arith:.6g} (recompute "
                f"x{self.recompute:.3f}) + loads {self.loads:.6g} + stores {self.stores:.6g}")
        if self.overhead:
            line += f" + {'launch' if self.gpu is not None else 'tile overhead'} {self.overhead:.6g}"
        for name in ("lanes", "registers", "reduction", "l1", "streams", "parallel"):
            v = getattr(self, name)
            if v:
                line += f" + {name} {v:.6g}"
        if self.overlap:
            line += f" - overlap {self.overlap:.6g} (arithmetic under memory traffic)"
        out = [line]
        g = self.gpu
        if g is not None:
            serial = ("" if g.serial is None else
                      f", {'x'.join(str(v) for v in g.serial)} points per thread")
            out.append(f"gpu: {g.threads} threads per block ({'x'.join(str(b) for b in g.block)}"
                       f"{serial}), shared {g.shared_bytes} B, occupancy {g.occupancy:.2f}, "
                       f"{g.blocks_per_sm} blocks/SM, {g.active_sms} SMs busy")
        else:
            out.append(f"footprint per tile {self.footprint_bytes} B")
        if not self.feasible:
            out.append(f"INFEASIBLE: {self.reason}")
        return out


_COST_FIELDS = frozenset(f.name for f in fields(Cost))

