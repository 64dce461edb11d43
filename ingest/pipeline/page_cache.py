"""Finished pages on disk, so an interrupted or repeated extraction never reads a page twice.

Implements `ocr_engine.engines.reader.PageCache` over SQLite (`DATA_DIR/page_cache.sqlite3`): one
row per (document hash, page, engine key), the page's JSON compressed. A row is written in one
transaction, so a killed process leaves whole pages or nothing. Safe across threads and processes.
"""

from __future__ import annotations

import logging
import zlib
from pathlib import Path

from ingest.ledger.sqlite_file import SqliteStore
from ocr_engine.schema import Page

__all__ = ["PAGE_CACHE_FILE", "SqlitePageCache"]

log = logging.getLogger(__name__)

PAGE_CACHE_FILE = "page_cache.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pages (doc_id TEXT NOT NULL, number INTEGER NOT NULL,"
    " engine_key TEXT NOT NULL, page BLOB NOT NULL,"
    " PRIMARY KEY (doc_id, number, engine_key)) WITHOUT ROWID"
)


class SqlitePageCache(SqliteStore):
    """Pages by (doc_id, page number, engine key); the connection opens on first use per process."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, _SCHEMA)

    def get(self, doc_id: str, number: int, engine_key: str) -> Page | None:
        with self._lock:
            row = (
                self._conn()
                .execute(
                    "SELECT page FROM pages WHERE doc_id = ? AND number = ? AND engine_key = ?",
                    (doc_id, number, engine_key),
                )
                .fetchone()
            )
        if row is None:
            return None
        try:
            return Page.model_validate_json(zlib.decompress(row[0]))
        except (zlib.error, ValueError) as exc:  # an entry from an incompatible version
            log.warning("ignoring cached page %s/%d (%s): %s", doc_id[:12], number, engine_key, exc)
            return None

    def put(self, doc_id: str, engine_key: str, page: Page) -> None:
        blob = zlib.compress(page.model_dump_json().encode("utf-8"), 3)
        with self._lock:
            self._conn().execute(
                "INSERT OR REPLACE INTO pages (doc_id, number, engine_key, page) VALUES (?,?,?,?)",
                (doc_id, page.number, engine_key, blob),
            )

    def count(self, doc_id: str | None = None) -> int:
        """Cached pages, of one document or in all."""
        with self._lock:
            if doc_id is None:
                row = self._conn().execute("SELECT count(*) FROM pages").fetchone()
            else:
                query = "SELECT count(*) FROM pages WHERE doc_id = ?"
                row = self._conn().execute(query, (doc_id,)).fetchone()
        return int(row[0])

    def drop(self, doc_id: str) -> int:
        """Forget every page of a document (when it leaves the ledger)."""
        with self._lock:
            cursor = self._conn().execute("DELETE FROM pages WHERE doc_id = ?", (doc_id,))
        return cursor.rowcount
