"""What an Office, HTML or Markdown source says about its structure, read cheaply from the source.

Headings with levels (the rendering's outline, which LibreOffice and Chromium write from the
source's heading styles and tags, and a Word title or slide titles), list items (Word numbering,
PowerPoint bullets, `<li>`) and tables (Word and PowerPoint tables, a sheet's used cells,
`<table>`, a CSV; Word, PowerPoint and sheet merged cells as spans).
`ocr_engine.layout.office_match` matches them to the rendered page's lines.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import zipfile
from html.parser import HTMLParser
from typing import Any, Literal

from pydantic import BaseModel, Field

from ocr_engine.inputs.office_links import SourceLink, source_links

__all__ = [
    "EMBEDDED_NAME",
    "Item",
    "SheetPage",
    "SourceTable",
    "Span",
    "Structure",
    "source_structure",
]

log = logging.getLogger(__name__)

EMBEDDED_NAME = "folio-office.json"
MAX_ROWS = 2000  # a sheet's rows kept for matching (the rendering has them all)
MAX_COLS = 64


class Item(BaseModel):
    """A heading (with its level), a list item or a paragraph of two words or more, by its text."""

    type: Literal["title", "section_header", "list_item", "text"]
    text: str
    level: int | None = None


class Span(BaseModel):
    """A merged cell: its first row and column in the table, and how many of each it covers."""

    row: int = Field(ge=0)
    col: int = Field(ge=0)
    rows: int = Field(default=1, ge=1)
    cols: int = Field(default=1, ge=1)


class SourceTable(BaseModel):
    """A table's cell texts, row by row (a merged cell's text in its first position only)."""

    rows: list[list[str]]
    spans: list[Span] = Field(default_factory=list, description="its merged cells")
    name: str = ""
    first_col: int = Field(default=1, ge=1, description="a sheet's column of the first (1 = A)")


class SheetPage(BaseModel):
    """A page of a laid-out workbook (`ocr_engine.inputs.sheet_pages`): its sheet, title,
    columns."""

    page: int = Field(ge=1)
    sheet: str
    title: str
    cols: list[int] = Field(default_factory=list, description="table columns shown; [] = all")


class Structure(BaseModel):
    """The source's structure, embedded in its rendering."""

    kind: str
    read_as: str = Field(default="", description="the kind read: the OOXML sibling's, else kind")
    items: list[Item] = Field(default_factory=list)
    tables: list[SourceTable] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    sheet_pages: list[SheetPage] = Field(default_factory=list)
    links: list[SourceLink] = Field(default_factory=list)


def _clean(text: str) -> str:
    return " ".join(text.split())


def _trimmed(rows: list[list[str]]) -> list[list[str]]:
    table = _table(rows, [])
    return table.rows if table is not None else []


def _table(rows: list[list[str]], spans: list[Span]) -> SourceTable | None:
    """The table of `rows` without empty rows and outer empty columns, `spans` moved to match."""
    rows = [r[:MAX_COLS] for r in rows[:MAX_ROWS]]
    kept = [n for n, r in enumerate(rows) if any(c.strip() for c in r)]
    if not kept:
        return None
    width = max(i + 1 for n in kept for i, c in enumerate(rows[n]) if c.strip())
    first = min(i for n in kept for i, c in enumerate(rows[n]) if c.strip())
    moved = []
    for span in spans:
        covered = [k for k, n in enumerate(kept) if span.row <= n < span.row + span.rows]
        cols = min(span.col + span.cols, width) - span.col
        if span.row in kept and first <= span.col < width and (len(covered) > 1 or cols > 1):
            at = kept.index(span.row)
            moved.append(Span(row=at, col=span.col - first, rows=len(covered), cols=cols))
    cut = [[_clean(c) for c in (rows[n] + [""] * width)[first:width]] for n in kept]
    return SourceTable(rows=cut, spans=moved)


