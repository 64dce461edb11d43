"""The rows of a scanned table anchored on the text lines it holds.

SLANet-plus sees a table squeezed onto a 488-pixel square, and down a long table its cell boxes
drift, up to half a row off near the foot, so a word given to the cell box holding it can land a
row below its own. The rows a table has are the text lines it holds: lines side by side form a
band, and the bands are matched, top to bottom, to the model's rows in order (a dynamic programme
over the bands: each band takes a row at or after the last band's, a row the model gave words
costs something to pass over and one that holds none something to take, two bands in one row
cost a little, so a cell wrapped over lines keeps its lines and a drifting row keeps its place in
the order). A word then goes to the cell of
its band's row whose columns hold it.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from ocr_engine.geometry import Box

__all__ = ["bands_of", "rows_of_bands"]

_SKIP_FILLED = 1.0  # passing over a row that holds words by the model's boxes
_SKIP_EMPTY = 0.1  # passing over a row that holds none (a spacer, a rule)
_MERGE = 0.6  # a second band in the same row (a cell wrapped over lines)
_NEAR = 0.1  # per half a row's height between a band and the row's middle
_TAKE_EMPTY = 0.5  # a band in a row that holds no words by the model's boxes


def bands_of(boxes: Sequence[Box]) -> tuple[list[tuple[float, float]], list[int]]:
    """The horizontal bands of `boxes` (text lines), top to bottom, and the band of each box: a
    line joins the band whose first line it overlaps by half the height of the shorter of the two.
    (A band is its first line's height: a label set midway between two lines of a cell beside it
    joins one of them rather than bridging both into one band.)"""
    bands: list[list[float]] = []
    of = [0] * len(boxes)
    for i in sorted(range(len(boxes)), key=lambda i: (boxes[i][1] + boxes[i][3]) / 2):
        _, y0, _, y1 = boxes[i]
        if bands:
            top, bottom = bands[-1]
            if min(bottom, y1) - max(top, y0) >= 0.5 * min(y1 - y0, bottom - top):
                of[i] = len(bands) - 1
                continue
        bands.append([y0, y1])
        of[i] = len(bands) - 1
    return [(top, bottom) for top, bottom in bands], of


def rows_of_bands(
    bands: Sequence[tuple[float, float]],
    rows: Sequence[tuple[float, float]],
    filled: Sequence[bool],
) -> list[int]:
    """The row each band belongs to, in order: `rows` are the model's rows' vertical spans and
    `filled` whether each holds words by the model's own boxes."""
    if not bands or not rows:
        return []
    unit = median(bottom - top for top, bottom in bands) or 1.0

    def cost(row: int, band: int) -> float:
        top, bottom = rows[row]
        middle = (bands[band][0] + bands[band][1]) / 2
        outside = max(top - middle, 0.0, middle - bottom) / unit
        off_middle = abs(middle - (top + bottom) / 2) / max((bottom - top) / 2, unit)
        return outside + _NEAR * off_middle + (0.0 if filled[row] else _TAKE_EMPTY)

    passed = [0.0]  # passed[r]: the cost of passing over rows 0..r-1
    for holds in filled:
        passed.append(passed[-1] + (_SKIP_FILLED if holds else _SKIP_EMPTY))
    n_rows = len(rows)
    best = [passed[r] + cost(r, 0) for r in range(n_rows)]
    back: list[list[int]] = [[-1] * n_rows]
    for band in range(1, len(bands)):
        here, came = [], []
        lowest, lowest_at = float("inf"), -1  # min over earlier rows p of best[p] - passed[p + 1]
        for r in range(n_rows):
            value, source = best[r] + _MERGE, r
            if lowest_at >= 0 and lowest + passed[r] < value:
                value, source = lowest + passed[r], lowest_at
            here.append(value + cost(r, band))
            came.append(source)
            if best[r] - passed[r + 1] < lowest:
                lowest, lowest_at = best[r] - passed[r + 1], r
        best = here
        back.append(came)
    last = min(range(n_rows), key=lambda r: best[r] + passed[n_rows] - passed[r + 1])
    chosen = [last]
    for band in range(len(bands) - 1, 0, -1):
        chosen.append(back[band][chosen[-1]])
    return chosen[::-1]
