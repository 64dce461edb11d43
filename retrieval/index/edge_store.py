"""The embedded vector store: one Qdrant Edge shard in a directory, guarded by a lock."""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, assert_never
from uuid import UUID

import numpy as np
import qdrant_edge as qe

from retrieval.index.store import StoreConfigError, StoreError, StoreUnavailableError, WriteHealth
from retrieval.index.store_common import (
    DOC_ID_FIELD,
    LEXICAL_NAME,
    PAYLOAD_INDEXES,
    SCROLL_PAGE,
    VECTOR_NAME,
    FilterSpec,
    HybridParams,
    IndexKind,
    IntRange,
    MatchAny,
    MatchValue,
    chunk_payload,
    doc_filter,
    lexical_document,
    search_filter,
    vector_rows,
)
from retrieval.index.store_reads import HybridQuery, StoreReads
from retrieval.schema import Chunk, SearchFilter

__all__ = ["VECTOR_NAME", "EdgeStore", "build_filter"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


def build_filter(flt: SearchFilter | None) -> qe.Filter | None:
    """The Qdrant Edge filter for documents and an inclusive page range."""
    spec = search_filter(flt)
    return _edge_filter(spec) if spec is not None else None


def _edge_filter(spec: FilterSpec) -> qe.Filter:
    must: list[qe.FieldCondition] = []
    for cond in spec.must:
        if isinstance(cond, MatchValue):
            must.append(qe.FieldCondition(key=cond.key, match=qe.MatchValue(cond.value)))
        elif isinstance(cond, MatchAny):
            must.append(qe.FieldCondition(key=cond.key, match=qe.MatchAny(list(cond.values))))
        elif isinstance(cond, IntRange):
            bounds = qe.RangeFloat(gte=cond.gte, lte=cond.lte)
            must.append(qe.FieldCondition(key=cond.key, range=bounds))
        else:
            assert_never(cond)
    return qe.Filter(
        must=list(must),
        must_not=[qe.HasIdCondition(set(spec.exclude_ids))] if spec.exclude_ids else None,
    )


def _edge_request(query: HybridQuery) -> qe.QueryRequest:
    flt = _edge_filter(query.filter) if query.filter is not None else None
    nearest = qe.Query.Nearest(query.dense, using=VECTOR_NAME)
    if query.lexical is None:
        return qe.QueryRequest(
            limit=query.limit, query=nearest, filter=flt, with_payload=True, with_vector=False
        )
    sparse = qe.SparseVector(query.lexical.indices, query.lexical.values)
    n = query.prefetch
    prefetches = [
        qe.Prefetch(limit=n, query=nearest, filter=flt),
        qe.Prefetch(limit=n, query=qe.Query.Nearest(sparse, using=LEXICAL_NAME), filter=flt),
    ]
    return qe.QueryRequest(
        limit=query.limit,
        query=qe.Fusion.Rrf(k=query.rrf_k, weights=query.weights),  # type: ignore[arg-type]
        prefetches=prefetches,
        filter=flt,
        with_payload=True,
        with_vector=False,
    )


def _doc_filter(doc_id: str) -> qe.Filter:
    return _edge_filter(doc_filter(doc_id))


def _index_params(kind: IndexKind) -> qe.PayloadSchemaType | qe.IntegerIndexParams:
    if kind == "keyword":
        return qe.PayloadSchemaType.Keyword
    return qe.IntegerIndexParams(lookup=True, range=True)


class EdgeStore(StoreReads):
    """Chunks with dense and lexical vectors in a Qdrant Edge shard under `path`; persists and
    reopens. An index written by an earlier folio without this lexical vector is rebuilt empty
    (`rebuilt` is then True): it is derived data, and the ledger's recovery re-ingests its
    documents."""

    def __init__(self, path: Path, dim: int, *, hybrid: HybridParams | None = None) -> None:
        if dim < 1:
            raise ValueError("dim must be >= 1")
        self.path = Path(path)
        self._dim = dim
        self.hybrid = hybrid or HybridParams()
        self.rebuilt = False
        self._writes = WriteHealth()
        self._lock = threading.Lock()
        self._shard: qe.EdgeShard | None = self._open()

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Delete every chunk of `doc_id`, then upsert `chunks`, under one lock."""
        if any(chunk.doc_id != doc_id for chunk in chunks):
            raise ValueError(f"every chunk must belong to {doc_id}")
        points = self._points(chunks, vectors)
        with self._lock, self._writes.watch():
            shard = self._require()
            delete = qe.UpdateOperation.delete_points_by_filter(_doc_filter(doc_id))
            self._do(partial(shard.update, delete))
            self._write(points)

    def delete_document(self, doc_id: str) -> int:
        """Delete every chunk of `doc_id`; returns how many there were."""
        with self._lock, self._writes.watch():
            shard = self._require()
            flt = _doc_filter(doc_id)
            n = self._do(lambda: shard.count(qe.CountRequest(exact=True, filter=flt)))
            if n:
                self._do(lambda: shard.update(qe.UpdateOperation.delete_points_by_filter(flt)))
                self._do(shard.flush)
        logger.debug("deleted %d chunks of %s", n, doc_id)
        return n

    def _query(self, query: HybridQuery) -> list[tuple[Any, float]]:
        request = _edge_request(query)
        with self._lock:
            shard = self._require()
            points = self._do(lambda: shard.query(request))
        return [(p.payload, float(p.score)) for p in points]

    def _count(self, spec: FilterSpec | None) -> int:
        flt = _edge_filter(spec) if spec is not None else None
        with self._lock:
            shard = self._require()
            return self._do(lambda: shard.count(qe.CountRequest(exact=True, filter=flt)))

    def _facet_doc_ids(self, limit: int) -> list[tuple[str, int]]:
        request = qe.FacetRequest(key=DOC_ID_FIELD, limit=limit, exact=True)
        with self._lock:
            shard = self._require()
            response = self._do(lambda: shard.facet(request))
        return [(str(hit.value), hit.count) for hit in response.hits]

    def _scroll(self, spec: FilterSpec) -> Iterator[Any]:
        flt = _edge_filter(spec)
        offset: Any = None
        with self._lock:
            shard = self._require()
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=SCROLL_PAGE, filter=flt, with_payload=True
                )
                records, offset = self._do(partial(shard.scroll, request))
                yield from (record.payload for record in records)
                if offset is None:
                    break

    def _retrieve(self, ids: list[str]) -> list[Any]:
        point_ids: list[int | UUID | str] = list(ids)
        with self._lock:
            shard = self._require()
            records = self._do(partial(shard.retrieve, point_ids, True, False))
        return [r.payload for r in records if r.payload]

    def flush(self) -> None:
        """Make every write durable."""
        with self._lock:
            shard = self._require()
            self._do(shard.flush)

    def close(self) -> None:
        """Flush and release the shard; later calls raise StoreUnavailableError."""
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is not None:
                self._do(shard.flush)
                self._do(shard.close)

    def __enter__(self) -> EdgeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> qe.EdgeShard:
        config = qe.EdgeConfig(
            vectors={VECTOR_NAME: qe.EdgeVectorParams(size=self._dim, distance=qe.Distance.Cosine)},
            sparse_vectors={LEXICAL_NAME: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        exists = (self.path / "edge_config.json").is_file()
        if exists and self._outdated():
            logger.warning(
                "index at %s has no %r vector (written by an earlier folio): rebuilding it; "
                "its documents are ingested again",
                self.path,
                LEXICAL_NAME,
            )
            shutil.rmtree(self.path)
            self.rebuilt, exists = True, False
        try:
            if exists:
                shard = qe.EdgeShard.load(str(self.path), config)
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                shard = qe.EdgeShard.create(str(self.path), config)
        except Exception as exc:  # the binding raises bare Exception; sort it by message
            message = str(exc)
            if "incompatible" in message.lower():
                raise StoreConfigError(f"index at {self.path}: {message}") from exc
            raise StoreUnavailableError(f"cannot open index at {self.path}: {message}") from exc
        self._ensure_indexes(shard)
        logger.info("%s vector index at %s", "opened" if exists else "created", self.path)
        return shard

    def _outdated(self) -> bool:
        """True when the stored config lacks this version's lexical vector."""
        try:
            stored = json.loads((self.path / "edge_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreUnavailableError(f"cannot read index config at {self.path}: {exc}") from exc
        return LEXICAL_NAME not in (stored.get("sparse_vectors") or {})

    def _ensure_indexes(self, shard: qe.EdgeShard) -> None:
        present = set(self._do(shard.info).payload_schema)
        for field, kind in PAYLOAD_INDEXES.items():
            if field not in present:
                create = qe.UpdateOperation.create_field_index(field, _index_params(kind))
                self._do(partial(shard.update, create))

    def _points(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> list[qe.Point]:
        matrix = vector_rows(chunks, vectors, self._dim)
        points = []
        for chunk, row in zip(chunks, matrix, strict=True):
            lexical = lexical_document(chunk)
            named: dict[str, Any] = {VECTOR_NAME: row.tolist()}
            if lexical.indices:  # a chunk with no terms (only punctuation) has no lexical vector
                named[LEXICAL_NAME] = qe.SparseVector(lexical.indices, lexical.values)
            points.append(qe.Point(chunk.point_id, named, chunk_payload(chunk)))
        return points

    def _write(self, points: list[qe.Point]) -> None:
        shard = self._require()
        if points:
            self._do(lambda: shard.update(qe.UpdateOperation.upsert_points(points)))
        self._do(shard.flush)

    def _require(self) -> qe.EdgeShard:
        if self._shard is None:
            raise StoreUnavailableError(f"index at {self.path} is closed")
        return self._shard

    def _do(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except StoreError:
            raise
        except Exception as exc:  # the binding raises bare Exception
            raise StoreError(f"index at {self.path}: {exc}") from exc
