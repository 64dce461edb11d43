"""Page cards in headless Chromium: a PNG and a 3-frame TIFF read through the Extract panel (the
OCR simulator as the vLLM endpoint), cards appearing one by one with their blocks boxed on the
text (pixel check), a table page's Markdown as a table, the JSON download, a failed page's reason;
and an indexed document's cards while it is still read: a page already written shows its boxes
and text before the document is ok, and its card then equals the finished document's.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest
import uvicorn
from fastapi import FastAPI

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from doubles.ocr_simulator import Fault, OcrSimulator
from ocr_engine.inputs.images import image_to_pdf
from ocr_engine.layout.furniture import RADIUS
from ocr_engine.options import CpuOcrOptions, ExtractOptions, OcrMode
from server.routes.extract import extract_options
from server.serve.app import create_app
from server.services import build_services, ingest_options
from server.settings import Settings
from tests.imagegen import encode, page_png, tiff_frames
from tests.pdfgen import FACTS, fact_pdf
from tests.test_web_page import browser, shots  # noqa: F401  (fixtures)

SLOW_MS = 120_000
TABLE_OUTPUT = (
    "<|ref|>title<|/ref|><|det|>[[117, 72, 500, 110]]<|/det|>\n# Quarterly sales\n\n"
    "<|ref|>table<|/ref|><|det|>[[117, 140, 700, 330]]<|/det|>\n"
    "<table><tr><td>Region</td><td>Q1</td><td>Q2</td></tr>"
    "<tr><td>North</td><td>120</td><td>135</td></tr>"
    "<tr><td>South</td><td>98</td><td>101</td></tr></table>"
)

# share of the thumbnail's dark pixels inside the boxes drawn over it, counted in the browser
_INK_IN_BOXES = """(card) => {
  const img = card.querySelector('img.thumb-img');
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  const boxes = [...card.querySelectorAll('.block')].map((b) => {
    const s = b.style, w = canvas.width, h = canvas.height;
    const x = parseFloat(s.left) * w / 100, y = parseFloat(s.top) * h / 100;
    const bw = parseFloat(s.width) * w / 100, bh = parseFloat(s.height) * h / 100;
    return [x - 3, y - 3, x + bw + 3, y + bh + 3];
  });
  let dark = 0, inside = 0;
  for (let y = 0; y < canvas.height; y++) for (let x = 0; x < canvas.width; x++) {
    const i = (y * canvas.width + x) * 4;
    if (px[i] + px[i + 1] + px[i + 2] > 384) continue;
    dark++;
    if (boxes.some(([a, b, c, d]) => x >= a && x <= c && y >= b && y <= d)) inside++;
  }
  return {dark, inside, boxes: boxes.length};
}"""


def _table_page() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 80), "Quarterly sales", fontsize=20)
    for r, row in enumerate(
        [("Region", "Q1", "Q2"), ("North", "120", "135"), ("South", "98", "101")]
    ):
        for c, cell in enumerate(row):
            page.insert_text((80 + 130 * c, 140 + 40 * r), cell, fontsize=14)
    return bytes(doc.tobytes())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("cards")
    table = _table_page()
    png = encode(page_png(table, 1), "PNG", dpi=(144, 144))
    letters = fact_pdf(*FACTS["volcano.pdf"], filler_pages=2)
    tiff = tiff_frames([page_png(letters, n) for n in (1, 2, 3)], dpi=(144, 144))
    with OcrSimulator(seconds_per_token=0.004) as sim:
        sim._call(
            "POST",
            "/_sim/register_pdf",
            {
                **sim._pdf_fields("pdf", image_to_pdf(png, "sales.png")),
                **sim._pdf_fields("text_source", table),
                "dpi": 144,
                "name": "sales.png",
                "recorded": {"1": [TABLE_OUTPUT, "test"]},
            },
        )
        keys = sim.register_pdf(image_to_pdf(tiff, "scan.tiff"), text_source=letters)
        sim.add_fault(Fault.garbage, key=keys[2], times=None)
        settings = Settings(
            data_dir=root / "data", ocr=OcrMode.auto, ocr_url=[sim.url], extract_processes=0
        )
        services = build_services(settings, embedder=HashEmbedder())
        app = create_app(services, watch=False)
        no_cpu = ExtractOptions(
            ocr=OcrMode.auto, vllm=settings.extract_options().vllm, cpu=CpuOcrOptions(enabled=False)
        )
        app.dependency_overrides[extract_options] = lambda: no_cpu
        try:
            with _serving(app) as base:
                files = {"png": root / "sales.png", "tiff": root / "scan.tiff"}
                files["png"].write_bytes(png)
                files["tiff"].write_bytes(tiff)
                yield {"base": base, "files": files, "services": services}
        finally:
            services.close()


@contextmanager
def _serving(app: FastAPI) -> Iterator[str]:
    """`app` served by uvicorn in a thread on a loopback port: its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


