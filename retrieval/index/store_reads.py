"""What both Qdrant stores do alike, written once: search, count, documents, chunks by document
and by id, upsert, and the dimension and write health they report. Each store supplies the
primitives in its own binding's terms (`_query`, `_count`, `_facet_doc_ids`, `_scroll`,
`_retrieve`, `_points`, `_write`), taking its own lock inside the reads."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval.index.sparse import SparseVec
from retrieval.index.store import WriteHealth
from retrieval.index.store_common import (
    FilterSpec,
    HybridParams,
    chunk_from_payload,
    doc_filter,
    lexical_query,
    matches_nothing,
    query_vector,
    search_filter,
)
from retrieval.schema import Chunk, ScoredChunk, SearchFilter, point_id

__all__ = ["HybridQuery", "StoreReads"]

Payload = dict[str, Any] | None


@dataclass(frozen=True)
class HybridQuery:
    """One query described once: the nearest `dense` points, or with `lexical` both candidate
    lists (`prefetch` each) fused by weighted RRF; both lists and the result pass `filter`."""

    dense: list[float]
    limit: int
    filter: FilterSpec | None
    lexical: SparseVec | None
    prefetch: int
    rrf_k: int
    weights: list[float] | None


class StoreReads(ABC):
    """Search, reads and upserts over a store's primitives; the store sets `hybrid`, `_dim`,
    `_writes` and `_lock`."""

    hybrid: HybridParams
    _dim: int
    _writes: WriteHealth
    _lock: threading.Lock

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def write_error(self) -> str | None:
        """Why the latest write failed, or None (what /health reports)."""
        return self._writes.error

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Insert or replace chunks (by point id) with their vectors, row i for chunk i."""
        points = self._points(chunks, vectors)
        with self._lock, self._writes.watch():
            self._write(points)

    def search(
        self,
        vector: np.ndarray,
        limit: int,
        flt: SearchFilter | None = None,
        *,
        text: str | None = None,
    ) -> list[ScoredChunk]:
        """The `limit` best chunks that pass `flt`, best first: nearest to `vector`, or with
        `text`, dense and lexical candidates fused by rank (RRF) in one query. Equal scores (RRF
        gives many) are ordered by document and chunk, so the same question gets the same hits
        from one process to the next (the engine's own order of ties is not fixed)."""
        dense = query_vector(vector, self.dim)
        if limit < 1 or matches_nothing(flt):
            return []
        query = HybridQuery(
            dense=dense,
            limit=limit,
            filter=search_filter(flt),
            lexical=lexical_query(text),
            prefetch=self.hybrid.prefetch_limit(limit),
            rrf_k=self.hybrid.rrf_k,
            weights=self.hybrid.weights,
        )
        found = [
            ScoredChunk(chunk=chunk_from_payload(payload), score=score)
            for payload, score in self._query(query)
        ]
        return sorted(found, key=lambda hit: (-hit.score, hit.chunk.doc_id, hit.chunk.chunk_id))

    def count(self, doc_id: str | None = None) -> int:
        """Chunks in the store, or of one document."""
        return self._count(doc_filter(doc_id) if doc_id is not None else None)

    def doc_ids(self) -> dict[str, int]:
        """Every indexed document id with its number of chunks (a facet over the keyword index;
        the facet keeps values of deleted points with a count of 0)."""
        total = self._count(None)
        if total == 0:
            return {}
        return {value: n for value, n in self._facet_doc_ids(total) if n > 0}

    def chunks(self, doc_id: str) -> list[Chunk]:
        """Every chunk of one document, in chunk-id order."""
        found = [chunk_from_payload(p) for p in self._scroll(doc_filter(doc_id))]
        return sorted(found, key=lambda chunk: chunk.chunk_id)

    def get(self, doc_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks of `doc_id` with these ids that are stored, in the order asked."""
        if not chunk_ids:
            return []
        payloads = self._retrieve([point_id(doc_id, c) for c in chunk_ids])
        found = {chunk.chunk_id: chunk for chunk in map(chunk_from_payload, payloads)}
        return [found[c] for c in chunk_ids if c in found]

    @abstractmethod
    def _points(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> list[Any]:
        """The binding's points for these chunks and vectors."""

    @abstractmethod
    def _write(self, points: list[Any]) -> None:
        """Store the points (the caller holds the lock)."""

    @abstractmethod
    def _query(self, query: HybridQuery) -> list[tuple[Payload, float]]:
        """Payload and score of each point found, best first."""

    @abstractmethod
    def _count(self, spec: FilterSpec | None) -> int: ...

    @abstractmethod
    def _facet_doc_ids(self, limit: int) -> list[tuple[str, int]]:
        """(doc_id, points) for up to `limit` document ids."""

    @abstractmethod
    def _scroll(self, spec: FilterSpec) -> Iterator[Payload]:
        """The payload of every point that passes `spec`."""

    @abstractmethod
    def _retrieve(self, ids: list[str]) -> list[Payload]:
        """The payloads of the stored points among `ids` (point ids)."""
