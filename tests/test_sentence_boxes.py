"""A cited sentence's box starts at its first character: not inside the sentence before it, after
abbreviations, version numbers and registered marks, in a Times and a Helvetica line."""

from __future__ import annotations

import itertools

import pymupdf
import pytest

from ocr_engine.char_widths import char_starts
from ocr_engine.engines.engine import PageWindow
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from retrieval.schema import Chunk, ChunkLine, Region
from retrieval.search.evidence import locate
from retrieval.text_terms import sentence_spans
from tests.conftest import shared_path

LINES = [  # a line, and the first word of the sentence in it that is cited
    ("Customers waited for the launch of Microsoft Windows® 10. Net revenue for 2015 was", "Net"),
    ("We shipped version 2.0. The next release, e.g. the one in May, adds search and more", "The"),
    ("Sales of the AMD Radeon® R9 rose 4% in Q2. Gross margin, as a share of sales, fell", "Gross"),
    ("It was filed by Apple Inc. on Monday, Jan. 5. Revenue grew 12% to $4.0 billion", "Revenue"),
]
FONTS = ["tiro", "helv"]
MEASURE = 532.0  # points a justified line spans
SLACK = 1.0  # points a box may start before its first character (less than a space)


def _page(font: str, justify: bool) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 100.0
    for text, _ in LINES:
        if justify:  # the text set across the measure, its slack in the spaces (as filings are)
            words = text.split(" ")
            natural = sum(pymupdf.get_text_length(w, fontname=font, fontsize=9) for w in words)
            gap = (MEASURE - natural) / (len(words) - 1)
            x = 40.0
            for word in words:
                page.insert_text((x, y), word, fontsize=9, fontname=font)
                x += pymupdf.get_text_length(word, fontname=font, fontsize=9) + gap
        else:
            page.insert_text((40, y), text, fontsize=9, fontname=font)
        y += 14
    return doc


def _glyphs(page: pymupdf.Page, text: str) -> dict[int, tuple[float, float]]:
    """The left and right x of each printed character of the line that reads `text`, by its
    index in `text` (the words of a justified line may come as separate spans)."""
    near = [
        c
        for block in page.get_text("rawdict")["blocks"]
        for line in block.get("lines", [])
        for span in line["spans"]
        for c in span["chars"]
        if c["c"] != " "
    ]
    rows: dict[int, list[dict[str, object]]] = {}
    for c in near:
        rows.setdefault(round(c["origin"][1]), []).append(c)
    printed = [i for i, ch in enumerate(text) if ch != " "]
    for chars in rows.values():
        chars.sort(key=lambda c: c["bbox"][0])
        if "".join(str(c["c"]) for c in chars) == text.replace(" ", ""):
            return {i: (c["bbox"][0], c["bbox"][2]) for i, c in zip(printed, chars, strict=True)}
    raise AssertionError(f"no line reads {text!r}")


def _chunk(bbox: tuple[float, float, float, float], text: str) -> Chunk:
    return Chunk(
        chunk_id="c0001",
        doc_id="d" * 64,
        source="s.pdf",
        kind="text",
        text=text,
        embed_text=text,
        regions=[Region(page=1, bbox=bbox)],
        lines=[ChunkLine(page=1, bbox=bbox, start=0, end=len(text))],
    )


def _box_start(bbox: tuple[float, float, float, float], text: str, first_word: str) -> float:
    """Where the evidence box of the sentence of `text` beginning with `first_word` starts."""
    chunk = _chunk(bbox, text)
    [span] = [s for s in sentence_spans(text) if text[s[0] :].startswith(first_word)]
    return locate(chunk, chunk.lines, [span]).highlight[0][0]


@pytest.mark.parametrize("justify", [False, True], ids=["ragged", "justified"])
@pytest.mark.parametrize("font", FONTS)
def test_a_sentence_box_starts_at_its_first_character(font: str, justify: bool) -> None:
    pdf = _page(font, justify)
    [page] = PyMuPDFEngine().read(PageWindow(pdf, b"", (1,)))
    lines = {line.text: line.bbox for block in page.blocks for line in block.lines}
    for text, first_word in LINES:
        xs = _glyphs(pdf[0], text)
        start = text.index(first_word)
        x0 = _box_start(lines[text], text, first_word)
        before = xs[start - 3][1]  # the last letter or digit of the sentence before
        assert before <= x0 <= xs[start][0] + SLACK, (font, text, x0, xs[start], before)


def test_the_amd_windows_10_sentence_starts_at_net(tmp_path: object) -> None:
    """AMD 2015 10-K p.36 (a tune document): the box of "Net revenue for 2015 ..." starts at "N",
    not on the "0" of "Windows® 10." before it."""
    path = shared_path("financebench", "pdfs", "AMD_2015_10K.pdf")
    pdf = pymupdf.open(path)
    [page] = PyMuPDFEngine().read(PageWindow(pdf, b"", (36,)))
    [(text, bbox)] = [
        (ln.text, ln.bbox) for b in page.blocks for ln in b.lines if "Windows® 10. Net" in ln.text
    ]
    xs = _glyphs(pdf[35], text)
    start = text.index("Net revenue")
    x0 = _box_start(bbox, text, "Net revenue")
    assert xs[start - 3][1] <= x0 <= xs[start][0] + SLACK, (x0, xs[start - 3], xs[start])


def test_char_starts_span_the_box_and_grow() -> None:
    box = (10.0, 0.0, 310.0, 9.9)
    for text in ("Windows® 10. Net revenue", "ilil WWMM", "年度报告 2023", "x"):
        starts = char_starts(text, box)
        assert len(starts) == len(text) + 1
        assert starts[0] == 10.0 and starts[-1] == pytest.approx(310.0)
        assert all(a <= b for a, b in itertools.pairwise(starts))