def _read(page: Any, path: Path) -> None:
    page.evaluate(
        """() => { window.__cards = [];
        new MutationObserver((ms) => { for (const m of ms) for (const n of m.addedNodes)
          window.__cards.push([n.dataset.page, performance.now()]); })
          .observe(document.getElementById('extract-cards'), {childList: true}); }"""
    )
    page.set_input_files("#extract-file", str(path))
    page.click("#extract-button")
    page.wait_for_selector("#extract-cards[data-done='true']", timeout=SLOW_MS)
    page.wait_for_function(
        "[...document.querySelectorAll('#extract-cards img.thumb-img')]"
        ".every(i => i.complete && i.naturalWidth)",
        timeout=SLOW_MS,
    )


def test_cards_appear_one_by_one_with_boxes_on_the_text(
    served: dict[str, Any],
    browser: Any,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    before = served["services"].ledger.count()
    context = browser.new_context(viewport={"width": 1280, "height": 1800}, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{served['base']}/?view=extract")  # Extract is a view of its own

    _read(page, served["files"]["tiff"])
    arrivals = page.evaluate("window.__cards")
    assert [a[0] for a in arrivals] == ["1", "2", "3"]
    assert arrivals[0][1] < arrivals[1][1] < arrivals[2][1], "one event per page, one by one"
    cards = page.query_selector_all("#extract-cards > li.card")
    for card in cards[:2]:
        ink = card.evaluate(_INK_IN_BOXES)
        assert ink["boxes"] > 0 and ink["dark"] > 500, ink
        assert ink["inside"] / ink["dark"] > 0.9, ink
    failed = cards[2]
    assert failed.get_attribute("data-status") == "failed"
    assert "Not read:" in failed.inner_text() and failed.query_selector(".block") is None
    assert "erupted" in cards[0].query_selector(".page-text").text_content()
    page.screenshot(path=str(shots / "cards-tiff.png"), full_page=True)

    _read(page, served["files"]["png"])
    [card] = page.query_selector_all("#extract-cards > li.card")
    ink = card.evaluate(_INK_IN_BOXES)
    assert ink["inside"] / ink["dark"] > 0.9, ink
    kinds = {b.get_attribute("data-kind") for b in card.query_selector_all(".block")}
    assert {"heading", "table"} <= kinds
    cell_texts = [
        td.text_content() for td in card.query_selector_all(".card-md table td, .card-md table th")
    ]
    assert "North" in cell_texts and "135" in cell_texts
    with page.expect_download() as info:
        card.query_selector(".card-json").click()
    body = json.loads(Path(info.value.path()).read_text())
    assert body["number"] == 1 and any(b["type"] == "table" for b in body["blocks"])
    page.screenshot(path=str(shots / "cards-png.png"), full_page=True)

    card.query_selector(".block.kind-table").click()
    page.wait_for_function(
        "document.getElementById('viewer').open"
        " && document.getElementById('viewer-image').naturalWidth",
        timeout=SLOW_MS,
    )
    page.screenshot(path=str(shots / "cards-viewer.png"))
    assert page.inner_text("#viewer-title").endswith("page 1, table block")
    assert page.inner_text("#viewer-status") == "The block is highlighted."
    assert served["services"].ledger.count() == before

    page.keyboard.press("Escape")
    page.click(".tabs a[data-tab='home']")
    page.set_input_files("#file-input", str(served["files"]["png"]))  # indexed this time
    row = page.wait_for_selector("li.doc[data-status='ok']", timeout=SLOW_MS)
    row.query_selector("a.doc-open").click()  # the document's own view
    card = page.wait_for_selector("#doc-cards li.card[data-status='ok']", timeout=SLOW_MS)
    page.wait_for_function(
        "document.querySelector('#doc-cards img.thumb-img')?.naturalWidth > 0", timeout=SLOW_MS
    )
    ink = card.evaluate(_INK_IN_BOXES)
    assert ink["boxes"] >= 2 and ink["inside"] / ink["dark"] > 0.9, ink
    page.screenshot(path=str(shots / "cards-document.png"), full_page=True)
    context.close()


TEXT_PAGES, SCANNED_PAGES, SCAN_SECONDS = 36, 3, 4.0


def _reading_pdf() -> tuple[bytes, bytes]:
    """TEXT_PAGES born-digital pages, each its own heading and paragraph, then SCANNED_PAGES
    pictures of such pages; and the all-text version the OCR simulator answers from."""
    text = pymupdf.open()
    for n in range(1, TEXT_PAGES + SCANNED_PAGES + 1):
        page = text.new_page(width=612, height=792)
        page.insert_text((72, 80), f"Chapter {n}: inspection round {n}", fontsize=18)
        page.insert_textbox(
            pymupdf.Rect(72, 110, 540, 300),
            f"Round {n} checked {n * 3} valves and {n + 7} gauges; every reading was logged "
            f"by crew {chr(64 + n % 26 + 1)} before the shift ended.",
            fontsize=12,
        )
    doc = pymupdf.open()
    doc.insert_pdf(text, to_page=TEXT_PAGES - 1)
    for index in range(TEXT_PAGES, TEXT_PAGES + SCANNED_PAGES):
        scan = doc.new_page(width=612, height=792)
        scan.insert_image(scan.rect, pixmap=text[index].get_pixmap(dpi=144, alpha=False))
    pdf, source = bytes(doc.tobytes()), bytes(text.tobytes())
    doc.close()
    text.close()
    return pdf, source


@pytest.fixture(scope="module")
def reading(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server whose OCR takes SCAN_SECONDS a page, reading one page per request (as CPU OCR
    reads a document's first pages) within the default chunk window (longer than the document):
    the text pages are read, and the first of them written as soon as the furniture check has
    the pages after them, long before the scans are."""
    root = tmp_path_factory.mktemp("reading")
    pdf, source = _reading_pdf()
    with OcrSimulator(prefill_seconds=SCAN_SECONDS, capacity=1) as sim:
        sim.register_pdf(pdf, text_source=source)
        settings = Settings(
            data_dir=root / "data", ocr=OcrMode.auto, ocr_url=[sim.url], extract_processes=0
        )
        options = ingest_options(settings).model_copy(update={"extract_window": 1})
        assert options.window >= TEXT_PAGES + SCANNED_PAGES
        services = build_services(settings, embedder=HashEmbedder(), options=options)
        try:
            with _serving(create_app(services, watch=False)) as base:
                path = root / "rounds.pdf"
                path.write_bytes(pdf)
                yield {"base": base, "path": path}
        finally:
            services.close()


def test_a_page_written_while_the_document_is_read_shows_its_boxes(
    reading: dict[str, Any],
    browser: Any,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    base = reading["base"]
    context = browser.new_context(viewport={"width": 1280, "height": 1800})
    page = context.new_page()
    page.goto(f"{base}/")
    page.set_input_files("#file-input", str(reading["path"]))
    row = page.wait_for_selector("li.doc", timeout=SLOW_MS)
    row.query_selector("a.doc-open").click()  # the document's own view, live as it is read
    cards = page.wait_for_selector("#doc-cards")
    # the text pages are written once RADIUS pages after them are read (furniture is marked
    # then): the first EARLY, before the scans; the next only after the first scan is read
    early = TEXT_PAGES - RADIUS
    read = "(n) => cards.querySelector(`li.card[data-page='${n}']`)?.dataset.read === 'true'"
    page.wait_for_function(
        f"""([row, cards]) => {{ const read = {read};
          const first = cards.querySelector("li.card[data-page='1'] img.thumb-img");
          return row.dataset.status === 'ok' || row.dataset.status === 'failed' || read({early + 1})
            || ([...Array({early}).keys()].every((i) => read(i + 1)) && first?.naturalWidth); }}""",
        arg=[row, cards],
        timeout=SLOW_MS,
    )
    doc_id = row.get_attribute("data-doc-id")
    assert row.get_attribute("data-status") == "processing", "the boxes came only at the end"
    assert cards.query_selector(f"li.card[data-page='{early + 1}'][data-read='true']") is None
    card = cards.query_selector("li.card[data-page='1']")
    ink = card.evaluate(_INK_IN_BOXES)
    assert ink["boxes"] >= 2 and ink["dark"] > 500 and ink["inside"] / ink["dark"] > 0.9, ink
    assert "inspection round 1" in card.query_selector(".page-text").text_content()
    page.screenshot(path=str(shots / "cards-reading.png"), full_page=True)

    with httpx.Client(base_url=base, timeout=30) as http:
        url = f"/documents/{doc_id}/cards?first=1&last={TEXT_PAGES + SCANNED_PAGES}"
        during = http.get(url).json()
        image = http.get(f"/documents/{doc_id}/pages/2.png")
        assert http.get(f"/documents/{doc_id}").json()["status"] == "processing"
        assert image.status_code == 200 and image.headers["content-type"] == "image/png"
        written = [c for c in during["cards"] if c["page"] is not None]
        assert written and written[0]["number"] == 1, during["cards"][:2]
        assert during["cards"][-1]["page"] is None and during["cards"][-1]["status"] == "waiting"

        page.wait_for_function("(row) => row.dataset.status === 'ok'", arg=row, timeout=SLOW_MS)
        done = {c["number"]: c for c in http.get(url).json()["cards"]}
    assert all(card == done[card["number"]] for card in written)
    page.wait_for_function(
        "(cards) => [...cards.querySelectorAll('li.card')].slice(0, 20)"
        ".every((c) => c.dataset.read === 'true')",
        arg=cards,
        timeout=SLOW_MS,
    )
    context.close()
