"""A workbook's rendered sheets laid out to be read: each sheet under its name, a wide one split.

LibreOffice renders each sheet as one page of its own size (`SinglePageSheets`), from the first
used cell. Each such page gets the sheet's name as a title line above it (as a printed sheet's
header says it). A sheet wider than an A3 landscape page is split by columns: each page shows the
sheet's full height (so its header row at the top) with at most `MAX_COLS` columns within an A4
landscape width, shared evenly between as few pages as that takes, the row-label column repeated
on the left when the first column holds labels. The column boundaries come from
the workbook's column widths scaled to the rendered width, and are checked against where the
rendered cells' text lies; a sheet whose text does not fall in its columns is left whole.
`SheetPage` records which table columns each page shows, so its table is matched with the right
headers (`ocr_engine.layout.office_match`).
"""

from __future__ import annotations

import io
import logging

import pymupdf

from ocr_engine.inputs.office_structure import Item, SheetPage, SourceTable, Structure

__all__ = ["MAX_COLS", "PAGE_PT", "WIDE_PT", "lay_out_sheets"]

log = logging.getLogger(__name__)

WIDE_PT = 1191.0  # a sheet wider than an A3 landscape page is split by columns
PAGE_PT = 842.0  # the most a split page's columns span (A4 landscape), row labels included
MAX_COLS = 12  # the most columns a split page shows besides the row labels
TITLE_PT = 26.0
_LABELS_PT = 0.35 * PAGE_PT  # a first column wider than this is not repeated
_FIT = 0.8  # share of the checked cells whose text must lie in their predicted column


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _widths(sheet: object, first: int, count: int) -> list[float]:
    """Widths (in the workbook's character units) of `count` columns from column `first`."""
    fmt = getattr(sheet, "sheet_format", None)
    default = float(getattr(fmt, "defaultColWidth", None) or 8.43)
    widths = [default] * count
    for dim in getattr(sheet, "column_dimensions", {}).values():
        lo, hi = dim.min or 0, dim.max or 0
        for col in range(max(lo, first), min(hi, first + count - 1) + 1):
            widths[col - first] = 0.0 if dim.hidden else float(dim.width or default)
    return widths


def _fits(page: pymupdf.Page, edges: list[float], table: SourceTable) -> bool:
    """Whether the cells' texts lie in the columns `edges` predicts (first rows checked)."""
    columns = ["" for _ in edges[1:]]
    for x0, _y0, x1, _y1, word, *_ in sorted(page.get_text("words"), key=lambda w: (w[1], w[0])):
        centre = (x0 + x1) / 2
        at = next((i for i in range(len(columns)) if edges[i] <= centre < edges[i + 1]), None)
        if at is not None:
            columns[at] += _norm(word)
    checked = [
        (c, _norm(text)) for row in table.rows[:20] for c, text in enumerate(row) if _norm(text)
    ]
    found = sum(c < len(columns) and key in columns[c] for c, key in checked)
    return bool(checked) and found >= _FIT * len(checked)


def _labels(table: SourceTable, widths: list[float]) -> bool:
    """Whether the first column holds row labels (mostly text) narrow enough to repeat."""
    values = [row[0] for row in table.rows[1:] if row and row[0].strip()]
    texts = [v for v in values if not v.replace(",", "").replace(".", "").strip("-% ").isdigit()]
    return bool(values) and len(texts) >= 0.6 * len(values) and widths[0] <= _LABELS_PT


def _greedy(cols: list[int], widths: list[float], room: float) -> list[list[int]]:
    bands: list[list[int]] = []
    band: list[int] = []
    used = 0.0
    for col in cols:
        if band and (used + widths[col] > room or len(band) >= MAX_COLS):
            bands.append(band)
            band, used = [], 0.0
        band.append(col)
        used += widths[col]
    return [*bands, band] if band else bands


def _even(cols: list[int], widths: list[float], count: int) -> list[list[int]]:
    """`cols` cut into `count` bands of about equal width."""
    share = sum(widths[c] for c in cols) / count
    bands: list[list[int]] = [[]]
    done = 0.0
    for col in cols:
        if bands[-1] and done + widths[col] / 2 > share * len(bands) and len(bands) < count:
            bands.append([])
        bands[-1].append(col)
        done += widths[col]
    return bands


