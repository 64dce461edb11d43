"""The web page at `/`, end to end in headless Chromium (Playwright driving Debian's chromium).

The real app and services serve on loopback; the page uploads a PDF by drag and drop, waits for
it in the documents list, asks, shows the citation crop, and opens the page viewer, whose
screenshot must show the highlight where the citation says. `FOLIO_SKIP_BROWSER=1` skips these
tests; otherwise a missing chromium is a failure, not a skip. `FOLIO_SCREENSHOTS=DIR` keeps the
screenshots.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pymupdf
import pytest
from PIL import Image

from doubles.llm_stub import Behaviour, LlmStub
from ocr_engine.options import OcrMode
from retrieval.index.embedder import SentenceTransformerEmbedder
from retrieval.links import highlight_of
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf, html_named_pdf
from tests.test_e2e import LiveServer

CHROMIUM = Path(os.environ.get("FOLIO_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KEY = "page-test-key"
QUESTION = "When did the Kelud volcano erupt?"
PAGE_WIDTH_PT = 612  # tests.pdfgen pages are US Letter
SLOW_MS = 120_000
PDF_TYPE = "application/pdf"
JSON_TYPE = "application/json"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium under Playwright; a missing browser fails unless FOLIO_SKIP_BROWSER=1."""
    if os.environ.get("FOLIO_SKIP_BROWSER") == "1":
        pytest.skip("FOLIO_SKIP_BROWSER=1: the headless Chromium tests of the web page are off")
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the web page tests need Debian's chromium "
            "(`apt-get install -y chromium`, which `make test` runs as root); "
            "set FOLIO_SKIP_BROWSER=1 to skip them",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is missing: pip install -e '.[dev]'", pytrace=False)
    with sync_playwright() as playwright:
        # launch() gives every run a fresh temporary profile (user-data dir) of its own
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keep = os.environ.get("FOLIO_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    return tmp_path_factory.mktemp("shots")


@cache
def _shipped_model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@contextmanager
def _serve(root: Path, **settings: Any) -> Iterator[tuple[Services, str]]:
    """The real app and services, with the shipped embedding model (the answers rank sentences
    by its sense of meaning), and `settings` on a loopback port: (services, base URL)."""
    settings = {"ocr": OcrMode.never, "extract_processes": 0, **settings}
    config = Settings(data_dir=root / "data", **settings)
    services = build_services(config, embedder=_shipped_model())
    try:
        with LiveServer(services) as server:
            yield services, server.base_url
    finally:
        services.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str]]:
    with _serve(tmp_path_factory.mktemp("web")) as served:
        yield served


@pytest.fixture(scope="module")
def keyed_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str]]:
    with _serve(tmp_path_factory.mktemp("web-key"), api_key=KEY) as served:
        yield served


@pytest.fixture(scope="module")
def scan_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str]]:
    with _serve(tmp_path_factory.mktemp("web-scan"), ocr=OcrMode.auto) as served:
        yield served


