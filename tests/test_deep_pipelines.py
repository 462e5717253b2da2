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


def _deep_kernel(body):
    """One kernel: 4 blocks of 32 threads around ``body`` (which writes out[b*32 + t])."""
    from tilesolve.lower.ir import Argument, For, LoweredPipeline
    from tilesolve.model import expr as E
    from tilesolve.model import types as T
    c = E.as_expr
    return LoweredPipeline("deep", (Argument("out", "buffer", T.int32, 1, True),), For(
        "b", c(0), c(4), "gpu_block", For("t", c(0), c(32), "gpu_thread", body)), "cuda")


def test_cuda_kernel_with_3000_nested_lets_and_a_3000_deep_expr(default_recursion_limit):
    """The kernel emitter and the CUDA expression printer are iterative: a thread loop
    whose body is 3000 nested LetStmts, and a Store of a 3000-deep Expr, print as CUDA C
    under the default recursion limit (which nothing raises), and the let chain computes
    the right values on the CPU shim."""
    import shutil
    from tilesolve.backend.cuda.codegen import generate
    from tilesolve.backend.cuda.emulate import EmulatedPipeline
    from tilesolve.lower.ir import LetStmt, Store
    from tilesolve.model import expr as E
    n, limit = 3000, sys.getrecursionlimit()
    t, index = E.Var("t"), E.Var("b") * 32 + E.Var("t")
    body = Store("out", index, E.Var(f"v{n - 1}"))
    for i in reversed(range(n)):
        body = LetStmt(f"v{i}", (E.Var(f"v{i - 1}") if i else t) + 1, body)
    lets = generate(_deep_kernel(body))
    deep = t
    for i in range(n):
        deep = deep * 3 + i
    expr = generate(_deep_kernel(Store("out", index, deep)))
    assert sys.getrecursionlimit() == limit
    text = lets.source
    assert "const ts_i32 v0 = ts_add<ts_i32>(t, 1);" in text
    assert f"const ts_i32 v{n - 1} = ts_add<ts_i32>(v{n - 2}, 1);" in text
    assert f"out[((b * 32) + t)] = v{n - 1};" in text
    assert expr.source.count("ts_mul<ts_i32>(") == n and expr.source.count("ts_add<ts_i32>(") == n
    if shutil.which("g++") or shutil.which("c++"):
        got = EmulatedPipeline(lets).realize([128])
        np.testing.assert_array_equal(got, np.arange(128) % 32 + n)


def test_the_solvers_bounders_take_a_3000_deep_index(default_recursion_limit):
    """The solvers' fast numeric bounders (scalar and vectorized over scopes) visit an
    expression with an explicit stack: a 3000-deep index is bounded as any other, and
    both give the interval of the symbolic engine's rules: x + 3000 * 1 with x in
    [0, 9] over one scope, [k, k + 9] over scopes k = 0, 1, 2."""
    from tilesolve.analysis.fastbounds import FastBounder
    from tilesolve.analysis.vecbounds import VecBounder
    from tilesolve.model import expr as E
    x = ts.Var("x")
    e = x
    for i in range(3000):
        e = (e + 1) if i % 2 == 0 else E.binop("max", e, E.Const(ts.int32, -5))
    assert FastBounder({"x": (0, 9)}).bounds(e) == (1500, 1509)
    lo, hi = VecBounder({"x": (np.arange(3.0), np.arange(3.0) + 9)}, 3).bounds(e)
    assert list(lo) == [1500, 1501, 1502] and list(hi) == [1509, 1510, 1511]
