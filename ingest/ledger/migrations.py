"""Ordered migrations of the ledger's SQLite schema; each runs once, in order, in a transaction.

Add a migration by appending a function decorated with `@migration`; never edit or reorder one
that has shipped. `_migrations` records which have run (the schema version is their count).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["MIGRATIONS", "applied", "migrate"]

log = logging.getLogger(__name__)

Migration = Callable[[sqlite3.Connection, Path], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(db: sqlite3.Connection, data_dir: Path) -> None:
    db.execute(
        """
        CREATE TABLE documents (
            doc_id TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            size INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL,
            pages INTEGER NOT NULL DEFAULT 0,
            pages_done INTEGER NOT NULL DEFAULT 0,
            chunks INTEGER NOT NULL DEFAULT 0,
            errors TEXT NOT NULL DEFAULT '[]',
            failure TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_retry_at REAL,
            uploaded INTEGER NOT NULL DEFAULT 0,
            replaced_by TEXT,
            password_tried TEXT,
            created_at REAL NOT NULL,
            queued_at REAL,
            started_at REAL,
            finished_at REAL,
            timings TEXT NOT NULL DEFAULT '{}',
            versions TEXT NOT NULL DEFAULT '{}'
        )
        """
    )
    db.execute("CREATE INDEX documents_status ON documents(status)")
    db.execute(
        """
        CREATE TABLE paths (
            path TEXT PRIMARY KEY,
            doc_id TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            seen_at REAL NOT NULL
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX paths_doc ON paths(doc_id)")
    db.execute(
        """
        CREATE TABLE pages (
            doc_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            width REAL NOT NULL,
            height REAL NOT NULL,
            engine TEXT NOT NULL,
            engine_model TEXT,
            engine_version TEXT,
            status TEXT NOT NULL,
            route TEXT,
            errors TEXT NOT NULL DEFAULT '[]',
            blocks INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (doc_id, number)
        ) WITHOUT ROWID
        """
    )


@migration
def m002_import_catalog_records(db: sqlite3.Connection, data_dir: Path) -> None:
    """Documents recorded by the file catalog (before the ledger) keep their index entries.

    Their paths are recorded with size -1, so the next scan hashes the file once and relinks it
    without reprocessing it."""
    now = time.time()
    for record_path in sorted((data_dir / "documents").glob("*.record.json")):
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            doc_id = str(record["doc_id"])
        except (OSError, ValueError, KeyError) as exc:
            log.warning("skipping unreadable catalog record %s: %s", record_path.name, exc)
            continue
        status = record.get("status", "failed")
        if status not in ("ok", "partial", "failed"):
            status = "queued"
        db.execute(
            "INSERT OR IGNORE INTO documents (doc_id, source, status, pages, pages_done, chunks,"
            " errors, failure, created_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                doc_id,
                str(record.get("source", "")),
                status,
                int(record.get("pages", 0)),
                int(record.get("pages", 0)),
                int(record.get("chunks", 0)),
                json.dumps(list(record.get("errors", []))),
                "bad_input" if status == "failed" else None,
                now,
                now,
            ),
        )
        for path in record.get("paths", []):
            db.execute(
                "INSERT OR IGNORE INTO paths (path, doc_id, size, mtime_ns, seen_at)"
                " VALUES (?,?,?,?,?)",
                (str(Path(path).absolute()), doc_id, -1, -1, now),
            )


@migration
def m003_tombstones(db: sqlite3.Connection, data_dir: Path) -> None:
    """Paths whose document the user removed while the file stayed (one row per path)."""
    db.execute(
        """
        CREATE TABLE tombstones (
            path TEXT PRIMARY KEY,
            doc_id TEXT NOT NULL,
            source TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            removed_at REAL NOT NULL
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX tombstones_doc ON tombstones(doc_id)")


@migration
def m004_document_cards(db: sqlite3.Connection, data_dir: Path) -> None:
    """Each document's card (JSON of `retrieval.doc_card.DocumentCard`), set by a success."""
    db.execute("ALTER TABLE documents ADD COLUMN card TEXT")


def applied(db: sqlite3.Connection) -> list[str]:
    """Names of the migrations that have run, oldest first."""
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='_migrations'"
    ).fetchone()
    if not exists:
        return []
    return [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]


def migrate(db: sqlite3.Connection, data_dir: Path) -> list[str]:
    """Run the migrations that have not run yet; returns their names. `db` is in autocommit."""
    db.execute("BEGIN IMMEDIATE")  # one process migrates at a time; the others wait, then skip
    try:
        db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL)"
        )
        done = set(applied(db))
        ran = []
        for fn in MIGRATIONS:
            if fn.__name__ in done:
                continue
            fn(db, data_dir)
            db.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                (fn.__name__, time.time()),
            )
            ran.append(fn.__name__)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    for name in ran:
        log.info("ledger migration %s applied", name)
    return ran
