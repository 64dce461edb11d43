"""Page headers and footers found by repetition, in the edge bands or right under the content."""

from __future__ import annotations

import pymupdf

from ocr_engine.extract import extract_document
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import BlockType


def _filing(pages: int) -> bytes:
    """Pages whose content ends at different heights, each followed at once (not at the page's
    foot) by the filer's footer line and the page number, as in filings converted from HTML."""
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page(width=612, height=792)
        y = 72.0
        for i in range(4 + 3 * (n % 4)):
            page.insert_text((72, y), f"Paragraph {i} of page {n} discusses revenue item {i * n}.")
            y += 14
        page.insert_text((72, y + 30), "Acme Inc.")
        page.insert_text((200, y + 30), "2021 Form 10-K")
        page.insert_text((300, y + 50), str(40 + n))
    data = doc.tobytes()
    doc.close()
    return data


def _types(text: str, pages: int) -> dict[str, set[BlockType]]:
    doc = extract_document(_filing(pages), options=ExtractOptions(ocr=OcrMode.never))
    found: dict[str, set[BlockType]] = {}
    for page in doc.pages:
        for block in page.blocks:
            if text in block.text:
                found.setdefault(block.text, set()).add(block.type)
    return found


def test_a_footer_right_under_the_content_is_furniture() -> None:
    doc = extract_document(_filing(6), options=ExtractOptions(ocr=OcrMode.never))
    for page in doc.pages:
        kinds = {b.text: b.type for b in page.blocks}
        assert kinds[str(40 + page.number)] == BlockType.page_footer, kinds
        assert kinds["Acme Inc."] == BlockType.page_footer
        assert kinds["2021 Form 10-K"] == BlockType.page_footer
        body = [b for b in page.blocks if b.type == BlockType.text]
        assert body and all(b.text.startswith("Paragraph") for b in body)
        assert page.blocks[-1].type == BlockType.page_footer  # footers go last


def test_too_few_pages_leave_the_last_lines_alone() -> None:
    doc = extract_document(_filing(2), options=ExtractOptions(ocr=OcrMode.never))
    assert all(b.type != BlockType.page_footer for p in doc.pages for b in p.blocks)


def test_headings_atop_pages_and_long_last_lines_stay_content() -> None:
    doc = pymupdf.open()
    for n in range(1, 7):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 200), f"Part {n}", fontsize=18, fontname="hebo")
        page.insert_text(
            (72, 240), f"Paragraph on page {n} about kiln number {n * 7} and its fuel."
        )
    data = doc.tobytes()
    doc.close()
    extracted = extract_document(data, options=ExtractOptions(ocr=OcrMode.never))
    for page in extracted.pages:
        kinds = [b.type for b in page.blocks]
        assert kinds[0] in (BlockType.title, BlockType.section_header) and kinds[1:] == [
            BlockType.text
        ]