def _docx(data: bytes) -> tuple[list[Item], list[SourceTable]]:
    import docx

    document = docx.Document(io.BytesIO(data))
    items: list[Item] = []
    for paragraph in document.paragraphs:
        text = _clean(paragraph.text)
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if not text:
            continue
        if style == "Title":
            items.append(Item(type="title", text=text, level=1))
        elif style == "Subtitle":  # the title's second line, a heading under it
            items.append(Item(type="section_header", text=text, level=1))
        elif style.startswith("Heading"):
            digits = "".join(c for c in style if c.isdigit())
            items.append(Item(type="section_header", text=text, level=int(digits or 1)))
        elif _listed(paragraph, style):
            items.append(Item(type="list_item", text=text))
        elif len(text.split()) > 1:
            items.append(Item(type="text", text=text))
    tables = []
    for table in document.tables:
        rows: list[list[str]] = []
        origins: dict[Any, Span] = {}  # a merged cell's <w:tc>: where it starts, how far it goes
        for r, row in enumerate(table.rows):
            cells = []
            for c, cell in enumerate(row.cells):  # a merged cell comes once per grid cell it spans
                if (span := origins.get(cell._tc)) is None:
                    origins[cell._tc] = Span(row=r, col=c)
                    cells.append(cell.text)
                    continue
                span.rows, span.cols = (
                    max(span.rows, r - span.row + 1),
                    max(span.cols, c - span.col + 1),
                )
                cells.append("")
            rows.append(cells)
        merged = [s for s in origins.values() if s.rows > 1 or s.cols > 1]
        if (found := _table(rows, merged)) is not None:
            tables.append(found)
    return items, tables


def _listed(paragraph: Any, style: str) -> bool:
    """A Word list paragraph: numbering of its own (numId 0: numbering taken away), else a list
    style's ("List Bullet", not "List Paragraph")."""
    ppr = paragraph._p.pPr
    num = ppr.numPr if ppr is not None else None
    if num is not None and num.numId is not None:
        return str(num.numId.val) != "0"
    return style.startswith("List ") and style != "List Paragraph"


_BULLETS = ("buChar", "buAutoNum")


def _pptx(data: bytes) -> tuple[list[Item], list[SourceTable]]:
    import pptx
    from pptx.enum.shapes import PP_PLACEHOLDER

    deck = pptx.Presentation(io.BytesIO(data))
    items: list[Item] = []
    tables: list[SourceTable] = []
    titles = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE)
    for slide in deck.slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                is_title = shape.is_placeholder and shape.placeholder_format.type in titles
                body = shape.is_placeholder and not is_title
                for paragraph in shape.text_frame.paragraphs:
                    text = _clean("".join(r.text for r in paragraph.runs))
                    if not text:
                        continue
                    ppr = paragraph._p.pPr
                    marks = ppr is not None and any(
                        child.tag.endswith(_BULLETS) for child in ppr.iterchildren()
                    )
                    if is_title:
                        items.append(Item(type="title", text=text, level=1))
                    elif marks or (body and paragraph.level > 0):
                        items.append(Item(type="list_item", text=text))
                    elif len(text.split()) > 1:
                        items.append(Item(type="text", text=text))
            if getattr(shape, "has_table", False):
                rows = [
                    ["" if cell.is_spanned else cell.text for cell in row.cells]
                    for row in shape.table.rows
                ]
                merged = [
                    Span(row=r, col=c, rows=cell.span_height, cols=cell.span_width)
                    for r, row in enumerate(shape.table.rows)
                    for c, cell in enumerate(row.cells)
                    if cell.is_merge_origin
                ]
                if (found := _table(rows, merged)) is not None:
                    tables.append(found)
    return items, tables


def _xlsx(data: bytes) -> tuple[list[Item], list[SourceTable]]:
    import openpyxl

    from ocr_engine.inputs.cell_format import shown_value

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    tables = []
    try:
        for sheet in book.worksheets:
            rows = [
                [shown_value(c.value, getattr(c, "number_format", "General")) for c in row]
                for row in sheet.iter_rows(max_row=MAX_ROWS, max_col=MAX_COLS)
            ]
            if (found := _table(rows, _merged(data, sheet))) is not None:
                used = [i for r in rows for i, c in enumerate(r[:MAX_COLS]) if c.strip()]
                first = min(used) + 1
                tables.append(found.model_copy(update={"name": sheet.title, "first_col": first}))
    finally:
        book.close()
    return [], tables


