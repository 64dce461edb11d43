"""Vectors already computed, by model and text: a resumed or repeated ingest embeds only new text.

Embedding is the slowest stage on a CPU (~0.4 s a page), so a document killed at page 800 of
900, a file re-ingested into a new index, or a new version of a filing that shares most of its
text with the old one costs only the chunks that are new. `DATA_DIR/embed_cache.sqlite3`, one
row per (model, text), found by the first 8 bytes of the sha256 of both: ~1.7 kB a vector of a
384-dim model, on disk. (A 32-byte key in a `WITHOUT ROWID` table, as before, put each
1.5 kB vector on an overflow page of its own: ~4 kB a row. Such a file is converted when opened.)
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ingest.ledger.sqlite_file import SqliteStore

__all__ = ["EMBED_CACHE_FILE", "EmbeddingCache"]

EMBED_CACHE_FILE = "embed_cache.sqlite3"
# Rows appended in rowid order fill their pages (a 1.5 kB row inserted at a random key splits
# pages half-empty), and 16 kB pages hold ten rows where 4 kB pages hold two.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors_v2 (key INTEGER NOT NULL UNIQUE, vector BLOB NOT NULL)"
)
_PAGE_SIZE = 16384
_OLD_TABLE = "vectors"  # (key BLOB PRIMARY KEY: the whole sha256, vector BLOB) WITHOUT ROWID
_LOOKUP = 500  # keys per SELECT (SQLite's variable limit is 999 on old builds)
_COPY = 2000  # old rows converted per batch


def _key(model: str, text: str) -> int:
    return _short(hashlib.sha256(f"{model}\0{text}".encode()).digest())


def _short(digest: bytes) -> int:
    """The row id of a sha256 digest: its first 8 bytes, as SQLite's signed 64-bit integer."""
    return int.from_bytes(digest[:8], "big", signed=True)


class EmbeddingCache(SqliteStore):
    """float32 vectors by (model, text); safe across threads, the connection opens on first use."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, _SCHEMA, page_size=_PAGE_SIZE)
        self._converted = False

    def _conn(self) -> sqlite3.Connection:
        db = super()._conn()
        if not self._converted:
            _convert_old_rows(db)
            self._converted = True
        return db

    def get(self, model: str, texts: Sequence[str], dim: int) -> dict[int, np.ndarray]:
        """Cached vectors by position in `texts`."""
        keys = [_key(model, t) for t in texts]
        found: dict[int, np.ndarray] = {}
        with self._lock:
            db = self._conn()
            for start in range(0, len(keys), _LOOKUP):
                part = keys[start : start + _LOOKUP]
                marks = ",".join("?" * len(part))
                select = f"SELECT key, vector FROM vectors_v2 WHERE key IN ({marks})"
                rows = db.execute(select, part)
                for key, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (dim,):
                        found[key] = vector
        return {i: found[k] for i, k in enumerate(keys) if k in found}

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        rows = [
            (_key(model, t), np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            db = self._conn()
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO vectors_v2 (key, vector) VALUES (?, ?)", rows)
            db.execute("COMMIT")

    def count(self) -> int:
        with self._lock:
            return int(self._conn().execute("SELECT count(*) FROM vectors_v2").fetchone()[0])


def _convert_old_rows(db: sqlite3.Connection) -> None:
    """An older file's rows moved to the compact table, in one transaction, and the space freed."""
    db.execute("BEGIN IMMEDIATE")  # one process converts; another waits, then finds nothing
    try:
        exists = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_OLD_TABLE,)
        ).fetchone()
        if exists is not None:
            rows = db.execute(f"SELECT key, vector FROM {_OLD_TABLE}")
            while batch := rows.fetchmany(_COPY):
                db.executemany(
                    "INSERT OR REPLACE INTO vectors_v2 (key, vector) VALUES (?, ?)",
                    [(_short(key), vector) for key, vector in batch],
                )
            db.execute(f"DROP TABLE {_OLD_TABLE}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if exists is not None:  # rewritten in the compact pages (a WAL file keeps its page size)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute(f"PRAGMA page_size={_PAGE_SIZE}")
        db.execute("VACUUM")
        db.execute("PRAGMA journal_mode=WAL")
