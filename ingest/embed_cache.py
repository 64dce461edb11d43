"""Vectors already computed, by model and text: a resumed or repeated ingest embeds only new text.

Embedding is the slowest stage on a CPU (~0.4 s a page), so a document killed at page 800 of
900, a file re-ingested into a new index, or a new version of a filing that shares most of its
text with the old one costs only the chunks that are new. `DATA_DIR/embed_cache.sqlite3`, one
row per (model, sha256 of the embedded text), ~1.5 kB a chunk for a 384-dim model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ingest.sqlite_file import SqliteStore

__all__ = ["EMBED_CACHE_FILE", "EmbeddingCache"]

EMBED_CACHE_FILE = "embed_cache.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
)
_LOOKUP = 500  # keys per SELECT (SQLite's variable limit is 999 on old builds)


def _key(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{model}\0{text}".encode()).digest()


class EmbeddingCache(SqliteStore):
    """float32 vectors by (model, text); safe across threads, the connection opens on first use."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, _SCHEMA)

    def get(self, model: str, texts: Sequence[str], dim: int) -> dict[int, np.ndarray]:
        """Cached vectors by position in `texts`."""
        keys = [_key(model, t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            db = self._conn()
            for start in range(0, len(keys), _LOOKUP):
                part = keys[start : start + _LOOKUP]
                marks = ",".join("?" * len(part))
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part)
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
            db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)
            db.execute("COMMIT")

    def count(self) -> int:
        with self._lock:
            return int(self._conn().execute("SELECT count(*) FROM vectors").fetchone()[0])
