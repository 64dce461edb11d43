"""Page cards in headless Chromium: a PNG and a 3-frame TIFF read through the Extract panel (the
OCR simulator as the vLLM endpoint), cards appearing one by one with their blocks boxed on the
text (pixel check), a table page's Markdown as a table, the JSON download, a failed page's reason.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest
import uvicorn

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from doubles.ocr_simulator import Fault, OcrSimulator
from ocr_engine.images import image_to_pdf
from ocr_engine.options import CpuOcrOptions, ExtractOptions, OcrMode
from server.app import create_app
from server.routes.extract import extract_options
from server.services import build_services
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
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            files = {"png": root / "sales.png", "tiff": root / "scan.tiff"}
            files["png"].write_bytes(png)
            files["tiff"].write_bytes(tiff)
            yield {"base": f"http://127.0.0.1:{port}", "files": files, "services": services}
        finally:
            server.should_exit = True
            thread.join(15)
            services.close()


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
    page.goto(f"{served['base']}/")

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
    assert served["services"].ledger.count() == before

    page.keyboard.press("Escape")
    page.set_input_files("#file-input", str(served["files"]["png"]))  # indexed this time
    row = page.wait_for_selector("li.doc[data-status='ok']", timeout=SLOW_MS)
    row.query_selector(".card-details summary").click()
    card = page.wait_for_selector(".card-box li.card[data-status='ok']", timeout=SLOW_MS)
    page.wait_for_function(
        "document.querySelector('.card-box img.thumb-img')?.naturalWidth > 0", timeout=SLOW_MS
    )
    ink = card.evaluate(_INK_IN_BOXES)
    assert ink["boxes"] >= 2 and ink["inside"] / ink["dark"] > 0.9, ink
    page.screenshot(path=str(shots / "cards-document.png"), full_page=True)
    context.close()
