"""Markdown of a structured document: headings, paragraphs, lists, tables, one part per page.

Each page opens with `<!-- page N -->` and pages are separated by a `---` rule. Running page
headers and footers are left out (they repeat on every page); a figure without text becomes a
placeholder; a failed page says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ocr_engine.schema import Block, BlockType, Document, Page, PageStatus

__all__ = ["block_markdown", "document_markdown", "page_markdown"]

_SKIPPED = (BlockType.page_header, BlockType.page_footer)
_BULLET = re.compile(r"^\s*[•◦▪▫●○■□‣⁃∙·*\-–—]\s*")
_NUMBERED = re.compile(r"^\s*(\(?\d+[.)]|\(?[a-zA-Z][.)])\s+")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def block_markdown(block: Block) -> str:
    """One block as markdown ('' when it has nothing to show)."""
    text = block.text.strip()
    kind = block.type
    if kind in (BlockType.title, BlockType.section_header):
        if not text:
            return ""
        default = 1 if kind is BlockType.title else 2
        level = min(max(block.level or default, 1), 6)
        return f"{'#' * level} {_one_line(text).lstrip('#').strip()}"
    if kind is BlockType.list_item:
        if _NUMBERED.match(text):
            return _one_line(text)
        return f"- {_one_line(_BULLET.sub('', text, count=1))}" if text else ""
    if kind is BlockType.table:
        return text or (block.html or "").strip()
    if kind is BlockType.figure:
        return f"*[figure]* {text}".strip()
    if kind is BlockType.caption:
        return f"*{_one_line(text)}*" if text else ""
    if kind is BlockType.formula:
        return f"$$\n{text}\n$$" if text else ""
    if kind is BlockType.code:
        return f"```\n{block.text.rstrip()}\n```" if text else ""
    return text


def page_markdown(page: Page) -> str:
    """One page: its marker comment, then its blocks in reading order."""
    parts = [f"<!-- page {page.number} -->"]
    if page.status is PageStatus.failed:
        reasons = "; ".join(e.message for e in page.errors) or "no engine could read it"
        parts.append(f"*[page {page.number} could not be read: {_one_line(reasons)}]*")
    for block in page.blocks:
        if block.type in _SKIPPED:
            continue
        rendered = block_markdown(block)
        if rendered:
            parts.append(rendered)
    return "\n\n".join(parts)


def document_markdown(document: Document) -> Iterator[str]:
    """The document's markdown, a page at a time (pages separated by `---`)."""
    for i, page in enumerate(document.pages):
        yield ("\n\n---\n\n" if i else "") + page_markdown(page)
    yield "\n"