_MERGE = re.compile(r'<mergeCell ref="([A-Z]+[0-9]+):([A-Z]+[0-9]+)"')


def _merged(data: bytes, sheet: Any) -> list[Span]:
    """A sheet's merged cells, from its part's `<mergeCells>` (a read-only sheet keeps none)."""
    from openpyxl.utils.cell import coordinate_to_tuple

    path = getattr(sheet, "_worksheet_path", None)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            xml = archive.read(path).decode("utf-8", "replace") if path else ""
    except (KeyError, zipfile.BadZipFile, OSError):
        return []
    spans = []
    for start, end in _MERGE.findall(xml):
        (r0, c0), (r1, c1) = coordinate_to_tuple(start), coordinate_to_tuple(end)
        spans.append(Span(row=r0 - 1, col=c0 - 1, rows=r1 - r0 + 1, cols=c1 - c0 + 1))
    return spans


def _csv(data: bytes) -> tuple[list[Item], list[SourceTable]]:
    text = data.decode("utf-8-sig", "replace")
    rows = list(csv.reader(io.StringIO(text)))
    trimmed = _trimmed(rows)
    return [], [SourceTable(rows=trimmed)] if trimmed else []


class _Html(HTMLParser):
    """Headings, list items and tables of an HTML page (stdlib parser, no script run)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[Item] = []
        self.tables: list[SourceTable] = []
        self._text: list[str] | None = None
        self._what: tuple[str, int | None] | None = None
        self._tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._what, self._text = ("section_header", int(tag[1])), []
        elif tag == "li":
            self._what, self._text = ("list_item", None), []
        elif tag == "table":
            self._tables.append([])
        elif tag == "tr" and self._tables:
            self._tables[-1].append([])
        elif tag in ("td", "th") and self._tables:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip = max(0, self._skip - 1)
        elif (
            (tag == "li" or (len(tag) == 2 and tag[0] == "h"))
            and self._what
            and self._text is not None
        ):
            text = _clean("".join(self._text))
            kind, level = self._what
            if text:
                self.items.append(Item(type=kind, text=text, level=level))  # type: ignore[arg-type]
            self._what, self._text = None, None
        elif tag in ("td", "th") and self._cell is not None and self._tables:
            if not self._tables[-1]:
                self._tables[-1].append([])
            self._tables[-1][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table" and self._tables and (trimmed := _trimmed(self._tables.pop())):
            self.tables.append(SourceTable(rows=trimmed))

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._text is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _web(data: bytes, kind: str) -> tuple[list[Item], list[SourceTable]]:
    from ocr_engine.inputs.web_render import page_html

    parser = _Html()
    parser.feed(page_html(data, kind))
    parser.close()
    return parser.items, parser.tables


_READERS = {"docx": _docx, "pptx": _pptx, "xlsx": _xlsx, "xlsm": _xlsx, "csv": _csv}


def source_structure(data: bytes, kind: str, toc: list[Any]) -> Structure:
    """The structure of a source of `kind`; its rendering's outline `toc` gives the headings of
    the formats read no further (an unreadable source: the outline alone)."""
    items: list[Item] = []
    tables: list[SourceTable] = []
    try:
        if kind in ("html", "md"):
            items, tables = _web(data, kind)
        elif (reader := _READERS.get(kind)) is not None:
            items, tables = reader(data)
    except Exception as exc:  # the rendering is what counts; its structure is a bonus
        log.warning("the structure of a %s file could not be read: %s", kind, exc)
    if kind not in ("pptx", "ppt", "odp", "xlsx", "xlsm", "xls", "ods", "csv"):
        known = {i.text for i in items}
        for level, title, _page in toc:
            text = _clean(str(title))
            if text and text not in known:
                items.append(Item(type="section_header", text=text, level=int(level)))
    links = source_links(data, kind)
    return Structure(kind=kind, items=items, tables=tables, links=links)
