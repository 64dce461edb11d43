"""Whole-document extraction: open once, page by page, and never lose a page silently."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.reader import PageCache, PageReader
from ocr_engine.inputs.images import document_pdf_bytes
from ocr_engine.inputs.pdf import open_pdf, read_pdf_bytes
from ocr_engine.layout.furniture import FurnitureMarker
from ocr_engine.options import ExtractOptions
from ocr_engine.schema import Document, Page

__all__ = ["PAGE_WINDOW", "extract_document", "iter_pages"]

log = logging.getLogger(__name__)

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
    data = document_pdf_bytes(data, name, password=password)  # an image wrapped, Office rendered
    with open_pdf(data, password=password, name=name) as pdf:
        end = pdf.page_count if last is None else min(last, pdf.page_count)
        for start in range(max(1, first), end + 1, window):
            numbers = list(range(start, min(start + window, end + 1)))
            yield from reader.read(pdf, data, doc_id, numbers, password=password, name=name)


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
    without a trustworthy text layer). `on_page` sees each page as it is read, before its
    furniture is marked (ingest marks it the same way, `FurnitureMarker`)."""
    data, default_name = read_pdf_bytes(path)
    name = source or default_name
    rendered = document_pdf_bytes(data, name, password=password)  # Office rendered, image wrapped
    with open_pdf(rendered, password=password, name=name) as pdf:
        metadata = {k: str(v) for k, v in (pdf.metadata or {}).items() if k in ("title", "author")}
        marker = FurnitureMarker(pdf.page_count)
    pages = []
    with PageReader(options, text_engine=engine, cache=cache) as reader:
        for page in iter_pages(data, name=name, password=password, reader=reader):
            if on_page is not None:
                on_page(page)
            pages += marker.feed([page])
    pages += marker.finish()
    return Document(
        doc_id=hashlib.sha256(data).hexdigest(),
        source=name,
        page_count=len(pages),
        pages=pages,
        metadata={k: v for k, v in metadata.items() if v.strip()},
    )
