"""Ruled tables through PyMuPDF's finder (gated on vector lines), cells with spans; the table
types shared with the unruled finder (`unruled_tables`)."""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pymupdf

from ocr_engine.geometry import Box, union
from ocr_engine.layout.textlayer import PageFrame, Word, WordKey
from ocr_engine.schema import TableCell

log = logging.getLogger(__name__)

MIN_RULES = 3  # horizontal or vertical rules a page needs before the finder runs


@dataclass(slots=True)
class TableRow:
    """One markdown row of a table and the box of its cells."""

    text: str
    bbox: Box


@dataclass(slots=True)
class FoundTable:
    """A detected table in displayed-page coordinates, rendered as markdown and HTML."""

    bbox: Box
    cells: list[TableCell]
    rows: list[TableRow]
    markdown: str
    html: str
    words: frozenset[WordKey] = frozenset()  # the text layer's words its cells hold


def has_ruling(
    page: pymupdf.Page,
    min_rules: int = MIN_RULES,
    drawings: Sequence[dict[str, Any]] | None = None,
    *,
    shaded_cells: bool = True,
) -> bool:
    """Whether the page draws rules at enough distinct rows and columns to hold a ruled table;
    with `shaded_cells` false, filled boxes without a stroke do not count as rules."""
    rows: set[int] = set()
    cols: set[int] = set()
    band_width = 0.4 * page.rect.width
    for path in page.get_cdrawings() if drawings is None else drawings:
        outlined = shaded_cells or "s" in str(path.get("type", "s"))
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if abs(x1 - x0) > 3.0 and abs(y1 - y0) > 3.0:  # a box: all four edges
                    # wide bands shade rows: they divide no columns
                    if outlined:
                        rows.update((round(y0), round(y1)))
                        if abs(x1 - x0) < band_width:
                            cols.update((round(x0), round(x1)))
                    continue
            else:
                continue
            if abs(y1 - y0) <= 3.0 and abs(x1 - x0) > 3.0:
                rows.add(round(y0))
            elif abs(x1 - x0) <= 3.0 and abs(y1 - y0) > 3.0:
                cols.add(round(x0))
        if len(rows) >= min_rules and len(cols) >= min_rules:
            return True
    return False


def find_tables(
    page: pymupdf.Page,
    frame: PageFrame,
    words: Sequence[Word],
    drawings: Sequence[dict[str, Any]] | None = None,
    *,
    shaded_cells: bool = True,
    rows_ruled: bool = True,
) -> list[FoundTable]:
    """Ruled tables on the page (PyMuPDF's finder only when the page draws rules across rows and
    columns: it is costly), then (`rows_ruled`) tables ruled across rows alone in the words left."""
    from ocr_engine.layout.rule_tables import find_rule_tables  # it imports this module

    drawings = page.get_cdrawings() if drawings is None else drawings
    found: list[FoundTable] = []
    if has_ruling(page, drawings=drawings, shaded_cells=shaded_cells):
        found = _finder_tables(page, frame, words)
    if not rows_ruled:
        return found
    taken = frozenset(key for table in found for key in table.words)
    return found + find_rule_tables(frame, words, drawings, taken)


def _finder_tables(page: pymupdf.Page, frame: PageFrame, words: Sequence[Word]) -> list[FoundTable]:
    from ocr_engine.layout.rule_tables import unstacked_rows  # it imports this module

    found: list[FoundTable] = []
    tables = page.find_tables(use_layout=False).tables
    if not tables:
        return found
    page_area = frame.rect.width * frame.rect.height
    taken: set[WordKey] = set()  # the finder's tables may overlap: a word goes to the first
    for table in tables:
        free = [w for w in words if w.key not in taken]
        rows = [row.cells for row in table.rows]
        grid = cell_words(rows, free)
        rows = unstacked_rows(rows, grid)
        if len(rows) > len(table.rows):
            grid = cell_words(rows, free)
        if cuts_running_text(grid):
            continue
        converted = convert_table(rows, cell_texts(grid), frame)
        if converted is not None and plausible(converted, page_area):
            converted.words = frozenset(w.key for row in grid for cell in row for w in cell or ())
            taken |= converted.words
            found.append(converted)
    return found


CellWords = list[list[list[Word] | None]]


def cell_words(rows: Sequence[Sequence[Box | None]], words: Sequence[Word]) -> CellWords:
    """The words whose centre lies in each cell (raw, unrotated boxes like `Word.raw`), each word
    in one cell only (the first)."""
    grid: CellWords = [[[] if box is not None else None for box in row] for row in rows]
    for word in words:
        cx, cy = (word.raw[0] + word.raw[2]) / 2, (word.raw[1] + word.raw[3]) / 2
        found = next(
            (
                cell
                for row, boxes in zip(grid, rows, strict=True)
                for cell, box in zip(row, boxes, strict=True)
                if cell is not None
                and box is not None
                and box[0] <= cx <= box[2]
                and box[1] <= cy <= box[3]
            ),
            None,
        )
        if found is not None:
            found.append(word)
    return grid


def cell_texts(grid: CellWords) -> list[list[str | None]]:
    """Each cell's words in reading order (the finder's own text drops inter-word spaces)."""
    return [
        [
            None if cell is None else " ".join(w.text for w in sorted(cell, key=lambda w: w.key))
            for cell in row
        ]
        for row in grid
    ]


