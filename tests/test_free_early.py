"""``lower.free.free_early``: each allocation is released right after its last reader.

Without it a root buffer lived until the pipeline ended, so a chain of root stages held
all its buffers at once and released them together at the end (the memory went back to
the operating system and faulted in again at the next run).  These tests check where
the ``Free`` goes, that results are unchanged in the interpreter and the compiled code
(with and without the checked build), and that a buffer used after its Free is caught
by the interpreter, the code generator and the verifier."""
import dataclasses

import numpy as np
import pytest

import tilesolve as ts
from tilesolve.backend.compile import compile_lowered
from tilesolve.errors import LoweringError
from tilesolve.lower.interpret import run as interpret_run
from tilesolve.lower import ir as L
from tilesolve.lower.lower import lower
from tilesolve.lower.verify import verify

x, y = ts.Var("x"), ts.Var("y")


def _chain(n=4):
    inp = ts.ImageParam(ts.float32, 2, "input")
    prev, funcs = ts.boundary.repeat_edge(inp), []
    for k in range(n):
        f = ts.Func(f"s{k}")
        f[x, y] = prev[x - 1, y] + prev[x + 1, y] * 2 + prev[x, y + 1]
        funcs.append(f)
        prev = f
    out = ts.Func("out")
    out[x, y] = prev[x, y] * 0.5
    return ts.Pipeline(out), funcs, out


def _block_order(body):
    """(kind, name) of the produce regions and Frees, in program order."""
    return [("produce", s.name) if isinstance(s, L.ProducerConsumer) else ("free", s.name)
            for s in L.walk_stmts(body)
            if isinstance(s, L.Free) or (isinstance(s, L.ProducerConsumer) and s.is_producer)]


def test_a_root_chain_frees_each_buffer_once_its_reader_is_produced():
    pipe, funcs, out = _chain(3)
    order = _block_order(lower(pipe, None).body)
    frees = [n for k, n in order if k == "free"]
    assert frees == ["input_repeat_edge", "s0", "s1"]     # s2's reader ends the scope
    for name, reader in [("input_repeat_edge", "s0"), ("s0", "s1"), ("s1", "s2")]:
        assert order.index(("free", name)) == order.index(("produce", reader)) + 1


def test_the_codegen_option_leaves_the_pass_out():
    """``set_codegen(free_early=False)``: every buffer lives to the end of its scope
    (``benchmarks/ab.py --set free_early=false`` uses it)."""
    pipe, funcs, out = _chain(3)
    s = ts.Schedule(pipe)
    for f in funcs:
        s[f].compute_root()
    freed = [n for k, n in _block_order(lower(pipe, s).body) if k == "free"]
    kept = _block_order(lower(pipe, s.copy().set_codegen(free_early=False)).body)
    assert freed == ["s0", "s1"] and kept == [("produce", n) for n in ("s0", "s1", "s2", "out")]


def test_no_free_where_the_last_reader_ends_the_scope():
    inp = ts.ImageParam(ts.float32, 2, "input")
    f, g = ts.Func("f"), ts.Func("g")
    f[x, y] = inp[x, y] + 1
    g[x, y] = f[x, y] * 2
    body = lower(ts.Pipeline(g), None).body
    assert not any(isinstance(s, L.Free) for s in L.walk_stmts(body))


def _tiled(pipe, funcs, out, tile=8):
    s = ts.Schedule(pipe)
    s[out].split("x", "xo", "xi", tile).split("y", "yo", "yi", tile) \
        .reorder("xi", "yi", "xo", "yo").parallel("yo").vectorize("xi", 4)
    for f in funcs:
        s[f].compute_at(out, "xo").vectorize("x", 4)
    return s


@pytest.mark.parametrize("sched", ["root", "tiled"])
@pytest.mark.parametrize("size", [(1, 1), (7, 5), (16, 16), (33, 17)])
def test_results_equal_the_reference(sched, size):
    pipe, funcs, out = _chain(4)
    s = None if sched == "root" else _tiled(pipe, funcs, out)
    img = np.random.default_rng(sum(size)).random(size[::-1], dtype=np.float32)
    want = ts.reference.realize(pipe, list(size), input=img)
    lowered = lower(pipe, s)
    assert any(isinstance(st, L.Free) for st in L.walk_stmts(lowered.body))
    np.testing.assert_allclose(interpret_run(lowered, list(size), input=img), want, rtol=1e-6)
    for checked in (False, True):
        c = ts.compile(pipe, s, num_threads=2, checked=checked)
        np.testing.assert_allclose(c.realize(list(size), input=img), want, rtol=1e-6)


def _free_moved_before(lowered, name, before):
    """``lowered`` with ``free name`` moved to just before ``produce before``: a use
    after free."""
    def strip(st):
        if isinstance(st, L.Block):
            kept = tuple(x for x in st.stmts if not (isinstance(x, L.Free) and x.name == name))
            moved = []
            for x in kept:
                if isinstance(x, L.ProducerConsumer) and x.is_producer and x.name == before:
                    moved.append(L.Free(name))
                moved.append(L.map_stmt(x, strip))
            return L.Block(tuple(moved))
        return None
    return dataclasses.replace(lowered, body=L.map_stmt(lowered.body, strip))


def test_a_use_after_free_is_caught():
    pipe, funcs, out = _chain(3)
    bad = _free_moved_before(lower(pipe, None), "s0", "s1")
    order = _block_order(bad.body)
    assert order.index(("free", "s0")) + 1 == order.index(("produce", "s1"))
    img = np.random.default_rng(3).random((6, 9), dtype=np.float32)
    with pytest.raises(LoweringError, match="s0"):
        interpret_run(bad, [9, 6], input=img)
    with pytest.raises(LoweringError, match="buffer 's0' is accessed"):
        compile_lowered(pipe, bad, num_threads=1)


def test_the_verifier_refuses_freeing_an_argument():
    pipe, funcs, out = _chain(1)
    lowered = lower(pipe, None)
    bad = dataclasses.replace(lowered, body=L.Block((L.Free("input"), lowered.body)))
    with pytest.raises(LoweringError, match="free input, which is not an enclosing allocation"):
        verify(bad)
    assert "free s0" not in str(lowered.body) and "free input_repeat_edge" in str(lowered.body)
