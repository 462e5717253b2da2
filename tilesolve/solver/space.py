"""The space every solver searches: groups of Funcs and tilings of a group.

A **group** is one output Func plus producers computed per tile of it
(overlapped tiling).  Every member but the output has all its consumers
inside the group (Mullapudi 2016's condition, generalized from pairwise
merges to any such set), so no Func is computed in two loop nests.

A **tiling** gives, for each pure dimension of the group's output (innermost
first), the tile extent; ``None`` in a dimension leaves it untiled (the whole
extent).  ``Tiling.untiled(n)`` is the whole region: no tile loops at all.

A **column** is a (group, tiling) pair with its cost from ``solver.cost``.
"""
from __future__ import annotations

from dataclasses import dataclass, field


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

    @staticmethod
    def untiled(dims: int) -> "Tiling":
        return Tiling((None,) * dims)

    def is_untiled(self) -> bool:
        return all(s is None for s in self.sizes)

    def __str__(self) -> str:
        if self.is_untiled():
            return "untiled"
        return "x".join("*" if s is None else str(s) for s in self.sizes)


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
    overhead: float = 0.0       # kernel launches (GPU)
    feasible: bool = True
    reason: str = ""
    n_tiles: int = 1
    footprint_bytes: int = 0    # per tile: intermediates + inputs (CPU) / shared memory (GPU)
    recompute: float = 1.0      # points computed / points needed, over members
    gpu: dict = field(default_factory=dict)   # threads, shared_bytes, occupancy, ...

    def describe(self) -> str:
        s = (f"total {self.total:.4g} = arith {self.arith:.4g} + loads {self.loads:.4g}"
             f" + stores {self.stores:.4g}")
        if self.overhead:
            s += f" + launch {self.overhead:.4g}"
        s += f"; {self.n_tiles} tiles, footprint {self.footprint_bytes} B, recompute x{self.recompute:.3f}"
        if self.gpu:
            g = self.gpu
            s += (f"; threads {g.get('threads')}, shared {g.get('shared_bytes')} B, "
                  f"occupancy {g.get('occupancy', 0):.2f}")
        if not self.feasible:
            s += f"; INFEASIBLE: {self.reason}"
        return s


INFEASIBLE = float("inf")
