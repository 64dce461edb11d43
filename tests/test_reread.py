"""Documents an older folio read are read again at startup, searchable all the while."""

from __future__ import annotations

from pathlib import Path

from doubles.fakes import HashEmbedder
from ingest.ledger.records import DocStatus, Versions
from ingest.pipeline.pipeline import FileStatus, IngestOptions
from ocr_engine.options import EXTRACTION_VERSION, ExtractOptions, OcrMode
from server.services import Services, build_services
from server.settings import Settings
from tests.test_sync import FlakyStore, folder, make_services

__all__ = ["folder"]  # the fixture, shared with the sync tests

OLDER = ExtractOptions(ocr=OcrMode.never, extraction_version="older")
TEXT = "pymupdf||1.26.5+t13"


def older_services(data_dir: Path) -> Services:
    """Services whose extraction version is not this code's: an older folio."""
    return build_services(
        Settings(data_dir=data_dir, ocr=OcrMode.never),
        options=IngestOptions(extract=OLDER, extract_processes=0),
        embedder=HashEmbedder(),
    )


def test_what_changed_since_a_reading() -> None:
    now = Versions(document_schema="1.3", chunk_schema="1.1", extraction="10", engines=[TEXT])
    same = now.model_copy(update={"engines": [TEXT, "rapidocr|m|2"]})
    assert same.older_than(now) is None
    assert (
        now.model_copy(update={"extraction": "9"}).older_than(now) == "extraction version 9 -> 10"
    )
    assert Versions().older_than(now) == "extraction version unrecorded -> 10"
    text_older = now.model_copy(update={"engines": ["pymupdf||1.26.5+t12", "rapidocr|m|2"]})
    assert text_older.older_than(now) == f"pymupdf||1.26.5+t12 -> {TEXT}"
    ocr_only = now.model_copy(update={"engines": ["rapidocr|m|2"]})
    assert ocr_only.older_than(now) is None, "no page of it was read from the text layer"


def test_an_older_reading_is_read_again_and_stays_searchable(tmp_path: Path, folder: Path) -> None:
    data = tmp_path / "data"
    old = older_services(data)
    try:
        old.sync.scan(folder)
        assert [r.status for r in old.sync.process_pending()] == [FileStatus.ok] * 2
        counts = dict(old.store.doc_ids())
        assert old.sync.recover().reread == [], "its own reading is current"
    finally:
        old.close()
    svc = make_services(data)  # this code: the current extraction version
    try:
        report = svc.sync.recover()
        assert report.reread == sorted(counts)
        assert {r.status for r in svc.ledger.documents()} == {DocStatus.queued}
        assert svc.store.doc_ids() == counts, "searchable until the new reading replaces it"
        assert set(svc.ledger.named()) == set(counts), "and named by its card meanwhile"
        again = svc.sync.recover()  # a restart before they were read: points kept, none stray
        assert (again.stray, again.missing) == ([], [])
        assert svc.store.doc_ids() == counts
        done = svc.sync.process_pending()
        assert sorted(r.doc_id for r in done if r.status is FileStatus.ok) == sorted(counts)
        for record in svc.ledger.documents():
            assert record.versions.extraction == EXTRACTION_VERSION
            assert svc.store.count(record.doc_id) == record.chunks > 0
        assert svc.sync.recover().reread == []
    finally:
        svc.close()


def test_reading_again_that_fails_keeps_the_earlier_reading(tmp_path: Path, folder: Path) -> None:
    data, points = tmp_path / "data", tmp_path / "points"
    old = older_services(data)
    store = FlakyStore(points, old.embedder.dim, failures=0)
    old.ingestor.store = old.sync.store = store
    try:
        old.sync.scan(folder)
        old.sync.process_pending()
        counts = dict(store.doc_ids())
    finally:
        store.close()
        old.close()
    svc = make_services(data)
    flaky = FlakyStore(points, svc.embedder.dim, failures=2)  # the same points, a dead server
    svc.ingestor.store = svc.sync.store = flaky
    try:
        assert svc.sync.recover().reread == sorted(counts)
        results = svc.sync.process_pending()
        assert [r.status for r in results] == [FileStatus.failed] * 2
        assert all("earlier reading stays searchable" in (r.error or "") for r in results)
        for record in svc.ledger.documents():
            assert record.status is DocStatus.ok and record.versions.extraction == "older"
            assert flaky.count(record.doc_id) == record.chunks == counts[record.doc_id]
        assert svc.sync.recover().reread == sorted(counts), "tried again at the next start"
        assert [r.status for r in svc.sync.process_pending()] == [FileStatus.ok] * 2
    finally:
        flaky.close()
        svc.close()


def test_rereading_can_be_left_off(tmp_path: Path, folder: Path) -> None:
    data = tmp_path / "data"
    old = older_services(data)
    try:
        old.sync.scan(folder)
        old.sync.process_pending()
    finally:
        old.close()
    svc = build_services(
        Settings(data_dir=data, ocr=OcrMode.never, reread_older=False),
        options=IngestOptions(extract=ExtractOptions(ocr=OcrMode.never), extract_processes=0),
        embedder=HashEmbedder(),
    )
    try:
        assert svc.sync.recover().reread == []
        assert {r.status for r in svc.ledger.documents()} == {DocStatus.ok}
    finally:
        svc.close()


def test_folio_ingest_counts_them_as_read_again(tmp_path: Path, folder: Path) -> None:
    data = tmp_path / "data"
    old = older_services(data)
    try:
        assert old.sync.ingest_summary([folder]).new == 2
    finally:
        old.close()
    svc = make_services(data)
    try:
        svc.sync.recover()  # as a local `folio ingest` starts
        summary = svc.sync.ingest_summary([folder])
        counts = (summary.new, summary.changed, summary.again, summary.unchanged, summary.failed)
        assert counts == (0, 0, 2, 0, 0)
        assert svc.sync.ingest_summary([folder]).unchanged == 2
    finally:
        svc.close()
