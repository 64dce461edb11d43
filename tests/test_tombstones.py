"""A document removed while its file stays in a watched folder stays removed (a tombstone by path
and bytes) across scans and restarts, is listed, and comes back when restored or when the file
changes; on a real ledger, Qdrant Edge and the app served on loopback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from doubles.fakes import HashEmbedder
from ingest.ledger.records import NotRemovedError, RemovedFileGoneError
from ingest.pipeline.pipeline import FileStatus, IngestOptions
from ocr_engine.options import ExtractOptions, OcrMode
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf
from tests.test_e2e import LiveServer
from tests.test_web_page import browser, open_page, shots  # noqa: F401  (the page tests' fixtures)

NEVER = ExtractOptions(ocr=OcrMode.never)
KELUD = "When did the Kelud volcano erupt?"


def open_services(data_dir: Path, inbox: Path) -> Services:
    settings = Settings(
        data_dir=data_dir, watch_dir=inbox, watch_settle_seconds=0.2, ocr=OcrMode.never
    )
    options = IngestOptions(extract=NEVER, extract_processes=0)
    return build_services(settings, embedder=HashEmbedder(), options=options)


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "volcano.pdf").write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
    return folder


@pytest.fixture
def svc(tmp_path: Path, inbox: Path) -> Iterator[Services]:
    services = open_services(tmp_path / "data", inbox)
    yield services
    services.close()


def wait_for(check: Callable[[], object], what: str, timeout: float = 90.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def statuses(client: httpx.Client) -> dict[str, str]:
    """doc_id -> status of every document the server lists."""
    return {r["doc_id"]: r["status"] for r in client.get("/documents").json()}


def settled(found: dict[str, str]) -> bool:
    """Something is indexed and nothing is waiting or being read."""
    return "ok" in found.values() and set(found.values()) <= {"ok", "partial", "failed"}


def cited(client: httpx.Client, question: str) -> set[str]:
    response = client.post("/query", json={"question": question})
    assert response.status_code == 200, response.text
    return {hit["doc_id"] for hit in response.json()["hits"]}


def test_removed_in_the_api_stays_removed_across_scans_and_restarts_until_restored(
    tmp_path: Path, inbox: Path
) -> None:
    data_dir = tmp_path / "data"
    pdf = inbox / "volcano.pdf"
    services = open_services(data_dir, inbox)
    try:
        with LiveServer(services) as live, httpx.Client(base_url=live.base_url, timeout=60) as c:
            [doc_id] = wait_for(lambda: [d for d, s in statuses(c).items() if s == "ok"], "ok")
            removed = c.delete(f"/documents/{doc_id}")
            assert removed.status_code == 200, removed.text
            assert doc_id not in statuses(c)
            services.sync.scan(inbox)  # the folder sync runs again
            pdf.touch()  # a new mtime, the same bytes
            services.sync.scan(inbox)
            assert services.ledger.find(doc_id) is None
            assert doc_id not in statuses(c) and doc_id not in cited(c, KELUD)
    finally:
        services.close()

    services = open_services(data_dir, inbox)  # a restart over the same data directory
    try:
        with LiveServer(services) as live, httpx.Client(base_url=live.base_url, timeout=60) as c:
            (inbox / "bakery.pdf").write_bytes(fact_pdf(*FACTS["bakery.pdf"]))
            wait_for(lambda: settled(statuses(c)), "the next file to be indexed")
            assert doc_id not in statuses(c), "the watcher's scans brought it back"
            assert services.store.count(doc_id) == 0

            listed = c.get("/documents/removed")
            assert listed.status_code == 200, listed.text
            [stone] = listed.json()
            assert stone["path"] == str(pdf) and stone["doc_id"] == doc_id
            assert stone["source"] == "volcano.pdf" and stone["removed_at"]

            restored = c.post(f"/documents/{doc_id}/restore")
            assert restored.status_code == 200, restored.text
            assert [r["doc_id"] for r in restored.json()] == [doc_id]
            wait_for(lambda: statuses(c).get(doc_id) == "ok", "the restored document")
            assert doc_id in cited(c, KELUD)
            assert c.get("/documents/removed").json() == []
            again = c.post(f"/documents/{doc_id}/restore")
            assert again.status_code == 404 and again.json()["error"]["code"] == "not_removed"
    finally:
        services.close()


def test_new_bytes_at_a_removed_path_are_ingested_as_usual(svc: Services, inbox: Path) -> None:
    pdf = inbox / "volcano.pdf"
    svc.sync.scan(inbox)
    [first] = svc.sync.process_pending()
    assert first.doc_id is not None
    svc.sync.remove(first.doc_id)
    assert [s.doc_id for s in svc.ledger.tombstones.all()] == [first.doc_id]
    title, sections = FACTS["volcano.pdf"]
    pdf.write_bytes(fact_pdf(title + " (revised)", sections))
    report = svc.sync.scan(inbox)
    assert report.new == [str(pdf)]
    [second] = svc.sync.process_pending()
    assert second.status is FileStatus.ok and second.doc_id not in (None, first.doc_id)
    assert svc.ledger.tombstones.all() == [], "the file changed: the removal is over"
    assert svc.ledger.find(first.doc_id) is None


def test_an_explicit_ingest_of_the_file_restores_it_and_a_folder_ingest_does_not(
    svc: Services, inbox: Path
) -> None:
    pdf = inbox / "volcano.pdf"
    [result] = svc.sync.ingest_paths([inbox])
    assert result.doc_id is not None
    svc.sync.remove(result.doc_id)
    assert svc.sync.ingest_paths([inbox]) == []
    assert svc.ledger.find(result.doc_id) is None
    [again] = svc.sync.ingest_paths([pdf])
    assert again.doc_id == result.doc_id and again.status is FileStatus.ok
    assert svc.ledger.tombstones.all() == [] and svc.store.count(result.doc_id) > 0


def test_a_moved_file_stays_removed_and_a_deleted_one_is_forgotten(
    svc: Services, inbox: Path
) -> None:
    [result] = svc.sync.ingest_paths([inbox])
    assert result.doc_id is not None
    svc.sync.remove(result.doc_id)
    (inbox / "sub").mkdir()
    moved = (inbox / "volcano.pdf").rename(inbox / "sub" / "eruptions.pdf")
    report = svc.sync.scan(inbox)
    assert report.new == report.copied == [] and report.tombstoned == [str(moved)]
    assert [s.path for s in svc.ledger.tombstones.all()] == [str(moved)]
    moved.unlink()
    svc.sync.scan(inbox)
    assert svc.ledger.tombstones.all() == []
    moved.write_bytes(fact_pdf(*FACTS["volcano.pdf"]))  # the same bytes, back again later
    assert svc.sync.scan(inbox).new == [str(moved)]


def test_every_path_of_a_removed_document_is_remembered(svc: Services, inbox: Path) -> None:
    copy = inbox / "volcano copy.pdf"
    copy.write_bytes((inbox / "volcano.pdf").read_bytes())
    [result] = {r.doc_id: r for r in svc.sync.ingest_paths([inbox])}.values()
    assert result.doc_id is not None
    svc.sync.remove(result.doc_id)
    stones = svc.ledger.tombstones.all()
    assert sorted(s.path for s in stones) == [str(copy), str(inbox / "volcano.pdf")]
    assert {s.doc_id for s in stones} == {result.doc_id}
    assert svc.sync.scan(inbox).tombstoned == sorted(s.path for s in stones)
    assert svc.sync.process_pending() == []


def test_restoring_needs_a_remembered_removal_and_its_file(svc: Services, inbox: Path) -> None:
    [result] = svc.sync.ingest_paths([inbox])
    assert result.doc_id is not None
    with pytest.raises(NotRemovedError):
        svc.sync.restore(result.doc_id)
    svc.sync.remove(result.doc_id)
    (inbox / "volcano.pdf").unlink()
    with pytest.raises(RemovedFileGoneError, match="no file is left"):
        svc.sync.restore(result.doc_id)
    assert svc.ledger.tombstones.all() == []


def test_the_web_page_lists_a_removed_file_and_restores_it(
    tmp_path: Path,
    inbox: Path,
    open_page: Any,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    services = open_services(tmp_path / "data", inbox)
    try:
        with LiveServer(services) as live:
            page, errors = open_page(live.base_url)
            page.on("dialog", lambda dialog: dialog.accept())  # "Remove volcano.pdf …?"
            row = page.locator("#documents li.doc", has_text="volcano.pdf")
            expect(row).to_have_attribute("data-status", "ok", timeout=90_000)
            expect(page.locator("#removed-box")).to_be_hidden()
            row.get_by_role("button", name="Remove volcano.pdf").click()
            expect(row).to_have_count(0)
            box = page.locator("#removed-box")
            expect(box.locator("summary")).to_have_text("Removed (1)")
            box.locator("summary").click()
            removed = box.locator("li.removed-doc")
            expect(removed).to_contain_text("volcano.pdf")
            expect(removed.locator(".doc-path")).to_have_text(str(inbox / "volcano.pdf"))
            page.screenshot(path=shots / "removed.png", full_page=True)
            removed.get_by_role("button", name="Restore volcano.pdf").click()
            expect(box).to_be_hidden()
            expect(row).to_have_attribute("data-status", "ok", timeout=90_000)
            assert errors == []
    finally:
        services.close()
