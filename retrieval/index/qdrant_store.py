"""The server vector store: one collection on a Qdrant server (or qdrant-client's local mode).

Same point ids, payload and filters as `EdgeStore`, so both give the same results. Errors:
unreachable server, timeouts and 5xx -> StoreUnavailableError (retry later); a collection of another
vector size or a refused API key -> StoreConfigError; anything else -> StoreError.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from retrieval.index.index_meta import METADATA_KEY, IndexModel, QdrantCluster, settle_model
from retrieval.index.qdrant_requests import check_vectors, index_params, qdrant_filter, server_query
from retrieval.index.store import StoreConfigError, StoreError, StoreUnavailableError, WriteHealth
from retrieval.index.store_common import (
    DOC_ID_FIELD,
    LEXICAL_NAME,
    PAYLOAD_INDEXES,
    SCROLL_PAGE,
    VECTOR_NAME,
    FilterSpec,
    HybridParams,
    chunk_payload,
    doc_filter,
    lexical_document,
    stale_filter,
    vector_rows,
)
from retrieval.index.store_reads import HybridQuery, StoreReads
from retrieval.schema import Chunk

__all__ = ["DEFAULT_COLLECTION", "QdrantServerStore"]

logger = logging.getLogger(__name__)

DEFAULT_COLLECTION = "folio"
# points per upsert request: 256 x 384 floats is ~1 MB of JSON, far below the server's 32 MB limit
_UPSERT_BATCH = 256
_T = TypeVar("_T")


class QdrantServerStore(StoreReads):
    """Chunks with dense and lexical vectors in one collection of a Qdrant server.

    Give exactly one of `url` (a server), `location=":memory:"` or `path` (qdrant-client's local
    mode, an in-process stand-in for tests; one process at a time for `path`). `model` names the
    embedding model, recorded in the collection's metadata when it is created and checked at every
    open (`retrieval.index.index_meta`); `cluster` sets shards, replicas and write consistency when
    the collection is created, and the ordering of every write.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        dim: int,
        collection: str = DEFAULT_COLLECTION,
        api_key: str | None = None,
        location: str | None = None,
        path: Path | None = None,
        timeout_s: float = 10.0,
        hybrid: HybridParams | None = None,
        model: str | None = None,
        cluster: QdrantCluster | None = None,
    ) -> None:
        if dim < 1:
            raise ValueError("dim must be >= 1")
        if sum(x is not None for x in (url, location, path)) != 1:
            raise ValueError("give exactly one of url, location or path")
        if location is not None and location != ":memory:":
            raise ValueError("location must be ':memory:' (use url for a server)")
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"Qdrant URL must start with http:// or https://: {url!r}")
        self._dim = dim
        self.hybrid = hybrid or HybridParams()
        self.model = model
        self.cluster = cluster or QdrantCluster()
        self._ordering = qm.WriteOrdering(self.cluster.ordering.value)
        self.collection = collection
        self.where = url or (str(path) if path is not None else ":memory:")
        self._local = url is None
        self._lock = threading.Lock()
        self._writes = WriteHealth()
        client = self._connect(url, api_key, location, path, timeout_s)
        self._client: QdrantClient | None = client
        try:
            self._ensure_collection()
        except BaseException:
            self._client = None
            client.close()
            raise

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Upsert `chunks`, then delete the document's other points, so it never vanishes.

        Chunks that keep their id are overwritten in place; in local mode searches wait for the
        whole replacement. A server offers no transaction, so a search from another client during
        the final delete may still see the stale chunks beside the new ones, never neither.
        """
        if any(chunk.doc_id != doc_id for chunk in chunks):
            raise ValueError(f"every chunk must belong to {doc_id}")
        points = self._points(chunks, vectors)
        stale = qm.FilterSelector(
            filter=qdrant_filter(stale_filter(doc_id, [c.point_id for c in chunks]))
        )
        with self._lock, self._writes.watch():
            self._write(points)
            client = self._require()
            delete = partial(
                client.delete, self.collection, stale, wait=True, ordering=self._ordering
            )
            self._do(delete)

    def delete_document(self, doc_id: str) -> int:
        """Delete every chunk of `doc_id`; returns how many there were."""
        flt = qdrant_filter(doc_filter(doc_id))
        with self._lock, self._writes.watch():
            client = self._require()
            n = self._do(lambda: client.count(self.collection, count_filter=flt, exact=True).count)
            if n:
                delete = partial(
                    client.delete,
                    self.collection,
                    qm.FilterSelector(filter=flt),
                    wait=True,
                    ordering=self._ordering,
                )
                self._do(delete)
        logger.debug("deleted %d chunks of %s", n, doc_id)
        return n

    def _query(self, query: HybridQuery) -> list[tuple[Any, float]]:
        call = server_query(self.collection, query)
        with self._reading():
            client = self._require()
            response = self._do(lambda: call(client))
        return [(p.payload, float(p.score)) for p in response.points]

    def _count(self, spec: FilterSpec | None) -> int:
        flt = qdrant_filter(spec) if spec is not None else None
        with self._reading():
            client = self._require()
            return self._do(
                lambda: client.count(self.collection, count_filter=flt, exact=True).count
            )

    def _facet_doc_ids(self, limit: int) -> list[tuple[str, int]]:
        with self._reading():
            client = self._require()
            response = self._do(
                lambda: client.facet(self.collection, key=DOC_ID_FIELD, limit=limit, exact=True)
            )
        return [(str(hit.value), hit.count) for hit in response.hits]

    def _scroll(self, spec: FilterSpec) -> Iterator[Any]:
        flt = qdrant_filter(spec)
        offset: Any = None
        with self._reading():
            client = self._require()
            while True:
                page = partial(
                    client.scroll,
                    self.collection,
                    scroll_filter=flt,
                    limit=SCROLL_PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=False,
                )
                records, offset = self._do(page)
                yield from (record.payload for record in records)
                if offset is None:
                    break

    def _retrieve(self, ids: list[str]) -> list[Any]:
        point_ids: list[Any] = list(ids)
        with self._reading():
            client = self._require()
            records = self._do(
                partial(
                    client.retrieve,
                    self.collection,
                    point_ids,
                    with_payload=True,
                    with_vectors=False,
                )
            )
        return [r.payload for r in records if r.payload]

    def flush(self) -> None:
        """Every write already waited for the server to apply it; checks the store is open."""
        with self._lock:
            self._require()

    def close(self) -> None:
        """Release the client; later calls raise StoreUnavailableError."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> QdrantServerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(
        self,
        url: str | None,
        api_key: str | None,
        location: str | None,
        path: Path | None,
        timeout_s: float,
    ) -> QdrantClient:
        try:
            if url is not None:
                # the version check runs in a thread and only warns; our first call checks instead
                return QdrantClient(
                    url=url,
                    api_key=api_key,
                    timeout=max(1, math.ceil(timeout_s)),
                    check_compatibility=False,
                )
            if path is not None:
                Path(path).mkdir(parents=True, exist_ok=True)
                # calls from several threads are serialised by this store's lock
                return QdrantClient(path=str(path), force_disable_check_same_thread=True)
            return QdrantClient(location=location, force_disable_check_same_thread=True)
        except RuntimeError as exc:  # local mode: the folder is locked by another client
            raise StoreUnavailableError(f"cannot open Qdrant at {self.where}: {exc}") from exc

    def _ensure_collection(self) -> None:
        client = self._require()
        name = self.collection
        if not self._do(lambda: client.collection_exists(name)):
            vectors = {VECTOR_NAME: qm.VectorParams(size=self._dim, distance=qm.Distance.COSINE)}
            sparse = {LEXICAL_NAME: qm.SparseVectorParams(modifier=qm.Modifier.IDF)}
            cluster = self.cluster
            metadata = {METADATA_KEY: self._model().model_dump()} if self.model else None
            make = partial(
                client.create_collection,
                name,
                vectors_config=vectors,
                sparse_vectors_config=sparse,
                shard_number=cluster.shards,
                replication_factor=cluster.replicas,
                write_consistency_factor=cluster.write_consistency,
                metadata=metadata,
            )
            try:
                self._do(make)
                logger.info("created collection %s at %s", name, self.where)
            except StoreError:
                if not self._do(lambda: client.collection_exists(name)):
                    raise  # not a race with another process creating it
        info = self._do(lambda: client.get_collection(name))
        check_vectors(info, f"collection {name!r} at {self.where}", self._dim)
        self._check_model(info)
        if self._local:
            return  # local mode has no payload indexes (it warns and ignores them)
        for field, kind in PAYLOAD_INDEXES.items():
            if field not in info.payload_schema:
                create = partial(
                    client.create_payload_index,
                    name,
                    field_name=field,
                    field_schema=index_params(kind),
                    wait=True,
                )
                self._do(create)
                logger.info("created payload index %s on %s", field, name)

    def _model(self) -> IndexModel:
        assert self.model is not None
        return IndexModel(model=self.model, dim=self._dim)

    def _check_model(self, info: qm.CollectionInfo) -> None:
        """The collection's recorded embedding model is this store's (recorded when empty)."""
        if self.model is None:
            return
        found = (info.config.metadata or {}).get(METADATA_KEY)
        recorded = IndexModel.model_validate(found) if isinstance(found, dict) else None
        client = self._require()
        empty = not self._do(lambda: client.count(self.collection, exact=True).count)
        where = f"collection {self.collection!r} at {self.where}"
        record = settle_model(recorded, self._model(), empty=empty, where=where)
        if record is not None:
            metadata = {METADATA_KEY: record.model_dump()}
            self._do(lambda: client.update_collection(self.collection, metadata=metadata))

    def _points(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> list[qm.PointStruct]:
        matrix = vector_rows(chunks, vectors, self._dim)
        points = []
        for chunk, row in zip(chunks, matrix, strict=True):
            lexical = lexical_document(chunk)
            named: dict[str, Any] = {VECTOR_NAME: row.tolist()}
            if lexical.indices:  # a chunk with no terms (only punctuation) has no lexical vector
                named[LEXICAL_NAME] = qm.SparseVector(
                    indices=lexical.indices, values=lexical.values
                )
            points.append(
                qm.PointStruct(id=chunk.point_id, vector=named, payload=chunk_payload(chunk))
            )
        return points

    def _write(self, points: list[qm.PointStruct]) -> None:
        client = self._require()
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = points[start : start + _UPSERT_BATCH]
            upsert = partial(
                client.upsert, self.collection, points=batch, wait=True, ordering=self._ordering
            )
            self._do(upsert)

    def _reading(self) -> AbstractContextManager[Any]:
        """Reads take the lock in local mode (not thread-safe); a server serves them in parallel."""
        return self._lock if self._local else nullcontext()

    def _require(self) -> QdrantClient:
        if self._client is None:
            raise StoreUnavailableError(f"Qdrant store at {self.where} is closed")
        return self._client

    def _do(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except StoreError:
            raise
        except ResponseHandlingException as exc:  # no response: refused, unresolvable, timed out
            raise StoreUnavailableError(f"cannot reach Qdrant at {self.where}: {exc}") from exc
        except UnexpectedResponse as exc:
            status = exc.status_code or 0
            detail = f"Qdrant at {self.where} answered {status} {exc.reason_phrase}"
            if status in (401, 403):
                raise StoreConfigError(f"{detail}: check the API key") from exc
            if status == 429 or status >= 500:
                raise StoreUnavailableError(detail) from exc
            raise StoreError(f"{detail}: {exc.content[:200]!r}") from exc
        except Exception as exc:  # local mode raises ValueError and others for bad requests
            raise StoreError(f"Qdrant at {self.where}: {exc}") from exc
