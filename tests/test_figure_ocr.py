"""The text inside large raster figures of text-layer pages: read by OCR, kept on the figure
block with boxes inside the image, chunked with the caption, found by a question about a label."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from doubles.fakes import HashEmbedder
from doubles.loopback import closed_port_url
from doubles.ocr_simulator import OcrSimulator
from ingest.pipeline.chunker import chunk_document
from ocr_engine.engines.engine import PageWindow
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.engines.reader import PageReader
from ocr_engine.engines.render import render_region
from ocr_engine.errors import EngineOutputError
from ocr_engine.geometry import Box
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page
from retrieval.schema import QueryRequest
from server.services import build_services
from server.settings import Settings

CHART_BOX = (72.0, 130.0, 522.0, 430.0)
LOGO_BOX = (480.0, 20.0, 540.0, 60.0)
LABELS = ("North", "South", "Tundra")


def _png(size: tuple[int, int], title: str, labels: tuple[str, ...]) -> bytes:
    """A bar chart: a title, bars and a label under each bar, 36 px type."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=36)
    draw.text((40, 20), title, fill="black", font=font)
    for i, label in enumerate(labels):
        x = 120 + i * 250
        draw.rectangle((x, 520 - 100 * (i + 1), x + 120, 520), fill=(40, 90, 200))
        draw.text((x, 535), label, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def chart_pdf() -> bytes:
    """A text-layer page: a heading, a paragraph, a 900x600 px chart over most of the page's
    width with its caption below, and a 60x40 px logo in the corner."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Annual review of the widget business", fontsize=16)
    page.insert_text((72, 100), "The figure below shows the year by region.", fontsize=11)
    page.insert_image(
        pymupdf.Rect(*CHART_BOX), stream=_png((900, 600), "Quarterly Widget Sales", LABELS)
    )
    page.insert_text((72, 450), "Figure 1: Widget sales by region", fontsize=9)
    page.insert_image(pymupdf.Rect(*LOGO_BOX), stream=_png((60, 40), "Acme", ()))
    page2 = doc.new_page()
    page2.insert_text((72, 72), "Outlook", fontsize=16)
    page2.insert_text((72, 100), "Next year the business expects steady growth.", fontsize=11)
    return doc.tobytes()


def _read(options: ExtractOptions, **kwargs: object) -> Page:
    data = chart_pdf()
    with pymupdf.open(stream=data, filetype="pdf") as pdf, PageReader(options, **kwargs) as r:  # type: ignore[arg-type]
        return r.read(pdf, data, "doc", [1])[0]


def _figure(page: Page, box: Box) -> Block:
    return next(b for b in page.blocks if b.type is BlockType.figure and b.bbox == box)


def _inside(inner: Box, outer: Box) -> bool:
    return (
        inner[0] >= outer[0]
        and inner[1] >= outer[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )


@pytest.fixture(scope="module")
def chart_page() -> Page:
    return _read(ExtractOptions())


def test_the_chart_carries_its_labels_with_boxes_inside_the_image(chart_page: Page) -> None:
    chart = _figure(chart_page, CHART_BOX)
    texts = [line.text for line in chart.lines]
    for label in (*LABELS, "Quarterly Widget Sales"):
        assert label in texts
    assert all(_inside(line.bbox, CHART_BOX) for line in chart.lines)
    tundra = next(line for line in chart.lines if line.text == "Tundra")
    assert tundra.bbox[1] > CHART_BOX[1] + 0.8 * (CHART_BOX[3] - CHART_BOX[1])  # under the bars
    assert chart.engine is not None and chart.engine.name == "rapidocr"
    assert chart_page.route == "text layer" and chart_page.status == "ok" and not chart_page.errors


def test_a_small_image_is_not_read(chart_page: Page) -> None:
    logo = _figure(chart_page, LOGO_BOX)
    assert logo.engine is None and not logo.lines and logo.text == ""


def test_the_figure_is_a_chunk_with_its_caption_and_section(chart_page: Page) -> None:
    doc = Document(doc_id="d" * 64, source="widgets.pdf", page_count=1, pages=[chart_page])
    chunks = chunk_document(doc, count_tokens=lambda t: len(t.split()), max_tokens=128)
    figures = [c for c in chunks if c.kind == "figure"]
    assert len(figures) == 1
    figure = figures[0]
    assert figure.text.startswith("Figure 1: Widget sales by region")
    assert "Tundra" in figure.text and "Annual review of the widget business" in figure.embed_text
    assert not any(c.kind == "figure_caption" for c in chunks)  # the caption went with it
    tundra = next(ln for ln in figure.lines if figure.text[ln.start : ln.end] == "Tundra")
    assert _inside(tundra.bbox, CHART_BOX)


def test_a_question_about_a_label_finds_the_figure(tmp_path: Path) -> None:
    path = tmp_path / "widgets.pdf"
    path.write_bytes(chart_pdf())
    services = build_services(Settings(data_dir=tmp_path / "data"), embedder=HashEmbedder())
    try:
        (result,) = services.sync.ingest_paths([path])
        response = services.retriever.query(
            QueryRequest(question="What were the quarterly widget sales in Tundra?")
        )
    finally:
        services.close()
    assert result.status == "ok"
    top = response.hits[0]
    assert top.page == 1 and "Tundra" in top.text and "Figure 1" in top.text
    cited = response.citations[0]
    assert cited.page == 1 and _inside(cited.bbox, CHART_BOX)


class _BrokenReader(PyMuPDFEngine):
    """An OCR engine whose region reading fails (its pages are never asked for here)."""

    def __init__(self) -> None:
        super().__init__()
        self.info = EngineInfo(name="broken-ocr")
        self.regions = 0

    def read(self, window: PageWindow) -> list[Page]:
        raise AssertionError("no page of a text-layer document goes to OCR")

    def read_region(self, page: pymupdf.Page, box: Box) -> list[Line]:
        self.regions += 1
        raise EngineOutputError("the model answered nonsense")


class _DictCache:
    def __init__(self) -> None:
        self.pages: dict[tuple[str, int, str], Page] = {}

    def get(self, doc_id: str, number: int, engine_key: str) -> Page | None:
        return self.pages.get((doc_id, number, engine_key))

    def put(self, doc_id: str, engine_key: str, page: Page) -> None:
        self.pages[(doc_id, page.number, engine_key)] = page


def test_a_failed_region_leaves_the_page_ok_with_an_error() -> None:
    broken = _BrokenReader()
    cache = _DictCache()
    page = _read(ExtractOptions(), engines=[broken, PyMuPDFEngine()], cache=cache)
    assert page.status == "ok" and page.route == "text layer" and broken.regions == 1
    (error,) = page.errors
    chart = _figure(page, CHART_BOX)
    assert error.code == "figure_ocr_failed" and chart.id in error.message
    assert "nonsense" in error.message and not chart.lines and chart.engine is None
    assert not any("|figures" in key for _, _, key in cache.pages)  # read again next time


def test_figure_ocr_is_off_when_asked_or_without_ocr() -> None:
    broken = _BrokenReader()
    for options in (ExtractOptions(figure_ocr=False), ExtractOptions(ocr=OcrMode.never)):
        page = _read(options, engines=[broken, PyMuPDFEngine()])
        assert not page.errors and not _figure(page, CHART_BOX).lines
    assert broken.regions == 0


class _CountingOCR(RapidOCREngine):
    """The CPU engine, counting the images it reads by OCR (the figure regions)."""

    regions = 0

    def read_image(self, image: np.ndarray) -> tuple[list[OcrLine], int]:
        self.regions += 1
        return super().read_image(image)


def test_a_read_figure_comes_from_the_cache_the_second_time() -> None:
    cache = _DictCache()
    first_engine, second_engine = _CountingOCR(), _CountingOCR()
    first = _read(ExtractOptions(), engines=[first_engine, PyMuPDFEngine()], cache=cache)
    keys = [key for _, _, key in cache.pages if "|figures" in key]
    assert len(keys) == 1 and "rapidocr" in keys[0] and first_engine.regions == 1
    again = _read(ExtractOptions(), engines=[second_engine, PyMuPDFEngine()], cache=cache)
    assert second_engine.regions == 0 and again == first


def _vllm(url: str, **cpu: object) -> ExtractOptions:
    fast = {"backoff_s": 0.01, "retries": 1, "connect_timeout_s": 2.0, "read_timeout_s": 30.0}
    return ExtractOptions.model_validate({"vllm": {"urls": [url], **fast}, "cpu": cpu})


def test_the_vllm_engine_reads_a_figure_through_the_endpoint() -> None:
    options = _vllm("http://127.0.0.1:1", enabled=False)
    assert options.vllm is not None
    with pymupdf.open(stream=chart_pdf(), filetype="pdf") as pdf:
        region = render_region(
            pdf[0], CHART_BOX, dpi=options.vllm.dpi, max_pixels=options.vllm.max_pixels
        )
    output = (
        "<|ref|>text<|/ref|><|det|>[[40, 20, 500, 90]]<|/det|>\nQuarterly Widget Sales\n"
        "<|ref|>text<|/ref|><|det|>[[666, 890, 800, 960]]<|/det|>\nTundra\n"
    )
    with OcrSimulator() as sim:
        sim.register_image(region.png, output)
        page = _read(_vllm(sim.url, enabled=False))
    chart = _figure(page, CHART_BOX)
    assert chart.engine is not None and chart.engine.name == "vllm" and not page.errors
    assert [line.text for line in chart.lines] == ["Quarterly Widget Sales", "Tundra"]
    tundra = chart.lines[1].bbox  # the model's 0..999 grid over the region, in page points
    width, height = CHART_BOX[2] - CHART_BOX[0], CHART_BOX[3] - CHART_BOX[1]
    assert tundra[0] == pytest.approx(CHART_BOX[0] + 666 / 999 * width, abs=0.5)
    assert tundra[3] == pytest.approx(CHART_BOX[1] + 960 / 999 * height, abs=0.5)


def test_a_dead_endpoint_leaves_the_figure_to_the_cpu_engine() -> None:
    page = _read(_vllm(closed_port_url()))
    chart = _figure(page, CHART_BOX)
    assert page.status == "ok" and chart.engine is not None and chart.engine.name == "rapidocr"
    assert "Tundra" in [line.text for line in chart.lines]
    (error,) = page.errors
    assert error.code == "figure_ocr_failed" and "(vllm)" in error.message


def _outlined_chart() -> pymupdf.Document:
    """A bar chart drawn as paths with its title and labels set as outlines, no text layer (as
    Pew Research draws its charts): a page drawn, then written to SVG with text as paths."""
    src = pymupdf.open()
    page = src.new_page(width=450, height=300)
    page.draw_line((40, 240), (430, 240))
    page.draw_line((40, 40), (40, 240))
    for i, label in enumerate(LABELS):
        x = 60 + i * 130
        bar = pymupdf.Rect(x, 240 - 60 * (i + 1), x + 60, 240)
        page.draw_rect(bar, color=None, fill=(0.15, 0.35, 0.8))
        page.insert_text((x, 270), label, fontsize=20)
    page.insert_text((60, 30), "Quarterly Widget Sales", fontsize=20)
    svg = page.get_svg_image(text_as_path=True)
    return pymupdf.open("pdf", pymupdf.open(stream=svg.encode(), filetype="svg").convert_to_pdf())


def test_a_chart_drawn_with_outlined_labels_is_a_figure_read_by_ocr() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Annual review of the widget business", fontsize=16)
    page.show_pdf_page(pymupdf.Rect(*CHART_BOX), _outlined_chart(), 0)
    page.insert_text((72, 450), "Figure 1: Widget sales by region", fontsize=9)
    assert "Tundra" not in page.get_text(), "the labels are outlines, not text"
    data = doc.tobytes()
    with pymupdf.open(stream=data, filetype="pdf") as pdf, PageReader(ExtractOptions()) as r:
        read = r.read(pdf, data, "doc", [1])[0]
    (chart,) = [b for b in read.blocks if b.type is BlockType.figure]
    assert _inside(chart.bbox, CHART_BOX), chart.bbox
    texts = [line.text for line in chart.lines]
    assert "Tundra" in texts and "Quarterly Widget Sales" in texts
    assert chart.engine is not None and chart.engine.name == "rapidocr"


def test_a_ruled_table_or_a_frame_round_text_is_no_drawn_figure() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    for row in range(6):
        y = 150 + 30 * row
        page.draw_line((72, y), (522, y))
        page.insert_text((80, y + 20), f"Region {row}    {100 + row}    {200 + row}", fontsize=11)
    page.draw_rect(pymupdf.Rect(60, 500, 540, 700))  # a frame round a paragraph
    page.insert_text((80, 560), "A paragraph of body text set inside a box.", fontsize=11)
    read = PyMuPDFEngine().extract_page(page)
    assert not [b for b in read.blocks if b.type is BlockType.figure]
