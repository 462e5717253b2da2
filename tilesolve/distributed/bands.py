"""Split an output box into row bands whose inputs need no copy.

A task's input must be one strided array.  When the region a box reads from a Dask input
lies inside one chunk, the task reads a view of that chunk; when it crosses chunk
boundaries, the pieces have to be copied into one array (:func:`.worker.assemble`).
Here the box is cut along the output's outermost numpy axis (rows, for an image) into

* *view* bands: rows whose whole input region lies inside one chunk of every Dask input
  (the task reads views, no copy), and
* *copy* bands: the few rows near a chunk boundary whose region crosses it (only their
  input, a strip of halo height, is assembled).

A band of rows of a C-contiguous chunk is contiguous, so each band is realized straight
into its rows of the task's output (``realize(..., out=rows)``).  Every band's region
comes from bounds inference (``plan.regions``), exactly as for whole boxes; the search
assumes only that a band's region grows with the band, which holds for any pipeline.
When the first row alone already crosses a boundary along another axis (chunks cut
across columns too), or copy bands grow large, the box is kept whole: one copy, as
before.

Bands are not free: each recomputes what its rows need of the stages above them, the
halo of its own.  For a light stencil (blur, harris) that is a few rows per band, far
cheaper than copying the input; for a pipeline with deep halos (bilateral_grid's grid,
a pyramid) the bands recompute a large share of the work (measured: 31 bands made
bilateral_grid's task 29 % slower than one copy and one realize).  The caller weighs
the two (``worth``: see :meth:`.graph.BoxGraph.add_box`).
"""
from __future__ import annotations

from ..errors import ChunkingError

__all__ = ["row_bands", "MAX_BANDS", "MAX_COPY_FRACTION"]

MAX_BANDS = 64              # per box: each band is one realize() call (~50 us of checks)
MAX_COPY_FRACTION = 0.25    # copy bands beyond this share of the rows: keep the box whole


def row_bands(regions_of, rows: int, inside, reach=None, predicted=None, worth=None):
    """[(row lo, row hi, regions, view?)] covering rows [0, rows) of a box, or None
    (keep the box whole).  ``regions_of(a, b)``: input -> region for rows [a, b) (may
    raise ChunkingError); ``inside(regions)``: whether every region lies in one chunk;
    ``reach(r0, r1)``: a guess, from the regions of two consecutive rows, of how many
    rows from the first stay inside its chunks (checked before use: a wrong guess only
    costs a few more region queries); ``predicted``: bands [(lo, hi, view?)] to try
    first (one region query per band when every view band checks out), [] to give up
    at once (every row predicted to cross a chunk boundary: keep the box whole);
    ``worth(bands)``: whether the bands found beat one copy (else the box stays whole)."""
    memo = {}

    def reg(a, b):
        hit = memo.get((a, b))
        if hit is None:
            hit = memo[(a, b)] = regions_of(a, b)
        return hit

    def good(a, b):
        return inside(reg(a, b))

    cap = max(1, int(rows * MAX_COPY_FRACTION))
    try:
        if good(0, rows):
            return [(0, rows, reg(0, rows), True)]
        if predicted is not None and not predicted:
            return None                  # predicted: every row crosses a boundary
        if predicted and len(predicted) <= MAX_BANDS and \
                sum(b - a for a, b, v in predicted if not v) <= cap and \
                any(v for *_, v in predicted) and \
                all(good(a, b) for a, b, v in predicted if v):
            return _worth([(a, b, reg(a, b), v) for a, b, v in predicted], worth)
        bands, y, copied = [], 0, 0
        while y < rows:
            if good(y, y + 1):
                e = _guessed(good, reg, reach, y, rows) or _last_good(good, y, rows)
                bands.append((y, e, reg(y, e), True))
            else:
                e = _first_good_row(good, y, rows, cap)
                if e is None:
                    return None
                copied += e - y
                if copied > cap:
                    return None
                bands.append((y, e, reg(y, e), False))
            y = e
            if len(bands) > MAX_BANDS:
                return None
    except ChunkingError:
        return None
    if all(not v for *_, v in bands):
        return None
    return _worth(bands, worth)


def _worth(bands, worth):
    """``bands``, or None where ``worth`` finds them dearer than one copy."""
    return bands if worth is None or worth(bands) else None


def _guessed(good, reg, reach, y: int, rows: int):
    """The end of the view band from y that ``reach`` predicts, if the prediction is
    exact (good up to it, bad one row further); else None."""
    if reach is None or y + 1 >= rows:
        return None
    m = reach(reg(y, y + 1), reg(y + 1, y + 2))
    e = rows if m is None else min(rows, y + max(1, int(m)))
    if good(y, e) and (e == rows or not good(y, e + 1)):
        return e
    return None


def _last_good(good, y: int, rows: int) -> int:
    """The largest e in (y, rows] with good(y, e), given good(y, y + 1): galloping, then
    bisection (regions grow with the band, so good(y, e) is monotone in e)."""
    lo, step = y + 1, 1
    hi = None
    while True:
        nxt = min(rows, lo + step)
        if nxt == lo:
            return lo
        if good(y, nxt):
            lo, step = nxt, step * 4
            if lo == rows:
                return rows
        else:
            hi = nxt
            break
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if good(y, mid):
            lo = mid
        else:
            hi = mid
    return lo


def _first_good_row(good, y: int, rows: int, cap: int):
    """The first row e in (y, rows] from which a view band can start (good(e, e + 1);
    ``rows`` stands for the end of the box), found by galloping then bisection; None when
    it lies more than ``cap`` rows away.  Rows near a chunk boundary are bad, then good
    once past it; where that does not hold the copy band only grows, which is still
    exact."""
    last_bad, step = y, 1
    while True:
        e = last_bad + step
        if e - y > cap and e < rows:
            return None
        if e >= rows:
            e = rows
            if e - y > cap:
                return None
            break
        if good(e, e + 1):
            break
        last_bad, step = e, step * 2
    while e - last_bad > 1:
        mid = (last_bad + e) // 2
        if good(mid, mid + 1):
            e = mid
        else:
            last_bad = mid
    return e
