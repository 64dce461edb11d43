"""Per-page OCR routing: which text layers are missing, invisible or garbage, and which are fine."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.routing import GARBAGE, INVISIBLE, NO_TEXT, ocr_reason
from ocr_engine.schema import Block, BlockType, EngineInfo, Line, Page
from tests.conftest import shared_path
from tests.pdfgen import FACTS, fact_pdf, image_page_pdf, raw_pdf

ENGINE = PyMuPDFEngine(detect_tables=False)  # routing reads characters, not tables


def reason(page: pymupdf.Page) -> str | None:
    return ocr_reason(page, ENGINE.extract_page(page))


def scan_image(width: int = 400, height: int = 500) -> pymupdf.Pixmap:
    """A grey 'scan' with dark strokes, as an image for a page."""
    samples = np.full((height, width, 3), (235, 235, 230), dtype=np.uint8)
    for y in range(40, height - 40, 30):
        samples[y : y + 8, 30 : width - 30] = 40
    return pymupdf.Pixmap(pymupdf.csRGB, width, height, samples.tobytes(), False)


def scanned_page(doc: pymupdf.Document) -> pymupdf.Page:
    page = doc.new_page(width=400, height=500)
    page.insert_image(page.rect, pixmap=scan_image())
    return page


def unmapped_glyphs_pdf(lines: int = 3) -> bytes:
    """Visible text in a Type 3 font whose glyph names map to no Unicode character: MuPDF falls
    back to the character codes, here C1 control codes."""
    first, glyphs = 0x86, 26  # 0x86..0x9F: no whitespace among them
    names = b" ".join(b"/zz%d" % i for i in range(glyphs))
    procs = b" ".join(b"/zz%d 6 0 R" % i for i in range(glyphs))
    codes = bytes(range(first, first + glyphs)).hex().encode()
    content = b"".join(
        b"BT /F1 12 Tf 20 %d Td <%s> Tj ET\n" % (170 - 20 * k, codes) for k in range(lines)
    )
    widths = b" ".join([b"600"] * glyphs)
    glyph = b"600 0 0 0 500 650 d1 0 0 500 650 re f"
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 600 700] "
            b"/FontMatrix [0.001 0 0 0.001 0 0] /CharProcs << " + procs + b" >> "
            b"/Encoding << /Type /Encoding /Differences [%d " % first + names + b"] >> "
            b"/FirstChar %d /LastChar %d /Widths [%s] >>" % (first, first + glyphs - 1, widths),
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
            b"<< /Length %d >>\nstream\n" % len(glyph) + glyph + b"\nendstream",
        ]
    )


def test_born_digital_text_page_keeps_its_text_layer() -> None:
    with pymupdf.open("pdf", fact_pdf(*FACTS["volcano.pdf"])) as doc:
        assert [reason(page) for page in doc] == [None, None]


def test_image_only_page_has_no_text_layer() -> None:
    with pymupdf.open("pdf", image_page_pdf(with_text_page=True)) as doc:
        assert [reason(page) for page in doc] == [None, NO_TEXT]


def test_page_number_stamped_on_a_scan_is_still_no_text_layer() -> None:
    with pymupdf.open() as doc:
        page = scanned_page(doc)
        page.insert_text((190, 490), "- 17 -", fontsize=9)
        assert reason(page) == NO_TEXT


def test_blank_page_and_title_beside_a_picture_keep_the_text_layer() -> None:
    with pymupdf.open() as doc:
        doc.new_page()
        slide = doc.new_page(width=720, height=405)
        slide.insert_image(pymupdf.Rect(300, 0, 720, 300), pixmap=scan_image())
        slide.insert_text((30, 330), "Data Presentation", fontsize=28)
        assert reason(doc[0]) is None
        assert reason(doc[1]) is None


def test_invisible_ocr_layer_over_a_scan_is_invisible() -> None:
    with pymupdf.open() as doc:
        page = scanned_page(doc)
        for k in range(8):
            page.insert_text(
                (30, 60 + 30 * k), "recognised words of the scanned line", render_mode=3
            )
        assert page.get_text().strip()  # the text layer is there, only not drawn
        assert reason(page) == INVISIBLE


def test_text_hidden_under_the_scan_image_is_invisible() -> None:
    with pymupdf.open() as doc:
        page = doc.new_page(width=400, height=500)
        for k in range(8):
            page.insert_text((30, 60 + 30 * k), "text drawn first and covered by the scan")
        page.insert_image(page.rect, pixmap=scan_image())
        assert reason(page) == INVISIBLE


def test_invisible_text_without_an_image_under_it_is_left_alone() -> None:
    """Docling's invisible-text fixture shape: nothing on the page for OCR to read."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 72), "Visible heading line", fontsize=14)
        page.insert_text((72, 480), "Invisible OCR text layer " * 3, render_mode=3)
        assert reason(page) is None


def test_glyphs_without_unicode_are_garbage() -> None:
    with pymupdf.open("pdf", unmapped_glyphs_pdf()) as doc:
        page = doc[0]
        text = page.get_text()
        assert sum(1 for c in text if not c.isprintable() and not c.isspace()) >= 60
        assert reason(page) == GARBAGE


def test_replacement_characters_are_garbage_and_a_few_icons_are_not() -> None:
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 72), "x" * 60)

        def layer(text: str) -> Page:
            line = Line(text=text, bbox=(72, 60, 400, 75))
            block = Block(id="p1-b0", type=BlockType.text, bbox=line.bbox, text=text, lines=[line])
            return Page(
                number=1, width=612, height=792, engine=EngineInfo(name="t"), blocks=[block]
            )

        assert ocr_reason(page, layer("\ufffd" * 50 + " ok")) == GARBAGE
        assert ocr_reason(page, layer("\ue000\uf0b7 " * 5 + "normal sentence " * 8)) is None


def test_xiaobiaosong_text_layer_is_read_correctly_by_pymupdf() -> None:
    """pdf.js cannot map this font; PyMuPDF can, so the text layer is kept (it is right)."""
    with pymupdf.open(shared_path("zh", "pdfjs_XiaoBiaoSong.pdf")) as doc:
        page = doc[0]
        text_page = ENGINE.extract_page(page)
        joined = "".join("".join(b.text.split()) for b in text_page.blocks)
        assert "关于红军作战的原则" in joined and "对国防问题的意见" in joined
        assert ocr_reason(page, text_page) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("olmocr_gnarly/horribleocr.pdf", INVISIBLE),  # visible OCR text under the scan
        ("olmocr_gnarly/handwriting_bad_ocr.pdf", INVISIBLE),
        ("olmocr_gnarly/edgar_image.pdf", NO_TEXT),
        ("olmocr_gnarly/edgar.pdf", None),
        ("ocrmypdf/graph_ocred.pdf", INVISIBLE),
        ("tesseract_test/derived_pdf/phototest.pdf", NO_TEXT),
    ],
)
def test_scanned_files(name: str, expected: str | None) -> None:
    with pymupdf.open(shared_path("scanned", *name.split("/"))) as doc:
        assert reason(doc[0]) == expected


def test_no_docling_or_chinese_page_is_sent_to_ocr() -> None:
    pdfs = sorted(shared_path("docling", "pdf").glob("*.pdf"))
    pdfs += [p for p in sorted(shared_path("zh").glob("*.pdf")) if "XiaoBiaoSong" not in p.name]
    flagged = []
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            flagged += [(pdf.name, p.number, r) for p in doc if (r := reason(p)) is not None]
    assert len(pdfs) >= 20
    assert flagged == []
