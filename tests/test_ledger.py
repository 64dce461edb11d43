"""The ledger: migrations run once and in order, paths and versions, orphans, retries, threads."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ingest.ledger import migrations
from ingest.ledger.ledger import Ledger, LinkKind
from ingest.ledger.records import DocStatus, FailureKind, PageRecord, Timings, Versions
from ocr_engine.schema import EngineInfo, PageStatus

A, B, C = "a" * 64, "b" * 64, "c" * 64


def test_migrations_run_once_in_order_and_record_the_schema_version(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    assert ledger.schema_version == len(migrations.MIGRATIONS) >= 2
    ledger.close()
    db = sqlite3.connect(tmp_path / "ledger.sqlite3")
    names = [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [fn.__name__ for fn in migrations.MIGRATIONS]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    again = Ledger(tmp_path)  # nothing runs twice
    assert again.schema_version == len(names)
    again.close()


def test_a_new_migration_runs_on_an_existing_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Ledger(tmp_path).close()

    def m999_add_note(db: sqlite3.Connection, data_dir: Path) -> None:
        db.execute("ALTER TABLE documents ADD COLUMN note TEXT")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m999_add_note])
    ledger = Ledger(tmp_path)
    assert ledger.schema_version == len(migrations.MIGRATIONS)
    with ledger.transaction() as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(documents)")]
    assert "note" in columns
    ledger.close()


def test_catalog_records_of_the_previous_version_are_imported(tmp_path: Path) -> None:
    documents = tmp_path / "documents"
    documents.mkdir()
    record = {
        "doc_id": A,
        "source": "old.pdf",
        "paths": [str(tmp_path / "in" / "old.pdf")],
        "status": "ok",
        "pages": 3,
        "chunks": 7,
        "errors": [],
    }
    (documents / f"{A}.record.json").write_text(json.dumps(record))
    (documents / "garbage.record.json").write_text("{not json")
    ledger = Ledger(tmp_path)
    imported = ledger.get(A)
    assert (imported.status, imported.pages, imported.chunks) == (DocStatus.ok, 3, 7)
    assert imported.paths == [str(tmp_path / "in" / "old.pdf")]
    assert ledger.count() == 1
    ledger.close()


def test_paths_link_copies_changes_and_renames(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    first = ledger.link("/in/a.pdf", A, 10, 1)
    assert first.kind is LinkKind.new and ledger.get(A).status is DocStatus.queued
    assert ledger.link("/in/a.pdf", A, 10, 2).kind is LinkKind.touched
    assert ledger.link("/in/copy.pdf", A, 10, 3).kind is LinkKind.copied
    assert ledger.get(A).paths == ["/in/a.pdf", "/in/copy.pdf"]
    assert ledger.unlink("/in/a.pdf") == A
    assert ledger.get(A).source == "copy.pdf"  # the record follows the rename
    changed = ledger.link("/in/copy.pdf", B, 11, 4)
    assert changed.kind is LinkKind.changed and changed.previous == A
    assert ledger.get(A).replaced_by == B and ledger.get(A).paths == []
    assert set(ledger.paths_under("/in")) == {"/in/copy.pdf"}
    assert ledger.paths_under("/i") == {}  # a prefix of a name is not a folder
    ledger.close()


def test_an_old_version_waits_for_its_replacement(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.link("/in/a.pdf", A, 10, 1)
    ledger.finish(
        A, DocStatus.ok, pages=1, chunks=1, errors=[], timings=Timings(), versions=Versions()
    )
    ledger.link("/in/a.pdf", B, 11, 2)  # the file changed: B is queued, A keeps its points
    assert ledger.orphans() == []
    ledger.start(B)
    assert ledger.orphans() == []
    ledger.fail(B, ["engine down"], FailureKind.transient, retry_at=time.time() + 60)
    assert ledger.orphans() == [], "a replacement that will be retried still protects A"
    ledger.link("/in/a.pdf", C, 12, 3)  # changed again before B succeeded
    assert ledger.get(A).replaced_by == C and ledger.get(B).replaced_by == C
    ledger.start(C)
    ledger.finish(
        C, DocStatus.ok, pages=1, chunks=1, errors=[], timings=Timings(), versions=Versions()
    )
    assert sorted(ledger.orphans()) == [A, B]
    ledger.close()


def test_a_deleted_file_is_an_orphan_unless_uploaded_or_processing(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.link("/in/a.pdf", A, 10, 1)
    ledger.add(B, "upload.pdf", 5, uploaded=True)
    ledger.link("/in/c.pdf", C, 10, 1)
    ledger.start(C)
    for path in ("/in/a.pdf", "/in/c.pdf"):
        ledger.unlink(path)
    assert ledger.orphans() == [A]
    assert ledger.is_orphan(C) and not ledger.is_orphan(B)
    ledger.close()


def test_attempts_backoff_and_due(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.link("/in/a.pdf", A, 10, 1)
    assert [r.doc_id for r in ledger.due()] == [A]
    assert ledger.start(A) == 1
    now = time.time()
    ledger.fail(A, ["timeout"], FailureKind.transient, retry_at=now + 30)
    record = ledger.get(A)
    assert record.status is DocStatus.failed and record.retryable and record.attempts == 1
    assert ledger.due(now) == [] and [r.doc_id for r in ledger.due(now + 31)] == [A]
    assert ledger.next_retry_at() == pytest.approx(now + 30)
    assert ledger.start(A) == 2
    ledger.fail(A, ["not a PDF"], FailureKind.bad_input, retry_at=None)
    assert not ledger.get(A).retryable and ledger.due(now + 10**6) == []
    assert ledger.failed_ids(include_permanent=False) == []
    assert ledger.failed_ids(include_permanent=True) == [A]
    assert [r.doc_id for r in ledger.documents(DocStatus.failed)] == [A]
    ledger.close()


def test_pages_and_interrupted_work(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.link("/in/a.pdf", A, 10, 1)
    ledger.start(A)
    ledger.set_page_count(A, 2)
    engine = EngineInfo(name="pymupdf", version="1")
    ledger.record_pages(
        A,
        [
            PageRecord(number=1, width=612, height=792, engine=engine, status=PageStatus.ok),
            PageRecord(
                number=2,
                width=612,
                height=792,
                engine=engine,
                status=PageStatus.failed,
                route="text layer",
                errors=["boom"],
            ),
        ],
    )
    assert [(p.number, p.status, p.errors) for p in ledger.pages(A)] == [
        (1, PageStatus.ok, []),
        (2, PageStatus.failed, ["boom"]),
    ]
    ledger.close()
    reopened = Ledger(tmp_path)  # as after a crash
    assert reopened.reset_interrupted() == [A]
    assert reopened.get(A).status is DocStatus.queued
    assert reopened.start(A) == 2 and reopened.pages(A) == []
    reopened.close()


def test_threads_share_one_ledger(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(50):
                doc_id = f"{worker:032x}{i:032x}"
                ledger.link(f"/in/{worker}/{i}.pdf", doc_id, i, i)
                ledger.start(doc_id)
                ledger.set_progress(doc_id, 1)
                ledger.documents(DocStatus.processing)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert ledger.count(DocStatus.processing) == 200
    ledger.close()


def test_each_stored_card_is_read_once_and_again_when_it_changes(tmp_path: Path) -> None:
    from retrieval.doc_card import DocumentCard

    ledger = Ledger(tmp_path)
    ledger.add("d" * 64, "report.pdf", 10, uploaded=True)

    def finish(title: str) -> None:
        ledger.start("d" * 64)
        ledger.finish(
            "d" * 64,
            DocStatus.ok,
            pages=1,
            chunks=1,
            errors=[],
            timings=Timings(),
            versions=Versions(),
            card=DocumentCard(title=title),
        )

    finish("First")
    first, again = ledger.named()["d" * 64].card, ledger.named()["d" * 64].card
    assert first is not None and first.title == "First" and again is first  # not parsed again
    finish("Second")
    changed = ledger.named()["d" * 64].card
    assert changed is not None and changed.title == "Second"
    ledger.close()
