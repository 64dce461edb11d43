"""Every letter and digit of a page's text layer lands in exactly one block: none is lost (a
table that holds only some of a line's words, a grid drawn over footnotes), none is doubled
(a word under two overlapping cells), and furniture is marked, not dropped."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval.conservation import block_chars, layer_chars, page_balance, text_pages
from ocr_engine.engines.extract import extract_document
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.options import ExtractOptions, OcrMode
from tests.conftest import shared_path

NEVER = ExtractOptions(ocr=OcrMode.never)
CORPORA = ["docling", "financebench", "mmlongbench_doc", "docugami_sec10q"]
CORPORA += ["olmocr_bench_sample", "scanned", "zh"]
PAGES_PER_FILE = 5  # spread over each file: every PDF is read, not every page


def _unbalanced(path: Path, engine: PyMuPDFEngine, limit: int | None) -> list[str]:
    return [
        f"{path.name} p{b.number}: lost {b.lost_n} {''.join(sorted(b.lost.elements()))[:30]!r}, "
        f"doubled {b.doubled_n}"
        for b in (page_balance(path.name, p, e) for p, e in text_pages(path, engine, limit))
        if b.lost_n or b.doubled_n
    ]


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_pdf_of_the_shared_data_keeps_its_text(corpus: str) -> None:
    folder = shared_path(corpus)
    engine = PyMuPDFEngine()
    pdfs = sorted(folder.rglob("*.pdf"))
    assert pdfs, f"no PDF under {folder}"
    bad = [line for pdf in pdfs for line in _unbalanced(pdf, engine, PAGES_PER_FILE)]
    assert not bad, "\n".join(bad[:20])


def test_footnotes_under_a_stray_grid_stay_text() -> None:
    """AMCOR's earnings release, page 11: the footnotes beneath the table were read as a second
    table whose cells held part of the lines, and footnote (3) was in no block."""
    [pdf] = shared_path("financebench", "pdfs").glob("AMCOR_2023Q4_EARNINGS*.pdf")
    with pymupdf.open(pdf) as doc:
        page = doc[10]
        extracted = PyMuPDFEngine().extract_page(page)
        balance = page_balance(pdf.name, page, extracted)
    assert (balance.lost_n, balance.doubled_n) == (0, 0)
    footnote = [b for b in extracted.blocks if b.text.startswith("(3) Includes incremental")]
    assert footnote and "Russian business." in footnote[0].text
    assert footnote[0].type.value != "table"
    assert sum(b.type.value == "table" for b in extracted.blocks) == 1


# --- generated pages ------------------------------------------------------------------------

WORD = st.text(
    alphabet="abcdefghijkmnopqrstuvwxyzABCDEFGHKLMNPRSTWXYZ0123456789", min_size=1, max_size=9
)
LINE = st.tuples(
    st.lists(WORD, min_size=1, max_size=12).map(" ".join),
    st.floats(20, 420),  # x
    st.floats(24, 775),  # baseline y
    st.sampled_from([7.0, 9.0, 10.0, 12.0, 16.0]),
    st.booleans(),  # bold
)
GRID = st.tuples(
    st.floats(30, 300),  # left
    st.floats(40, 600),  # top
    st.integers(2, 5),  # rows
    st.integers(2, 4),  # columns
    st.floats(40, 90),  # column width
    st.floats(12, 24),  # row height
    st.booleans(),  # figures in the cells
)
PAGE = st.tuples(st.lists(LINE, min_size=1, max_size=10), st.lists(GRID, max_size=2))


def _draw(page: pymupdf.Page, grid: tuple[float, float, int, int, float, float, bool]) -> None:
    left, top, rows, cols, width, height, figures = grid
    right, bottom = left + cols * width, top + rows * height
    for r in range(rows + 1):
        page.draw_line((left, top + r * height), (right, top + r * height))
    for c in range(cols + 1):
        page.draw_line((left + c * width, top), (left + c * width, bottom))
    for r in range(rows):
        for c in range(cols):
            text = f"{(r + 1) * (c + 3) * 17}" if figures or r == 0 else f"item{r}x{c}"
            page.insert_text(
                (left + c * width + 3, top + r * height + height - 4), text, fontsize=8
            )


def _pdf(
    pages: list[tuple[list[tuple[str, float, float, float, bool]], list]], header: str
) -> bytes:
    doc = pymupdf.open()
    for number, (lines, grids) in enumerate(pages, start=1):
        page = doc.new_page(width=612, height=792)
        if header:
            page.insert_text((72, 30), header, fontsize=9)
            page.insert_text((300, 780), str(number), fontsize=9)
        for grid in grids:
            _draw(page, grid)
        for text, x, y, size, bold in lines:
            page.insert_text((x, y), text, fontsize=size, fontname="hebo" if bold else "helv")
    data = doc.tobytes()
    doc.close()
    return data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pages=st.lists(PAGE, min_size=1, max_size=4), header=st.sampled_from(["", "Acme Annual Report"])
)
def test_generated_pages_keep_every_letter_and_digit(pages: list, header: str) -> None:
    data = _pdf(pages, header)
    extracted = extract_document(data, options=NEVER)
    with pymupdf.open(stream=data) as doc:
        for page, result in zip(doc, extracted.pages, strict=True):
            expected, got = layer_chars(page), block_chars(result)
            assert got == expected, (
                f"page {result.number}: lost {dict(expected - got)}, doubled {dict(got - expected)}"
            )


def test_a_line_half_inside_a_grid_is_kept_once() -> None:
    """A line that starts in a ruled table's last row and runs past its edge: the table holds
    the words in its cells, the line keeps the rest, no word twice."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _draw(page, (72.0, 100.0, 3, 3, 60.0, 16.0, True))
    page.insert_text((200, 144), "tail words beyond the grid 42 and more", fontsize=8)
    page.insert_text((72, 400), "A paragraph below the table that says nothing much.", fontsize=10)
    data = doc.tobytes()
    extracted = extract_document(data, options=NEVER)
    with pymupdf.open(stream=data) as reopened:
        expected = layer_chars(reopened[0])
    got = block_chars(extracted.pages[0])
    assert got == expected, f"lost {dict(expected - got)}, doubled {dict(got - expected)}"
    assert Counter(b.type.value for b in extracted.pages[0].blocks)["table"] == 1
