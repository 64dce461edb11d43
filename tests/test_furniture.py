"""Page headers and footers found by repetition (never by position alone), in the edge bands or
right under the content, the same in `folio extract` and in ingest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doubles.fakes import HashEmbedder
from ingest.pipeline.pipeline import FileStatus, IngestOptions
from ocr_engine.engines.extract import extract_document
from ocr_engine.layout.furniture import FurnitureMarker, furniture_key, mark_furniture
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Block, BlockType, EngineInfo, Line, Page
from server.services import Services, build_services
from server.settings import Settings


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


# --- repetition, never position alone (issue 13); one result for extract and ingest (issue 14) --

NEVER = ExtractOptions(ocr=OcrMode.never)


def _pdf(pages: list[list[tuple[float, float, str]]]) -> bytes:
    """Letter pages with text at (x, baseline y)."""
    doc = pymupdf.open()
    for items in pages:
        page = doc.new_page(width=612, height=792)
        for x, y, text in items:
            page.insert_text((x, y), text, fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    options = IngestOptions(extract=NEVER, extract_processes=0, window=4, extract_window=2)
    svc = build_services(
        Settings(data_dir=tmp_path / "data", ocr=OcrMode.never),
        embedder=HashEmbedder(),
        options=options,
    )
    yield svc
    svc.close()


@pytest.mark.parametrize("y", [30.0, 780.0])
def test_a_one_line_page_is_content_wherever_it_stands(
    y: float, services: Services, tmp_path: Path
) -> None:
    sentence = "The kiln at Ashford was relit on 4 May after the spring repairs."
    pdf = tmp_path / "one-line.pdf"
    pdf.write_bytes(_pdf([[(72, y, sentence)]]))
    [block] = extract_document(pdf, options=NEVER).pages[0].blocks
    assert (block.type, block.text) == (BlockType.text, sentence)
    [result] = services.sync.ingest_paths([pdf])
    assert result.status is FileStatus.ok and result.chunks == 2, result.error  # + its card


def test_a_document_of_nothing_but_furniture_says_so(services: Services, tmp_path: Path) -> None:
    pdf = tmp_path / "furniture.pdf"
    pdf.write_bytes(_pdf([[(72, 30, "Acme Annual Report"), (300, 780, str(n))] for n in range(3)]))
    for page in extract_document(pdf, options=NEVER).pages:
        assert {b.type for b in page.blocks} == {BlockType.page_header, BlockType.page_footer}
    [result] = services.sync.ingest_paths([pdf])
    assert result.status is FileStatus.failed and result.error is not None
    assert "classified as page furniture" in result.error and "OCR" not in result.error


def test_extract_and_ingest_mark_the_same_furniture_across_windows(
    services: Services, tmp_path: Path
) -> None:
    """12 pages read 4 at a time: "Draft for review" atop the first 3 pages only is content
    (3 of 12 pages is no running header), the page number at every foot is furniture, in the
    JSON of `folio extract` and in the one ingest writes alike."""
    pages = [
        [
            *([(72.0, 80.0, "Draft for review")] if n <= 3 else []),
            (72.0, 200.0, f"Paragraph on page {n} about kiln number {n * 7} and its fuel."),
            (300.0, 770.0, f"Page {n} of 12"),
        ]
        for n in range(1, 13)
    ]
    pdf = tmp_path / "long.pdf"
    pdf.write_bytes(_pdf(pages))
    whole = extract_document(pdf, options=NEVER)
    [result] = services.sync.ingest_paths([pdf])
    assert result.status is FileStatus.ok and result.doc_id is not None
    stored = services.files.load_document(result.doc_id)
    assert stored.pages == whole.pages
    for page in whole.pages:
        kinds = {b.text: b.type for b in page.blocks}
        assert kinds[f"Page {page.number} of 12"] is BlockType.page_footer
        if page.number <= 3:
            assert kinds["Draft for review"] is BlockType.text


def test_a_chapters_running_header_is_furniture_though_the_chapter_is_short() -> None:
    """A 27-page manual whose running header names its chapter: "Getting Started" atop pages
    1-9, "Blood Pressure Management" atop its six pages, too few for a third of the document.
    Both are furniture; the chapter's title, set large where it starts, stays its heading."""
    doc = pymupdf.open()
    for n in range(1, 28):
        page = doc.new_page(width=595, height=842)
        chapter = (
            "Getting Started" if n <= 9 else "Blood Pressure Management" if n <= 15 else "Sleep"
        )
        if n == 10:
            page.insert_text((34, 60), chapter, fontsize=26, fontname="hebo")
        else:
            page.insert_text((424, 30), chapter, fontsize=11)
        page.insert_text(
            (45, 200), f"Step {n}: press the Up button and read result number {n * 3}."
        )
        page.insert_text((560, 820), str(n))
    data = doc.tobytes()
    doc.close()
    pages = extract_document(data, options=NEVER).pages
    for page in pages:
        kinds = {b.text: b.type for b in page.blocks}
        if page.number == 10:
            assert kinds["Blood Pressure Management"] in (BlockType.title, BlockType.section_header)
        elif 11 <= page.number <= 15:
            assert kinds["Blood Pressure Management"] is BlockType.page_header, page.number
        elif page.number <= 9:
            assert kinds["Getting Started"] is BlockType.page_header
        assert any(t.startswith("Step") and k is BlockType.text for t, k in kinds.items())


@pytest.mark.parametrize("text", ["41", "iv", "xii", "Page 3 of 12", "- 7 -", "page 9"])
def test_page_numbers_of_any_pattern_are_one_key(text: str) -> None:
    assert furniture_key(text) == furniture_key("1")
    assert furniture_key("civil") != furniture_key("1")


def _generated_page(number: int, header: str, footer: bool, body: int) -> Page:
    blocks = []
    if header:
        blocks.append(Block(id="h", type=BlockType.text, bbox=(72, 30, 300, 40), text=header))
    for i in range(body):
        top = 100 + 30 * i
        text = f"Body paragraph {i} of page {number} with enough words to be plain content."
        blocks.append(
            Block(id=f"b{i}", type=BlockType.text, bbox=(72, top, 540, top + 20), text=text)
        )
    if footer:
        blocks.append(
            Block(id="f", type=BlockType.text, bbox=(300, 760, 320, 770), text=str(number))
        )
    for block in blocks:
        block.lines = [Line(text=block.text, bbox=block.bbox)]
    info = EngineInfo(name="generated")
    return Page(number=number, width=612, height=792, engine=info, blocks=blocks)


PAGES = st.lists(
    st.tuples(
        st.sampled_from(["", "Acme Inc.", "Notes to the accounts"]),
        st.booleans(),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=90,
)


@settings(max_examples=40, deadline=None)
@given(specs=PAGES, cuts=st.lists(st.integers(1, 40), max_size=8))
def test_furniture_is_the_same_whole_or_window_by_window(
    specs: list[tuple[str, bool, int]], cuts: list[int]
) -> None:
    def build() -> list[Page]:
        return [_generated_page(n, *spec) for n, spec in enumerate(specs, start=1)]

    whole = build()
    mark_furniture(whole)
    pages, marker, done, start = build(), FurnitureMarker(len(specs)), [], 0
    for size in [*cuts, len(pages)]:
        done += marker.feed(pages[start : start + size])
        start += size
    done += marker.finish()
    assert [p.number for p in done] == [p.number for p in whole]
    assert [[(b.id, b.type) for b in p.blocks] for p in done] == [
        [(b.id, b.type) for b in p.blocks] for p in whole
    ]
