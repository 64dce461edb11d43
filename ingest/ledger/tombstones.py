"""The ledger's memory of removals: paths whose document the user removed while the file stayed.

A path is either in `paths` (its bytes are indexed, or will be) or in `tombstones` (left out on
purpose), never both: burying moves a document's paths here, and `Ledger.link` of a path ends
its tombstone. Scans consult `stats` on their hot path, as they do the paths.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from ingest.ledger.records import Tombstone

__all__ = ["Tombstones"]

_COLUMNS = "path, doc_id, source, size, mtime_ns, removed_at"

Hashed = list[tuple[str, str, int, int]]  # (path, doc_id, size, mtime_ns) of files a scan hashed
Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]
Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def _tombstone(row: tuple[Any, ...]) -> Tombstone:
    path, doc_id, source, size, mtime_ns, removed_at = row
    removed = datetime.fromtimestamp(removed_at, UTC)
    return Tombstone(
        path=path, doc_id=doc_id, source=source, size=size, mtime_ns=mtime_ns, removed_at=removed
    )


class Tombstones:
    """The `tombstones` table, through the ledger's connection (its transactions and reads)."""

    def __init__(self, transaction: Transaction, rows: Rows) -> None:
        self._transaction = transaction
        self._rows = rows

    def bury(self, doc_id: str) -> list[Tombstone]:
        """Move every path of `doc_id` here, in one transaction; returns their tombstones."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO tombstones (path, doc_id, source, size, mtime_ns,"
                " removed_at) SELECT p.path, p.doc_id, d.source, p.size, p.mtime_ns, ?"
                " FROM paths p JOIN documents d ON d.doc_id = p.doc_id WHERE p.doc_id = ?",
                (now, doc_id),
            )
            db.execute("DELETE FROM paths WHERE doc_id = ?", (doc_id,))
        return self.of(doc_id)

    def all(self) -> list[Tombstone]:
        """Every tombstone, latest removal first."""
        rows = self._rows(f"SELECT {_COLUMNS} FROM tombstones ORDER BY removed_at DESC, path", ())
        return [_tombstone(row) for row in rows]

    def of(self, doc_id: str) -> list[Tombstone]:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM tombstones WHERE doc_id = ? ORDER BY path", (doc_id,)
        )
        return [_tombstone(row) for row in rows]

    def stats(self, root: str) -> dict[str, tuple[str, int, int]]:
        """path -> (doc_id, size, mtime_ns) of the tombstones inside the folder `root`."""
        prefix = root.rstrip(os.sep) + os.sep
        rows = self._rows(
            "SELECT path, doc_id, size, mtime_ns FROM tombstones WHERE substr(path, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return {path: (doc_id, size, mtime_ns) for path, doc_id, size, mtime_ns in rows}

    def seen(self, old: str, new: str, size: int, mtime_ns: int) -> None:
        """The tombstoned bytes are at `new` now (the same path touched, or the file moved)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE OR REPLACE tombstones SET path = ?, size = ?, mtime_ns = ? WHERE path = ?",
                (new, size, mtime_ns, old),
            )

    def hold_back(
        self,
        hashed: Hashed,
        stones: dict[str, tuple[str, int, int]],
        found: dict[str, tuple[int, int]],
        known: dict[str, Any],
    ) -> tuple[Hashed, list[str]]:
        """A scan's hashed files split into those to link and the paths left out: removed bytes
        where they were removed, or moved there from a tombstoned path now gone (not `found`).
        Removals of paths gone end; other bytes at a tombstoned path are linked, ending its."""
        gone = {path: stone[0] for path, stone in stones.items() if path not in found}
        keep: Hashed = []
        held: list[str] = []
        for path, doc_id, size, mtime_ns in hashed:
            stone = stones.get(path)
            if stone is not None and stone[0] == doc_id:
                self.seen(path, path, size, mtime_ns)
            elif stone is None and path not in known and doc_id in gone.values():
                old = next(p for p, d in gone.items() if d == doc_id)
                del gone[old]
                self.seen(old, path, size, mtime_ns)
            else:
                keep.append((path, doc_id, size, mtime_ns))
                continue
            held.append(path)
        self.drop(gone)
        return keep, held

    def drop(self, paths: Iterable[str]) -> None:
        """End the removal of these paths (the file is gone, changed, or restored)."""
        with self._transaction() as db:
            db.executemany("DELETE FROM tombstones WHERE path = ?", [(p,) for p in paths])
