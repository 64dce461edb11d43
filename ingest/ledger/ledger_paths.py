"""The paths side of the ledger: which bytes each scanned path holds, as a mixin of `Ledger`
(the same connection, lock and transactions)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from ingest.ledger.records import PathRecord

__all__ = ["PENDING", "LinkKind", "LinkResult", "PathLedger"]

# a document whose replacement may still be indexed keeps its points until then
PENDING = (
    "(r.status IN ('queued', 'processing')"
    " OR (r.status = 'failed' AND r.next_retry_at IS NOT NULL))"
)


class LinkKind(StrEnum):
    new = "new"  # bytes never seen before
    copied = "copied"  # known bytes under one more path (a rename, when another path vanished)
    changed = "changed"  # the path held other bytes before
    touched = "touched"  # same path, same bytes, new mtime


class LinkResult(BaseModel):
    kind: LinkKind
    doc_id: str
    previous: str | None = None


class PathLedger:
    """Paths as last scanned; `Ledger` supplies the connection."""

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    @staticmethod
    def _insert(db: sqlite3.Connection, doc_id: str, source: str, size: int, now: float) -> bool:
        raise NotImplementedError

    def path_record(self, path: str) -> PathRecord | None:
        rows = self._rows(
            "SELECT path, doc_id, size, mtime_ns, seen_at FROM paths WHERE path = ?", (path,)
        )
        return self._path_record(rows[0]) if rows else None

    def paths_under(self, root: str) -> dict[str, PathRecord]:
        """Recorded paths inside the folder `root` (absolute, no trailing separator)."""
        prefix = root.rstrip(os.sep) + os.sep
        rows = self._rows(
            "SELECT path, doc_id, size, mtime_ns, seen_at FROM paths WHERE substr(path, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return {row[0]: self._path_record(row) for row in rows}

    def path_stats(self, root: str) -> dict[str, tuple[str, int, int, float]]:
        """`paths_under` as plain tuples (doc_id, size, mtime_ns, seen_at): a scan's hot path."""
        prefix = root.rstrip(os.sep) + os.sep
        rows = self._rows(
            "SELECT path, doc_id, size, mtime_ns, seen_at FROM paths WHERE substr(path, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return {path: (doc_id, size, mtime, seen) for path, doc_id, size, mtime, seen in rows}

    @staticmethod
    def _path_record(row: tuple[Any, ...]) -> PathRecord:
        path, doc_id, size, mtime_ns, seen = row
        seen_at = datetime.fromtimestamp(seen, UTC)
        return PathRecord(path=path, doc_id=doc_id, size=size, mtime_ns=mtime_ns, seen_at=seen_at)

    def link(self, path: str, doc_id: str, size: int, mtime_ns: int) -> LinkResult:
        """Record that `path` now holds the bytes `doc_id` (queued if they are new)."""
        now = time.time()
        name = os.path.basename(path)
        with self.transaction() as db:
            created = self._insert(db, doc_id, name, size, now)
            row = db.execute("SELECT doc_id FROM paths WHERE path = ?", (path,)).fetchone()
            previous = row[0] if row else None
            db.execute("DELETE FROM tombstones WHERE path = ?", (path,))  # linked: not removed
            db.execute(
                "INSERT OR REPLACE INTO paths (path, doc_id, size, mtime_ns, seen_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (path, doc_id, size, mtime_ns, now),
            )
            db.execute("UPDATE documents SET replaced_by = NULL WHERE doc_id = ?", (doc_id,))
            if previous is not None and previous != doc_id:
                self._superseded(db, previous, doc_id)
        if previous == doc_id:
            return LinkResult(kind=LinkKind.touched, doc_id=doc_id)
        if previous is not None:
            return LinkResult(kind=LinkKind.changed, doc_id=doc_id, previous=previous)
        return LinkResult(kind=LinkKind.new if created else LinkKind.copied, doc_id=doc_id)

    @staticmethod
    def _superseded(db: sqlite3.Connection, old: str, new: str) -> None:
        """`old` lost a path to `new`: if it has no path left, it waits for `new` to be indexed."""
        left = db.execute("SELECT 1 FROM paths WHERE doc_id = ? LIMIT 1", (old,)).fetchone()
        if left is None:
            db.execute("UPDATE documents SET replaced_by = ? WHERE doc_id = ?", (new, old))
            db.execute("UPDATE documents SET replaced_by = ? WHERE replaced_by = ?", (new, old))

    def unlink(self, path: str) -> str | None:
        """Forget a path that is gone; returns the doc_id it held."""
        with self.transaction() as db:
            row = db.execute("SELECT doc_id FROM paths WHERE path = ?", (path,)).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM paths WHERE path = ?", (path,))
            other = db.execute(
                "SELECT path FROM paths WHERE doc_id = ? ORDER BY path LIMIT 1", (row[0],)
            ).fetchone()
            if other is not None:  # a rename: the record takes the remaining path's name
                db.execute(
                    "UPDATE documents SET source = ? WHERE doc_id = ?",
                    (os.path.basename(other[0]), row[0]),
                )
        return str(row[0])

    def touch(self, paths: Iterable[str]) -> None:
        """Paths seen again unchanged."""
        now = time.time()
        with self.transaction() as db:
            db.executemany("UPDATE paths SET seen_at = ? WHERE path = ?", [(now, p) for p in paths])

    def orphans(self) -> list[str]:
        """Documents no path holds any more (not uploads, not being processed), ready to remove.

        A document replaced by a newer version of its file is kept until that version is indexed
        (or has failed for good), so its file never drops out of the index in between."""
        rows = self._rows(
            "SELECT d.doc_id FROM documents d WHERE d.uploaded = 0 AND d.status != 'processing'"
            " AND NOT EXISTS (SELECT 1 FROM paths p WHERE p.doc_id = d.doc_id)"
            " AND NOT (d.replaced_by IS NOT NULL AND EXISTS (SELECT 1 FROM documents r"
            f" WHERE r.doc_id = d.replaced_by AND {PENDING}))"
        )
        return [r[0] for r in rows]

    def is_orphan(self, doc_id: str) -> bool:
        rows = self._rows(
            "SELECT uploaded, EXISTS (SELECT 1 FROM paths WHERE doc_id = ?) FROM documents"
            " WHERE doc_id = ?",
            (doc_id, doc_id),
        )
        return bool(rows) and not rows[0][0] and not rows[0][1]
