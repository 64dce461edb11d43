"""The life of an attempt at a document, as a mixin of `Ledger` (the same connection, lock and
transactions): which documents are due, an attempt's start, its pages, progress and card, the
password tried, and its end, finished or failed."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ingest.ledger.records import (
    DocStatus,
    DocumentRecord,
    FailureKind,
    PageRecord,
    Timings,
    UnknownDocumentError,
    Versions,
)
from retrieval.doc_card import DocumentCard

__all__ = ["AttemptLedger"]


class AttemptLedger:
    """Attempts at documents; `Ledger` supplies the connection and reads the records."""

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _documents(self, where: str, args: Sequence[Any]) -> list[DocumentRecord]:
        raise NotImplementedError

    def due(self, now: float | None = None) -> list[DocumentRecord]:
        """Documents to process now: queued ones, and failed ones whose retry time has come."""
        at = time.time() if now is None else now
        return self._documents(
            "WHERE status = 'queued' OR (status = 'failed' AND next_retry_at <= ?)", (at,)
        )

    def next_retry_at(self) -> float | None:
        """The earliest retry time of a failed document (unix seconds), if any."""
        row = self._rows("SELECT min(next_retry_at) FROM documents WHERE status = 'failed'")
        return row[0][0] if row and row[0][0] is not None else None

    def requeue(self, doc_ids: Iterable[str]) -> int:
        now = time.time()
        with self.transaction() as db:
            cursor = db.executemany(
                "UPDATE documents SET status = 'queued', queued_at = ?, next_retry_at = NULL,"
                " pages_done = 0 WHERE doc_id = ?",
                [(now, doc_id) for doc_id in doc_ids],
            )
            return cursor.rowcount

    def reset_interrupted(self) -> list[str]:
        """Documents left `processing` by a process that died: queued again."""
        with self.transaction() as db:
            ids = [
                r[0] for r in db.execute("SELECT doc_id FROM documents WHERE status='processing'")
            ]
            db.execute(
                "UPDATE documents SET status = 'queued', pages_done = 0 WHERE status = 'processing'"
            )
        return ids

    def failed_ids(self, *, include_permanent: bool) -> list[str]:
        clause = "" if include_permanent else " AND next_retry_at IS NOT NULL"
        return [
            r[0] for r in self._rows(f"SELECT doc_id FROM documents WHERE status='failed'{clause}")
        ]

    def start(self, doc_id: str) -> int:
        """Mark a document processing; returns which attempt this is (1-based)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET status = 'processing', attempts = attempts + 1,"
                " started_at = ?, finished_at = NULL, next_retry_at = NULL, pages_done = 0"
                " WHERE doc_id = ?",
                (time.time(), doc_id),
            )
            db.execute("DELETE FROM pages WHERE doc_id = ?", (doc_id,))
            row = db.execute("SELECT attempts FROM documents WHERE doc_id = ?", (doc_id,))
            found = row.fetchone()
        if found is None:
            raise UnknownDocumentError(doc_id)
        return int(found[0])

    def set_page_count(self, doc_id: str, pages: int) -> None:
        with self.transaction() as db:
            db.execute("UPDATE documents SET pages = ? WHERE doc_id = ?", (pages, doc_id))

    def record_pages(self, doc_id: str, pages: Sequence[PageRecord]) -> None:
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO pages (doc_id, number, width, height, engine, engine_model,"
                " engine_version, status, route, errors, blocks) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        doc_id,
                        p.number,
                        p.width,
                        p.height,
                        p.engine.name,
                        p.engine.model,
                        p.engine.version,
                        p.status.value,
                        p.route,
                        json.dumps(p.errors),
                        p.blocks,
                    )
                    for p in pages
                ],
            )

    def set_progress(self, doc_id: str, pages_done: int) -> None:
        with self.transaction() as db:
            db.execute("UPDATE documents SET pages_done = ? WHERE doc_id = ?", (pages_done, doc_id))

    def set_card(self, doc_id: str, card: DocumentCard) -> None:
        """The card of a document still processing, as its card point is written."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET card = ? WHERE doc_id = ?", (card.model_dump_json(), doc_id)
            )

    def set_password_tried(self, doc_id: str, fingerprint: str) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET password_tried = ? WHERE doc_id = ?", (fingerprint, doc_id)
            )

    def password_failures(self) -> dict[str, str]:
        """doc_id -> fingerprint of the password tried, for documents that failed without one."""
        rows = self._rows(
            "SELECT doc_id, coalesce(password_tried, '') FROM documents"
            " WHERE status = 'failed' AND failure = 'password'"
        )
        return {doc_id: tried for doc_id, tried in rows}

    def finish(
        self,
        doc_id: str,
        status: DocStatus,
        *,
        pages: int,
        chunks: int,
        errors: Sequence[str],
        timings: Timings,
        versions: Versions,
        card: DocumentCard | None = None,
    ) -> None:
        if status not in (DocStatus.ok, DocStatus.partial):
            raise ValueError(f"finish() takes ok or partial, not {status}")
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET status = ?, pages = ?, pages_done = ?, chunks = ?,"
                " errors = ?, failure = NULL, attempts = 0, next_retry_at = NULL,"
                " finished_at = ?, timings = ?, versions = ?, card = ? WHERE doc_id = ?",
                (
                    status.value,
                    pages,
                    pages,
                    chunks,
                    json.dumps(list(errors)),
                    time.time(),
                    timings.model_dump_json(),
                    versions.model_dump_json(),
                    card.model_dump_json() if card is not None else None,
                    doc_id,
                ),
            )

    def restore_status(self, doc_id: str, status: DocStatus) -> None:
        """Back to `status` with the record of its last success, after reading it again failed."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET status = ?, pages_done = pages, finished_at = ?"
                " WHERE doc_id = ?",
                (status.value, time.time(), doc_id),
            )

    def fail(
        self,
        doc_id: str,
        errors: Sequence[str],
        kind: FailureKind,
        *,
        retry_at: float | None,
        timings: Timings | None = None,
    ) -> None:
        """Mark failed; `retry_at` (unix seconds) schedules another attempt, None gives up."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET status = 'failed', errors = ?, failure = ?, chunks = 0,"
                " next_retry_at = ?, finished_at = ?, timings = ? WHERE doc_id = ?",
                (
                    json.dumps(list(errors)),
                    kind.value,
                    retry_at,
                    time.time(),
                    (timings or Timings()).model_dump_json(),
                    doc_id,
                ),
            )