def cuts_running_text(grid: CellWords) -> bool:
    """Whether the grid's column borders cut through lines of running text: side by side cells
    whose words sit on one text line a word space apart (footnotes boxed by stray rules)."""
    borders = cut = 0
    for row in grid:
        cells = [cell for cell in row if cell]
        for left, right in pairwise(cells):
            borders += 1
            ends = {w.key[:2]: w for w in sorted(left, key=lambda w: w.raw[2])}
            for word in right:
                before = ends.get(word.key[:2])
                height = word.raw[3] - word.raw[1]
                if before is not None and 0 <= word.raw[0] - before.raw[2] < 0.6 * height:
                    cut += 1
                    break
    return cut >= 2 and cut >= borders / 3


def plausible(table: FoundTable, page_area: float) -> bool:
    """Reject layout boxes the finder mistakes for tables: mostly empty, headless or page-sized."""
    filled = sum(1 for c in table.cells if c.text) / len(table.cells)
    header_empty = not any(c.text for c in table.cells if c.row == 0)
    b = table.bbox
    huge = (b[2] - b[0]) * (b[3] - b[1]) > 0.5 * page_area and len(table.rows) <= 3
    # half-empty grids of merged boxes are forms and diagrams drawn with rectangles
    merged = sum(1 for c in table.cells if c.row_span > 1 or c.col_span > 1)
    form_like = filled < 0.6 and merged >= 0.1 * len(table.cells)
    return filled >= 0.5 and not header_empty and not huge and not form_like


def _span(edges: list[float], start: float, stop: float, tol: float = 2.0) -> int:
    return max(1, sum(1 for e in edges if start - tol <= e < stop - tol))


def convert_table(
    raw_rows: Sequence[Sequence[Box | None]],
    grid: list[list[str | None]],
    frame: PageFrame,
) -> FoundTable | None:
    """Cells with row/col spans from the finder's cell grid and text; None when trivial."""
    n_rows = len(raw_rows)
    n_cols = max((len(r) for r in raw_rows), default=0)
    if n_rows < 2 or n_cols < 2:
        return None
    rows_y = [min((b[1] for b in row if b), default=float("inf")) for row in raw_rows]
    cols_x = [
        min((b[0] for row in raw_rows if c < len(row) and (b := row[c])), default=float("inf"))
        for c in range(n_cols)
    ]
    cells: list[TableCell] = []
    for r, row in enumerate(raw_rows):
        for c, b in enumerate(row):
            if b is None:
                continue
            value = grid[r][c] if r < len(grid) and c < len(grid[r]) else None
            cells.append(
                TableCell(
                    row=r,
                    col=c,
                    row_span=_span(rows_y, b[1], b[3]),
                    col_span=_span(cols_x, b[0], b[2]),
                    text=" ".join((value or "").split()),
                    bbox=frame.box(b),
                    header=r == 0,
                )
            )
    if sum(1 for cell in cells if cell.text) < 2:
        return None
    boxes = [b for row in raw_rows for b in row if b]
    return assemble(cells, n_rows, n_cols, frame.box(union(boxes)))


def assemble(
    cells: list[TableCell],
    n_rows: int,
    n_cols: int,
    bbox: Box,
    words: frozenset[WordKey] = frozenset(),
) -> FoundTable:
    """A table of its cells: rows with their boxes, markdown (a separator after row 0), HTML."""
    row_boxes = _row_boxes(cells, n_rows)
    md_rows = markdown_rows(cells, n_rows, n_cols)
    rows = [TableRow(t, box) for t, box in zip(md_rows, row_boxes, strict=True) if box is not None]
    markdown = "\n".join([md_rows[0], "|" + " --- |" * n_cols, *md_rows[1:]])
    return FoundTable(
        bbox=bbox, cells=cells, rows=rows, markdown=markdown, html=to_html(cells), words=words
    )


def _row_boxes(cells: list[TableCell], n_rows: int) -> list[Box | None]:
    out: list[Box | None] = []
    for r in range(n_rows):
        boxes = [c.bbox for c in cells if c.row == r and c.bbox is not None]
        out.append(union(boxes) if boxes else None)
    return out


def _cell_md(text: str) -> str:
    return text.replace("|", "\\|") or " "


def markdown_rows(cells: list[TableCell], n_rows: int, n_cols: int) -> list[str]:
    grid = [[""] * n_cols for _ in range(n_rows)]
    for cell in cells:
        grid[cell.row][cell.col] = cell.text
    return ["| " + " | ".join(_cell_md(v) for v in row) + " |" for row in grid]


def to_html(cells: list[TableCell]) -> str:
    """An HTML table with th for header cells and rowspan/colspan attributes."""
    rows: dict[int, list[TableCell]] = {}
    for cell in cells:
        rows.setdefault(cell.row, []).append(cell)
    out = ["<table>"]
    for r in sorted(rows):
        out.append("<tr>")
        for cell in sorted(rows[r], key=lambda c: c.col):
            tag = "th" if cell.header else "td"
            attrs = ""
            if cell.row_span > 1:
                attrs += f' rowspan="{cell.row_span}"'
            if cell.col_span > 1:
                attrs += f' colspan="{cell.col_span}"'
            out.append(f"<{tag}{attrs}>{html.escape(cell.text)}</{tag}>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)
