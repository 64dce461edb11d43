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
from ocr_engine.schema import BlockType, Document, Page

__all__ = ["PAGE_WINDOW", "extract_document", "iter_pages", "mark_repeated_furniture"]

log = logging.getLogger(__name__)

_DIGITS = re.compile(r"\d+")
_FURNITURE_BAND = 0.12  # share of the page height searched for repeated headers/footers
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
    """Retype as page header/footer the text repeated near the top/bottom of many pages."""
    if len(pages) < min_pages:
        return
    seen: Counter[tuple[str, str]] = Counter()
    for page in pages:
        keys = set()
        for block in page.blocks:
            zone = _zone(page, block.bbox)
            if zone and block.text and len(block.lines) <= 2:
                keys.add((zone, _furniture_key(block.text)))
        seen.update(keys)
    threshold = max(min_pages, len(pages) // 3)
    repeated = {key for key, count in seen.items() if count >= threshold}
    if not repeated:
        return
    for page in pages:
        changed = False
        for block in page.blocks:
            zone = _zone(page, block.bbox)
            key = (zone or "", _furniture_key(block.text))
            if zone and block.type not in _KEEP and key in repeated:
                block.type = BlockType.page_header if zone == "top" else BlockType.page_footer
                block.level = None
                changed = True
        if changed:
            _reorder(page)


_KEEP = (BlockType.table, BlockType.figure, BlockType.page_header, BlockType.page_footer)
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
