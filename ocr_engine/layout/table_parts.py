"""A table printed in parts: a statement goes on under a label alone ("Cost of sales:") after a
wider gap than its rows keep, and the finders read the rows below as a table of their own, with
no column headings. A part whose first row is already figures, right under a table, its figures
in that table's columns, is read as the rest of it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ocr_engine.geometry import Box, union
from ocr_engine.layout.table_headers import headless
from ocr_engine.layout.tables import FoundTable, assemble
from ocr_engine.layout.textlayer import Word
from ocr_engine.layout.unruled_tables import NUMERIC_RE, YEAR_RE, VisualRow, visual_rows
from ocr_engine.schema import TableCell

__all__ = ["MAX_GAP_ROWS", "joined_parts"]

MAX_GAP_ROWS = 2.5  # blank space a part may leave above itself (and above its label), in rows


def joined_parts(tables: list[FoundTable], words: Sequence[Word]) -> list[FoundTable]:
    """The page's tables, each part that goes on the table right above it joined to it (top to
    bottom, so a statement in three parts becomes one table)."""
    taken = {key for t in tables for key in t.words}
    free = [w for w in words if w.key not in taken]
    out: list[FoundTable] = []
    for table in sorted(tables, key=lambda t: t.bbox[1]):
        above = [
            i
            for i, t in enumerate(out)
            if t.bbox[3] <= table.bbox[1] + 1.0 and _overlap(t.bbox, table.bbox) > 0
        ]
        if above:
            i = max(above, key=lambda i: out[i].bbox[3])
            joined = _joined(out[i], table, free)
            if joined is not None:
                out[i] = joined
                continue
        out.append(table)
    return out


def _overlap(a: Box, b: Box) -> float:
    return min(a[2], b[2]) - max(a[0], b[0])


def _figure(cell: TableCell) -> bool:
    return cell.col > 0 and bool(NUMERIC_RE.match(cell.text.replace(" ", "")))


def _columns_of(above: FoundTable, below: FoundTable) -> dict[int, int] | None:
    """Each column of `below` as the column of `above` whose cells it lines up with (the one
    holding most of the cells its own overlap, figures for figures), or None where a column
    lines up with none or two columns fall in one."""
    single = [c for c in above.cells if c.col > 0 and c.col_span == 1 and c.text and c.bbox]
    votes: dict[int, Counter[int]] = {}
    for cell in below.cells:
        if cell.col == 0 or not cell.text or cell.bbox is None:
            continue
        alike = [c for c in single if _figure(c) == _figure(cell)]
        counts = votes.setdefault(cell.col, Counter())
        counts.update(c.col for c in alike if c.bbox and _overlap(c.bbox, cell.bbox) > 0)
    if not votes or any(not counts for counts in votes.values()):
        return None
    mapping = {col: counts.most_common(1)[0][0] for col, counts in votes.items()}
    ordered = [mapping[col] for col in sorted(mapping)]
    if len(set(ordered)) < len(ordered) or ordered != sorted(ordered):
        return None
    return {0: 0, **mapping}


def _label_between(above: FoundTable, below: FoundTable, free: Sequence[Word]) -> list[VisualRow]:
    """The rows of free words between the two tables, across their width."""
    x0, x1 = min(above.bbox[0], below.bbox[0]) - 2.0, max(above.bbox[2], below.bbox[2]) + 2.0
    between = [
        w
        for w in free
        if above.bbox[3] <= (w.bbox[1] + w.bbox[3]) / 2 <= below.bbox[1]
        and x0 <= w.bbox[0]
        and w.bbox[2] <= x1
    ]
    return visual_rows(between) if between else []


def _row_height(table: FoundTable) -> float:
    heights = sorted(row.bbox[3] - row.bbox[1] for row in table.rows)
    return max(heights[len(heights) // 2], 1.0) if heights else 1.0


def _goes_on(above: FoundTable, below: FoundTable, rows: list[VisualRow]) -> bool:
    """Whether `below` starts with a row of figures (not years) under a label, its labels within
    the table's, no more than `MAX_GAP_ROWS` rows below it, with at most one label alone
    (left of the figures, capitalised) between them."""
    first = [c for c in below.cells if c.row == 0 and c.text]
    figures = [c.text.strip() for c in first if _figure(c)]
    if (
        not any(c.col == 0 for c in first)
        or not headless(below)
        or all(map(YEAR_RE.match, figures))
    ):
        return False  # a table's own first row: its headings, or years heading its columns
    if below.bbox[0] < above.bbox[0] - 2.0:
        return False
    gap = MAX_GAP_ROWS * _row_height(above)
    figures_from = min(
        (c.bbox[0] for c in [*above.cells, *below.cells] if _figure(c) and c.bbox is not None),
        default=above.bbox[2],
    )
    if not rows:
        return below.bbox[1] - above.bbox[3] <= gap
    if len(rows) > 1 or len(rows[0].segments) != 1:
        return False
    label = rows[0]
    return (
        label.box[2] < figures_from - 2.0
        and label.segments[0].text[:1].isupper()
        and label.box[1] - above.bbox[3] <= gap
        and below.bbox[1] - label.box[3] <= gap
    )


def _joined(above: FoundTable, below: FoundTable, free: Sequence[Word]) -> FoundTable | None:
    """`above` with `below` (and the label between them) as its last rows, or None where
    `below` is a table of its own."""
    rows = _label_between(above, below, free)
    if not _goes_on(above, below, rows):
        return None
    columns = _columns_of(above, below)
    if columns is None:
        return None
    cells = list(above.cells)
    n = max(c.row + c.row_span for c in cells)
    n_cols = max(c.col + c.col_span for c in cells)
    keys = above.words | below.words
    for row in rows:
        segment = row.segments[0]
        cells.append(TableCell(row=n, col=0, text=segment.text, bbox=segment.box, header=False))
        keys |= frozenset(segment.keys)
        n += 1
    for cell in below.cells:
        col = columns.get(cell.col)
        if col is None:  # an empty column of the part: no figure tells where it stands
            continue
        last = columns.get(cell.col + cell.col_span - 1, col)
        cells.append(
            cell.model_copy(
                update={
                    "row": cell.row + n,
                    "col": col,
                    "col_span": last - col + 1,
                    "header": False,
                }
            )
        )
    n_rows = max(c.row + c.row_span for c in cells)
    bbox = union([above.bbox, below.bbox, *(row.box for row in rows)])
    return assemble(cells, n_rows, n_cols, bbox, keys)
