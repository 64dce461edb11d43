"""Column headings printed above a ruled table's top rule ("Years ended December 31, | 2022 |
2021"): a table whose first row is already figures takes them in as its header rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ocr_engine.geometry import Box, union
from ocr_engine.layout.tables import FoundTable, assemble
from ocr_engine.layout.textlayer import Word
from ocr_engine.layout.unruled_tables import (
    NUMERIC_RE,
    VisualRow,
    heads_columns,
    notes_only,
    over_labels,
    visual_rows,
)
from ocr_engine.schema import TableCell

__all__ = ["MAX_LIFTED_ROWS", "headless", "with_headings_above"]

Lift = Literal["heading", "notes", "label"]  # what a row lifted into the table is

MAX_LIFTED_ROWS = 3


def _figure_columns(table: FoundTable) -> dict[int, tuple[float, float]]:
    """The x-interval of each column right of the labels, from its single-column cells."""
    spans: dict[int, tuple[float, float]] = {}
    for cell in table.cells:
        if cell.col == 0 or cell.col_span != 1 or cell.bbox is None:
            continue
        x0, x1 = cell.bbox[0], cell.bbox[2]
        old = spans.get(cell.col)
        spans[cell.col] = (x0, x1) if old is None else (min(old[0], x0), max(old[1], x1))
    return spans


def headless(table: FoundTable) -> bool:
    """Whether the table's first row holds a figure right of its label: it has no header row."""
    return any(
        c.row == 0 and c.col > 0 and NUMERIC_RE.match(c.text.replace(" ", ""))
        for c in table.cells
        if c.text
    )


def _rows_above(table: FoundTable, words: Sequence[Word]) -> list[VisualRow]:
    """The visual rows of the free words above the table and within its width, nearest first."""
    x0, top, x1 = table.bbox[0] - 2.0, table.bbox[1], table.bbox[2] + 2.0
    above = [
        w
        for w in words
        if w.key not in table.words
        and (w.bbox[1] + w.bbox[3]) / 2 < top
        and x0 <= w.bbox[0]
        and w.bbox[2] <= x1
    ]
    return list(reversed(visual_rows(above))) if above else []


def _lifted(table: FoundTable, words: Sequence[Word]) -> list[tuple[VisualRow, Lift]]:
    """The heading rows right above the table, top to bottom (none: it keeps its first row); a
    row of notes under them comes with them, and so does a label alone over the labels right
    above the first row ("Revenue:", the name of the rows' group)."""
    columns = _figure_columns(table)
    if not columns or not headless(table):
        return []
    cols = sorted(columns.values())
    starts = [c.bbox[0] for c in table.cells if c.col == 0 and c.text and c.bbox is not None]
    labels_from = max(starts, default=float("-inf"))
    rows: list[tuple[VisualRow, Lift]] = []
    pending: list[tuple[VisualRow, Lift]] = []  # a label, notes: kept if headings stand above
    below: Box = table.bbox
    for row in _rows_above(table, words)[: MAX_LIFTED_ROWS + 2]:
        height = max(row.box[3] - row.box[1], 1.0)
        headings = sum(kind == "heading" for _, kind in rows)
        if below[1] - row.box[3] > 1.2 * height or headings == MAX_LIFTED_ROWS:
            break
        below = row.box
        if heads_columns(row, cols, labels_from, least=1 if rows else min(2, len(cols))):
            rows += [*pending, (row, "heading")]
            pending = []
        elif not rows and not pending and _label_alone(row, cols, labels_from):
            pending.append((row, "label"))
        elif (
            not rows
            and "notes" not in (k for _, k in pending)
            and notes_only(row, cols, labels_from + 2.0)
        ):
            pending.append((row, "notes"))
        else:
            break
    return list(reversed(rows))


def _label_alone(row: VisualRow, cols: list[tuple[float, float]], labels_from: float) -> bool:
    """Whether a row is one label over the table's labels, left of its figures, as a statement
    names a group of rows under its headings ("Revenue:", "Current assets:")."""
    if len(row.segments) != 1:
        return False
    label = row.segments[0]
    return over_labels(label, cols, labels_from) and label.text[:1].isupper()


def _column_of(box: Box, columns: dict[int, tuple[float, float]]) -> tuple[int, int]:
    """(first column, span) of a heading: the columns it overlaps, else the nearest; 0 when it
    ends left of them all (the stub over the labels)."""
    if box[2] < min(x0 for x0, _ in columns.values()) - 2.0:
        return 0, 1
    hit = sorted(c for c, (x0, x1) in columns.items() if box[0] < x1 and box[2] > x0)
    if not hit:
        centre = (box[0] + box[2]) / 2
        nearest = min(columns, key=lambda c: abs(centre - sum(columns[c]) / 2))
        return nearest, 1
    return hit[0], hit[-1] - hit[0] + 1


def with_headings_above(table: FoundTable, words: Sequence[Word]) -> FoundTable:
    """The table with the heading rows printed just above it as its header rows, when its first
    row is figures and the rows above head its columns; otherwise the table itself."""
    lifted = _lifted(table, words)
    if not lifted:
        return table
    columns = _figure_columns(table)
    n = len(lifted)
    cells: list[TableCell] = []
    for r, (row, lift) in enumerate(lifted):
        placed: dict[int, tuple[int, list[Box], list[str]]] = {}
        for seg in row.segments:
            col, span = _column_of(seg.box, columns)
            if lift == "notes" and col > 0:  # a note over the figures is about them all
                col, span = min(columns), max(columns) - min(columns) + 1
            _, boxes, texts = placed.setdefault(col, (span, [], []))
            boxes.append(seg.box)
            texts.append(seg.text)
        for col, (span, boxes, texts) in sorted(placed.items()):
            cells.append(
                TableCell(
                    row=r,
                    col=col,
                    col_span=span,
                    text=" ".join(texts),
                    bbox=union(boxes),
                    header=lift != "label",
                )
            )
    for cell in table.cells:
        cells.append(cell.model_copy(update={"row": cell.row + n, "header": False}))
    n_rows = max(c.row + c.row_span for c in cells)
    n_cols = max(c.col + c.col_span for c in cells)
    keys = frozenset(key for row, _ in lifted for seg in row.segments for key in seg.keys)
    bbox = union([table.bbox, *(row.box for row, _ in lifted)])
    return assemble(cells, n_rows, n_cols, bbox, table.words | keys)
