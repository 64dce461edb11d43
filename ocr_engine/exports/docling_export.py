"""folio's structured document as a `DoclingDocument`, for Docling's chunkers and integrations.

Every block becomes the Docling item of its kind (title, section_header with its level, text,
list items grouped in a list, table with its cells and spans, picture, caption attached to the
table or picture beside it, formula, code, footnote; running headers and footers in the furniture
layer), each with one `ProvenanceItem`: its page, its box, and the span of its text. Boxes are
given with a bottom-left origin, as Docling's own PDF pipeline writes them (`BoundingBox.
to_top_left_origin(page height)` gives folio's back); table cells' boxes likewise.
"""

from __future__ import annotations

import re

from docling_core.types.doc import (
    BoundingBox,
    ContentLayer,
    CoordOrigin,
    DocItem,
    DocItemLabel,
    DoclingDocument,
    GroupItem,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)

from ocr_engine.schema import BBox, Block, BlockType, Document, Page

__all__ = ["docling_bbox", "to_docling"]

_FURNITURE = {BlockType.page_header: DocItemLabel.PAGE_HEADER}
_FURNITURE[BlockType.page_footer] = DocItemLabel.PAGE_FOOTER
_TEXT_LABELS = {BlockType.text: DocItemLabel.TEXT, BlockType.footnote: DocItemLabel.FOOTNOTE}
_BULLET = re.compile(r"^\s*[•◦▪▫●○■□‣⁃∙·*\-–—]\s*")
_NUMBER = re.compile(r"^\s*(\(?\d+[.)]|\(?[a-zA-Z][.)])\s+")
_HEADING_MARKS = re.compile(r"^#+\s*")


def docling_bbox(bbox: BBox, page_height: float) -> BoundingBox:
    """A folio box (top-left origin, points) as Docling's bottom-left-origin box."""
    x0, y0, x1, y1 = bbox
    top_left = BoundingBox(l=x0, t=y0, r=x1, b=y1, coord_origin=CoordOrigin.TOPLEFT)
    return top_left.to_bottom_left_origin(page_height)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _prov(block: Block, page: Page, text: str) -> ProvenanceItem:
    return ProvenanceItem(
        page_no=page.number, bbox=docling_bbox(block.bbox, page.height), charspan=(0, len(text))
    )


def _cells(block: Block, page: Page) -> TableData:
    if not block.cells:
        return _markdown_table(block.text)
    cells = [
        TableCell(
            bbox=None if c.bbox is None else docling_bbox(c.bbox, page.height),
            row_span=c.row_span,
            col_span=c.col_span,
            start_row_offset_idx=c.row,
            end_row_offset_idx=c.row + c.row_span,
            start_col_offset_idx=c.col,
            end_col_offset_idx=c.col + c.col_span,
            text=_flat(c.text),
            column_header=c.header,
        )
        for c in block.cells
    ]
    rows = max(c.end_row_offset_idx for c in cells)
    cols = max(c.end_col_offset_idx for c in cells)
    return TableData(table_cells=cells, num_rows=rows, num_cols=cols)


def _markdown_table(text: str) -> TableData:
    """A table known only by its markdown rows (`| a | b |`), without cell boxes."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.strip().startswith("|") and not set(line.strip()) <= set("|-: ")
    ]
    cells = [
        TableCell(
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            text=value,
            column_header=r == 0,
        )
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
    ]
    cols = max((len(row) for row in rows), default=0)
    return TableData(table_cells=cells, num_rows=len(rows), num_cols=cols)


class _Builder:
    """Adds a folio document's blocks to a DoclingDocument in reading order."""

    def __init__(self, document: Document) -> None:
        self.doc = DoclingDocument(name=document.source.rsplit(".", 1)[0] or document.doc_id)
        self.list_group: GroupItem | None = None
        self.pending_captions: list[tuple[Block, Page]] = []
        self.last_float: DocItem | None = None  # the table or picture a caption may belong to

    def page(self, page: Page) -> None:
        self.doc.add_page(page_no=page.number, size=Size(width=page.width, height=page.height))
        self.last_float = None
        for block in page.blocks:
            self.block(block, page)
        self._flush_captions(None)

    def block(self, block: Block, page: Page) -> None:
        kind = block.type
        if kind in _FURNITURE:
            text = _flat(block.text)
            self.doc.add_text(
                _FURNITURE[kind], text, prov=_prov(block, page, text),
                content_layer=ContentLayer.FURNITURE,
            )  # fmt: skip
            return
        if kind is not BlockType.list_item:
            self.list_group = None
        if kind is BlockType.caption:
            if self.last_float is not None:
                self._caption(block, page, self.last_float)
            else:
                self.pending_captions.append((block, page))
            return
        item = self._item(block, page)
        if kind in (BlockType.table, BlockType.figure):
            self._flush_captions(item)
            self.last_float = item
        else:
            self._flush_captions(None)
            self.last_float = None

    def _item(self, block: Block, page: Page) -> DocItem:
        kind, doc = block.type, self.doc
        text = _flat(block.text)
        if kind is BlockType.title:
            text = _HEADING_MARKS.sub("", text)
            return doc.add_title(text, prov=_prov(block, page, text))
        if kind is BlockType.section_header:
            text = _HEADING_MARKS.sub("", text)
            level = block.level or 1
            return doc.add_heading(text, level=level, prov=_prov(block, page, text))
        if kind is BlockType.list_item:
            if self.list_group is None:
                self.list_group = doc.add_list_group()
            numbered = _NUMBER.match(text)
            marker = numbered.group(1) if numbered else "-"
            text = text[numbered.end() :] if numbered else _BULLET.sub("", text, count=1)
            return doc.add_list_item(
                text, enumerated=numbered is not None, marker=marker,
                prov=_prov(block, page, text), parent=self.list_group,
            )  # fmt: skip
        if kind is BlockType.table:
            return doc.add_table(data=_cells(block, page), prov=_prov(block, page, ""))
        if kind is BlockType.figure:
            picture = doc.add_picture(prov=_prov(block, page, ""))
            if text:
                doc.add_text(DocItemLabel.TEXT, text, prov=_prov(block, page, text), parent=picture)
            return picture
        if kind is BlockType.formula:
            return doc.add_formula(text, prov=_prov(block, page, text))
        if kind is BlockType.code:
            code = block.text.strip().strip("`").strip()
            return doc.add_code(code, prov=_prov(block, page, code))
        label = _TEXT_LABELS.get(kind, DocItemLabel.TEXT)
        return doc.add_text(label, text, prov=_prov(block, page, text))

    def _caption(self, block: Block, page: Page, owner: DocItem) -> None:
        text = _flat(block.text)
        caption = self.doc.add_text(
            DocItemLabel.CAPTION, text, prov=_prov(block, page, text), parent=owner
        )
        captions = getattr(owner, "captions", None)
        if captions is not None:
            captions.append(caption.get_ref())

    def _flush_captions(self, owner: DocItem | None) -> None:
        """Captions that came before a table or picture go to it; any others stand alone."""
        for block, page in self.pending_captions:
            if owner is not None:
                self._caption(block, page, owner)
            else:
                text = _flat(block.text)
                self.doc.add_text(DocItemLabel.CAPTION, text, prov=_prov(block, page, text))
        self.pending_captions = []


def to_docling(document: Document) -> DoclingDocument:
    """The DoclingDocument of a folio document: every block with its page and box."""
    builder = _Builder(document)
    for page in document.pages:
        builder.page(page)
    return builder.doc
