"""GPU schedules from the solver: CUDA code that respects the spec's hard limits.

For blur, unsharp, harris and stencil_chain (8 stages) at the paper's sizes, on
the "h100" and "a100" specs, with ``method="greedy"`` and ``"ilp"``:

* the schedule targets ``cuda`` and prints as code (``gpu_tile`` on each group
  output, or its splits with ``gpu_blocks`` and ``gpu_threads`` where threads
  compute serial tiles, ``compute_at`` + ``store_in("shared")`` + ``gpu_threads``
  on its producers) that, run on a fresh Schedule, rebuilds it exactly;
* every group in ``provenance.groups`` obeys the spec's hard constraints:
  threads per block <= ``max_threads_per_block``, the output tile's thread
  count a multiple of the warp size, shared memory <= ``shared_mem_per_block_bytes``,
  occupancy >= ``occupancy_threshold``; the occupancy is recomputed here with the
  CUDA occupancy calculator's rules from the group's threads, shared bytes and
  registers; the printed ``gpu_tile`` (or block ``split``) sizes are the group's
  tiling, and a serial tile's split factors its points per thread.

Nothing here needs a GPU: only the solver and the schedule are exercised.
"""
from __future__ import annotations

import math

import pytest

import tilesolve as ts
from tilesolve.apps import get_app

APPS = ("blur", "unsharp", "harris", "stencil_chain")
SPECS = ("h100", "a100")
BUILD = {"stencil_chain": {"stages": 8}}


