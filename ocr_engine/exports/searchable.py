"""Searchable PDF: the original pages with an invisible text layer on every OCR'd page.

Each OCR'd line is written in text render mode 3 (neither filled nor stroked: invisible, but
found by search, selection and text extraction), its font size set so that the glyph box is the
line box's height and stretched horizontally so the text spans the box's width; selection and
search in a viewer then land on the words as the reader saw them. Pages whose text came from the
PDF's own text layer are not touched (their content streams stay byte for byte), nor are any
page's images, size or rotation: objects are neither renumbered nor recompressed (only the streams
this export adds are compressed).

Latin-1 text uses Helvetica (one of the 14 standard fonts: nothing embedded); other text uses
Droid Sans Fallback (CJK and much else), embedded once and subset to the glyphs used when the
pages that use it carry no font of their own (scans), else embedded whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pymupdf

from ocr_engine.engines.pymupdf_engine import ENGINE_NAME as TEXT_LAYER_ENGINE
from ocr_engine.engines.reader import TEXT_LAYER_ROUTE
from ocr_engine.errors import BadInputError
from ocr_engine.inputs.pdf import open_pdf
from ocr_engine.schema import BBox, Block, Document, Page

__all__ = ["INVISIBLE", "TextLine", "is_ocr_page", "ocr_lines", "searchable_pdf"]

log = logging.getLogger(__name__)

INVISIBLE = 3  # PDF text render mode 3: no fill, no stroke
_LATIN = "helv"
_UNICODE = "FolioUnicode"
_MIN_SIDE = 0.5  # points: a box thinner than this cannot hold text


@dataclass(frozen=True)
class TextLine:
    """A line of read text and its box on the displayed page (PDF points, top-left origin)."""

    text: str
    bbox: BBox


def is_ocr_page(page: Page) -> bool:
    """Whether the page's text was read from its image (not from the PDF's text layer)."""
    if page.engine.name == TEXT_LAYER_ENGINE:
        return False
    return not (page.route or "").startswith(TEXT_LAYER_ROUTE)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _block_lines(block: Block) -> Iterator[TextLine]:
    if block.lines:
        for line in block.lines:
            yield TextLine(_flat(line.text), line.bbox)
    elif block.cells:  # a table read without lines: its cells are the units
        for cell in block.cells:
            if cell.bbox is not None:
                yield TextLine(_flat(cell.text), cell.bbox)
    else:
        yield TextLine(_flat(block.text), block.bbox)


def ocr_lines(page: Page) -> list[TextLine]:
    """The lines the text layer of an OCR'd page is made of: non-empty, with a usable box."""
    return [
        line
        for block in page.blocks
        for line in _block_lines(block)
        if line.text
        and line.bbox[2] - line.bbox[0] >= _MIN_SIDE
        and line.bbox[3] - line.bbox[1] >= _MIN_SIDE
    ]


def _is_latin(text: str) -> bool:
    return all(ord(c) < 256 for c in text)


class _Fonts:
    """Helvetica and the Unicode fallback, measured as the PDF will render them."""

    def __init__(self) -> None:
        self.latin = pymupdf.Font(_LATIN)
        self._unicode: pymupdf.Font | None = None

    @property
    def unicode(self) -> pymupdf.Font:
        if self._unicode is None:
            self._unicode = pymupdf.Font("cjk")
        return self._unicode


def _write_line(shape: pymupdf.Shape, page: pymupdf.Page, line: TextLine, fonts: _Fonts) -> bool:
    """Writes one invisible line into `shape`; True when it used the Unicode font."""
    rect = pymupdf.Rect(line.bbox) & page.rect
    if rect.is_empty or rect.width < _MIN_SIDE or rect.height < _MIN_SIDE:
        return False
    latin = _is_latin(line.text)
    font, name = (fonts.latin, _LATIN) if latin else (fonts.unicode, _UNICODE)
    if not latin and name not in {f[4] for f in page.get_fonts()}:
        page.insert_font(fontname=_UNICODE, fontbuffer=font.buffer)
    # Shape takes points on the unrotated page: the line must run along the displayed x axis
    rotation = page.rotation % 360
    box = rect * page.derotation_matrix if rotation else rect
    size = rect.height / (font.ascender - font.descender)
    natural = font.text_length(line.text, fontsize=size)
    if natural <= 0:
        return False
    descent = -font.descender * size
    start = {
        0: pymupdf.Point(box.x0, box.y1 - descent),
        90: pymupdf.Point(box.x1 - descent, box.y1),
        180: pymupdf.Point(box.x1, box.y0 + descent),
        270: pymupdf.Point(box.x0 + descent, box.y0),
    }[rotation]
    scale = rect.width / natural
    stretch = pymupdf.Matrix(1, scale) if rotation % 180 else pymupdf.Matrix(scale, 1)
    shape.insert_text(
        start,
        line.text,
        fontsize=size,
        fontname=name,
        render_mode=INVISIBLE,
        rotate=rotation,
        morph=(start, stretch),
    )
    return not latin


def _overlay(page: pymupdf.Page, lines: list[TextLine], fonts: _Fonts) -> bool:
    """Writes the page's invisible lines in one content stream; True when it used Unicode."""
    shape = page.new_shape()
    used_unicode = False
    for line in lines:
        used_unicode |= _write_line(shape, page, line, fonts)
    shape.commit(overlay=True)
    return used_unicode


def _compress_new_streams(doc: pymupdf.Document, first_new: int) -> None:
    """Deflates the streams this export added that are not compressed yet (the font subset)."""
    for xref in range(first_new, doc.xref_length()):
        if doc.xref_is_stream(xref) and doc.xref_get_key(xref, "Filter")[0] == "null":
            doc.update_stream(xref, doc.xref_stream(xref), compress=True)


def _check_pages(doc: pymupdf.Document, document: Document) -> None:
    if doc.page_count != document.page_count:
        raise BadInputError(
            f"{document.source}: the PDF has {doc.page_count} pages, "
            f"the document {document.page_count}"
        )


def searchable_pdf(document: Document, pdf: bytes, *, password: str | None = None) -> bytes:
    """The PDF `document` was read from, with an invisible text layer on its OCR'd pages.

    Raises `BadInputError` when the PDF cannot be opened or is not the one `document` describes
    (another page count); a document without OCR'd text is given back as it came, byte for byte."""
    if not any(is_ocr_page(p) and ocr_lines(p) for p in document.pages):
        with open_pdf(pdf, password=password, name=document.source) as doc:
            _check_pages(doc, document)
        return pdf
    fonts = _Fonts()
    with open_pdf(pdf, password=password, name=document.source) as doc:
        _check_pages(doc, document)
        first_new = doc.xref_length()
        unicode_pages: list[int] = []
        font_of_its_own = False
        for page in document.pages:
            if not is_ocr_page(page):
                continue
            lines = ocr_lines(page)
            if not lines:
                continue
            target = doc[page.number - 1]
            had_fonts = bool(target.get_fonts())
            if _overlay(target, lines, fonts):
                unicode_pages.append(page.number - 1)
                font_of_its_own |= had_fonts
        if unicode_pages and not font_of_its_own:
            pymupdf.mupdf.pdf_subset_fonts2(
                pymupdf.mupdf.pdf_document_from_fz_document(doc), unicode_pages
            )
        elif unicode_pages:
            log.info("%s: Unicode font embedded whole (OCR'd pages with fonts)", document.source)
        _compress_new_streams(doc, first_new)
        return doc.tobytes(garbage=0, deflate=False)
