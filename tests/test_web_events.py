"""The web page's document list misses no change made between loading the list and following
`/events`: a document ingested while the page's event stream is being opened shows as indexed
(in headless Chromium against the real app on loopback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from doubles.fakes import HashEmbedder
from ingest.pipeline.pipeline import IngestOptions
from ocr_engine.options import ExtractOptions, OcrMode
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf
from tests.test_e2e import LiveServer
from tests.test_web_page import browser, shots  # noqa: F401  (the page tests' fixtures)


def test_a_document_finished_while_the_event_stream_opens_shows_as_indexed(
    tmp_path: Path,
    browser: Any,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    pdf = tmp_path / "volcano.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never)
    options = IngestOptions(extract=ExtractOptions(ocr=OcrMode.never), extract_processes=0)
    services = build_services(settings, embedder=HashEmbedder(), options=options)
    held: list[str] = []

    def ingest_first(route: Any) -> None:
        """The first `/events` request waits until a document has been ingested (the stream's
        subscription only starts after it); later ones go straight through."""
        if not held:
            held.append(route.request.url)
            (result,) = services.sync.ingest_paths([pdf])
            assert result.status == "ok", result.error
        route.continue_()

    try:
        with LiveServer(services) as live:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            try:
                context.set_default_timeout(30_000)
                context.route("**/events", ingest_first)
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(f"{live.base_url}/")
                row = page.locator("#documents li.doc", has_text="volcano.pdf")
                expect(row).to_have_attribute("data-status", "ok", timeout=20_000)
                page.screenshot(path=shots / "events-race.png", full_page=True)
                assert held, "the page never opened /events"
                assert errors == []
            finally:
                context.close()
    finally:
        services.close()
