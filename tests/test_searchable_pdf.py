"""Searchable PDF: every OCR'd line is found in its box; pages, images and text-layer pages kept."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from doubles.ocr_simulator import OcrSimulator
from ocr_engine.engines.extract import extract_document
from ocr_engine.errors import BadInputError
from ocr_engine.exports.searchable import is_ocr_page, ocr_lines, searchable_pdf
from ocr_engine.options import ExtractOptions, OcrMode, VLLMOptions
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page
from tests.apiapp import api_app
from tests.pdfgen import FACTS, fact_pdf
from tests.test_ocr_pipeline import scanned

TITLE, SECTIONS = FACTS["bakery.pdf"]


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _images(doc: pymupdf.Document) -> dict[int, str]:
    """Each page's image xrefs -> the sha256 of the image stream as stored."""
    return {
        xref: hashlib.sha256(doc.xref_stream_raw(xref)).hexdigest()
        for page in doc
        for xref, *_ in page.get_images(full=True)
    }


def _contents(page: pymupdf.Page) -> list[bytes]:
    return [page.parent.xref_stream(xref) for xref in page.get_contents()]


def _words(page: pymupdf.Page) -> list[tuple[pymupdf.Point, str]]:
    """Each word's centre on the page as displayed (MuPDF gives unrotated boxes), and its text."""
    words = []
    for x0, y0, x1, y1, text, *_ in page.get_text("words"):
        centre = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2) * page.rotation_matrix
        words.append((centre, text))
    return words


def _assert_lines_found(out: pymupdf.Document, document: Document) -> int:
    checked = 0
    for page in document.pages:
        if not is_ocr_page(page):
            continue
        words = _words(out[page.number - 1])
        for line in ocr_lines(page):
            box = pymupdf.Rect(line.bbox)  # a word is the line's when its centre is in the box:
            inside = [(c.x, text) for c, text in words if box.contains(c)]  # boxes may overlap
            found = [text for _, text in sorted(inside)]
            assert _norm(" ".join(found)) == _norm(line.text), (page.number, line)
            checked += 1
    return checked


@pytest.fixture(scope="module")
def simulator() -> Iterator[OcrSimulator]:
    with OcrSimulator(capacity=8) as sim:
        yield sim


@pytest.fixture(scope="module")
def read_scan(simulator: OcrSimulator) -> tuple[bytes, Document]:
    """A 3-page scan whose page 2 kept its text layer, read through the OCR simulator."""
    text_pdf = fact_pdf(TITLE, SECTIONS, filler_pages=2)
    scan = scanned(text_pdf, keep_text_pages=(2,))
    simulator.register_pdf(scan, text_source=text_pdf)
    options = ExtractOptions(vllm=VLLMOptions(urls=[simulator.url], retries=0))
    return scan, extract_document(scan, source="scan.pdf", options=options)


def test_every_ocr_line_is_found_in_its_box(read_scan: tuple[bytes, Document]) -> None:
    scan, document = read_scan
    assert [is_ocr_page(p) for p in document.pages] == [True, False, True]
    with pymupdf.open(stream=scan) as before:
        assert not before[0].get_text().strip()  # a scan: nothing to find before
    with pymupdf.open(stream=searchable_pdf(document, scan)) as out:
        assert _assert_lines_found(out, document) >= 8
        assert "rye flour" in out[0].get_text()
        assert out[0].search_for("rye flour")


def test_pages_images_and_text_layer_pages_are_unchanged(
    read_scan: tuple[bytes, Document],
) -> None:
    scan, document = read_scan
    with (
        pymupdf.open(stream=scan) as before,
        pymupdf.open(stream=searchable_pdf(document, scan)) as out,
    ):
        assert out.page_count == before.page_count
        assert [p.rect for p in out] == [p.rect for p in before]
        assert [p.rotation for p in out] == [p.rotation for p in before]
        assert _images(out) == _images(before) and len(_images(before)) == 2
        assert _contents(out[1]) == _contents(before[1])
        assert out[1].get_text() == before[1].get_text()
        for n in (0, 2):  # the scan's own drawing comes first, untouched
            assert _contents(out[n])[: len(_contents(before[n]))] == _contents(before[n])
        # the text is invisible: the pages look as they did
        for n in range(out.page_count):
            assert out[n].get_pixmap(dpi=40).samples == before[n].get_pixmap(dpi=40).samples


