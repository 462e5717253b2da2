"""Cut an output box into a grid of sub-boxes whose inputs need no copy, for chunks cut
across columns as well as rows (2-D tiles, as zarr stores usually have them).

Row bands (:mod:`.bands`) help only where whole rows of a box read inside one chunk.
With 2-D tiles every row of a box reads a few columns of the tiles left and right of it,
so row bands never apply and the box's whole input region used to be copied together:
on blur at 4x the paper's area, in 16 tiles, copying took 60 % as long as the
pipeline itself.

Here the box is cut along its rows and along its columns (the innermost dimension):

* the row cuts come from :func:`.bands.row_bands` over a slab one column wide, through
  a point of the box that reads inside one chunk (so the slab crosses no column
  boundary), the column cuts likewise over a slab one row high;
* a sub-box in a view band of both is a *view* sub-box (checked: its whole region must
  lie inside one chunk of every input), the rest are *copy* sub-boxes, strips along
  the box's edges whose small regions are assembled.

Each sub-box is realized straight into its window of the task's output chunk (a window
with the chunk's row stride: ``realize(out=...)`` takes windows of larger arrays).
"""
from __future__ import annotations

from ..errors import ChunkingError
from .bands import MAX_BANDS, row_bands

__all__ = ["grid_cut"]


def grid_cut(regions_of, rows: int, cols: int, inside, worth=None):
    """[(row lo, row hi, col lo, col hi, regions, view?)] tiling rows [0, rows) and
    columns [0, cols) of a box, or None (keep the box whole).  ``regions_of(a, b, c, d)``:
    input -> region for rows [a, b) and columns [c, d) (may raise ChunkingError);
    ``inside(regions)``: whether every region lies in one chunk; ``worth(subs)``: whether
    the sub-boxes beat one copy of the whole box's input."""
    if rows < 3 or cols < 3:
        return None
    try:
        mid = _inner_point(regions_of, rows, cols, inside)
        if mid is None:
            return None
        mid_r, mid_c = mid
        by_rows = row_bands(lambda a, b: regions_of(a, b, mid_c, mid_c + 1), rows, inside)
        by_cols = row_bands(lambda c, d: regions_of(mid_r, mid_r + 1, c, d), cols, inside)
        if by_rows is None or by_cols is None or len(by_rows) * len(by_cols) > MAX_BANDS:
            return None
        subs = []
        for a, b, _, rview in by_rows:
            for c, d, _, cview in by_cols:
                reg = regions_of(a, b, c, d)
                view = rview and cview
                if view and not inside(reg):
                    return None
                subs.append((a, b, c, d, reg, view))
    except ChunkingError:
        return None
    if not any(s[5] for s in subs):
        return None
    return subs if worth is None or worth(subs) else None


FRACTIONS = (1 / 2, 1 / 4, 3 / 4, 1 / 3, 2 / 3, 1 / 8, 7 / 8)


def _inner_point(regions_of, rows: int, cols: int, inside):
    """A (row, column) of the box whose own region lies inside one chunk of every input,
    tried at a few fractions of the box (its middle first): the slabs through it then
    cross chunk boundaries along one axis only.  None if none does."""
    for fr in FRACTIONS:
        for fc in FRACTIONS:
            r, c = min(rows - 1, int(rows * fr)), min(cols - 1, int(cols * fc))
            if inside(regions_of(r, r + 1, c, c + 1)):
                return r, c
    return None
