"""Which columns a table cell's crop keeps: the row's label and the cell's own column (with its
headings over it), the columns between and after left out, so that the crop of a cell in a wide
row stays narrow enough to be shown at a readable size.

The table's cells come from the page's JSON where its reader gave them (any engine, scans
included); else the text layer's words stand in: the row's leftmost run of words is its label.
"""

from __future__ import annotations

from collections.abc import Sequence

from ocr_engine.geometry import Box
from ocr_engine.schema import BlockType, Page, TableCell

__all__ = ["MIN_SAVED", "Span", "kept_columns"]

Span = tuple[float, float]
MIN_SAVED = 0.25  # a cut that leaves out less than this share of the width is not worth it
_JOIN = 12.0  # points: spans closer than this are kept as one
_CELL_SHARE = 0.6  # a highlight this wide a share of the row is the row itself: nothing to cut


def _centre_in(box: Box, outer: Box) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def _overlaps_x(box: Box, span: Span) -> bool:
    return box[0] < span[1] and box[2] > span[0]


def _within(box: Box, parts: Sequence[Box]) -> bool:
    return any(p[1] - 1 <= (box[1] + box[3]) / 2 <= p[3] + 1 for p in parts)


def _from_cells(page: Page, cell: Box, parts: Sequence[Box]) -> tuple[Span, Span] | None:
    """(label span, cell span) from the table cells of the page's JSON, or None."""
    for block in page.blocks:
        if block.type != BlockType.table:
            continue
        boxed = [c for c in block.cells if c.bbox is not None]
        found = next((c for c in boxed if c.bbox and _centre_in(cell, c.bbox)), None)
        if found is None or found.bbox is None:
            continue
        labels = [c for c in boxed if c.row == found.row and c.col < found.col and c.text.strip()]
        if not labels:
            return None
        label: TableCell = min(labels, key=lambda c: c.col)
        column = [c.bbox for c in boxed if c.col == label.col and c.bbox and c.text.strip()]
        left, right = min(b[0] for b in column), max(b[2] for b in column)  # its widest label
        span = (min(found.bbox[0], cell[0]), max(found.bbox[2], cell[2]))
        for head in boxed:
            assert head.bbox is not None
            above = head.bbox[3] <= found.bbox[1] + 1
            heads = above and head.text.strip() and _overlaps_x(head.bbox, span)
            if heads and _within(head.bbox, parts):
                span = (min(span[0], head.bbox[0]), max(span[1], head.bbox[2]))
        return (left, min(right, span[0])), span
    return None


def _from_words(words: Sequence[Box], cell: Box, parts: Sequence[Box]) -> tuple[Span, Span] | None:
    """(label span, cell span) from the text layer's words, or None."""
    middle = (cell[1] + cell[3]) / 2
    row = sorted(
        (w for w in words if w[1] <= middle <= w[3] and w[2] <= cell[0] + 1), key=lambda w: w[0]
    )
    if not row:
        return None
    first = row[0]
    end = first[2]
    for word in row[1:]:
        height = word[3] - word[1]
        if word[0] - end > max(1.2 * height, 6.0):
            break  # the gap to the next column
        end = max(end, word[2])
    span = (cell[0], cell[2])
    for word in words:
        above = word[3] <= cell[1] + 1
        if above and _overlaps_x(word, (cell[0], cell[2])) and _within(word, parts):
            span = (min(span[0], word[0]), max(span[1], word[2]))
    return (first[0], end), span


def kept_columns(
    parts: Sequence[Box], highlight: Sequence[Box], page: Page | None, words: Sequence[Box]
) -> list[Span] | None:
    """The x-spans (points) a crop of `parts` keeps when it shows a table cell (the one
    `highlight` box) in a row much wider than it: the row's label and the cell's column; None
    to keep the whole width (prose, a whole row, no label found, or too little to leave out)."""
    if len(highlight) != 1 or not parts:
        return None
    cell = highlight[0]
    left, right = min(p[0] for p in parts), max(p[2] for p in parts)
    width = right - left
    if width <= 0 or cell[2] - cell[0] >= _CELL_SHARE * width:
        return None
    found = _from_cells(page, cell, parts) if page is not None else None
    found = found or _from_words(words, cell, parts)
    if found is None:
        return None
    (l0, l1), (c0, c1) = found
    if l1 >= c0:
        return None  # the label runs into the cell: no column between them
    spans = [(max(left, l0), l1), (c0, min(right, c1))]
    if spans[1][0] - spans[0][1] < _JOIN:
        spans = [(spans[0][0], spans[1][1])]
    kept = sum(b - a for a, b in spans)
    if kept > (1 - MIN_SAVED) * width:
        return None
    return spans
