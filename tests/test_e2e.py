"""End to end on loopback: ingest, query, highlighted page image, watched folder, bad input."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from PIL import Image
from typer.testing import CliRunner

from doubles.loopback import free_port
from ocr_engine.options import OcrMode
from server.cli.cli import app as cli_app
from server.serve.app import create_app
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import BAD_INPUTS, FACTS, fact_pdf


class LiveServer:
    """uvicorn serving the app in a thread on a loopback port."""

    def __init__(self, services: Services) -> None:
        port = free_port()
        config = uvicorn.Config(
            create_app(services), host="127.0.0.1", port=port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.base_url = f"http://127.0.0.1:{port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str, Path]]:
    root = tmp_path_factory.mktemp("folio")
    inbox = root / "inbox"
    inbox.mkdir()
    for name, (title, sections) in FACTS.items():
        (inbox / name).write_bytes(fact_pdf(title, sections))
    settings = Settings(
        data_dir=root / "data", watch_dir=inbox, watch_settle_seconds=0.3, ocr=OcrMode.never
    )
    services = build_services(settings)
    try:
        with LiveServer(services) as live:
            yield services, live.base_url, inbox
    finally:
        services.close()


def _wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


def _sources(base_url: str) -> dict[str, str]:
    records = httpx.get(f"{base_url}/documents").json()
    return {r["source"]: r["status"] for r in records}


def test_query_cites_the_lines_and_highlights_them(served: tuple[Services, str, Path]) -> None:
    _services, base, _inbox = served

    def both_ok() -> bool:
        sources = _sources(base)
        return sources.get("volcano.pdf") == sources.get("bakery.pdf") == "ok"

    _wait_for(both_ok, 300)  # loading the model and starting the worker: slow on a busy machine

    response = httpx.post(f"{base}/query", json={"question": "When did Kelud erupt?", "top_k": 3})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "answer",
        "citations",
        "hits",
        "mode",
        "checks",
        "llm_error",
        "rerank_error",
    }
    assert (body["mode"], body["checks"], body["llm_error"]) == ("extractive", [], None)
    assert body["hits"][0]["source"] == "volcano.pdf"
    assert body["hits"][0]["page"] == 1
    assert "[1]" in body["answer"] and "2014" in body["answer"]
    first = body["citations"][0]
    assert first["n"] == 1 and first["source"] == "volcano.pdf" and first["page"] == 1
    x0, y0, x1, y1 = first["bbox"]
    # the cited box is the paragraph's line, well below the title and inside the text column
    assert 60 < x0 < x1 < 560 and 100 < y0 < y1 < 250 and y1 - y0 < 40

    plain = httpx.get(f"{base}/documents/{first['doc_id']}/pages/1.png?dpi=72")
    lit = httpx.get(base + first["highlight_url"].replace("?", "?dpi=72&"))
    assert plain.status_code == lit.status_code == 200
    assert lit.headers["content-type"] == "image/png"
    before = Image.open(io.BytesIO(plain.content)).convert("RGB")
    after = Image.open(io.BytesIO(lit.content)).convert("RGB")
    assert before.size == after.size == (612, 792)
    inside = (int((x0 + x1) / 2), int((y0 + y1) / 2))
    far = (int(x1) + 30, int(y1) + 200)
    assert before.getpixel(inside) != after.getpixel(inside), "the cited region is highlighted"
    assert before.getpixel(far) == after.getpixel(far), "nothing else is highlighted"

    viewer = httpx.get(base + first["viewer_url"])
    assert viewer.status_code == 200 and "<img" in viewer.text

    detail = httpx.get(f"{base}/documents/{first['doc_id']}").json()
    assert detail["source"] == "volcano.pdf" and detail["status"] == "ok" and detail["pages"] == 2
    assert [p["number"] for p in detail["page_summaries"]] == [1, 2]
    assert detail["page_summaries"][0]["engine"]["name"] == "pymupdf"
    assert detail["chunks"] == _services.store.count(first["doc_id"]) > 0


def test_dropped_file_becomes_searchable(served: tuple[Services, str, Path]) -> None:
    _services, base, inbox = served
    _wait_for(lambda: _sources(base).get("volcano.pdf") == "ok", 300)
    data = fact_pdf(
        "Lighthouse Log", [("Keepers", "The lamp of Pharos Point was lit by Ada Crane.")]
    )
    target = inbox / "lighthouse.pdf"
    with target.open("wb") as handle:  # written slowly, in pieces, like a copy in progress
        for start in range(0, len(data), len(data) // 4 + 1):
            handle.write(data[start : start + len(data) // 4 + 1])
            handle.flush()
            time.sleep(0.15)
    _wait_for(lambda: _sources(base).get("lighthouse.pdf") == "ok")
    body = httpx.post(
        f"{base}/query", json={"question": "Who lit the lamp of Pharos Point?"}
    ).json()
    assert body["hits"][0]["source"] == "lighthouse.pdf"
    assert "Ada Crane" in body["answer"]


def test_bad_files_in_the_watched_folder_fail_alone(served: tuple[Services, str, Path]) -> None:
    _services, base, inbox = served
    for name, make in BAD_INPUTS.items():
        (inbox / name).write_bytes(make())
    _wait_for(lambda: all(_sources(base).get(name) == "failed" for name in BAD_INPUTS))
    records = {r["source"]: r for r in httpx.get(f"{base}/documents").json()}
    for name in BAD_INPUTS:
        assert records[name]["errors"] and records[name]["errors"][0].strip()
    health = httpx.get(f"{base}/health").json()
    assert health["status"] == "ok" and health["documents"] >= len(records) >= len(BAD_INPUTS) + 2
    assert records["volcano.pdf"]["status"] == "ok"


def test_api_errors_share_one_shape(served: tuple[Services, str, Path]) -> None:
    _services, base, _inbox = served
    unknown = httpx.get(f"{base}/documents/{'0' * 64}")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_document"
    traversal = httpx.get(f"{base}/documents/..%2F..%2Fetc%2Fpasswd/pages/1.png")
    assert traversal.status_code == 404
    empty = httpx.post(f"{base}/query", json={"question": ""})
    assert empty.status_code == 422 and "error" in empty.json()
    _wait_for(lambda: _sources(base).get("volcano.pdf") == "ok", 300)
    doc_id = next(
        r["doc_id"] for r in httpx.get(f"{base}/documents").json() if r["source"] == "volcano.pdf"
    )
    out_of_range = httpx.get(f"{base}/documents/{doc_id}/pages/99.png")
    assert out_of_range.status_code == 404
    assert out_of_range.json()["error"]["code"] == "page_out_of_range"
    bad_box = httpx.get(f"{base}/documents/{doc_id}/pages/1.png?highlight=1,2,3")
    assert bad_box.status_code == 422


def test_cli_ingest_reports_each_failed_file_and_query_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOLIO_OCR", "never")
    folder = tmp_path / "in"
    folder.mkdir()
    for name, (title, sections) in FACTS.items():
        (folder / name).write_bytes(fact_pdf(title, sections))
    for name, make in BAD_INPUTS.items():
        (folder / name).write_bytes(make())
    data_dir = tmp_path / "data"
    runner = CliRunner()
    result = runner.invoke(cli_app, ["ingest", str(folder), "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    failed_lines = [line for line in result.output.splitlines() if line.startswith("FAILED ")]
    assert sorted(Path(line.split()[1].rstrip(":")).name for line in failed_lines) == sorted(
        BAD_INPUTS
    )
    for line in failed_lines:  # the name once, then the reason alone
        name = Path(line.split()[1].rstrip(":")).name
        assert line.count(name) == 1, line

    result = runner.invoke(
        cli_app,
        [
            "query",
            "What flour feeds the sourdough starter?",
            "--data-dir",
            str(data_dir),
            "--top-k",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert {"answer", "citations", "hits"} <= set(body) and body["mode"] == "extractive"
    assert len(body["hits"]) == 2 and body["hits"][0]["source"] == "bakery.pdf"
    assert body["hits"][0]["score"] >= body["hits"][1]["score"]
    assert {"n", "doc_id", "source", "page", "bbox", "quote", "score", "highlight_url"} <= set(
        body["citations"][0]
    )

    again = runner.invoke(
        cli_app, ["ingest", str(folder / "bakery.pdf"), "--data-dir", str(data_dir)]
    )
    assert again.exit_code == 0, again.output
    assert "1 unchanged" in again.output
