"""Benchmark caches: embeddings by text, so re-ingesting after a chunker change embeds only what
changed, and the key of an ingested index (corpus + every setting that changes its content).

The embedding cache is a SQLite file of (model, sha1 of text) -> float32 vector. It can be seeded
from an existing Qdrant Edge index, whose points carry the embedded text in their payload.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import numpy as np

from retrieval.index.embedder import Embedder
from retrieval.schema import Chunk

__all__ = ["CachedEmbedder", "edge_points", "fingerprint", "seed_from_edge_index"]

log = logging.getLogger(__name__)


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint(settings: dict[str, object], sources: Sequence[Path]) -> str:
    """A short key of `settings` and the contents of the `sources` files that shape an index."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for path in sources:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class CachedEmbedder:
    """An `Embedder` that answers from a SQLite cache and embeds only the texts it lacks."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, key TEXT, vec BLOB, "
            "PRIMARY KEY (model, key))"
        )
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(t) for t in texts]
        found = self._lookup(keys)
        missing = sorted({i for i, k in enumerate(keys) if k not in found}, key=lambda i: keys[i])
        unique: dict[str, int] = {}
        for i in missing:
            unique.setdefault(keys[i], i)
        if unique:
            fresh = self.inner.embed_documents([texts[i] for i in unique.values()])
            self.put(list(unique), fresh)
            found.update(zip(unique, fresh, strict=True))
        self.hits += len(texts) - len(unique)
        self.misses += len(unique)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        rows = [
            (self.name, k, np.asarray(v, dtype=np.float32).tobytes())
            for k, v in zip(keys, vectors, strict=True)
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    def put_texts(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.put([_key(t) for t in texts], vectors)

    def _lookup(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({marks})",
                    [self.name, *part],
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()


def edge_points(index_dir: Path, batch: int = 512) -> Iterator[list[tuple[Chunk, list[float]]]]:
    """Every point of a Qdrant Edge index as (chunk, dense vector), `batch` points at a time."""
    import qdrant_edge as qe

    from retrieval.index.store_common import VECTOR_NAME, chunk_from_payload

    shard = qe.EdgeShard.load(str(index_dir), None)
    offset = None
    try:
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=batch, with_payload=True, with_vector=True
            )
            records, offset = shard.scroll(request)
            points = []
            for record in records:
                named = record.vector
                vector = named.get(VECTOR_NAME) if isinstance(named, dict) else None
                if isinstance(vector, list):
                    points.append((chunk_from_payload(record.payload), cast(list[float], vector)))
            yield points
            if offset is None:
                break
    finally:
        shard.close()


def seed_from_edge_index(cache: CachedEmbedder, index_dir: Path) -> int:
    """Copy (embedded text, dense vector) of every point of a Qdrant Edge index into `cache`."""
    seeded = 0
    for points in edge_points(index_dir):
        if points:
            texts = [chunk.embed_text for chunk, _ in points]
            cache.put_texts(texts, np.asarray([v for _, v in points], dtype=np.float32))
            seeded += len(points)
    log.info("seeded %d embeddings from %s", seeded, index_dir)
    return seeded
