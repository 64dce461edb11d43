"""Whole-document extraction: open once, page by page, and never lose a page silently."""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from ocr_engine.options import ExtractOptions
from ocr_engine.pdf import open_pdf, read_pdf_bytes
from ocr_engine.pymupdf_engine import PyMuPDFEngine
from ocr_engine.reader import PageCache, PageReader
from ocr_engine.schema import Block, BlockType, Document, Page

__all__ = ["PAGE_WINDOW", "extract_document", "iter_pages", "mark_repeated_furniture"]

log = logging.getLogger(__name__)

_DIGITS = re.compile(r"\d+")
_FURNITURE_BAND = 0.12  # share of the page height searched for repeated headers/footers
_FURNITURE_LINES = 3  # lines of repeated text taken off the top or bottom of the content
_FURNITURE_WORDS = 8  # longer text off the edge bands is content, however often it repeats
PAGE_WINDOW = 64  # pages routed together: OCR requests of one window are in flight at once

PageCallback = Callable[[Page], None]


def iter_pages(
    data: bytes,
    *,
    name: str,
    password: str | None = None,
    reader: PageReader | None = None,
    first: int = 1,
    last: int | None = None,
    window: int = PAGE_WINDOW,
) -> Iterator[Page]:
    """Pages `first`..`last` (1-based, inclusive) in order, read a window at a time."""
    reader = reader or PageReader()
    doc_id = hashlib.sha256(data).hexdigest()
    with open_pdf(data, password=password, name=name) as pdf:
        end = pdf.page_count if last is None else min(last, pdf.page_count)
        for start in range(max(1, first), end + 1, window):
            numbers = list(range(start, min(start + window, end + 1)))
            yield from reader.read(pdf, data, doc_id, numbers, password=password)


def extract_document(
    path: Path | str | bytes,
    *,
    source: str | None = None,
    password: str | None = None,
    engine: PyMuPDFEngine | None = None,
    options: ExtractOptions | None = None,
    cache: PageCache | None = None,
    on_page: PageCallback | None = None,
) -> Document:
    """The structured document of a PDF; raises `BadInputError` when the file cannot be read.

    Without `options`, pages are routed as `ExtractOptions()` says (OCR on the CPU for pages
    without a trustworthy text layer)."""
    data, default_name = read_pdf_bytes(path)
    name = source or default_name
    with open_pdf(data, password=password, name=name) as pdf:
        metadata = {k: str(v) for k, v in (pdf.metadata or {}).items() if k in ("title", "author")}
    pages = []
    with PageReader(options, text_engine=engine, cache=cache) as reader:
        for page in iter_pages(data, name=name, password=password, reader=reader):
            pages.append(page)
            if on_page is not None:
                on_page(page)
    mark_repeated_furniture(pages)
    return Document(
        doc_id=hashlib.sha256(data).hexdigest(),
        source=name,
        page_count=len(pages),
        pages=pages,
        metadata={k: v for k, v in metadata.items() if v.strip()},
    )


def _furniture_key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def mark_repeated_furniture(pages: list[Page], min_pages: int = 3) -> None:
    """Retype as page header/footer the text repeated at the top/bottom of many pages: in a band
    at the page's top or bottom edge, or on the first or last line of the page's other text
    (filings converted from HTML put the footer and page number right under the content)."""
    if len(pages) < min_pages:
        return
    threshold = max(min_pages, len(pages) // 3)
    for _ in range(_FURNITURE_LINES):  # a footer line above the page number shows once that is out
        if not _mark_repeated(pages, threshold):
            return


def _mark_repeated(pages: list[Page], threshold: int) -> bool:
    seen: Counter[tuple[str, str]] = Counter()
    for page in pages:
        seen.update({(zone, _furniture_key(block.text)) for block, zone in _zoned(page)})
    repeated = {key for key, count in seen.items() if count >= threshold}
    changed = False
    for page in pages:
        marked = False
        for block, zone in _zoned(page):
            if block.type not in _KEEP and (zone, _furniture_key(block.text)) in repeated:
                block.type = BlockType.page_header if zone == "top" else BlockType.page_footer
                block.level = None
                marked = True
        if marked:
            _reorder(page)
            changed = True
    return changed


def _zoned(page: Page) -> list[tuple[Block, str]]:
    """The short blocks that are or may be furniture, with their zone ("top" or "bottom"): in the
    band at the page's edge, or, if a few words, on the first or last line of the page's text,
    other text beneath or above them."""
    body = [b for b in page.blocks if b.type not in _FURNITURE and b.text.strip()]
    first_top = min((b.bbox[1] for b in body), default=0.0)
    last_bottom = max((b.bbox[3] for b in body), default=0.0)
    zoned = []
    for block in page.blocks:
        if not block.text.strip() or len(block.lines) > 2 or block.type in _CONTENT:
            continue
        zone = _zone(page, block.bbox)
        if zone is None and _short(block) and block.type not in _KEEP:
            half_line = (block.bbox[3] - block.bbox[1]) / max(1, len(block.lines)) / 2
            below = any(b.bbox[1] > block.bbox[3] for b in body)
            above = any(b.bbox[3] < block.bbox[1] for b in body)
            if below and block.bbox[1] <= first_top + half_line:
                zone = "top"
            elif above and block.bbox[3] >= last_bottom - half_line:
                zone = "bottom"
        if zone is not None:
            zoned.append((block, zone))
    return zoned


def _short(block: Block) -> bool:
    """A few words of plain text ("Chapter 2" atop its pages is a heading, however repeated)."""
    return block.type not in _HEADINGS and len(block.text.split()) <= _FURNITURE_WORDS


_HEADINGS = (BlockType.title, BlockType.section_header)
_CONTENT = (BlockType.table, BlockType.figure)
_FURNITURE = (BlockType.page_header, BlockType.page_footer)
_KEEP = (*_CONTENT, *_FURNITURE)
_RANK = {BlockType.page_header: 0, BlockType.page_footer: 2}


def _reorder(page: Page) -> None:
    """Headers first and footers last, keeping the body order; ids follow the new order."""
    page.blocks.sort(key=lambda b: _RANK.get(b.type, 1))
    for index, block in enumerate(page.blocks):
        block.id = f"p{page.number}-b{index}"


def _zone(page: Page, bbox: tuple[float, float, float, float]) -> str | None:
    if bbox[3] <= _FURNITURE_BAND * page.height:
        return "top"
    if bbox[1] >= (1 - _FURNITURE_BAND) * page.height:
        return "bottom"
    return None
