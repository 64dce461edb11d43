"""The page-engine protocol: every engine implements it, the reader walks an ordered list of them
(a new engine is one class in that list), falls back along it, and records routing failures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymupdf

from doubles.loopback import closed_port_url
from ocr_engine.engines.engine import PageEngine, PageWindow
from ocr_engine.engines.extract import iter_pages
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.engines.reader import (
    OCR_FAILED_ROUTE,
    ROUTING_FAILED_ROUTE,
    PageReader,
    build_engines,
    sent_to_ocr,
)
from ocr_engine.engines.vllm_engine import VLLMEngine
from ocr_engine.options import CpuOcrOptions, ExtractOptions, OcrMode, VLLMOptions
from ocr_engine.schema import Block, BlockType, EngineInfo, Page, PageError, PageStatus

REPO_ROOT = Path(__file__).resolve().parent.parent
VLLM = VLLMOptions(urls=[closed_port_url()])


class Scribe:
    """An OCR engine that writes what page it was given: a stand-in for another model."""

    def __init__(self, name: str = "scribe") -> None:
        self.info = EngineInfo(name=name, model="scribe-1", version="1")
        self.windows: list[tuple[int, ...]] = []
        self.closed = False

    def read(self, window: PageWindow) -> list[Page]:
        self.windows.append(window.numbers)
        pages = []
        for number in window.numbers:
            rect = window.pdf[number - 1].rect
            text = f"{self.info.name} read page {number}"
            block = Block(id=f"p{number}-b0", type=BlockType.text, bbox=(10, 10, 90, 20), text=text)
            pages.append(
                Page(
                    number=number,
                    width=rect.width,
                    height=rect.height,
                    engine=self.info,
                    blocks=[block],
                )
            )
        return pages

    def close(self) -> None:
        self.closed = True


class Down(Scribe):
    """An OCR engine whose endpoint is down: every page comes back failed with its error."""

    def read(self, window: PageWindow) -> list[Page]:
        self.windows.append(window.numbers)
        return [
            Page(
                number=n,
                width=100,
                height=100,
                engine=self.info,
                status=PageStatus.failed,
                errors=[PageError(code="endpoint_unavailable", message=f"{self.info.name} down")],
            )
            for n in window.numbers
        ]


def _pdf() -> bytes:
    """Page 1 born-digital text, page 2 a picture with no text layer (a scan)."""
    doc = pymupdf.open()
    doc.new_page(width=300, height=300).insert_text((40, 60), "Born digital line", fontsize=14)
    scan = doc.new_page(width=300, height=300)
    gray = pymupdf.Pixmap(pymupdf.csRGB, 100, 100, bytes(range(100)) * 300, False)
    scan.insert_image(scan.rect, pixmap=gray)
    data = doc.tobytes()
    doc.close()
    return data


def _read(reader: PageReader, data: bytes) -> list[Page]:
    with reader:
        return list(iter_pages(data, name="two.pdf", reader=reader))


def test_every_engine_is_a_page_engine() -> None:
    for engine in (PyMuPDFEngine(), RapidOCREngine(), VLLMEngine(VLLM), Scribe()):
        assert isinstance(engine, PageEngine), type(engine).__name__
    assert not isinstance(object(), PageEngine)


def test_the_list_is_built_from_the_options_in_order() -> None:
    text = PyMuPDFEngine()
    both = build_engines(ExtractOptions(vllm=VLLM), text)
    assert [type(e) for e in both] == [VLLMEngine, RapidOCREngine, PyMuPDFEngine]
    assert both[-1] is text
    no_cpu = ExtractOptions(vllm=VLLM, cpu=CpuOcrOptions(enabled=False))
    assert [type(e) for e in build_engines(no_cpu, text)] == [VLLMEngine, PyMuPDFEngine]
    assert build_engines(ExtractOptions(vllm=VLLM, ocr=OcrMode.never), text) == [text]
    assert build_engines(ExtractOptions(cpu=CpuOcrOptions(enabled=False)), text) == [text]


def test_nothing_heavy_is_built_before_the_first_read() -> None:
    code = (
        "import sys\n"
        "from ocr_engine.options import ExtractOptions, VLLMOptions\n"
        "from ocr_engine.engines.reader import PageReader\n"
        "PageReader(ExtractOptions(vllm=VLLMOptions(urls=['http://127.0.0.1:9/v1']))).close()\n"
        "heavy = {'ocr_engine.engines.vllm_engine', 'ocr_engine.engines.rapid_engine',"
        " 'rapidocr', 'httpx'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT, timeout=120)


def test_an_engine_registered_in_the_list_reads_the_pages_routing_sends_to_ocr() -> None:
    scribe = Scribe()
    reader = PageReader(ExtractOptions(), engines=[scribe, PyMuPDFEngine()])
    text_page, scan_page = _read(reader, _pdf())
    assert text_page.engine.name == "pymupdf" and text_page.route == "text layer"
    assert scan_page.engine.name == "scribe" and scan_page.route == "no text layer"
    assert scan_page.status is PageStatus.ok and scan_page.blocks[0].text == "scribe read page 2"
    assert scribe.windows == [(2,)] and scribe.closed
    assert [sent_to_ocr(p) for p in (text_page, scan_page)] == [False, True]


def test_a_page_the_first_engine_fails_goes_to_the_next_then_to_the_text_layer() -> None:
    down, second = Down("first"), Scribe("second")
    reader = PageReader(ExtractOptions(), engines=[down, second, PyMuPDFEngine()])
    _, scan_page = _read(reader, _pdf())
    assert scan_page.engine.name == "second" and scan_page.status is PageStatus.fallback
    assert [e.message for e in scan_page.errors] == ["first down"]
    assert second.windows == [(2,)]

    forced = ExtractOptions(ocr=OcrMode.always)
    reader = PageReader(forced, engines=[Down("a"), Down("b"), PyMuPDFEngine()])
    text_page, scan_page = _read(reader, _pdf())
    assert text_page.engine.name == "pymupdf" and text_page.status is PageStatus.fallback
    assert text_page.route == OCR_FAILED_ROUTE
    assert [e.message for e in text_page.errors] == ["a down", "b down"]
    assert scan_page.status is PageStatus.failed and scan_page.engine.name == "a"
    assert [e.message for e in scan_page.errors] == ["a down", "b down"]
    assert scan_page.route == "OCR forced (--ocr always)"


def test_a_routing_failure_is_recorded_on_the_page() -> None:
    def broken_router(page: pymupdf.Page, text_page: Page) -> str | None:
        raise RuntimeError(f"cannot trace page {page.number + 1}")

    scribe = Scribe()
    reader = PageReader(ExtractOptions(), engines=[scribe, PyMuPDFEngine()], router=broken_router)
    text_page, scan_page = _read(reader, _pdf())
    assert text_page.engine.name == "pymupdf" and text_page.route == ROUTING_FAILED_ROUTE
    assert [(e.code, e.message) for e in text_page.errors] == [
        ("routing_failed", "RuntimeError: cannot trace page 1")
    ]
    assert text_page.blocks and not sent_to_ocr(text_page)
    assert scan_page.engine.name == "scribe"
    assert scan_page.route == "routing failed (cannot trace page 2); no text layer"
    assert [e.code for e in scan_page.errors] == ["routing_failed"]
