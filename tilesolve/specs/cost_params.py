"""The cost model's parameters as data: every weight, threshold and switch the CPU cost
model and its helpers (inlining, register blocking, access probing, the tiling menu)
read, in one frozen value.

Each spec carries one (``HardwareSpec.cost_params``): the defaults of its kind with the
overrides of its YAML's ``cost_params:`` mapping (``tilesolve calibrate`` writes the one
it fits there, ``stream_miss_loads``).  ``benchmarks/ab.py --set NAME=VALUE`` times a
change of any of them against the spec as shipped.  ``docs/cost_params.md`` gives each
parameter's meaning, value and the measurement behind it.

Units: operations are issue slots of fully vectorized code (the cost model's unit), loads
are loads from memory (``load_cost`` operations each), words are 4 bytes.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import SpecError

__all__ = ["CostParams", "defaults", "cost_params_from", "overrides"]


@dataclass(frozen=True)
class CostParams:
    """The cost model's parameters (see ``docs/cost_params.md``)."""

    # -- solver/cost.py ----------------------------------------------------------------
    cached_load_ops: float = 1.0         # a load of an intermediate that hits in cache
    tile_overhead_ops: float = 200.0     # fixed cost of one tile
    first_touch_word_loads: float = 12.0  # page faults of a buffer the heap cache drops, a word
    mmap_threshold_bytes: int = 32 << 20  # glibc maps afresh a block this large or larger
    update_pass_words: float = 1.0       # loads per word a root update's pass writes back
    llc_keep_fraction: float = 0.5       # share of the LLC a root buffer keeps between passes
    # -- solver/cost_terms.py ----------------------------------------------------------
    spill_ops: float = 2.0               # a spill store and its reload
    l2_word_ops: float = 1.0             # a word brought back to L1 from L2
    acc_store_ops: float = 1.0           # the store of an update's accumulator
    acc_ops: float = 2.0                 # an accumulator loaded and stored once per loop
    loop_iter_ops: float = 1.0           # an RDom loop iteration
    loop_setup_ops: float = 4.0          # entering an RDom loop
    prefetch_streams: float = 32.0       # rows a core's prefetcher follows at once
    stream_miss_loads: float = 6.0       # an unprefetched word, in extra loads (0: no term)
    stream_detect_bytes: float = 512.0   # a cold run read before the prefetcher follows it
    scatter_lane_ops: float = 64.0       # a point stored lane by lane
    far_stride_bytes: float = 1024.0     # a transposed read's stride no prefetcher follows
    sweep_thrash_slope: float = 2.0      # lines lost by an LRU cache swept past its size
    strided_reads: bool = True           # price transposed reads (the ``strided`` term)
    root_balance_tolerance: float = 1.05  # wave imbalance a root update accepts unchunked
    root_chunks_max: int = 8             # chunks of a root update's vector dimension, at most
    # -- solver/register_block.py ------------------------------------------------------
    block_vectors: tuple = (1, 2, 4)     # register block widths tried, in vectors
    block_rows: tuple = (1, 2, 4, 6, 8)  # register block heights tried, in rows
    reserved_registers: int = 2          # vector registers a block leaves for operands
    rdom_unroll: int = 4                 # unroll of a long innermost RDom loop
    rdom_unroll_whole: int = 8           # an RDom loop this short is unrolled whole
    unroll_within_registers: bool = True  # halve the RDom unroll until the block fits
    k_block: int = 128                   # RDom steps per K panel of a long reduction
    k_block_min_steps: int = 4           # K panels a reduction needs to be split
    k_panel_l2_share: float = 0.5        # share of the L2 an x panel may fill (0: rows inside)
    chain_margin: float = 1.25           # latency over issue a chain needs to be blocked
    row_score_block: tuple = (2, 8)      # block (vectors, rows) at which row Vars compare
    row_var_by_score: bool = True        # pick the row Var by L1 accesses (else the first)
    # -- solver/schedule_gen.py --------------------------------------------------------
    parallel_root_vectors: bool = True   # a 1-D root update runs parallel over vectors
    # -- solver/inline.py --------------------------------------------------------------
    trivial_ops: int = 4                 # a Func this cheap a point is inlined
    gather_ops: int = 8                  # a data-dependent load, counted in that budget
    data_movement_ops: int = 16          # index arithmetic of an inlined single load
    max_trivial_stencil_sites: int = 16  # points a trivial stencil is inlined at, at most
    # -- solver/inline_refine.py -------------------------------------------------------
    inline_min_gain: float = 0.03        # a retried inlining must save this share
    inline_rounds: int = 3
    inline_trials: int = 6
    inline_max_recompute: float = 4.0    # evaluations a point a retried inlining may cost
    # -- solver/robust.py --------------------------------------------------------------
    auto_tie: float = 0.10               # auto's answers this close in cost are a tie
    auto_spread: float = 2.0             # each uncertain parameter is scaled by this and 1/this
    # -- solver/tilings.py -------------------------------------------------------------
    tile_inner: tuple = (1, 2, 4, 8, 16, 32)   # inner tile sizes, times the tile multiple
    tile_outer: tuple = (1, 2, 4, 8, 16, 32, 64, 128, 256)


