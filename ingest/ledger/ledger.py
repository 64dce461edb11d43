"""The ledger: SQLite under the data directory, the source of truth of what is (to be) indexed.

Documents are keyed by content hash; paths map file names to the bytes they held when last
scanned; tombstones (`ingest/ledger/tombstones.py`) remember paths whose document the user removed;
pages record which engine read each page; an attempt's life, from due to finished or failed, is
in `ingest/ledger/ledger_attempts.py`. One connection guarded by a lock serves every thread of a
process (the watcher, the ingest worker, API threads); WAL lets other processes read (`folio
docs`) while one writes. Every method is one short transaction.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest.ledger.ledger_attempts import AttemptLedger
from ingest.ledger.ledger_paths import LinkKind, LinkResult, PathLedger
from ingest.ledger.migrations import applied, migrate
from ingest.ledger.records import (
    DocStatus,
    DocumentRecord,
    FailureKind,
    PageRecord,
    Timings,
    UnknownDocumentError,
    Versions,
)
from ingest.ledger.sqlite_file import connect
from ingest.ledger.tombstones import Tombstones
from ocr_engine.schema import EngineInfo, PageStatus
from retrieval.doc_card import DocumentCard
from retrieval.search import Named

__all__ = ["LEDGER_FILE", "Ledger", "LinkKind", "LinkResult"]

log = logging.getLogger(__name__)

LEDGER_FILE = "ledger.sqlite3"
_DOC_COLUMNS = (
    "doc_id, source, size, status, pages, pages_done, chunks, errors, failure, attempts,"
    " next_retry_at, uploaded, replaced_by, created_at, started_at, finished_at, timings, versions,"
    " card"
)


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


class Ledger(AttemptLedger, PathLedger):
    """Documents, paths and pages in `DATA_DIR/ledger.sqlite3`, migrated on open."""

    def __init__(self, data_dir: Path, *, filename: str = LEDGER_FILE) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.file = data_dir / filename
        self._lock = threading.RLock()
        self._db = connect(self.file, foreign_keys=True)
        with self._lock:
            migrate(self._db, data_dir)
        self.tombstones = Tombstones(self.transaction, self._rows)
        self._cards: dict[str, DocumentCard] = {}  # a card's stored JSON -> the card read from it

    @property
    def schema_version(self) -> int:
        """How many migrations have run."""
        with self._lock:
            return len(applied(self._db))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; the lock keeps other threads out until it commits."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # documents ----------------------------------------------------------------------------------

    def find(self, doc_id: str) -> DocumentRecord | None:
        found = self._documents("WHERE doc_id = ?", (doc_id,))
        return found[0] if found else None

    def get(self, doc_id: str) -> DocumentRecord:
        record = self.find(doc_id)
        if record is None:
            raise UnknownDocumentError(doc_id)
        return record

    def documents(
        self, status: DocStatus | Iterable[DocStatus] | None = None
    ) -> list[DocumentRecord]:
        """Documents, oldest first, optionally only those with a status."""
        if status is None:
            return self._documents("", ())
        wanted = [status] if isinstance(status, DocStatus) else list(status)
        marks = ",".join("?" * len(wanted))
        return self._documents(f"WHERE status IN ({marks})", [s.value for s in wanted])

    def ids_starting(self, prefix: str, limit: int = 10) -> list[tuple[str, str]]:
        """(doc_id, source) of up to `limit` documents whose id begins with hex `prefix`."""
        rows = self._rows(
            "SELECT doc_id, source FROM documents WHERE doc_id >= ? AND doc_id < ? "
            "ORDER BY doc_id LIMIT ?",
            (prefix, prefix + "g", limit),
        )
        return [(doc_id, source) for doc_id, source in rows]

    def count(self, status: DocStatus | None = None) -> int:
        if status is None:
            return int(self._rows("SELECT count(*) FROM documents")[0][0])
        return int(self._rows("SELECT count(*) FROM documents WHERE status = ?", (status,))[0][0])

    def sources(self) -> dict[str, str]:
        """doc_id -> file name of every document with points in the index (ok or partial)."""
        rows = self._rows("SELECT doc_id, source FROM documents WHERE status IN ('ok', 'partial')")
        return {doc_id: source for doc_id, source in rows}

    def named(self) -> dict[str, Named]:
        """doc_id -> file name and card of every document with points in the index (one being
        read again, whose earlier points stay, included)."""
        rows = self._rows(
            "SELECT doc_id, source, card FROM documents WHERE status IN ('ok', 'partial')"
            " OR (status IN ('queued', 'processing') AND chunks > 0)"
        )
        # every query asks (the names it may give): each stored card is read once, not each time
        known, self._cards = self._cards, {}
        named = {}
        for doc_id, source, raw in rows:
            card = None
            if raw:
                card = known.get(raw) or DocumentCard.model_validate_json(raw)
                self._cards[raw] = card
            named[doc_id] = Named(source, card)
        return named

    def _documents(self, where: str, args: Sequence[Any]) -> list[DocumentRecord]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents {where} ORDER BY created_at, doc_id", args
            ).fetchall()
            ids = [row[0] for row in rows]
            paths: dict[str, list[str]] = {doc_id: [] for doc_id in ids}
            if len(ids) == 1:
                query = "SELECT doc_id, path FROM paths WHERE doc_id = ? ORDER BY path"
                found = self._db.execute(query, ids).fetchall()
            else:
                found = self._db.execute("SELECT doc_id, path FROM paths ORDER BY path").fetchall()
        for doc_id, path in found:
            if doc_id in paths:
                paths[doc_id].append(path)
        return [self._record(row, paths[row[0]]) for row in rows]

    @staticmethod
    def _record(row: tuple[Any, ...], paths: list[str]) -> DocumentRecord:
        (doc_id, source, size, status, pages, pages_done, chunks, errors, failure, attempts) = row[
            :10
        ]
        next_retry_at, uploaded, replaced_by, created, started, finished, timings, versions = row[
            10:18
        ]
        card = DocumentCard.model_validate_json(row[18]) if row[18] else None
        timing = Timings.model_validate_json(timings)
        kind = FailureKind(failure) if failure else None
        return DocumentRecord(
            doc_id=doc_id,
            source=source,
            paths=paths,
            size=size,
            status=DocStatus(status),
            pages=pages,
            pages_done=pages_done,
            chunks=chunks,
            errors=json.loads(errors),
            failure=kind,
            retryable=next_retry_at is not None,
            attempts=attempts,
            next_retry_at=_ts(next_retry_at),
            uploaded=bool(uploaded),
            replaced_by=replaced_by,
            created_at=_ts(created) or datetime.now(UTC),
            started_at=_ts(started),
            finished_at=_ts(finished),
            seconds=timing.total_s,
            timings=timing,
            versions=Versions.model_validate_json(versions),
            card=card,
        )

    def add(self, doc_id: str, source: str, size: int, *, uploaded: bool = False) -> bool:
        """Record bytes (queued) unless known; `uploaded` keeps it without a path. True if new."""
        now = time.time()
        with self.transaction() as db:
            created = self._insert(db, doc_id, source, size, now)
            if uploaded:
                db.execute(
                    "UPDATE documents SET uploaded = 1, replaced_by = NULL WHERE doc_id = ?",
                    (doc_id,),
                )
        return created

    @staticmethod
    def _insert(db: sqlite3.Connection, doc_id: str, source: str, size: int, now: float) -> bool:
        cursor = db.execute(
            "INSERT OR IGNORE INTO documents (doc_id, source, size, status, created_at, queued_at)"
            " VALUES (?, ?, ?, 'queued', ?, ?)",
            (doc_id, source, size, now, now),
        )
        return cursor.rowcount == 1

    def delete(self, doc_id: str) -> None:
        """Forget a document, its pages and paths (its points must be gone already)."""
        with self.transaction() as db:
            db.execute("DELETE FROM paths WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM pages WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def set_uploaded(self, doc_id: str, uploaded: bool) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET uploaded = ? WHERE doc_id = ?", (int(uploaded), doc_id)
            )

    # pages --------------------------------------------------------------------------------------

    def page_totals(self) -> dict[tuple[str, str], int]:
        """Pages read so far, by (page status, engine), over every document."""
        rows = self._rows("SELECT status, engine, count(*) FROM pages GROUP BY status, engine")
        return {(str(status), str(engine)): int(n) for status, engine, n in rows}

    def status_totals(self) -> dict[DocStatus, int]:
        """Documents by status (every status, zero included)."""
        found = dict(self._rows("SELECT status, count(*) FROM documents GROUP BY status"))
        return {status: int(found.get(status.value, 0)) for status in DocStatus}

    def pages(self, doc_id: str) -> list[PageRecord]:
        rows = self._rows(
            "SELECT number, width, height, engine, engine_model, engine_version, status, route,"
            " errors, blocks FROM pages WHERE doc_id = ? ORDER BY number",
            (doc_id,),
        )
        return [
            PageRecord(
                number=n,
                width=w,
                height=h,
                engine=EngineInfo(name=engine, model=model, version=version),
                status=PageStatus(status),
                route=route,
                errors=json.loads(errors),
                blocks=blocks,
            )
            for n, w, h, engine, model, version, status, route, errors, blocks in rows
        ]
