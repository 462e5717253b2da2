"""The cost model's parameters as data: every weight, threshold and switch the CPU and
GPU cost models and their helpers (inlining, register blocking, access probing, sector
counting, the tiling menus) read, in one frozen value.

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
    memory_overlap: float = 0.5          # share of memory time that hides the arithmetic moving it
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
    unroll_select_extent: int = 4        # a steering dimension this short is unrolled (1: none)
    unroll_shared_ops: int = 8           # ... or one its copies share this many operations of
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
    inline_members: bool = True          # retry inlining producers computed inside groups
    inline_member_recompute: float = 2.0  # ... that inlining would evaluate at most this often
    inline_member_trials: int = 2        # members tried a round, the most arithmetic first
    # -- solver/robust.py --------------------------------------------------------------
    auto_tie: float = 0.10               # auto's answers this close in cost are a tie
    auto_spread: float = 2.0             # each uncertain parameter is scaled by this and 1/this
    # -- solver/tilings.py -------------------------------------------------------------
    tile_inner: tuple = (1, 2, 4, 8, 16, 32)   # inner tile sizes, times the tile multiple
    tile_outer: tuple = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    # -- solver/cost_gpu.py (GPU) ------------------------------------------------------
    default_registers_per_thread: int = 32   # registers a thread is assumed before code exists
    point_instructions: float = 6.0      # a point's index and guard arithmetic and its store
    load_instructions: float = 2.0       # a load and its address arithmetic
    loop_instructions: float = 3.0       # an update loop's step: counter, compare, branch
    update_unroll: int = 4               # loads of consecutive update steps in flight together
    unrolled_point_instructions: float = 3.0   # a point's overhead after the first, unrolled
    serial_point_registers: int = 1      # registers a thread for each serial point past one
    spread_point_instructions: float = 4.0   # a spread member's point: its coordinates from
    #                                          the fused thread index (division, remainder)
    stage_inputs: bool = True            # offer kernels with inputs staged in shared memory
    stage_min_sites: int = 2             # an input read at fewer sites a point is not staged
    stage_weight: float = 1.0            # a staged kernel's time is compared x this (below
    #                                          1 favours staging: an experiment's switch)
    register_producers: bool = True      # offer producers computed in each thread (registers)
    register_weight: float = 1.0         # such a kernel's time is compared x this (below 1
    #                                          favours them: an experiment's switch)
    # -- solver/tilings.py (GPU) -------------------------------------------------------
    gpu_inner: tuple = (8, 16, 32, 64, 128, 256)   # a block's threads in the inner dimension
    gpu_outer: tuple = (1, 2, 4, 8, 16, 32)        # a block's threads in the outer dimension
    gpu_serial: tuple = (2, 4, 8)        # points a thread computes along the outer dimension
    gpu_serial_rows: int = 32            # a serial tile's rows per block, at most
    gpu_vector: tuple = (4,)             # points a thread computes along the inner
    #                                      dimension, vectorized (float2/float4)
    gpu_unroll_extent: int = 4           # an outer dimension this short may run in each thread
    max_one_warp_blocks: int = 1000      # one-warp blocks are offered up to this many blocks
    # -- solver/gpu_sectors.py (GPU) ---------------------------------------------------
    rows_averaged: int = 8               # rows a probed warp is placed at (row misalignment)
    base_align: int = 256                # a probed warp's first point: a multiple of this
    # -- solver/schedule_gen.py (GPU) --------------------------------------------------
    root_block_rows: int = 8             # warps (rows) of a block of a producer at root
    update_block: tuple = (16, 8)        # threads of an update kernel's block over two dims
    l2_over_dram: float = 2.0            # L2 bandwidth over DRAM's where the spec gives none
    # -- solver/inline_refine.py (GPU) -------------------------------------------------
    gpu_inline_trials: int = 2           # root Funcs tried a round (each a GPU greedy grouping)


# parameters only the GPU model reads (a cpu spec takes none of them)
GPU_ONLY = frozenset({
    "default_registers_per_thread", "point_instructions", "load_instructions",
    "loop_instructions", "update_unroll", "unrolled_point_instructions",
    "serial_point_registers", "spread_point_instructions", "stage_inputs",
    "stage_min_sites", "stage_weight", "register_producers",
    "register_weight", "gpu_inner", "gpu_outer",
    "gpu_serial", "gpu_serial_rows", "gpu_vector",
    "gpu_unroll_extent", "max_one_warp_blocks", "rows_averaged", "base_align",
    "root_block_rows", "update_block", "l2_over_dram", "gpu_inline_trials"})
# parameters a GPU spec's model reads (the others are the CPU model's): the inlining
# trials after grouping run on both
GPU_PARAMS = frozenset({"cached_load_ops", "inline_min_gain", "inline_rounds",
                        "inline_max_recompute"}) | GPU_ONLY


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
        if kind == "cpu" and name in GPU_ONLY:
            raise SpecError(f"{source}: field 'cost_params.{name}' is a parameter of the GPU "
                            f"cost model; a cpu spec takes none of "
                            f"{', '.join(sorted(GPU_ONLY))}")
        got = _check(f.default, value)
        if got is None:
            raise SpecError(f"{source}: field 'cost_params.{name}': expected "
                            f"{_expected(f.default)}, got {value!r}")
        if name == "gpu_vector" and not set(got) <= {1, 2, 4}:
            raise SpecError(f"{source}: field 'cost_params.gpu_vector': expected a list of "
                            f"vector widths 2 or 4 (1: no vectorized tiles), got {value!r}")
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