def _picture_page(rotation: int) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 80, 60), False)
    pix.set_rect(pix.irect, (230, 230, 230))
    page.insert_image(page.rect, pixmap=pix)
    page.set_rotation(rotation)
    data = doc.tobytes()
    doc.close()
    return data


def _ocr_document(pdf: bytes, lines: list[Line]) -> Document:
    with pymupdf.open(stream=pdf) as doc:
        rect = doc[0].rect
    block = Block(id="p1-b0", type=BlockType.text, bbox=lines[0].bbox, text="", lines=lines)
    page = Page(
        number=1,
        width=rect.width,
        height=rect.height,
        engine=EngineInfo(name="vllm", model="deepseek-ai/DeepSeek-OCR"),
        route="no text layer",
        blocks=[block],
    )
    return Document(doc_id="0" * 64, source="picture.pdf", page_count=1, pages=[page])


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_unicode_lines_on_rotated_pages_are_found_in_their_boxes(rotation: int) -> None:
    pdf = _picture_page(rotation)
    with pymupdf.open(stream=pdf) as doc:
        width, height = doc[0].rect.width, doc[0].rect.height
    lines = [
        Line(text="Net revenue — “2024” €1.2 bn", bbox=(20, 20, width - 30, 36)),
        Line(text="收入增长 12%", bbox=(20, 60, 160, 78)),
        Line(text="Café crème", bbox=(20, height - 40, 120, height - 28)),
    ]
    document = _ocr_document(pdf, lines)
    out_bytes = searchable_pdf(document, pdf)
    with pymupdf.open(stream=out_bytes) as out:
        assert _assert_lines_found(out, document) == 3
        assert out[0].rotation == rotation
        fonts = {f[3] for f in out[0].get_fonts()}
        assert any("Droid" in name for name in fonts)  # the Unicode font, embedded
    assert len(out_bytes) - len(pdf) < 60_000  # subset to the glyphs used, not 3.5 MB


def test_a_pdf_that_is_not_the_documents_is_refused(read_scan: tuple[bytes, Document]) -> None:
    _, document = read_scan
    with pytest.raises(BadInputError, match="pages"):
        searchable_pdf(document, _picture_page(0))


def test_the_api_serves_it_and_leaves_a_text_layer_document_as_it_was(tmp_path: Path) -> None:
    with api_app(tmp_path) as app:
        response = app.client.get(f"/documents/{app.doc_id}/searchable.pdf")
        text = app.client.get(f"/documents/{app.doc_id}/text")
        missing = app.client.get(f"/documents/{'f' * 64}/searchable.pdf")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/pdf"
    assert 'filename="volcano.searchable.pdf"' in response.headers["content-disposition"]
    with pymupdf.open(app.pdf) as before, pymupdf.open(stream=response.content) as out:
        assert out.page_count == before.page_count == 3
        for n in range(3):
            assert _contents(out[n]) == _contents(before[n])
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert text.text.count("\f") == 2 and "Kelud" in text.text.split("\f")[0]
    assert missing.status_code == 404


def test_a_document_without_ocr_text_comes_back_byte_for_byte() -> None:
    title, sections = FACTS["volcano.pdf"]
    pdf = fact_pdf(title, sections, filler_pages=1)
    document = extract_document(
        pdf, source="volcano.pdf", options=ExtractOptions(ocr=OcrMode.never)
    )
    assert searchable_pdf(document, pdf) == pdf
