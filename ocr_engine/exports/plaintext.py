"""Plain text of a structured document: each block's lines in reading order, pages split by \\f."""

from __future__ import annotations

from collections.abc import Iterator

from ocr_engine.schema import Block, Document, Page

__all__ = ["block_text", "document_text", "page_text"]


def block_text(block: Block) -> str:
    """A block's text, one visual line a line (its lines when it has them)."""
    if block.lines:
        return "\n".join(" ".join(line.text.split()) for line in block.lines)
    return block.text.strip()


def page_text(page: Page) -> str:
    """The page's blocks in reading order, a blank line between them."""
    return "\n\n".join(text for block in page.blocks if (text := block_text(block)))


def document_text(document: Document) -> Iterator[str]:
    """The document's text a page at a time, a form feed between pages (as pdftotext does)."""
    for index, page in enumerate(document.pages):
        yield ("\f" if index else "") + page_text(page) + "\n"
