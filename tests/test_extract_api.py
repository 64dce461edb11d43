"""POST /extract streams pages as they are read and indexes nothing; page cards of a document."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from doubles.fakes import HashEmbedder
from doubles.loopback import sse_events
from ocr_engine.options import OcrMode
from server.services import Services, build_services
from server.settings import Settings
from tests.imagegen import encode, text_image
from tests.pdfgen import FACTS, fact_pdf
from tests.test_e2e import LiveServer


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str, str]]:
    root = tmp_path_factory.mktemp("extract")
    pdf = root / "volcano.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["volcano.pdf"], filler_pages=2))
    settings = Settings(data_dir=root / "data", ocr=OcrMode.auto)
    services = build_services(settings, embedder=HashEmbedder())
    try:
        [result] = services.sync.ingest_paths([pdf])
        assert result.doc_id is not None
        with LiveServer(services) as server:
            yield services, server.base_url, result.doc_id
    finally:
        services.close()


def _state(services: Services) -> tuple[object, ...]:
    root = services.settings.data_dir
    files = sorted(p.name for p in (root / "documents").iterdir())
    cache = root / "page_cache.sqlite3"
    return (
        [(r.doc_id, r.status) for r in services.ledger.documents()],
        services.store.count(),
        files,
        cache.stat().st_size if cache.exists() else 0,
    )


def test_extract_streams_each_page_in_order_and_indexes_nothing(
    live: tuple[Services, str, str],
) -> None:
    services, base, _ = live
    before = _state(services)
    data = fact_pdf(*FACTS["bakery.pdf"], filler_pages=4)
    with httpx.Client(base_url=base, timeout=300) as client:
        with client.stream("POST", "/extract", files={"file": ("bakery.pdf", data)}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = sse_events(stream)
        kinds = [kind for kind, _ in events]
        assert kinds == ["started"] + ["page"] * 5 + ["done"]
        cards = [body for kind, body in events if kind == "page"]
        assert [c["number"] for c in cards] == [1, 2, 3, 4, 5]
        first = cards[0]
        assert "Bakery Operations Manual" in str(first["markdown"])
        assert first["route"] == "text layer" and first["status"] == "ok"
        page = first["page"]
        assert isinstance(page, dict) and page["blocks"]
        done = events[-1][1]["document"]
        assert isinstance(done, dict) and done["page_count"] == 5
        assert done["source"] == "bakery.pdf"
        image = client.get(str(first["image_url"]))
        assert image.status_code == 200 and image.headers["content-type"] == "image/png"
        block_urls = first["block_urls"]
        assert isinstance(block_urls, dict) and len(block_urls) == len(page["blocks"])
        drawn = client.get(next(iter(block_urls.values())))
        assert drawn.status_code == 200 and drawn.content != image.content
    assert _state(services) == before, "the ledger, index, stored files and page cache unchanged"


def test_extract_reads_the_pages_asked_for_and_refuses_bad_input(
    live: tuple[Services, str, str],
) -> None:
    services, base, _ = live
    before = _state(services)
    data = fact_pdf(*FACTS["bakery.pdf"], filler_pages=4)
    with httpx.Client(base_url=base, timeout=300) as client:
        with client.stream(
            "POST", "/extract", files={"file": ("b.pdf", data)}, data={"pages": "4-5,2"}
        ) as stream:
            events = sse_events(stream)
        assert [b["number"] for k, b in events if k == "page"] == [2, 4, 5]
        bad = client.post("/extract", files={"file": ("b.pdf", data)}, data={"pages": "2-9"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_pages"
        gif = encode(Image.new("RGB", (9, 9), "red"), "GIF")
        refused = client.post("/extract", files={"file": ("a.gif", gif)})
        assert refused.status_code == 415 and "GIF" in refused.text
        png = encode(text_image(["Nothing to read"]), "PNG")
        with client.stream(
            "POST", "/extract", files={"file": ("note.png", png)}, data={"ocr": "never"}
        ) as stream:
            events = sse_events(stream)
        [card] = [b for k, b in events if k == "page"]
        image = client.get(str(card["image_url"]))
        assert Image.open(io.BytesIO(image.content)).size[0] > 0
        assert client.get("/extract/" + "0" * 32 + "/pages/1.png").status_code == 404
    assert _state(services) == before


def test_document_cards_carry_the_page_json_and_links(live: tuple[Services, str, str]) -> None:
    _, base, doc_id = live
    with httpx.Client(base_url=base, timeout=60) as client:
        body = client.get(f"/documents/{doc_id}/cards", params={"first": 2, "last": 3}).json()
    assert [c["number"] for c in body["cards"]] == [2, 3]
    assert body["page_count"] == 3 and body["status"] == "ok"
    card = body["cards"][0]
    assert card["image_url"] == f"/documents/{doc_id}/pages/2.png"
    assert set(card["block_urls"]) == {b["id"] for b in card["page"]["blocks"]}


def test_cli_extract_reads_an_image(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from server.cli.cli import app

    path = tmp_path / "blank.png"
    path.write_bytes(encode(text_image([]), "PNG", dpi=(144, 144)))
    result = CliRunner().invoke(app, ["extract", str(path), "--ocr", "never"])
    assert result.exit_code == 0, result.output
    assert '"source": "blank.png"' in result.stdout and '"width": 500.0' in result.stdout
