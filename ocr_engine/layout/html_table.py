"""HTML tables written by OCR models -> grid cells with spans, markdown rows and estimated boxes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape

from ocr_engine.geometry import Box
from ocr_engine.schema import TableCell

__all__ = ["TABLE_SPAN", "ParsedTable", "parse_html_table"]

TABLE_SPAN = re.compile(r"<table\b[^>]*>.*?</table\s*>", re.S | re.I)
_MAX_SPAN = 1000  # a model can write rowspan="99999"; no real table needs more


@dataclass(slots=True)
class _RawCell:
    text: list[str]
    row_span: int
    col_span: int
    header: bool


_TOKEN = re.compile(r"<(/?)([a-zA-Z]+)([^>]*)>|([^<]+)")
_SPAN_ATTR = re.compile(r"""\b(rowspan|colspan)\s*=\s*["']?\s*(\d+)""", re.I)


def _read_rows(table_html: str) -> list[list[_RawCell]]:
    """Rows of cells (text, spans, th/td); nested markup flattened, `<br>` a space, entities
    decoded. A scanner for the small HTML subset OCR models write, not a general parser."""
    rows: list[list[_RawCell]] = []
    cell: _RawCell | None = None
    for match in _TOKEN.finditer(table_html):
        closing, tag, attrs, data = match.groups()
        if data is not None:
            if cell is not None:
                cell.text.append(data)
            continue
        tag = tag.lower()
        if tag in ("td", "th", "tr", "table") and cell is not None:
            rows[-1].append(cell)
            cell = None
        if closing:
            continue
        if tag == "tr":
            rows.append([])
        elif tag in ("td", "th"):
            if not rows:
                rows.append([])
            spans = {k.lower(): v for k, v in _SPAN_ATTR.findall(attrs)}
            cell = _RawCell(
                [], _span(spans.get("rowspan")), _span(spans.get("colspan")), tag == "th"
            )
        elif tag == "br" and cell is not None:
            cell.text.append(" ")
    if cell is not None:
        rows[-1].append(cell)
    return [row for row in rows if row]


def _span(value: str | None) -> int:
    try:
        return min(max(int(value or "1"), 1), _MAX_SPAN)
    except ValueError:
        return 1


@dataclass(slots=True)
class ParsedTable:
    """Cells on a grid (row, col from 0), one markdown row per grid row, and the grid size."""

    cells: list[TableCell]
    rows: list[str]
    n_rows: int
    n_cols: int

    @property
    def markdown(self) -> str:
        if not self.rows:
            return ""
        return "\n".join([self.rows[0], "|" + " --- |" * self.n_cols, *self.rows[1:]])


def parse_html_table(html: str, bbox: Box | None = None) -> ParsedTable:
    """Place each cell on the grid (spans occupy the cells below and to the right); with `bbox`,
    give each cell an estimated box: rows of equal height, columns as wide as their longest text."""
    raw_rows = _read_rows(html)
    n_rows = len(raw_rows)
    occupied: set[tuple[int, int]] = set()
    placed: list[tuple[int, int, _RawCell]] = []
    n_cols = 0
    for r, row in enumerate(raw_rows):
        c = 0
        for cell in row:
            while (r, c) in occupied:
                c += 1
            row_span = min(cell.row_span, n_rows - r)
            for rr in range(r, r + row_span):
                for cc in range(c, c + cell.col_span):
                    occupied.add((rr, cc))
            placed.append((r, c, cell))
            c += cell.col_span
            n_cols = max(n_cols, c)
    n_cols = max(n_cols, max((cc + 1 for _, cc in occupied), default=0))
    texts = {(r, c): " ".join(unescape("".join(cell.text)).split()) for r, c, cell in placed}
    widest = [3] * n_cols
    for r, c, cell in placed:
        if cell.col_span == 1:
            widest[c] = max(widest[c], min(len(texts[(r, c)]), 40))
    col_edges = _column_edges(widest, bbox)
    cells = []
    for r, c, cell in placed:
        row_span = min(cell.row_span, n_rows - r)
        col_span = min(cell.col_span, n_cols - c)
        box = None
        if bbox is not None and col_edges:
            pitch = (bbox[3] - bbox[1]) / n_rows
            box = (
                col_edges[c],
                bbox[1] + r * pitch,
                col_edges[c + col_span],
                bbox[1] + (r + row_span) * pitch,
            )
            box = (round(box[0], 2), round(box[1], 2), round(box[2], 2), round(box[3], 2))
        cells.append(
            TableCell(
                row=r,
                col=c,
                row_span=row_span,
                col_span=col_span,
                text=texts[(r, c)],
                bbox=box,
                header=cell.header,
            )
        )
    rows = _markdown_rows(texts, n_rows, n_cols)
    return ParsedTable(cells=cells, rows=rows, n_rows=n_rows, n_cols=n_cols)


def _column_edges(widths: list[int], bbox: Box | None) -> list[float]:
    """Column boundaries across `bbox`, in proportion to `widths`."""
    if bbox is None or not widths:
        return []
    total = sum(widths)
    edges = [bbox[0]]
    for w in widths:
        edges.append(edges[-1] + (bbox[2] - bbox[0]) * w / total)
    edges[-1] = bbox[2]
    return edges


def _markdown_rows(texts: dict[tuple[int, int], str], n_rows: int, n_cols: int) -> list[str]:
    """Markdown rows with each text at its cell's origin; cells covered by a span stay blank."""
    grid = [[""] * n_cols for _ in range(n_rows)]
    for (r, c), text in texts.items():
        grid[r][c] = text
    return ["| " + " | ".join(v.replace("|", "\\|") or " " for v in row) + " |" for row in grid]
