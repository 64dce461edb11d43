"""The Qdrant server's requests and collection checks, from the stores' shared descriptions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, assert_never

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from retrieval.index.store import StoreConfigError
from retrieval.index.store_common import (
    LEXICAL_NAME,
    VECTOR_NAME,
    FilterSpec,
    IndexKind,
    IntRange,
    MatchAny,
    MatchValue,
)
from retrieval.index.store_reads import HybridQuery

__all__ = ["check_vectors", "index_params", "qdrant_filter", "server_query"]


def qdrant_filter(spec: FilterSpec) -> qm.Filter:
    """The qdrant-client filter for a shared filter description."""
    must: list[qm.Condition] = []
    for cond in spec.must:
        if isinstance(cond, MatchValue):
            must.append(qm.FieldCondition(key=cond.key, match=qm.MatchValue(value=cond.value)))
        elif isinstance(cond, MatchAny):
            match = qm.MatchAny(any=list(cond.values))
            must.append(qm.FieldCondition(key=cond.key, match=match))
        elif isinstance(cond, IntRange):
            bounds = qm.Range(gte=cond.gte, lte=cond.lte)
            must.append(qm.FieldCondition(key=cond.key, range=bounds))
        else:
            assert_never(cond)
    must_not: list[qm.Condition] | None = None
    if spec.exclude_ids:
        must_not = [qm.HasIdCondition(has_id=list(spec.exclude_ids))]
    return qm.Filter(must=must, must_not=must_not)


def server_query(collection: str, query: HybridQuery) -> Callable[[QdrantClient], Any]:
    """One `query_points` call: dense only, or both lists fused by Qdrant."""
    flt = qdrant_filter(query.filter) if query.filter is not None else None
    common: dict[str, Any] = {
        "collection_name": collection,
        "query_filter": flt,
        "limit": query.limit,
        "with_payload": True,
        "with_vectors": False,
    }
    if query.lexical is None:
        return partial(QdrantClient.query_points, query=query.dense, using=VECTOR_NAME, **common)
    sparse = qm.SparseVector(indices=query.lexical.indices, values=query.lexical.values)
    prefetch = [
        qm.Prefetch(query=query.dense, using=VECTOR_NAME, filter=flt, limit=query.prefetch),
        qm.Prefetch(query=sparse, using=LEXICAL_NAME, filter=flt, limit=query.prefetch),
    ]
    fusion = qm.RrfQuery(rrf=qm.Rrf(k=query.rrf_k, weights=query.weights))
    return partial(QdrantClient.query_points, query=fusion, prefetch=prefetch, **common)


def index_params(kind: IndexKind) -> qm.PayloadSchemaParams:
    """The server's payload index for a shared index kind."""
    if kind == "keyword":
        return qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD)
    return qm.IntegerIndexParams(type=qm.IntegerIndexType.INTEGER, lookup=True, range=True)


def check_vectors(info: qm.CollectionInfo, where: str, dim: int) -> None:
    """The collection has folio's dense and lexical vectors, of this size and kind."""
    vectors = info.config.params.vectors
    params = vectors.get(VECTOR_NAME) if isinstance(vectors, dict) else None
    if params is None:
        raise StoreConfigError(
            f"{where} has no {VECTOR_NAME!r} vector: it was not made by folio; "
            "use another collection name"
        )
    if params.size != dim:
        raise StoreConfigError(
            f"{where} holds {params.size}-dim vectors, the embedder makes {dim}: "
            "use another collection name or the embedding model it was built with"
        )
    if params.distance != qm.Distance.COSINE:
        raise StoreConfigError(f"{where} uses {params.distance} distance, folio needs Cosine")
    sparse = info.config.params.sparse_vectors or {}
    if LEXICAL_NAME not in sparse:
        raise StoreConfigError(
            f"{where} has no {LEXICAL_NAME!r} sparse vector: it was built by an earlier "
            "folio (or another program); delete the collection or set "
            "FOLIO_QDRANT_COLLECTION to a new name, and folio ingests the documents again"
        )
    if sparse[LEXICAL_NAME].modifier != qm.Modifier.IDF:
        raise StoreConfigError(f"{where}: {LEXICAL_NAME!r} must use the IDF modifier")
