"""Deep pipelines compile without meeting Python's recursion limit.

Every pass over statements and let chains is iterative (``model.visit.trampoline``),
so a chain of hundreds of stages lowers, generates code and checks its regions under
the default recursion limit, and the result equals the reference."""
import sys

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.lower.lower import lower


def stencil_chain(n: int):
    """``n`` alternating 1-D stencils in x and y over a repeat_edge input."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    prev = ts.boundary.repeat_edge(inp)
    for i in range(n):
        f = ts.Func(f"f{i}")
        if i % 2 == 0:
            f[x, y] = (prev[x - 1, y] + prev[x + 1, y]) * 0.5
        else:
            f[x, y] = (prev[x, y - 1] + prev[x, y + 1]) * 0.5
        prev = f
    return ts.Pipeline(prev)


def pointwise_chain(n: int):
    x = ts.Var("x")
    inp = ts.ImageParam(ts.int32, 1, "input")
    prev = inp
    for i in range(n):
        f = ts.Func(f"p{i}")
        f[x] = prev[x] * prev[x] + i      # nothing folds: a 400-deep Expr once inlined
        prev = f
    return ts.Pipeline(prev)


@pytest.fixture
def default_recursion_limit():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


def test_400_stage_chain_naive(default_recursion_limit):
    pipe = stencil_chain(400)
    img = np.random.default_rng(0).random((9, 11), dtype=np.float32)
    got = ts.compile(pipe).realize([11, 9], input=img)
    ref = ts.reference.realize(pipe, [11, 9], input=img)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_400_stage_pointwise_chain_greedy(default_recursion_limit):
    """The solver inlines the whole chain: one 400-deep Expr, inlined producers first."""
    pipe = pointwise_chain(400)
    sched = ts.solve_schedule(pipe, "host", estimates={"p399": [64], "input": [64]},
                              method="greedy")
    data = np.arange(64, dtype=np.int32)
    got = ts.compile(pipe, sched).realize([64], input=data)
    np.testing.assert_array_equal(got, ts.reference.realize(pipe, [64], input=data))


def test_let_chain_printing_and_lowering_are_linear(default_recursion_limit):
    """Printing and lowering a 300-stage program needs no recursion either."""
    lowered = lower(stencil_chain(300))
    text = str(lowered)
    assert text.count("allocate f") == 299      # every stage but the output


def test_400_stage_chain_generates_cuda_with_every_stage_at_root(default_recursion_limit):
    """The CUDA host plan of 400 nested root realizations is built, printed and run
    without recursion (it once recursed four frames per stage): every kernel is
    launched once, in order, with its buffers allocated and freed around it."""
    from tilesolve.backend import cuda as C
    from tilesolve.backend.cuda.naive import gpu_root_schedule
    from tilesolve.backend.cuda.plan import bind_arguments, run_plan
    pipe = pointwise_chain(400)
    program = C.generate(C.lower_cuda(pipe, gpu_root_schedule(pipe)))
    assert len(program.kernels) >= 400 and program.plan_str().count("device allocate") == 399

    class Recorder:
        def __init__(self):
            self.live, self.launched = set(), []

        def alloc(self, name, type_, count):
            self.live.add(name)
            return name

        def free(self, handle):
            self.live.remove(handle)

        def launch(self, kernel, grid, block, args):
            self.launched.append(kernel.name)

    dev = Recorder()
    env, arrays, outputs = bind_arguments(program.args, [40], {"input": np.zeros(40, np.int32)})
    run_plan(program, env, dict(arrays), dev)
    assert len(dev.launched) == 400 and not dev.live
    assert [n.split("_", 2)[2] for n in dev.launched][:3] == ["p0", "p1", "p2"]