def occupancy(spec, threads: int, shared: int, regs: int) -> float:
    """Active warps / max warps per SM, as the CUDA occupancy calculator computes it."""
    warps = math.ceil(threads / spec.warp_size)
    max_warps = spec.max_threads_per_sm // spec.warp_size
    limits = [spec.max_blocks_per_sm, max_warps // warps]
    if shared:
        limits.append(spec.shared_mem_per_sm_bytes // shared)
    unit = spec.register_allocation_unit
    regs_per_warp = math.ceil(regs * spec.warp_size / unit) * unit
    limits.append(spec.registers_per_sm // (regs_per_warp * warps))
    return min(limits) * warps / max_warps


def replay_printed(s, pipe):
    """Run the printed code on a fresh cuda Schedule of ``pipe``."""
    t = ts.Schedule(pipe, target="cuda")
    ns = {"ts": ts, "s": t}
    for name, f in pipe.funcs.items():
        ns[name] = f
        for d in f.definitions():
            ns.update({a.name: a for a in d.args if isinstance(a, ts.Var)})
    exec(str(s), ns)   # noqa: S102 - the schedule's own printed code
    return t


@pytest.fixture(scope="module")
def solved():
    cache = {}

    def get(name, spec, method):
        key = (name, spec, method)
        if key not in cache:
            app = get_app(name)
            pipe, _ = app.build(app.SMALL_SIZE, **BUILD.get(name, {}))
            _, est = app.build(None, **BUILD.get(name, {}))
            s = ts.solve_schedule(pipe, spec, estimates=est, method=method, time_limit=5.0)
            cache[key] = (pipe, s)
        return cache[key]
    return get


CASES = [(a, sp, m) for a in APPS for sp in SPECS for m in ("greedy", "ilp")]


@pytest.mark.parametrize("name,spec_name,method", CASES)
def test_gpu_schedule_prints_as_cuda_code(solved, name, spec_name, method):
    pipe, s = solved(name, spec_name, method)
    assert s.target == "cuda"
    s.validate()
    code = str(s)
    assert "(target cuda)" in code.splitlines()[0]
    groups = s.provenance.groups
    assert groups
    for g in groups:
        out = g.output
        line = next(ln for ln in code.splitlines() if ln.startswith(f"s[{out}]"))
        assert ".gpu_tile(" in line or (".gpu_blocks(" in line and ".gpu_threads(" in line), line
        for m in g.members:
            if m == out:
                continue
            line = next(ln for ln in code.splitlines() if ln.startswith(f"s[{m}]"))
            assert f".compute_at({out}, " in line, line
            assert '.store_in("shared")' in line and ".gpu_threads(" in line, line
            assert s.func_schedule(m).memory == "shared"
    again = replay_printed(s, pipe)
    assert again.func_schedules() == s.func_schedules()


@pytest.mark.parametrize("name,spec_name,method", CASES)
def test_gpu_groups_obey_the_spec(solved, name, spec_name, method):
    spec = ts.load_spec(spec_name)
    pipe, s = solved(name, spec_name, method)
    for g in s.provenance.groups:
        gpu = g.cost.gpu
        sizes = [t for t in g.tiling if t is not None]
        tile = sizes[:2]                            # threads; a third runs whole in each
        serial = gpu.serial or (1,) * len(g.tiling)
        dims = [d for d, t in enumerate(g.tiling) if t is not None][:2]
        out_threads = math.prod(g.tiling[d] // serial[d] for d in dims)
        assert gpu.threads <= spec.max_threads_per_block
        assert gpu.threads >= out_threads           # the block covers the output tile
        assert out_threads % spec.warp_size == 0
        assert gpu.shared_bytes <= spec.shared_mem_per_block_bytes
        if len(g.members) > 1:
            assert gpu.shared_bytes > 0
        occ = occupancy(spec, gpu.threads, gpu.shared_bytes, gpu.registers)
        assert occ == pytest.approx(gpu.occupancy)
        assert occ >= spec.occupancy_threshold
        assert gpu.registers <= spec.max_registers_per_thread
        mine = [d for d in s.directives if d.func == g.output and d.stage == 0]
        tiles = [d for d in mine if d.method == "gpu_tile"]
        if gpu.serial is None and len(sizes) == len(tile):
            assert len(tiles) == 1
            assert [v for k, v in tiles[0].args if k == "int"] == tile
            continue
        # block / thread / serial: one split per tiled dimension by its tile, one per
        # serial dimension by its points per thread, one per whole dimension by its extent
        assert not tiles
        factors = [[v for k, v in d.args if k == "int"][0] for d in mine if d.method == "split"]
        want = tile + [serial[d] for d in dims if serial[d] > 1] + sizes[2:]
        assert sorted(factors) == sorted(want)
        assert any(d.method == "gpu_threads" for d in mine)
        # a serial run along the inner dimension is vectorized, the others unrolled
        vector = int(serial[dims[0]] > 1)
        assert sum(d.method == "vectorize" for d in mine) == vector
        assert sum(d.method == "unroll" for d in mine) == len(want) - len(tile) - vector


def test_occupancy_helper_matches_the_calculator():
    """A hand-worked case (H100: 2048 threads, 64K registers, 228 KiB shared per SM)."""
    spec = ts.load_spec("h100")
    # 256 threads, 32 regs: warps limit 64 // 8 = 8 blocks, registers 65536 // (1024 * 8) = 8
    assert occupancy(spec, 256, 0, 32) == 1.0
    # 48 KiB shared: 233472 // 49152 = 4 blocks of 8 warps -> 32 / 64
    assert occupancy(spec, 256, 49152, 32) == 0.5
    # 128 regs: 65536 // (4096 * 8) = 2 blocks -> 16 / 64
    assert occupancy(spec, 256, 0, 128) == 0.25


def test_a_restricted_tile_menu_keeps_whole_menus_where_it_leaves_none():
    """autotune's ILP menus (small, medium, large tiles, whole rows) filter each Func's
    tilings; a GPU stage has no untiled tiling to keep, and where none is of the
    filter's kind (max_filter's 1-wide stages: no 'rows' tiling) the Func keeps its
    whole menu: before, the empty menu was priced and the bounds code indexed past
    its end (IndexError in camera_pipe, max_filter, interpolate and others)."""
    from tilesolve.solver.cost import CostModel
    from tilesolve.solver.problem import Problem
    from tilesolve.solver.space import Group
    from tilesolve.tune.candidates import MENUS
    app = get_app("max_filter")
    pipe, est = app.build(app.PAPER_SIZE)
    problem = Problem(pipe, ts.load_spec("h100"), est)
    full = CostModel(problem)
    for name, keep in MENUS.items():
        model = CostModel(problem, menu_filter=keep)
        for f in problem.funcs:
            menu = model.menu(f).tilings
            assert menu, (name, f)
            kept = [t for t in full.menu(f).tilings if keep(problem, f, t)]
            assert menu == (kept or full.menu(f).tilings), (name, f)
            assert math.isfinite(float(model.best(Group.singleton(f))[1].total)) \
                or not model.feasible(Group.singleton(f))
