"""Whole-document extraction: open once, page by page, and never lose a page silently."""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from pathlib import Path

import pymupdf

from ocr_engine.pdf import open_pdf, read_pdf_bytes
from ocr_engine.pymupdf_engine import PyMuPDFEngine
from ocr_engine.schema import BlockType, Document, Page, PageError, PageStatus

__all__ = ["extract_document", "mark_repeated_furniture"]

log = logging.getLogger(__name__)

_DIGITS = re.compile(r"\d+")
_FURNITURE_BAND = 0.12  # share of the page height searched for repeated headers/footers


def extract_document(
    path: Path | str | bytes,
    *,
    source: str | None = None,
    password: str | None = None,
    engine: PyMuPDFEngine | None = None,
) -> Document:
    """The structured document of a PDF; raises `BadInputError` when the file cannot be read."""
    data, default_name = read_pdf_bytes(path)
    name = source or default_name
    engine = engine or PyMuPDFEngine()
    with open_pdf(data, password=password, name=name) as pdf:
        metadata = {k: str(v) for k, v in (pdf.metadata or {}).items() if k in ("title", "author")}
        pages = [_extract_page(engine, pdf, index) for index in range(pdf.page_count)]
    mark_repeated_furniture(pages)
    return Document(
        doc_id=hashlib.sha256(data).hexdigest(),
        source=name,
        page_count=len(pages),
        pages=pages,
        metadata={k: v for k, v in metadata.items() if v.strip()},
    )


def _extract_page(engine: PyMuPDFEngine, pdf: pymupdf.Document, index: int) -> Page:
    number = index + 1
    width = height = 1.0
    try:
        page = pdf[index]
        width, height = page.rect.width or 1.0, page.rect.height or 1.0
        return engine.extract_page(page)
    except Exception as exc:
        log.warning("page %d failed in %s: %s", number, engine.name, exc, exc_info=True)
        return Page(
            number=number,
            width=width,
            height=height,
            engine=engine.info,
            status=PageStatus.failed,
            errors=[PageError(code="engine_error", message=f"{type(exc).__name__}: {exc}")],
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
