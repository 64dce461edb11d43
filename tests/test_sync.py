"""Folder sync on a real ledger and Qdrant Edge: the index follows the folder, no work twice."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from doubles.fakes import HashEmbedder
from ingest.cards.cards import document_card
from ingest.ledger.records import DocStatus, FailureKind
from ingest.pipeline.chunker import chunk_document
from ingest.pipeline.failures import RetryPolicy
from ingest.pipeline.options import FileResult, windows
from ingest.pipeline.pipeline import FileStatus, IngestOptions
from ocr_engine.engines.extract import extract_document
from ocr_engine.options import ExtractOptions, OcrMode
from retrieval.index.edge_store import EdgeStore
from retrieval.index.store import StoreError
from retrieval.schema import Chunk
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, encrypted_pdf, fact_pdf

NEVER = ExtractOptions(ocr=OcrMode.never)


def make_services(
    data_dir: Path, embedder: HashEmbedder | None = None, **options: object
) -> Services:
    opts = IngestOptions(extract=NEVER, extract_processes=0, **options)  # type: ignore[arg-type]
    return build_services(
        Settings(data_dir=data_dir, ocr=OcrMode.never),
        embedder=embedder or HashEmbedder(),
        options=opts,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    inbox = tmp_path / "in"
    (inbox / "sub").mkdir(parents=True)
    (inbox / "volcano.pdf").write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
    (inbox / "sub" / "bakery.pdf").write_bytes(fact_pdf(*FACTS["bakery.pdf"]))
    return inbox


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Services]:
    services = make_services(tmp_path / "data")
    yield services
    services.close()


def ingest(svc: Services, folder: Path) -> list[str]:
    svc.sync.scan(folder)
    return [r.status.value for r in svc.sync.process_pending()]


def test_rescanning_an_unchanged_folder_hashes_and_embeds_nothing(
    svc: Services, folder: Path
) -> None:
    assert sorted(ingest(svc, folder)) == ["ok", "ok"]
    embedder = svc.embedder
    assert isinstance(embedder, HashEmbedder)
    calls = embedder.calls
    again = svc.sync.scan(folder)
    assert (again.files, again.unchanged, again.hashed) == (2, 2, 0)
    assert svc.sync.process_pending() == [] and embedder.calls == calls
    target = folder / "volcano.pdf"
    target.touch()  # a new mtime, the same bytes: hashed once, nothing processed
    time.sleep(0.01)
    touched = svc.sync.scan(folder)
    assert touched.hashed == 1 and touched.new == touched.changed == []
    assert svc.sync.process_pending() == [] and embedder.calls == calls


def test_a_copy_is_linked_and_points_stay_while_any_copy_remains(
    svc: Services, folder: Path
) -> None:
    ingest(svc, folder)
    doc_id = svc.ledger.path_record(str(folder / "volcano.pdf")).doc_id  # type: ignore[union-attr]
    points = svc.store.count(doc_id)
    shutil.copy(folder / "volcano.pdf", folder / "sub" / "volcano copy.pdf")
    report = svc.sync.scan(folder)
    assert report.copied == [str(folder / "sub" / "volcano copy.pdf")] and report.new == []
    assert svc.sync.process_pending() == []
    assert len(svc.ledger.get(doc_id).paths) == 2 and svc.store.count(doc_id) == points
    (folder / "volcano.pdf").unlink()
    report = svc.sync.scan(folder)
    assert report.deleted == [str(folder / "volcano.pdf")] or report.moved
    assert svc.store.count(doc_id) == points, "another path still holds the bytes"
    (folder / "sub" / "volcano copy.pdf").unlink()
    report = svc.sync.scan(folder)
    assert report.removed == [doc_id]
    assert svc.store.count(doc_id) == 0 and svc.ledger.find(doc_id) is None
    assert not svc.files.has_pdf(doc_id)


def test_a_rename_moves_the_record_without_embedding(svc: Services, folder: Path) -> None:
    ingest(svc, folder)
    embedder = svc.embedder
    assert isinstance(embedder, HashEmbedder)
    calls = embedder.calls
    doc_id = svc.ledger.path_record(str(folder / "volcano.pdf")).doc_id  # type: ignore[union-attr]
    (folder / "volcano.pdf").rename(folder / "sub" / "eruptions.pdf")
    report = svc.sync.scan(folder)
    assert report.moved == [str(folder / "sub" / "eruptions.pdf")]
    assert report.deleted == report.new == [] and report.removed == []
    assert svc.sync.process_pending() == [] and embedder.calls == calls
    record = svc.ledger.get(doc_id)
    assert record.source == "eruptions.pdf" and record.paths == [
        str(folder / "sub" / "eruptions.pdf")
    ]
    assert record.status is DocStatus.ok and svc.store.count(doc_id) == record.chunks


def test_a_changed_file_never_leaves_the_index_between_versions(
    tmp_path: Path, folder: Path
) -> None:
    svc = make_services(tmp_path / "data", HashEmbedder(delay_s=0.05), embed_slice=1)
    try:
        ingest(svc, folder)
        path = str(folder / "volcano.pdf")
        old = svc.ledger.path_record(path).doc_id  # type: ignore[union-attr]
        (folder / "volcano.pdf").write_bytes(
            fact_pdf("Volcanic Activity Report", [("Update", "Merapi erupted in 2023.")] * 4)
        )
        report = svc.sync.scan(folder)
        assert report.changed == [path]
        new = svc.ledger.path_record(path).doc_id  # type: ignore[union-attr]
        assert new != old and svc.store.count(old) > 0, "the old version stays until then"
        seen: list[tuple[bool, bool]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                ids = svc.store.doc_ids()
                seen.append((old in ids, new in ids))
                time.sleep(0.002)

        watcher = threading.Thread(target=watch)
        watcher.start()
        results = svc.sync.process_pending()
        done.set()
        watcher.join()
        ids = svc.store.doc_ids()  # the watcher's last look may come just before the swap
        seen.append((old in ids, new in ids))
        assert [r.status for r in results] == [FileStatus.ok]
        assert len(seen) >= 3 and all(o or n for o, n in seen), "never neither version"
        assert seen[-1] == (False, True)
        assert svc.ledger.find(old) is None and svc.store.count(old) == 0
    finally:
        svc.close()


def test_deleted_files_lose_their_points_and_explicit_files_stay(
    svc: Services, folder: Path, tmp_path: Path
) -> None:
    ingest(svc, folder)
    elsewhere = tmp_path / "elsewhere.pdf"
    elsewhere.write_bytes(fact_pdf("Lighthouse Log", [("Keepers", "Ada Crane lit the lamp.")]))
    results = svc.sync.ingest_paths([elsewhere])
    assert [r.status for r in results] == [FileStatus.ok]
    shutil.rmtree(folder / "sub")
    report = svc.sync.scan(folder)
    assert report.deleted == [str(folder / "sub" / "bakery.pdf")] and len(report.removed) == 1
    assert sorted(r.source for r in svc.ledger.documents()) == ["elsewhere.pdf", "volcano.pdf"]
    assert sum(svc.store.doc_ids().values()) == sum(r.chunks for r in svc.ledger.documents())


def test_passwords_from_a_sidecar_or_the_passwords_file(svc: Services, folder: Path) -> None:
    (folder / "locked.pdf").write_bytes(encrypted_pdf("s3cret"))
    (folder / "other.pdf").write_bytes(encrypted_pdf("hunter2"))
    ingest(svc, folder)
    failed = {r.source: r for r in svc.ledger.documents(DocStatus.failed)}
    assert set(failed) == {"locked.pdf", "other.pdf"}
    assert failed["locked.pdf"].failure is FailureKind.password
    assert "needs a password" in failed["locked.pdf"].errors[0]
    (folder / "locked.pdf.password").write_text("s3cret\n")
    passwords = svc.settings.data_dir / "passwords.json"
    passwords.write_text(json.dumps({"other.pdf": "wrong"}))
    report = svc.sync.scan(folder)
    assert len(report.requeued) == 2
    results = {r.source: r for r in svc.sync.process_pending()}
    assert results["locked.pdf"].status is FileStatus.ok
    assert "does not open" in (results["other.pdf"].error or "")
    assert svc.sync.scan(folder).requeued == [], "the same wrong password is not tried again"
    other = failed["other.pdf"].doc_id
    passwords.write_text(json.dumps({other: "hunter2"}))  # by sha256
    assert svc.sync.scan(folder).requeued == [other]
    assert [r.status for r in svc.sync.process_pending()] == [FileStatus.ok]


class FlakyStore(EdgeStore):
    """Qdrant Edge whose first `failures` replace_document calls fail like a dead server."""

    def __init__(self, path: Path, dim: int, failures: int) -> None:
        super().__init__(path, dim)
        self.failures = failures

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise StoreError("connection refused")
        super().replace_document(doc_id, chunks, vectors)


def test_transient_failures_are_retried_with_backoff(tmp_path: Path, folder: Path) -> None:
    svc = make_services(tmp_path / "data", retry=RetryPolicy(base_s=0.3, max_attempts=3))
    flaky = FlakyStore(tmp_path / "flaky", svc.embedder.dim, failures=2)
    svc.ingestor.store = svc.sync.store = flaky
    try:
        (folder / "sub" / "bakery.pdf").unlink()
        first = ingest(svc, folder)
        assert first == ["failed"]
        record = svc.ledger.documents()[0]
        assert record.retryable and record.attempts == 1 and record.failure is FailureKind.transient
        assert record.next_retry_at is not None
        assert svc.sync.process_pending() == [], "not before its retry time"
        time.sleep(0.35)
        assert [r.status for r in svc.sync.process_pending()] == [FileStatus.failed]
        assert svc.ledger.get(record.doc_id).attempts == 2
        assert svc.sync.retry() == [record.doc_id]  # `folio retry`: now, whatever the backoff
        assert [r.status for r in svc.sync.process_pending()] == [FileStatus.ok]
        assert flaky.count(record.doc_id) == svc.ledger.get(record.doc_id).chunks > 0
    finally:
        flaky.close()
        svc.close()


def test_recovery_removes_stray_points_and_redoes_missing_documents(
    svc: Services, folder: Path
) -> None:
    ingest(svc, folder)
    volcano = svc.ledger.path_record(str(folder / "volcano.pdf")).doc_id  # type: ignore[union-attr]
    stray = svc.store.chunks(volcano)[0].model_copy(update={"doc_id": "f" * 64})
    svc.store.upsert([stray], svc.embedder.embed_documents([stray.embed_text]))
    svc.store.delete_document(volcano)  # as if the index lost it
    report = svc.sync.recover()
    assert report.stray == ["f" * 64] and report.missing == [volcano]
    assert svc.store.count("f" * 64) == 0
    embedder = svc.embedder
    assert isinstance(embedder, HashEmbedder)
    calls = embedder.calls
    assert [r.doc_id for r in svc.sync.process_pending()] == [volcano]
    redone = svc.ledger.get(volcano)
    assert svc.store.count(volcano) == redone.chunks > 0
    assert redone.timings.chunks_cached == redone.chunks and redone.timings.chunks_embedded == 0
    assert embedder.calls == calls, "vectors came from the embedding cache"
    assert svc.sync.recover().model_dump() == {
        "interrupted": [],
        "stray": [],
        "missing": [],
        "removed": [],
        "reread": [],
    }


def flowing_pdf(pages: int) -> bytes:
    """Sections that run across pages (no running headers), so windows must carry the trail."""
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page(width=612, height=792)
        if number % 4 == 1:
            page.insert_text((72, 200), f"Part {number // 4 + 1}", fontsize=18, fontname="hebo")
        body = f"Paragraph on page {number} about kiln number {number * 7}. " * 2
        page.insert_textbox(pymupdf.Rect(72, 230, 540, 330), body, fontsize=11, fontname="helv")
    data = doc.tobytes()
    doc.close()
    return data


def test_windows_give_the_chunks_and_json_of_the_whole_document(tmp_path: Path) -> None:
    pdf = tmp_path / "long.pdf"
    pdf.write_bytes(flowing_pdf(10))
    svc = make_services(tmp_path / "data", window=3, extract_window=2, index_slice=2)
    try:
        [result] = svc.sync.ingest_paths([pdf])
        assert result.status is FileStatus.ok and result.pages == 10
        doc_id = result.doc_id
        assert doc_id is not None
        whole = extract_document(pdf, options=NEVER)
        described = document_card(whole)  # read before the first chunk: chunks name it
        expected = chunk_document(whole, count_tokens=svc.embedder.count_tokens, card=described)
        *chunks, card = svc.store.chunks(doc_id)  # the document's card point comes last
        assert chunks == expected and card.card == described
        assert any({3, 4} <= {r.page for r in c.regions} for c in expected), "spans two windows"
        stored = svc.files.load_document(doc_id)
        assert stored.page_count == 10 and stored.pages == whole.pages
        assert [p.number for p in svc.ledger.pages(doc_id)] == list(range(1, 11))
        assert not list((svc.settings.data_dir / "staging").iterdir()), "staging is cleaned up"
        [again] = svc.sync.ingest_paths([pdf], force=True)  # points written in slices again
        assert again.chunks == result.chunks == svc.store.count(doc_id)
    finally:
        svc.close()


def test_uploads_stay_without_a_path_until_removed(svc: Services) -> None:
    record = svc.sync.add_upload(fact_pdf(*FACTS["volcano.pdf"]), "../../etc/volcano.pdf")
    assert record.source == "volcano.pdf" and record.uploaded and record.status is DocStatus.queued
    assert [r.status for r in svc.sync.process_pending()] == [FileStatus.ok]
    assert svc.sync.collect_garbage() == [] and svc.store.count(record.doc_id) > 0
    svc.sync.remove(record.doc_id)
    assert svc.store.count(record.doc_id) == 0 and svc.ledger.find(record.doc_id) is None


def test_windows_are_balanced_and_cover_every_page() -> None:
    assert windows(1, 65, 64) == [(1, 33), (34, 65)]
    assert windows(1, 64, 64) == [(1, 64)]
    assert windows(5, 9, 2) == [(5, 6), (7, 8), (9, 9)]
    assert windows(1, 0, 64) == []
    for total in (1, 7, 63, 64, 65, 129, 1000):
        parts = windows(1, total, 64)
        assert parts[0][0] == 1 and parts[-1][1] == total
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(parts))
        assert max(hi - lo + 1 for lo, hi in parts) <= 64
    cpu_ocr = IngestOptions(extract=ExtractOptions(ocr=OcrMode.auto))
    assert cpu_ocr.extraction_window() == 8
    assert IngestOptions(extract=NEVER).extraction_window() == 64


def test_a_folders_smallest_files_are_done_first(svc: Services, tmp_path: Path) -> None:
    """Dropped together, an empty and a broken file fail (and a short file is searchable) before
    a long report is read, whatever their names and the order they were found in."""
    inbox = tmp_path / "drop"
    inbox.mkdir()
    long_report = fact_pdf(
        "Annual review", [(f"Part {n}", "Revenue grew. " * 80) for n in range(12)]
    )
    (inbox / "a annual review.pdf").write_bytes(long_report)
    (inbox / "b volcano.pdf").write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
    (inbox / "c empty.pdf").write_bytes(b"")
    (inbox / "d broken.pdf").write_bytes(b"not a pdf at all\n")
    done: list[str] = []
    svc.sync.ingest_paths([inbox], on_result=lambda r: done.append(Path(r.source).name))
    assert done == ["c empty.pdf", "d broken.pdf", "b volcano.pdf", "a annual review.pdf"]


def test_a_new_file_the_server_worker_took_first_is_reported_ingested(
    svc: Services, folder: Path
) -> None:
    """`ingest_paths` beside a running pass (the server's worker) that takes the new file first
    reports it ok, not unchanged: the call added it, another pass indexed it."""
    first, second = folder / "volcano.pdf", folder / "sub" / "bakery.pdf"
    svc.sync.add_files([first])
    held, release = threading.Event(), threading.Event()

    def hold(_: object) -> None:
        held.set()
        release.wait(30)

    worker = threading.Thread(target=lambda: svc.sync.process_pending(on_result=hold))
    worker.start()
    assert held.wait(30)
    results: list[list[FileResult]] = []
    caller = threading.Thread(target=lambda: results.append(svc.sync.ingest_paths([second])))
    caller.start()
    deadline = time.monotonic() + 30
    while svc.ledger.path_record(str(second)) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()  # the worker's pass goes on to the file the caller added
    worker.join(30)
    caller.join(30)
    [[result]] = results
    record = svc.ledger.path_record(str(second))
    assert result.status is FileStatus.ok, result
    assert record is not None and record.doc_id == result.doc_id