def _scan_of(data: bytes, dpi: int = 150) -> bytes:
    """The first page of a PDF as a scan would have it: one image, no text layer."""
    with pymupdf.open(stream=data, filetype="pdf") as source, pymupdf.open() as scan:
        page = scan.new_page(width=source[0].rect.width, height=source[0].rect.height)
        page.insert_image(page.rect, pixmap=source[0].get_pixmap(dpi=dpi))
        return scan.tobytes()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    """Opens `/` of a server in a fresh context (own storage); returns (page, its uncaught script
    errors). Contexts close after the test, so no event stream keeps the server waiting."""
    contexts: list[Any] = []

    def open_(base: str, width: int = 1280, height: int = 900) -> tuple[Any, list[str]]:
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        context.set_default_timeout(30_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{base}/")
        return page, errors

    yield open_
    for context in contexts:
        context.close()


def _drop(page: Any, name: str, data: bytes) -> None:
    """Drop a file on the upload zone as a person dragging it from their desktop would."""
    transfer = page.evaluate_handle(
        """([name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, { type: "application/pdf" }));
            return transfer;
        }""",
        [name, base64.b64encode(data).decode()],
    )
    page.dispatch_event("#drop", "dragenter", {"dataTransfer": transfer})
    page.dispatch_event("#drop", "drop", {"dataTransfer": transfer})


def _wait_image(page: Any, selector: str) -> None:
    page.wait_for_function(
        """(sel) => {
            const img = document.querySelector(sel);
            return img && img.src.startsWith("blob:") && img.complete && img.naturalWidth > 0;
        }""",
        arg=selector,
    )


def _is_highlight(rgb: Any) -> bool:
    """server.pages' translucent yellow over white paper."""
    r, g, b = rgb
    return r >= 235 and 220 <= g <= 252 and 130 <= b <= 200


def _highlight_share(shot: Image.Image, boxes: list[tuple[float, float, float, float]]) -> Any:
    """(share of highlight pixels inside the boxes, share outside them) on a page screenshot."""
    image = shot.convert("RGB")
    inner = image.crop((1, 1, image.width - 1, image.height - 1))  # the img's 1px border
    scale = inner.width / PAGE_WIDTH_PT
    pixels = inner.load()
    assert pixels is not None
    scaled = [(x0 * scale, y0 * scale, x1 * scale, y1 * scale) for x0, y0, x1, y1 in boxes]
    inside = inside_hits = outside = outside_hits = 0
    for y in range(inner.height):
        for x in range(inner.width):
            hit = _is_highlight(pixels[x, y])
            if any(a + 3 <= x <= c - 3 and b + 3 <= y <= d - 3 for a, b, c, d in scaled):
                inside += 1
                inside_hits += hit
            elif not any(a - 6 <= x <= c + 6 and b - 6 <= y <= d + 6 for a, b, c, d in scaled):
                outside += 1
                outside_hits += hit
    return inside_hits / max(inside, 1), outside_hits / max(outside, 1)


def _assert_highlighted(page: Any, boxes: list[Any], path: Path) -> None:
    """The viewer's screenshot has the highlight colour inside the boxes and nowhere else."""
    shot = page.locator("#viewer-image").screenshot(path=path)
    inside, outside = _highlight_share(Image.open(io.BytesIO(shot)), boxes)
    assert inside > 0.3, (inside, boxes)
    assert outside < 0.002, outside


def _highlight_boxes(base: str, question: str) -> tuple[dict[str, Any], list[Any]]:
    """The first citation the API gives for `question`, and the boxes of its highlight_url."""
    with httpx.Client(base_url=base, timeout=60) as client:
        cited = client.post("/query", json={"question": question, "top_k": 5}).json()
    first = cited["citations"][0]
    return first, highlight_of(first["highlight_url"])


def test_upload_ask_and_see_the_cited_region_highlighted(
    open_page: Any, site: tuple[Services, str], shots: Path
) -> None:
    from playwright.sync_api import expect

    _services, base = site
    title, sections = FACTS["volcano.pdf"]
    page, errors = open_page(base)
    expect(page.locator("#docs-status")).to_contain_text("No documents yet")

    _drop(page, "notes.pdf", html_named_pdf())
    expect(page.locator(".upload.failed")).to_contain_text("not a PDF (no %PDF- header)")
    expect(page.locator(".upload.failed .upload-note")).not_to_contain_text("notes.pdf")
    _drop(page, "kelud report.pdf", fact_pdf(title, sections))
    row = page.locator("li.doc", has_text="kelud report.pdf")
    expect(row).to_have_attribute("data-status", "ok", timeout=SLOW_MS)
    expect(row.locator(".doc-progress")).to_contain_text("2 pages")
    # a card with neither organisation nor kind shows its title, not a year read from the text
    expect(row.locator(".doc-card")).to_have_text(title)
    expect(row.locator("a.doc-open")).to_have_attribute(
        "href", re.compile(r"^/\?doc=[0-9a-f]{64}$")
    )

    asked: list[str] = []
    page.on("request", lambda request: asked.append(urlsplit(request.url).path))
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("February 2014", timeout=SLOW_MS)
    assert "/query/stream" in asked and "/query" not in asked  # streamed
    expect(page.locator("#ask-status")).to_contain_text("Quoted from")  # not a written answer
    marker = page.locator("#answer-text a.marker").first
    expect(marker).to_have_text("[1]")
    citation = page.locator("#cite-1")
    expect(citation).to_contain_text("kelud report.pdf")
    expect(citation).to_contain_text("page 1")
    expect(citation.locator(".quote")).to_contain_text("Kelud")
    _wait_image(page, "#cite-1 img.crop")
    crop_size = page.eval_on_selector(
        "#cite-1 img.crop", "(img) => [img.naturalWidth, img.naturalHeight]"
    )
    page.screenshot(path=shots / "answer.png", full_page=True)

    first, boxes = _highlight_boxes(base, QUESTION)
    x0, y0, x1, y1 = first["bbox"]
    # the crop is the cited box and its 16pt margin at 144 dpi, not the page
    assert abs(crop_size[0] - (x1 - x0 + 32) * 2) <= 4, crop_size
    assert abs(crop_size[1] - (y1 - y0 + 32) * 2) <= 4, crop_size

    page.set_viewport_size({"width": 1280, "height": 1800})  # the whole page image in view
    marker.click()
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#viewer-title")).to_contain_text("kelud report.pdf")
    _wait_image(page, "#viewer-image")
    expect(page.locator("#viewer-page")).to_have_text("Page 1 of 2")
    expect(page.locator("#viewer-image")).to_have_attribute(
        "alt", re.compile("cited region highlighted")
    )
    _assert_highlighted(page, boxes, shots / "viewer-page.png")
    page.screenshot(path=shots / "viewer.png")

    page.click("#viewer-next")
    expect(page.locator("#viewer-page")).to_have_text("Page 2 of 2")
    page.wait_for_function("() => document.querySelector('#viewer-image').dataset.page === '2'")
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()

    page.locator("#cite-1 .crop-button").click()  # the crop opens the viewer too
    _wait_image(page, "#viewer-image")
    expect(page.locator("#viewer-page")).to_have_text("Page 1 of 2")
    page.click("#viewer-close")

    # "Show on page" is a link to the viewer page, to open in a tab or copy; a click opens it here
    link = page.locator("#cite-1 a.open-page")
    expect(link).to_have_attribute("href", first["viewer_url"])
    link.click()
    _wait_image(page, "#viewer-image")
    assert len(page.context.pages) == 1
    page.click("#viewer-close")

    page.set_viewport_size({"width": 390, "height": 844})
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    page.screenshot(path=shots / "narrow.png", full_page=True)
    assert overflow <= 0, f"the page scrolls sideways at 390px by {overflow}px"
    assert errors == []


def _ingest(base: str, name: str, data: bytes) -> None:
    """Upload through the API (a duplicate is recognised) and wait until it is indexed."""
    with httpx.Client(base_url=base, timeout=60) as client:
        accepted = client.post("/documents", files={"file": (name, data, PDF_TYPE)})
        assert accepted.status_code == 202, accepted.text
        status_url = accepted.json()["status_url"]
        deadline = time.monotonic() + SLOW_MS / 1000
        while client.get(status_url).json()["status"] != "ok":
            assert time.monotonic() < deadline, "the upload was not indexed in time"
            time.sleep(0.2)


def test_a_document_whose_answer_sentences_are_being_embedded_says_so(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """ "Ready" and searchable, but a question about it embeds its sentences first: the row says
    so, with how far it is, while `GET /health` lists it as pending, and stops once it is not."""
    from playwright.sync_api import expect

    _services, base = site
    data = fact_pdf(*FACTS["bakery.pdf"])
    _ingest(base, "bakery notes.pdf", data)
    doc_id = hashlib.sha256(data).hexdigest()
    pending = [doc_id]

    def health(route: Any) -> None:
        real = route.fetch().json()
        real["answer_sentences"] = {
            "settled": not pending,
            "documents_checked": 0,
            "texts_embedded": 0,
            "pending": list(pending),
            "current": {"doc_id": doc_id, "done": 40, "total": 160} if pending else None,
        }
        route.fulfill(status=200, content_type=JSON_TYPE, body=json.dumps(real))

    page, errors = open_page(base)
    page.route("**/health", health)
    page.reload()
    row = page.locator("li.doc", has_text="bakery notes.pdf")
    expect(row).to_have_attribute("data-status", "ok", timeout=SLOW_MS)
    expect(row.locator(".doc-progress")).to_contain_text("preparing answers 25%")
    assert "a little longer" in (row.locator(".doc-progress").get_attribute("title") or "")
    pending.clear()
    expect(row.locator(".doc-progress")).not_to_contain_text("preparing", timeout=10_000)
    expect(row.locator(".doc-progress")).to_contain_text("page")
    assert errors == []


def test_reading_and_indexing_at_once_keep_their_own_counts(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """A long document is read and indexed at once: its line said "Reading page 96 of 190", then
    "Indexing page 12 of 190", then "Reading page 128"; now reading goes on, with the pages
    indexed beside it, and indexing shows alone once every page is read (before the next
    indexing tick too: "Reading page 190 of 190" stood still while the last pages were embedded)."""
    _services, base = site
    page, errors = open_page(base)
    lines = page.evaluate(
        """async () => {
            const { nextProgress, progressText } = await import("/static/documents.js");
            const record = { status: "processing", pages: 190 };
            const ticks = [
                ["extract", 0, 0], ["extract", 96, 2.7], ["embed", 12, 0.3],
                ["extract", 128, 2.5], ["extract", 190, 2.6], ["embed", 150, 0.4],
            ];
            let progress = {};
            return ticks.map(([stage, done, rate]) => {
                progress = nextProgress(progress, {
                    stage, pages_done: done, pages_total: 190, pages_per_s: rate,
                });
                return progressText(record, progress);
            });
        }"""
    )
    assert lines == [
        "Reading 190 pages…",
        "Reading page 96 of 190 · 2.7 pages/s",
        "Reading page 96 of 190 · 2.7 pages/s · 12 indexed",
        "Reading page 128 of 190 · 2.5 pages/s · 12 indexed",
        "Indexing page 12 of 190",
        "Indexing page 150 of 190 · 0.4 pages/s",
    ]
    assert errors == []


def test_without_the_stream_route_the_page_asks_post_query_and_shows_errors(
    open_page: Any, site: tuple[Services, str]
) -> None:
    from playwright.sync_api import expect

    _services, base = site
    _ingest(base, "kelud report.pdf", fact_pdf(*FACTS["volcano.pdf"]))
    page, errors = open_page(base)
    not_found = json.dumps({"error": {"code": "http_error", "message": "Not Found"}})
    page.route(
        "**/query/stream",
        lambda route: route.fulfill(status=404, content_type=JSON_TYPE, body=not_found),
    )
    asked: list[str] = []
    page.on("request", lambda request: asked.append(urlsplit(request.url).path))
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("February 2014", timeout=SLOW_MS)
    assert asked.count("/query") == 1
    _wait_image(page, "#cite-1 img.crop")

    down = json.dumps({"error": {"code": "index_unavailable", "message": "the index is down"}})
    page.route(
        "**/query", lambda route: route.fulfill(status=503, content_type=JSON_TYPE, body=down)
    )
    page.click("#ask-button")
    expect(page.locator("#answer-text .error")).to_have_text(
        "the index is down (index_unavailable)"
    )
    expect(page.locator("#citations li")).to_have_count(0)
    expect(page.locator("#sources-title")).to_be_hidden()
    assert errors == []


def test_a_nearest_passage_from_a_table_is_shown_as_rows_not_markdown(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """With no answer, the nearest passages are listed; a table's is read row by row, its cells
    apart, without the pipes and rules of the Markdown it is stored as."""
    from playwright.sync_api import expect

    _services, base = site
    page, errors = open_page(base)
    table = (
        "|   | Three Months Ended |   |\n|---|---|---|\n"
        "|   | July 29, 2023 | July 30, 2022 |\n| Revenue | $ 9,583 | $ 10,329 |"
    )
    hit = {
        "doc_id": "d" * 64,
        "source": "10-Q.pdf",
        "page": 4,
        "regions": [],
        "text": table,
        "score": 0.5,
        "chunk_id": "c0001",
        "section_path": [],
    }
    answer = {
        "question": QUESTION,
        "answer": None,
        "mode": "not_found",
        "citations": [],
        "hits": [hit],
    }
    page.route(
        "**/query/stream",
        lambda route: route.fulfill(status=404, content_type=JSON_TYPE, body="{}"),
    )
    page.route(
        "**/query",
        lambda route: route.fulfill(status=200, content_type=JSON_TYPE, body=json.dumps(answer)),
    )
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    quote = page.locator("#citations li.nearest .quote")
    expect(quote).to_have_text(
        "Three Months Ended\nJuly 29, 2023 · July 30, 2022\nRevenue · $ 9,583 · $ 10,329"
    )
    expect(page.locator("#sources-title")).to_have_text("Nearest passages")
    assert errors == []


def test_a_question_without_words_says_so_and_clears_the_last_answer(
    open_page: Any, site: tuple[Services, str]
) -> None:
    from playwright.sync_api import expect

    _services, base = site
    _ingest(base, "kelud report.pdf", fact_pdf(*FACTS["volcano.pdf"]))
    page, errors = open_page(base)
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("February 2014", timeout=SLOW_MS)
    page.fill("#question", "   ?! ")
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_have_text("Type a question with words or numbers in it.")
    expect(page.locator("#answer-text")).to_have_text("")
    expect(page.locator("#answer")).to_be_hidden()  # no empty "Answer" heading
    expect(page.locator("#citations li")).to_have_count(0)
    assert errors == []


def test_a_question_too_long_is_sent_whole_and_refused_in_words(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """The input does not cut a pasted question at a length of its own: the server's limit
    (a setting) refuses it and the page shows why."""
    from playwright.sync_api import expect

    _services, base = site
    page, _errors = open_page(base)
    page.fill("#question", ("revenue " * 300).strip())
    page.click("#ask-button")
    # what to change, not a failure: no error code, no empty "Sources" heading
    expect(page.locator("#answer-text .refused")).to_have_text(
        "The question has 2399 characters; at most 2000 are accepted.", timeout=SLOW_MS
    )
    expect(page.locator("#answer-text .error")).to_have_count(0)
    expect(page.locator("#ask-status")).to_have_text("The question was not asked.")
    expect(page.locator("#sources-title")).to_be_hidden()


def test_a_viewer_link_opened_alone_names_its_icon(site: tuple[Services, str]) -> None:
    """A citation's viewer page opened in a tab of its own names an (empty) icon, as the main
    page does, so a browser does not ask for /favicon.ico, which answers 404."""
    _services, base = site
    data = fact_pdf(*FACTS["volcano.pdf"])
    _ingest(base, "kelud report.pdf", data)
    view = f"/documents/{hashlib.sha256(data).hexdigest()}/pages/1/view"
    with httpx.Client(base_url=base, timeout=60) as client:
        assert client.get("/favicon.ico").status_code == 404
        page = client.get(view, params={"highlight": "72,100,300,120"})
    assert page.status_code == 200
    assert "<link rel='icon' href='data:,'>" in page.text


def test_a_viewer_link_opened_alone_shows_the_cited_region_and_leads_to_the_next_page(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """Opened from a copied link, the viewer page says which page of how many it shows, links
    the pages beside it, and scrolls the highlight into view on a window shorter than the page;
    the way back to the cited page shows its highlight again."""
    from playwright.sync_api import expect

    _services, base = site
    data = fact_pdf(*FACTS["volcano.pdf"])
    _ingest(base, "kelud report.pdf", data)
    doc_id = hashlib.sha256(data).hexdigest()
    low = (72.0, 700.0, 300.0, 720.0)  # near the foot of a US Letter page
    view = f"/documents/{doc_id}/pages/1/view?highlight=" + ",".join(str(v) for v in low)
    page, errors = open_page(base, width=800, height=400)
    page.goto(base + view)
    expect(page.locator("h1")).to_have_text("kelud report.pdf — page 1 of 2")
    page.wait_for_function("() => document.querySelector('img').naturalWidth > 0")
    expect(page.locator("#cited")).to_be_in_viewport()
    assert page.evaluate("() => window.scrollY") > 0
    page.get_by_role("link", name="Next page").click()
    expect(page.locator("h1")).to_have_text("kelud report.pdf — page 2 of 2")
    expect(page.get_by_role("link", name="Previous page")).to_be_visible()
    expect(page.get_by_role("link", name="Next page")).to_have_count(0)
    expect(page.locator("#cited")).to_have_count(0)  # the highlight is page 1's
    page.get_by_role("link", name="Previous page").click()  # and is back with it
    expect(page.locator("h1")).to_have_text("kelud report.pdf — page 1 of 2")
    page.wait_for_function("() => document.querySelector('img').naturalWidth > 0")
    expect(page.locator("#cited")).to_be_in_viewport()
    assert "highlight=" in (page.locator("img").get_attribute("src") or "")
    assert errors == []


def test_document_text_is_shown_as_text_never_as_markup(
    open_page: Any, site: tuple[Services, str]
) -> None:
    from playwright.sync_api import expect

    _services, base = site
    name = "<img src=x onerror=window.pwned=1>.pdf"
    body = "The <b>Merapi</b> volcano erupted in 2010 <img src=x onerror=window.pwned=2>."
    _ingest(base, name, fact_pdf("Merapi <i>notes</i>", [("History", body)]))
    page, errors = open_page(base)
    expect(page.locator("li.doc .doc-name", has_text=name)).to_have_count(1)
    # a long name may wrap after its separators; the text is the name, unchanged
    shown = page.locator("li.doc .doc-name", has_text=name)
    assert shown.locator("wbr").count() == name.count(".")
    page.fill("#question", "When did the Merapi volcano erupt?")
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("<b>Merapi</b>", timeout=SLOW_MS)
    expect(page.locator("#cite-1 .source")).to_have_text(name)
    expect(page.locator("#cite-1 .quote")).to_contain_text("<img src=x")
    _wait_image(page, "#cite-1 img.crop")
    injected = "#answer-text b, #answer-text img, .citations b, .documents img, .quote img"
    assert page.locator(injected).count() == 0
    assert page.evaluate("() => window.pwned") is None
    assert errors == []


def _listed(
    open_page: Any,
    base: str,
    name: str,
    heading: str,
    fact: tuple[str, str],
    metadata: dict[str, str],
) -> tuple[Any, list[str]]:
    """The list row's card line of a one-fact PDF uploaded as `name`, with `metadata`."""
    import pymupdf

    data = fact_pdf(heading, [fact])
    with pymupdf.open(stream=data) as doc:
        doc.set_metadata(metadata)
        data = doc.tobytes()
    _ingest(base, name, data)
    page, errors = open_page(base)
    return page.locator("li.doc", has_text=name).locator(".doc-card"), errors


@pytest.mark.parametrize(
    ("name", "heading", "fact", "metadata", "expected"),
    [
        pytest.param(  # two reports of one organisation differ by their titles
            "pew report.pdf",
            "Views of China",
            ("Summary", "Most Americans see China as a competitor."),
            {"author": "Pew Research Center", "title": "Views of China in 2021"},
            r"^Views of China in 2021 · Pew Research Center$",
            id="report-of-no-known-kind",
        ),
        pytest.param(  # two manuals of one maker differ by their titles
            "watch_d.pdf",
            "WATCH D",
            ("Wake the screen", "Press the Up button to wake the screen."),
            {"author": "Huawei Technologies Co., Ltd.", "title": "WATCH D User Guide"},
            r"^WATCH D User Guide · Huawei Technologies Co., Ltd · manual",
            id="manual",
        ),
        pytest.param(  # the author field of a paper is often a venue's running header
            "2310.07609v1.pdf",
            "Checking claims by asking questions",
            ("Abstract", "We verify claims by asking questions about them."),
            {"author": "Annual Meeting of the Association", "title": "QACheck: a demonstration"},
            r"^QACheck: a demonstration · paper( · \d{4})?$",
            id="paper",
        ),
    ],
)
def test_a_document_is_listed_by_what_tells_it_apart(
    open_page: Any,
    site: tuple[Services, str],
    name: str,
    heading: str,
    fact: tuple[str, str],
    metadata: dict[str, str],
    expected: str,
) -> None:
    """The list shows each document's card line: a report of no known kind and a manual lead
    with their titles, then organisation (and kind); a paper is its title and kind."""
    from playwright.sync_api import expect

    line, errors = _listed(open_page, site[1], name, heading, fact, metadata)
    expect(line).to_have_text(re.compile(expected), timeout=SLOW_MS)
    assert errors == []


def test_a_filings_date_does_not_wrap_at_its_hyphens(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """A filing's line ends with its period's date, set so that a narrow list does not break it
    after "2023-07-"; its text is unchanged."""
    from playwright.sync_api import expect

    line, errors = _listed(
        open_page,
        site[1],
        "bby q2.pdf",
        "FORM 10-Q",
        ("Quarterly report", "Quarterly report for the quarterly period ended July 29, 2023."),
        {"author": "Best Buy Co., Inc.", "title": "Best Buy Form 10-Q"},
    )
    expect(line).to_have_text(re.compile(r"quarterly report \(10-Q\) · .*2023-07-29$"))
    expect(line.locator("span.nowrap")).to_have_text("2023-07-29")
    # retried: the row is painted again as its answer sentences are prepared
    expect(line.locator("span.nowrap")).to_have_css("white-space", "nowrap")
    assert errors == []


def test_a_file_that_failed_before_any_page_offers_no_pages(
    open_page: Any, site: tuple[Services, str]
) -> None:
    """A file with a PDF's first bytes that no reader can open fails with its reason; its row
    offers no pages to open, since it has none; its own view says so."""
    from playwright.sync_api import expect

    _services, base = site
    with httpx.Client(base_url=base, timeout=60) as client:
        accepted = client.post(
            "/documents", files={"file": ("broken.pdf", b"%PDF-1.7\nnot a body", PDF_TYPE)}
        )
        assert accepted.status_code == 202, accepted.text
    page, errors = open_page(base)
    row = page.locator("li.doc", has_text="broken.pdf")
    expect(row).to_have_attribute("data-status", "failed", timeout=SLOW_MS)
    expect(row.locator(".doc-errors")).not_to_be_empty()
    expect(row.locator(".doc-errors")).not_to_contain_text("broken.pdf")  # named once, above
    expect(row.locator("a.doc-open")).to_be_hidden()
    row.locator("a.doc-name").click()
    expect(page.locator("#doc-badge")).to_have_text("Failed")
    expect(page.locator("#doc-errors")).not_to_be_empty()
    expect(page.locator("#doc-cards")).to_have_text("It has no page to show.")
    expect(page.locator("#doc-exports button")).to_have_count(0)
    assert errors == []


def test_a_scanned_page_is_cited_and_highlighted_the_same_way(
    open_page: Any, scan_site: tuple[Services, str], shots: Path
) -> None:
    from playwright.sync_api import expect

    _services, base = scan_site
    page, errors = open_page(base, height=1800)
    _drop(page, "kelud scan.pdf", _scan_of(fact_pdf(*FACTS["volcano.pdf"])))
    row = page.locator("li.doc", has_text="kelud scan.pdf")
    expect(row).to_have_attribute("data-status", "ok", timeout=SLOW_MS)
    row.locator("a.doc-open").click()
    expect(page.locator("#doc-page-list tbody tr")).to_contain_text("rapidocr")  # read by OCR
    page.go_back()

    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("2014", timeout=SLOW_MS)
    _wait_image(page, "#cite-1 img.crop")
    page.locator("#cite-1 .crop-button").click()
    _wait_image(page, "#viewer-image")
    _, boxes = _highlight_boxes(base, QUESTION)
    _assert_highlighted(page, boxes, shots / "viewer-scan.png")
    assert errors == []


def test_with_an_api_key_the_page_asks_for_it_and_sends_it(
    open_page: Any, keyed_site: tuple[Services, str], shots: Path
) -> None:
    from playwright.sync_api import expect

    _services, base = keyed_site
    title, sections = FACTS["bakery.pdf"]
    page, errors = open_page(base)
    dialog = page.locator("#key-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#key-message")).to_contain_text("needs an API key")
    page.screenshot(path=shots / "key.png")
    page.fill("#key-input", "not-the-key")
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-message")).to_contain_text("refused")
    expect(dialog).to_be_visible()
    page.fill("#key-input", KEY)
    page.click("#key-form button[type=submit]")
    expect(dialog).to_be_hidden()
    expect(page.locator("#docs-status")).to_contain_text("No documents yet")
    assert page.evaluate("() => localStorage.getItem('folio.apiKey')") == KEY

    page.set_input_files(
        "#file-input",
        files=[
            {
                "name": "bakery.pdf",
                "mimeType": PDF_TYPE,
                "buffer": fact_pdf(title, sections),
            }
        ],
    )
    row = page.locator("li.doc", has_text="bakery.pdf")
    expect(row).to_have_attribute("data-status", "ok", timeout=SLOW_MS)

    page.fill("#question", "What flour is the sourdough starter fed with?")
    page.click("#ask-button")
    expect(page.locator("#answer-text")).to_contain_text("rye flour", timeout=SLOW_MS)
    _wait_image(page, "#cite-1 img.crop")
    page.locator("#cite-1 .open-page").click()
    _wait_image(page, "#viewer-image")
    page.keyboard.press("Escape")
    # the link is signed: copied into another browser, it opens without the key
    href = page.locator("#cite-1 a.open-page").get_attribute("href")
    assert href is not None and "sig=" in href, href
    with httpx.Client(base_url=base, timeout=60) as client:
        viewer = client.get(href)
        assert viewer.status_code == 200
        assert client.get(href.split("?")[0]).status_code == 401
        # its links to the pages beside it are signed too
        beside = re.findall(r"<a href='([^']+)'>(?:Previous|Next) page</a>", viewer.text)
        assert beside and all("sig=" in link for link in beside), viewer.text
        assert all(client.get(html.unescape(link)).status_code == 200 for link in beside)

    page.reload()  # the key is remembered
    expect(page.locator("li.doc", has_text="bakery.pdf")).to_have_attribute("data-status", "ok")
    expect(dialog).to_be_hidden()
    page.click("#key-forget")
    expect(dialog).to_be_visible()  # forgotten: the next request asks again
    assert errors == []


@pytest.fixture(scope="module")
def generating_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LlmStub, str]]:
    with LlmStub() as stub:
        root = tmp_path_factory.mktemp("web-llm")
        with _serve(root, llm_url=stub.url, llm_timeout_s=5.0) as (_services, base):
            yield stub, base


def test_a_generated_answer_streams_in_and_shows_each_sources_support(
    open_page: Any, generating_site: tuple[LlmStub, str], shots: Path
) -> None:
    from playwright.sync_api import expect

    stub, base = generating_site
    _ingest(base, "volcano.pdf", fact_pdf(*FACTS["volcano.pdf"]))
    page, errors = open_page(base)
    page.evaluate(
        """() => {
            window.answerUpdates = 0;
            new MutationObserver(() => window.answerUpdates++).observe(
                document.querySelector("#answer-text"), { childList: true });
        }"""
    )
    stub.behaviour = Behaviour.miscite  # a faithful sentence, then one citing the wrong source
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("Generated", timeout=SLOW_MS)
    assert page.evaluate("() => window.answerUpdates") > 5  # token by token, not all at once
    expect(page.locator("#answer-text")).to_contain_text("February 2014")
    expect(page.locator("#answer-text a.marker")).to_have_count(1)  # the miscited one dropped
    expect(page.locator("#cite-1 .support")).to_have_text("supported")
    _wait_image(page, "#cite-1 img.crop")
    page.screenshot(path=shots / "generated.png", full_page=True)

    stub.behaviour = Behaviour.error_500
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("The language model failed")
    expect(page.locator("#answer-text")).to_contain_text("February 2014")
    assert errors == []
