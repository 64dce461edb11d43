"""What both Qdrant stores share: names, the payload of a chunk, and filters described once.

Filters are plain data (`FilterSpec`) so that each store translates them to its own binding's
classes in one small function; a new condition is added here and in both translators.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from retrieval.index.sparse import LEXICAL_VERSION, LexicalEncoder, SparseVec
from retrieval.index.store import StoreError
from retrieval.schema import Chunk, SearchFilter

__all__ = [
    "DOC_ID_FIELD",
    "LEXICAL_NAME",
    "PAGES_FIELD",
    "PAYLOAD_INDEXES",
    "SCROLL_PAGE",
    "VECTOR_NAME",
    "Condition",
    "FilterSpec",
    "HybridParams",
    "IndexKind",
    "IntRange",
    "MatchAny",
    "MatchValue",
    "chunk_from_payload",
    "chunk_payload",
    "doc_filter",
    "lexical_document",
    "lexical_query",
    "matches_nothing",
    "query_vector",
    "search_filter",
    "stale_filter",
    "vector_rows",
]

VECTOR_NAME = "dense"
LEXICAL_NAME = f"lexical_v{LEXICAL_VERSION}"
"""The sparse vector; its name carries the term version, so an index of another is detected."""
DOC_ID_FIELD = "doc_id"
PAGES_FIELD = "pages"
SCROLL_PAGE = 512


@dataclass(frozen=True)
class MatchValue:
    key: str
    value: str


@dataclass(frozen=True)
class MatchAny:
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class IntRange:
    """Inclusive bounds; a point with a list value passes when any element is in range."""

    key: str
    gte: int | None = None
    lte: int | None = None


Condition = MatchValue | MatchAny | IntRange


@dataclass(frozen=True)
class FilterSpec:
    """Points that meet every `must` condition and whose id is not in `exclude_ids`."""

    must: tuple[Condition, ...] = ()
    exclude_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class HybridParams:
    """How a hybrid query fuses its two candidate lists (Reciprocal Rank Fusion in Qdrant)."""

    candidates: int = 100
    """Candidates from each of the dense and the lexical search, at least the limit asked."""
    rrf_k: int = 30
    """RRF's k: a point ranked r in a list adds weight / (k + r) to its score."""
    dense_weight: float = 1.0
    lexical_weight: float = 0.5
    """Tuned on the FinanceBench dev half (docs/benchmarks.md): lexical matches help most as a
    tie-breaker among dense candidates, and hurt as an equal voice on long questions."""

    def prefetch_limit(self, limit: int) -> int:
        return max(limit, self.candidates)

    @property
    def weights(self) -> list[float] | None:
        """None when both lists weigh the same (plain RRF)."""
        if self.dense_weight == self.lexical_weight:
            return None
        return [self.dense_weight, self.lexical_weight]


_ENCODER: LexicalEncoder | None = None


def _encoder() -> LexicalEncoder:
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = LexicalEncoder()
    return _ENCODER


def lexical_document(chunk: Chunk) -> SparseVec:
    """The chunk's sparse vector: the terms of what is embedded (section trail and text)."""
    return _encoder().embed_document(chunk.embed_text)


def lexical_query(text: str | None) -> SparseVec | None:
    """The question's sparse vector; None when there is no question or it has no terms."""
    if not text:
        return None
    vector = _encoder().embed_query(text)
    return vector if vector.indices else None


IndexKind = Literal["keyword", "integer"]
"""A payload index: `keyword`, or `integer` with lookup and range."""

PAYLOAD_INDEXES: dict[str, IndexKind] = {DOC_ID_FIELD: "keyword", PAGES_FIELD: "integer"}


def search_filter(flt: SearchFilter | None) -> FilterSpec | None:
    """Documents and an inclusive page range (any page of a chunk counts); None when unfiltered."""
    if flt is None:
        return None
    must: list[Condition] = []
    if flt.doc_ids is not None:
        must.append(MatchAny(DOC_ID_FIELD, tuple(flt.doc_ids)))
    if flt.page_from is not None or flt.page_to is not None:
        must.append(IntRange(PAGES_FIELD, gte=flt.page_from, lte=flt.page_to))
    return FilterSpec(must=tuple(must)) if must else None


def matches_nothing(flt: SearchFilter | None) -> bool:
    """An explicit empty document list selects no chunk (Qdrant would treat it as no filter)."""
    return flt is not None and flt.doc_ids is not None and not flt.doc_ids


def doc_filter(doc_id: str) -> FilterSpec:
    return FilterSpec(must=(MatchValue(DOC_ID_FIELD, doc_id),))


def stale_filter(doc_id: str, keep_ids: Sequence[str]) -> FilterSpec:
    """The points of `doc_id` other than `keep_ids`: what a replacement leaves behind."""
    return FilterSpec(must=(MatchValue(DOC_ID_FIELD, doc_id),), exclude_ids=tuple(keep_ids))


def chunk_payload(chunk: Chunk) -> dict[str, Any]:
    """Flat `doc_id`, `source`, `chunk_id`, `pages` for filters; the chunk itself as JSON."""
    pages = sorted({region.page for region in chunk.regions} | {ln.page for ln in chunk.lines})
    return {
        DOC_ID_FIELD: chunk.doc_id,
        "source": chunk.source,
        "chunk_id": chunk.chunk_id,
        PAGES_FIELD: pages,
        # a JSON string: qdrant-edge-py converts a nested dict ~10x slower (2.4 vs 0.25 ms a chunk)
        "chunk": chunk.model_dump_json(exclude_none=True),
    }


def chunk_from_payload(payload: dict[str, Any] | None) -> Chunk:
    if not payload or "chunk" not in payload:
        raise StoreError("stored point has no chunk payload")
    stored = payload["chunk"]
    if isinstance(stored, str):
        return Chunk.model_validate_json(stored)
    return Chunk.model_validate(stored)


def vector_rows(chunks: Sequence[Chunk], vectors: np.ndarray, dim: int) -> np.ndarray:
    """`vectors` as float32 rows, one per chunk; ValueError on any other shape."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape != (len(chunks), dim):
        raise ValueError(f"vectors of shape {matrix.shape}, expected {(len(chunks), dim)}")
    return matrix


def query_vector(vector: np.ndarray, dim: int) -> list[float]:
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != dim:
        raise ValueError(f"query vector has {query.shape[0]} components, store has {dim}")
    values: list[float] = query.tolist()
    return values
