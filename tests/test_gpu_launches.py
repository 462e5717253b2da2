"""The solvers' GPU schedules launch each kernel once a realize, not once per
iteration of a loop left on the host.

A pure loop outside a kernel's block loops runs on the host and launches the kernel
once per iteration.  Timed on an H100, the solver's schedules launched 34,356
kernels a realize for bilateral_grid, 194,808 for lens_blur and 658,045 for nl_means
(23.6 s of host plan alone), until such loops became block dimensions
(``schedule_gen._host_loops_on_blocks``).  The plan is run here against a device
that only counts, at the papers' sizes."""
import numpy as np
import pytest

import tilesolve as ts
from tilesolve.apps import APPS
from tilesolve.backend import cuda as C
from tilesolve.backend.cuda.plan import count_launches


def _launches(pipe, sched, sizes, inputs):
    prog = C.generate(C.lower_cuda(pipe, sched))
    defaults = {n: p.default for n, p in pipe.params.items() if p.default is not None}
    return prog, count_launches(prog, sizes, inputs, defaults)


def test_loops_outside_the_block_loops_become_blocks():
    """A 4-D Func tiled in x only: y, and z fused with c, become block dimensions."""
    x, y, z, c = ts.Var("x"), ts.Var("y"), ts.Var("z"), ts.Var("c")
    inp = ts.ImageParam(ts.float32, 4, "inp")
    f, g = ts.Func("f"), ts.Func("g")
    f[x, y, z, c] = inp[x, y, z, c] * 2
    g[x, y, z, c] = f[x, y, z, c] + 1
    pipe = ts.Pipeline(g)
    est = {"g": [64, 8, 4, 3], "inp": [64, 8, 4, 3]}
    sched = ts.solve_schedule(pipe, "h100", estimates=est, method="greedy")
    kinds = [d.kind for d in sched.func_schedule("g").stages[0].dims]
    assert kinds.count("gpu_block") == 3 and "serial" not in kinds, kinds
    a = np.random.default_rng(0).random((3, 4, 8, 64), dtype=np.float32)
    prog, n = _launches(pipe, sched, [64, 8, 4, 3], {"inp": a})
    assert n <= len(prog.kernels)
    out = C.emulate_cuda(pipe, sched).realize([64, 8, 4, 3], inp=a)
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("app", sorted(APPS))
def test_each_kernel_launches_once_and_none_in_a_thousand_one_warp_blocks(app):
    """At the paper size, the solver's h100 schedule launches each kernel at most once a
    realize (no host loop around a kernel), and every kernel launches blocks of more
    than one warp, or at most 1,000 of them (root producers run in blocks of
    ``cost_params.root_block_rows`` warps; the tiling menu offers one-warp blocks only
    where few: ``cost_params.max_one_warp_blocks``)."""
    import math

    max_one_warp_blocks = ts.load_spec("h100").cost_params.max_one_warp_blocks
    mod = APPS[app]
    pipe, est = mod.build()
    s = ts.solve_schedule(pipe, "h100", est, method="greedy")
    noop = C.noop_cuda(pipe, s, "h100")
    sizes = {o: est[o] for o in pipe.output_names}
    inputs = {n: np.zeros(tuple(reversed(est[n])), img.type.dtype)
              for n, img in pipe.images.items()}
    records = noop.launch_records(sizes, **inputs)
    assert 0 < len(records) <= len(noop.program.kernels), (app, len(records))
    for r in records:
        assert math.prod(r.block) > 32 or math.prod(r.grid) <= max_one_warp_blocks, \
            (r.kernel, r.grid, r.block)
