"""Sliding windows and storage folding (lower/sliding.py): a Func stored outside a
serial loop and computed inside it computes only its new rows each iteration, and
its buffer keeps only the rows one iteration reads; every variant equals the
reference, under every tail strategy of producer and consumer, at sizes around
the tile; and the window is refused where it would be wrong (parallel loops,
a region that does not move monotonically)."""
from __future__ import annotations

import pytest

import tilesolve as ts
from lowering_checks import check_lowered
from tilesolve.lower import ir as L

TAILS = ["guard_with_if", "shift_inward", "round_up"]


def _pipe(flip=False):
    """A 3x3 two-pass blur over a repeat_edge input; ``flip`` reads the
    producer's rows bottom-up, so its region moves down as the consumer's y grows."""
    x, y = ts.Var("x"), ts.Var("y")
    inp = ts.ImageParam(ts.float32, 2, "input")
    src = ts.boundary.repeat_edge(inp)
    bx, by = ts.Func("bx"), ts.Func("by")
    bx[x, y] = src[x - 1, y] + src[x, y] * 2 + src[x + 1, y]
    if flip:
        h = inp.height()
        by[x, y] = bx[x, h - 1 - y] + bx[x, h - y] + bx[x, h - 2 - y]
    else:
        by[x, y] = bx[x, y - 1] + bx[x, y] * 3 + bx[x, y + 1]
    return ts.Pipeline(by)


def _schedule(pipe, consumer_tail="auto", producer_tail=None, parallel=False, store="yo"):
    s = ts.Schedule(pipe)
    s["by"].split("y", "yo", "yi", 8, tail=consumer_tail).vectorize("x", 4)
    if parallel:
        s["by"].parallel("yo")
    s["bx"].compute_at("by", "yi").vectorize("x", 4)
    if store == "root":
        s["bx"].store_root()
    else:
        s["bx"].store_at("by", store)
    if producer_tail is not None:
        s["bx"].split("y", "ty", "tyi", 2, tail=producer_tail)
    return s


def _check(pipe, s, w, h):
    return check_lowered(pipe, s, w, h, seed=w * 100 + h, rtol=1e-5)


def _allocation(low, name):
    return next(st for st in L.walk_stmts(low.body)
                if isinstance(st, L.Allocate) and st.name == name)


def test_a_stencil_stored_per_strip_slides_and_folds_to_four_rows():
    pipe = _pipe()
    low = _check(pipe, _schedule(pipe), 37, 29)
    assert any("bx: sliding window over by.s0.y.yi" in n for n in low.notes)
    assert any("bx: storage folded by 4" in n for n in low.notes)
    assert str(_allocation(low, "bx").extents[1]) in ("4", "bx.buf.extent.1")
    text = str(low.body)
    assert "% 4" in text and "select(0 < by.s0.y.yi" in text


@pytest.mark.parametrize("consumer_tail", TAILS[:2])    # an output cannot round up
@pytest.mark.parametrize("producer_tail", [None] + TAILS)
@pytest.mark.parametrize("h", [1, 2, 7, 8, 9, 19])
def test_every_tail_strategy_at_sizes_around_the_tile(consumer_tail, producer_tail, h):
    pipe = _pipe()
    s = _schedule(pipe, consumer_tail, producer_tail)
    low = _check(pipe, s, 6, h)
    assert any("sliding window" in n for n in low.notes)
    folded = any("storage folded" in n for n in low.notes)
    # A producer that rounds its rows up writes past its slid region: no folding.
    assert folded == (producer_tail != "round_up")


@pytest.mark.parametrize("h", [1, 5, 16, 23])
def test_store_root_slides_over_the_whole_image(h):
    pipe = _pipe()
    low = _check(pipe, _schedule(pipe, store="root"), 11, h)
    assert any("sliding window" in n for n in low.notes)
    assert any("storage folded by 4" in n for n in low.notes)


def test_a_parallel_loop_between_store_and_compute_keeps_the_region_whole():
    pipe = _pipe()
    low = _check(pipe, _schedule(pipe, parallel=True, store="root"), 13, 21)
    assert not any("sliding window" in n for n in low.notes)


def test_a_parallel_loop_outside_the_store_level_still_slides():
    pipe = _pipe()
    low = _check(pipe, _schedule(pipe, parallel=True), 13, 21)
    assert any("sliding window" in n for n in low.notes)


def test_a_region_moving_backwards_does_not_slide():
    pipe = _pipe(flip=True)
    low = _check(pipe, _schedule(pipe), 9, 21)
    assert not any("sliding window" in n for n in low.notes)


def test_compute_at_the_store_level_is_unchanged():
    pipe = _pipe()
    s = ts.Schedule(pipe)
    s["by"].split("y", "yo", "yi", 8)
    s["bx"].compute_at("by", "yi")
    low = _check(pipe, s, 9, 21)
    assert not any("sliding window" in n for n in low.notes)