def _bands(widths: list[float], labels: bool) -> list[list[int]]:
    """Table columns per page: as few pages as fit `PAGE_PT` and `MAX_COLS`, the columns
    shared evenly between them (no page a sliver), the row labels repeated on each."""
    cols = list(range(1 if labels else 0, len(widths)))
    room = PAGE_PT - (widths[0] if labels else 0.0)
    greedy = _greedy(cols, widths, room)
    even = _even(cols, widths, len(greedy))
    fits = all(len(b) <= MAX_COLS and sum(widths[c] for c in b) <= room for b in even)
    return [([0] if labels else []) + b for b in (even if fits else greedy)]


def _columns(
    page: pymupdf.Page, sheet: object, table: SourceTable
) -> tuple[list[float], list[list[int]]] | None:
    """The columns' edges (x on the page) and the columns of each split page; None when the
    sheet is not to be, or cannot be, split."""
    count = max(len(row) for row in table.rows)
    widths = _widths(sheet, table.first_col, count)
    total = sum(widths)
    if total <= 0 or count < 2:
        return None
    points = [w * page.rect.width / total for w in widths]
    edges = [sum(points[:i]) for i in range(count + 1)]
    if not _fits(page, edges, table):
        log.info("sheet %s: its text does not lie in its columns; left whole", table.name)
        return None
    bands = _bands(points, _labels(table, points))
    return (edges, bands) if len(bands) > 1 else None


def _letters(first: int, cols: list[int]) -> str:
    from openpyxl.utils import get_column_letter

    names = [get_column_letter(first + c) for c in cols]
    if len(cols) > 1 and cols[0] == 0 and cols[1] != 1:
        return f"{names[0]}, {names[1]}-{names[-1]}"
    return f"{names[0]}-{names[-1]}" if len(names) > 1 else names[0]


def _clips(edges: list[float], cols: list[int], height: float) -> list[pymupdf.Rect]:
    """The page's parts that show `cols`, adjacent columns in one part."""
    runs: list[pymupdf.Rect] = []
    for col in cols:
        x0, x1 = edges[col], edges[col + 1]
        if runs and abs(runs[-1].x1 - x0) < 0.01:
            runs[-1].x1 = x1
        else:
            runs.append(pymupdf.Rect(x0, 0, x1, height))
    return runs


def _placed(
    out: pymupdf.Document, src: pymupdf.Document, number: int, title: str, parts: list[pymupdf.Rect]
) -> None:
    """A page of `out`: the title line above the `parts` (clips of page `number`) side by side."""
    helv = pymupdf.Font("helv")
    font = helv if all(helv.has_glyph(ord(ch)) for ch in title) else pymupdf.Font("cjk")
    height = src[number].rect.height
    width = max(sum(p.width for p in parts), 12 + font.text_length(title, fontsize=13))
    page = out.new_page(width=width, height=height + TITLE_PT)
    writer = pymupdf.TextWriter(page.rect)
    writer.append((6, TITLE_PT - 9), title, font=font, fontsize=13)
    writer.write_text(page)
    at = 0.0
    for part in parts:
        target = pymupdf.Rect(at, TITLE_PT, at + part.width, TITLE_PT + height)
        page.show_pdf_page(target, src, number, clip=part)
        at += part.width


def _names(data: bytes) -> list[str]:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    try:
        return list(book.sheetnames)
    finally:
        book.close()


def lay_out_sheets(
    pdf: pymupdf.Document, data: bytes, structure: Structure
) -> pymupdf.Document | None:
    """The rendering laid out sheet by sheet (titles, wide sheets split), recorded in
    `structure`; None when its pages are not one per sheet of the workbook."""
    import openpyxl

    names = _names(data)
    if pdf.page_count != len(names):
        log.info("%d pages for %d sheets: left as rendered", pdf.page_count, len(names))
        return None
    book = None
    if any(pdf[i].rect.width > WIDE_PT for i in range(pdf.page_count)):  # widths needed
        book = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    tables = {t.name: t for t in structure.tables if t.name}
    out = pymupdf.open()
    for number, name in enumerate(names):
        page, table = pdf[number], tables.get(name)
        if table is None or not page.get_text("words"):
            out.insert_pdf(pdf, from_page=number, to_page=number)  # an empty sheet, a chart
            continue
        wide = book is not None and page.rect.width > WIDE_PT
        found = _columns(page, book[name], table) if wide and book is not None else None
        edges, bands = found if found is not None else ([], [[]])
        for cols in bands:
            title = f"{name} (columns {_letters(table.first_col, cols)})" if cols else name
            parts = _clips(edges, cols, page.rect.height) if cols else [page.rect]
            _placed(out, pdf, number, title, parts)
            structure.sheet_pages.append(
                SheetPage(page=out.page_count, sheet=name, title=title, cols=cols)
            )
            structure.items.append(Item(type="title", text=title, level=1))
    return out
