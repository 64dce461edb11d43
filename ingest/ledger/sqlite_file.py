"""One way to open folio's SQLite files (ledger, page cache, embedding cache): autocommit, WAL,
shared across threads behind the owner's lock, waiting up to 30 s on another process's write."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

__all__ = ["LazySqlite", "SqliteStore", "connect"]


def connect(
    path: Path, *, foreign_keys: bool = False, page_size: int | None = None
) -> sqlite3.Connection:
    """A connection in WAL mode; statements commit on their own unless inside BEGIN/COMMIT;
    `page_size` applies to a new file only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    if page_size is not None:
        db.execute(f"PRAGMA page_size={int(page_size)}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    if foreign_keys:
        db.execute("PRAGMA foreign_keys=ON")
    return db


class LazySqlite:
    """A SQLite file opened on first use (so a forked or spawned process opens its own), its
    `schema` run once; use `conn()` while holding `lock`."""

    def __init__(self, path: Path, schema: str, *, page_size: int | None = None) -> None:
        self.path = Path(path)
        self.lock = threading.Lock()
        self._schema = schema
        self._page_size = page_size
        self._db: sqlite3.Connection | None = None

    def conn(self) -> sqlite3.Connection:
        if self._db is None:
            db = connect(self.path, page_size=self._page_size)
            db.execute(self._schema)
            self._db = db
        return self._db

    def close(self) -> None:
        with self.lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class SqliteStore:
    """Base of the caches kept in one SQLite file each: `_conn()` under `_lock`, `close()`."""

    def __init__(self, path: Path, schema: str, *, page_size: int | None = None) -> None:
        self.path = Path(path)
        self._file = LazySqlite(self.path, schema, page_size=page_size)
        self._lock = self._file.lock

    def _conn(self) -> sqlite3.Connection:
        return self._file.conn()

    def close(self) -> None:
        self._file.close()