# parameters a GPU spec's model reads too (the others are the CPU model's)
GPU_PARAMS = frozenset({"cached_load_ops"})
_FIELDS = {f.name: f for f in dataclasses.fields(CostParams)}
_DEFAULTS = {"cpu": CostParams(), "gpu": CostParams()}


def defaults(kind: str) -> CostParams:
    """The parameters of a spec of ``kind`` with no ``cost_params:`` of its own."""
    return _DEFAULTS[kind]


def _expected(default) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "a positive integer"
    if isinstance(default, tuple):
        return "a non-empty list of positive integers"
    return "a non-negative number"


def _check(default, v):
    """``v`` as the type of ``default``, or None when it is not one."""
    if isinstance(default, bool):
        return v if isinstance(v, bool) else None
    if isinstance(v, bool):
        return None
    if isinstance(default, int):
        return v if isinstance(v, int) and v > 0 else None
    if isinstance(default, tuple):
        ok = (isinstance(v, (list, tuple)) and v
              and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v))
        return tuple(v) if ok else None
    ok = isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
    return float(v) if ok else None


def cost_params_from(kind: str, data: Any, source: str,
                     base: CostParams | None = None) -> CostParams:
    """``base`` (default: the kind's defaults) with the overrides of mapping ``data``
    (a ``cost_params:`` mapping, or a CostParams), checked: an unknown name, one of the
    other kind's model, or a value of the wrong type raises ``SpecError`` naming the
    field ``cost_params.NAME``."""
    base = base or defaults(kind)
    if data is None:
        return base
    if isinstance(data, CostParams):
        data = overrides(data, kind)
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: field 'cost_params': expected a mapping of cost "
                        f"parameter names to values, got {data!r}")
    clean = {}
    for name, value in data.items():
        f = _FIELDS.get(name)
        if f is None:
            import difflib
            hint = difflib.get_close_matches(str(name), list(_FIELDS), n=1)
            more = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise SpecError(f"{source}: field 'cost_params.{name}' is unknown{more}: expected "
                            f"one of {', '.join(_FIELDS)} (docs/cost_params.md)")
        if kind == "gpu" and name not in GPU_PARAMS:
            raise SpecError(f"{source}: field 'cost_params.{name}' is a parameter of the CPU "
                            f"cost model; a gpu spec takes only {', '.join(sorted(GPU_PARAMS))}")
        got = _check(f.default, value)
        if got is None:
            raise SpecError(f"{source}: field 'cost_params.{name}': expected "
                            f"{_expected(f.default)}, got {value!r}")
        clean[name] = got
    return dataclasses.replace(base, **clean)


def overrides(params: CostParams, kind: str) -> dict:
    """The parameters of ``params`` that differ from the defaults of ``kind``, as plain
    data (what a spec's ``cost_params:`` mapping holds)."""
    base = defaults(kind)
    out = {}
    for name in _FIELDS:
        v = getattr(params, name)
        if v != getattr(base, name):
            out[name] = list(v) if isinstance(v, tuple) else v
    return out
