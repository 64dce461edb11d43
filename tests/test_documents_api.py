"""POST and DELETE /documents and ingestion progress as server-sent events, over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import httpx
import pytest

from doubles.loopback import sse_events
from ocr_engine.options import OcrMode
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf, html_named_pdf
from tests.test_e2e import LiveServer

TITLE, SECTIONS = FACTS["volcano.pdf"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str]]:
    root = tmp_path_factory.mktemp("api")
    settings = Settings(data_dir=root / "data", ocr=OcrMode.never, max_upload_mb=1)
    services = build_services(settings)
    try:
        with LiveServer(services) as server:
            yield services, server.base_url
    finally:
        services.close()


def test_upload_streams_progress_until_finished_then_is_searchable_and_deletable(
    live: tuple[Services, str],
) -> None:
    services, base = live
    data = fact_pdf(TITLE, SECTIONS, filler_pages=2)
    with httpx.Client(base_url=base, timeout=300) as client:
        accepted = client.post(
            "/documents", files={"file": ("kelud report.pdf", data, "application/pdf")}
        )
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        doc_id = body["doc_id"]
        assert body["duplicate"] is False and body["source"] == "kelud report.pdf"
        with client.stream("GET", body["events_url"]) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = sse_events(stream)
        assert events[-1][0] == "finished" and events[-1][1]["status"] == "ok"
        assert all(e[1]["doc_id"] == doc_id for e in events)

        status = client.get(f"/documents/{doc_id}").json()
        assert status["status"] == "ok" and status["pages"] == 3
        assert [p["number"] for p in status["page_summaries"]] == [1, 2, 3]
        hits = client.post("/query", json={"question": "When did Kelud erupt?"}).json()["hits"]
        assert hits[0]["doc_id"] == doc_id

        again = client.post("/documents", files={"file": ("copy.pdf", data, "application/pdf")})
        assert again.status_code == 202 and again.json()["duplicate"] is True
        assert again.json()["doc_id"] == doc_id

        deleted = client.delete(f"/documents/{doc_id}")
        assert deleted.status_code == 200 and deleted.json()["doc_id"] == doc_id
        assert client.get(f"/documents/{doc_id}").status_code == 404
        assert client.delete(f"/documents/{doc_id}").json()["error"]["code"] == "unknown_document"
        hits = client.post("/query", json={"question": "When did Kelud erupt?"}).json()["hits"]
        assert all(h["doc_id"] != doc_id for h in hits)
    assert services.store.count() == sum(r.chunks for r in services.ledger.documents())


def test_uploads_that_are_not_pdfs_or_too_large_are_refused(live: tuple[Services, str]) -> None:
    _services, base = live
    with httpx.Client(base_url=base, timeout=60) as client:
        html = client.post("/documents", files={"file": ("page.pdf", html_named_pdf())})
        assert html.status_code == 415 and html.json()["error"]["code"] == "not_a_pdf"
        empty = client.post("/documents", files={"file": ("empty.pdf", b"")})
        assert empty.status_code == 400 and empty.json()["error"]["code"] == "empty_file"
        big = b"%PDF-1.7\n" + b"0" * (1 << 20)
        too_large = client.post("/documents", files={"file": ("big.pdf", big)})
        assert too_large.status_code == 413 and too_large.json()["error"]["code"] == "too_large"
        missing = client.post("/documents")
        assert missing.status_code == 422


def test_event_stream_sees_a_document_another_client_uploads(live: tuple[Services, str]) -> None:
    _services, base = live
    data = fact_pdf("Stream check", [("Only section", "The stream check ends here.")])
    seen: list[tuple[str, dict[str, object]]] = []
    connected = threading.Event()

    def listen() -> None:
        with (
            httpx.Client(base_url=base, timeout=120) as client,
            client.stream("GET", "/events") as stream,
        ):
            kind = ""
            for line in stream.iter_lines():
                if line.startswith(": connected"):
                    connected.set()
                elif line.startswith("event: "):
                    kind = line[len("event: ") :]
                elif line.startswith("data: "):
                    seen.append((kind, json.loads(line[len("data: ") :])))
                    if kind == "finished":
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert connected.wait(30)
    posted = httpx.post(f"{base}/documents", files={"file": ("stream.pdf", data)}, timeout=60)
    listener.join(120)
    kinds = [k for k, e in seen if e["doc_id"] == posted.json()["doc_id"]]
    assert kinds[0] == "queued" and "started" in kinds and kinds[-1] == "finished"
