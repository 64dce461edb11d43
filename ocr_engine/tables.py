"""Ruled tables: a cheap gate on vector lines, PyMuPDF's finder, and cells with spans."""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pymupdf

from ocr_engine.schema import TableCell
from ocr_engine.textlayer import TEXT_FLAGS, Box, PageFrame

log = logging.getLogger(__name__)

RawBox = tuple[float, float, float, float]
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


def has_ruling(page: pymupdf.Page, min_rules: int = MIN_RULES) -> bool:
    """Whether the page draws rules at enough distinct rows and columns to hold a ruled table."""
    rows: set[int] = set()
    cols: set[int] = set()
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if abs(x1 - x0) > 3.0 and abs(y1 - y0) > 3.0:  # a box: all four edges
                    rows.update((round(y0), round(y1)))
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


def find_tables(page: pymupdf.Page, frame: PageFrame) -> list[FoundTable]:
    """Ruled tables on the page (none when the page draws no rules: the finder is costly)."""
    if not has_ruling(page):
        return []
    found: list[FoundTable] = []
    tables = page.find_tables(use_layout=False).tables
    if not tables:
        return found
    words = page.get_text("words", flags=TEXT_FLAGS)
    page_area = frame.rect.width * frame.rect.height
    for table in tables:
        rows = [row.cells for row in table.rows]
        converted = convert_table(rows, cell_texts(rows, words), frame)
        if converted is not None and plausible(converted, page_area):
            found.append(converted)
    return found


def cell_texts(
    rows: Sequence[Sequence[RawBox | None]], words: Sequence[Sequence[Any]]
) -> list[list[str | None]]:
    """Each cell's words in reading order (the finder's own text drops inter-word spaces)."""
    grid: list[list[str | None]] = []
    for row in rows:
        out: list[str | None] = []
        for box in row:
            if box is None:
                out.append(None)
                continue
            inside = [
                w
                for w in words
                if box[0] <= (w[0] + w[2]) / 2 <= box[2] and box[1] <= (w[1] + w[3]) / 2 <= box[3]
            ]
            inside.sort(key=lambda w: (w[5], w[6], w[7]))
            out.append(" ".join(str(w[4]) for w in inside))
        grid.append(out)
    return grid


def plausible(table: FoundTable, page_area: float) -> bool:
    """Reject layout boxes the finder mistakes for tables: mostly empty, headless or page-sized."""
    filled = sum(1 for c in table.cells if c.text) / len(table.cells)
    header_empty = not any(c.text for c in table.cells if c.row == 0)
    b = table.bbox
    huge = (b[2] - b[0]) * (b[3] - b[1]) > 0.5 * page_area and len(table.rows) <= 3
    return filled >= 0.5 and not header_empty and not huge


def _span(edges: list[float], start: float, stop: float, tol: float = 2.0) -> int:
    return max(1, sum(1 for e in edges if start - tol <= e < stop - tol))


def convert_table(
    raw_rows: Sequence[Sequence[RawBox | None]],
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
    row_boxes = _row_boxes(cells, n_rows)
    md_rows = _markdown_rows(cells, n_rows, n_cols)
    rows = [TableRow(t, box) for t, box in zip(md_rows, row_boxes, strict=True) if box is not None]
    markdown = "\n".join([md_rows[0], "|" + " --- |" * n_cols, *md_rows[1:]])
    boxes = [b for row in raw_rows for b in row if b]
    return FoundTable(
        bbox=frame.box(_union_raw(boxes)),
        cells=cells,
        rows=rows,
        markdown=markdown,
        html=to_html(cells),
    )


def _union_raw(boxes: list[tuple[float, float, float, float]]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _row_boxes(cells: list[TableCell], n_rows: int) -> list[Box | None]:
    out: list[Box | None] = []
    for r in range(n_rows):
        boxes = [c.bbox for c in cells if c.row == r and c.bbox is not None]
        out.append(_union_raw(boxes) if boxes else None)
    return out


def _cell_md(text: str) -> str:
    return text.replace("|", "\\|") or " "


def _markdown_rows(cells: list[TableCell], n_rows: int, n_cols: int) -> list[str]:
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
