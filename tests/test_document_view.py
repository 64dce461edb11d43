"""A document's own view (`/?doc=ID`) and the page's other views, in headless Chromium: opened
from the documents list and from a citation, its page cards in a grid across the width with
images large enough to read boxes on, its pages' engines, its exports; Extract and Settings in
views of their own; nothing loaded from anywhere but the server. Screenshots at 1,400 and 900
pixels; `FOLIO_DOC_IMAGES=DIR` writes them, small, to DIR (docs/img/ keeps them)."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from PIL import Image

from server.services import Services
from tests import test_web_page as web
from tests.pdfgen import FACTS, fact_pdf, wide_table_pdf
from tests.test_web_page import SLOW_MS, _ingest

# the web page tests' fixtures: the browser, a fresh context per test, the served site
browser, open_page, shots, site = web.browser, web.open_page, web.shots, web.site

QUESTION = "When did the Kelud volcano erupt?"
TABLE_QUESTION = "What were total revenues in 2020?"


def _keep(shot: bytes, name: str) -> None:
    """A screenshot kept small (256 colours) in FOLIO_DOC_IMAGES, when set."""
    keep = os.environ.get("FOLIO_DOC_IMAGES")
    if not keep:
        return
    Path(keep).mkdir(parents=True, exist_ok=True)
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    image.quantize(colors=256, dither=Image.Dither.NONE).save(Path(keep) / name, optimize=True)


@pytest.fixture(scope="module")
def documents(site: tuple[Services, str]) -> dict[str, str]:
    """Two documents indexed: a three-page report and a wide table; name -> doc_id."""
    _services, base = site
    report = fact_pdf(*FACTS["volcano.pdf"], filler_pages=2)
    table = wide_table_pdf()
    _ingest(base, "kelud report.pdf", report)
    _ingest(base, "selected data.pdf", table)
    return {
        "kelud report.pdf": hashlib.sha256(report).hexdigest(),
        "selected data.pdf": hashlib.sha256(table).hexdigest(),
    }


def _wait_cards(page: Any, count: int) -> None:
    page.wait_for_function(
        """(count) => {
            const imgs = [...document.querySelectorAll("#doc-cards img.thumb-img")];
            return imgs.length === count && imgs.every((i) => i.complete && i.naturalWidth > 0);
        }""",
        arg=count,
    )


@pytest.mark.parametrize("width", [1400, 900])
def test_a_document_has_its_own_view_with_large_cards_and_exports(
    open_page: Any, site: tuple[Services, str], documents: dict[str, str], shots: Path, width: int
) -> None:
    from playwright.sync_api import expect

    _services, base = site
    doc_id = documents["kelud report.pdf"]
    page, errors = open_page(base, width=width, height=1000)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    row = page.locator("li.doc", has_text="kelud report.pdf")
    expect(row).to_have_attribute("data-status", "ok", timeout=SLOW_MS)
    # the main page: Ask and the list side by side, Extract not on it
    ask, docs = (
        page.locator("section.ask").bounding_box(),
        page.locator("section.docs").bounding_box(),
    )
    assert (
        ask and docs and docs["x"] > ask["x"] + ask["width"] - 1 and abs(docs["y"] - ask["y"]) < 2
    )
    expect(page.locator("section.extract")).to_be_hidden()
    if width == 900:
        _keep(page.screenshot(), "home-900.png")

    row.locator("a.doc-name").click()
    assert urlsplit(page.url).query == f"doc={doc_id}"
    expect(page.locator("#doc-view")).to_be_visible()
    expect(page.locator("#home")).to_be_hidden()
    expect(page.locator("#doc-title")).to_have_text("kelud report.pdf")
    expect(page.locator("#doc-badge")).to_have_text("Ready")
    expect(page.locator("#doc-line")).to_contain_text("3 pages")
    expect(page.locator("#doc-cards li.card")).to_have_count(3)
    _wait_cards(page, 3)
    first = page.locator("#doc-cards li.card").first
    expect(first.locator(".card-meta")).to_contain_text("pymupdf")
    assert first.locator(".thumb .block").count() >= 3
    # the cards fill the width, each image large enough to read its boxes on
    panel = page.locator("#doc-panel").bounding_box()
    thumbs = [page.locator("#doc-cards .thumb").nth(i).bounding_box() for i in range(3)]
    assert panel and all(t and t["width"] >= 380 for t in thumbs), thumbs
    columns = len({round(t["x"]) for t in thumbs if t})
    assert columns == (3 if width >= 1400 else 2), thumbs
    page.locator("#doc-pages summary").click()
    expect(page.locator("#doc-page-list table.pages tbody tr")).to_have_count(3)
    expect(page.locator("#doc-page-list tbody tr").first).to_contain_text("pymupdf")

    with page.expect_download() as download:
        page.get_by_role("button", name="Markdown").click()
    assert download.value.suggested_filename == "kelud report.md"
    with open(download.value.path(), encoding="utf-8") as exported:
        assert "Kelud" in exported.read()
    expect(page.locator("#doc-export-status")).to_contain_text("downloaded")
    page.locator("#doc-pages summary").click()
    page.evaluate("() => window.scrollTo(0, 0)")
    shot = page.screenshot(path=shots / f"document-{width}.png", full_page=True)
    _keep(shot, f"document-view-{width}.png")

    page.go_back()  # back to the list, in place
    expect(page.locator("#home")).to_be_visible()
    expect(page.locator("#doc-view")).to_be_hidden()
    page.reload()  # the view's URL opens it by itself
    page.go_forward()
    expect(page.locator("#doc-title")).to_have_text("kelud report.pdf")
    hosts = {urlsplit(url).netloc for url in asked if not url.startswith(("blob:", "data:"))}
    assert hosts == {urlsplit(base).netloc}, hosts  # no script, style or font from elsewhere
    assert errors == []


def test_a_citation_opens_its_document_at_its_page(
    open_page: Any, site: tuple[Services, str], documents: dict[str, str]
) -> None:
    from playwright.sync_api import expect

    _services, base = site
    page, errors = open_page(base, width=1400, height=900)
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("February 2014", timeout=SLOW_MS)
    status = page.locator("#ask-status")
    expect(status).to_contain_text("Quoted from the documents")
    expect(status).to_contain_text("Connect a language model for written answers: see Settings")
    page.wait_for_function(
        "() => { const i = document.querySelector('#cite-1 img.crop');"
        " return i && i.complete && i.naturalWidth > 0; }"
    )
    _keep(page.screenshot(), "ask-1400.png")
    assert "FOLIO_LLM_URL" not in (status.text_content() or "")
    source = page.locator("#cite-1 a.source")
    expect(source).to_have_text("kelud report.pdf")
    source.click()
    assert urlsplit(page.url).query == f"doc={documents['kelud report.pdf']}&page=1"
    expect(page.locator("#doc-cards li.card[data-page='1']")).to_be_in_viewport()
    page.go_back()
    expect(page.locator("#answer-text")).to_contain_text("February 2014")  # the answer stayed

    # the viewer leads to the document too, and closes as it does
    page.locator("#cite-1 .crop-button").click()
    expect(page.locator("#viewer")).to_be_visible()
    page.locator("#viewer-doc").click()
    expect(page.locator("#viewer")).to_be_hidden()
    expect(page.locator("#doc-view")).to_be_visible()
    page.go_back()

    page.locator("#ask-status a", has_text="Settings").click()
    expect(page.locator("#settings-view")).to_be_visible()
    expect(page.locator("#settings-view")).to_contain_text("FOLIO_LLM_URL")
    expect(page.locator(".tabs a[aria-current='page']")).to_have_text("Settings")
    _keep(page.screenshot(), "settings-1400.png")
    page.locator(".tabs a", has_text="Extract").click()
    assert urlsplit(page.url).query == "view=extract"
    expect(page.locator("#extract-form")).to_be_visible()
    expect(page.locator("#home")).to_be_hidden()
    assert errors == []


@pytest.mark.parametrize("width", [1400, 900])
def test_a_table_cells_crop_is_shown_at_a_readable_size(
    open_page: Any, site: tuple[Services, str], documents: dict[str, str], shots: Path, width: int
) -> None:
    """The crop of a cell in a wide row shows its label and column, and is not scaled down in
    the citation column (its capitals, >= 12 px in the image, stay >= 12 px on screen)."""
    from playwright.sync_api import expect

    _services, base = site
    page, errors = open_page(base, width=width, height=900)
    page.fill("#question", TABLE_QUESTION)
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("10,329", timeout=SLOW_MS)
    page.wait_for_function(
        "() => { const i = document.querySelector('#cite-1 img.crop');"
        " return i && i.complete && i.naturalWidth > 0; }"
    )
    natural, shown = page.eval_on_selector(
        "#cite-1 img.crop", "(img) => [img.naturalWidth, img.clientWidth]"
    )
    assert shown >= natural, (natural, shown)
    assert natural < 0.6 * 442 * 2, natural  # not the whole row (442 points) at 144 dpi
    shot = page.locator("#cite-1").screenshot(path=shots / f"table-crop-{width}.png")
    if width == 900:
        _keep(shot, "table-crop-900.png")
    assert errors == []
