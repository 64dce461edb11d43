"""The vector store protocol every index backend implements, and its errors.

StoreError
 ├── StoreUnavailableError   the index could not be opened or is closed (another process holds it)
 └── StoreConfigError        the index on disk does not fit this configuration (e.g. another dim)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

import numpy as np

from ocr_engine.errors import FolioError
from retrieval.schema import Chunk, ScoredChunk, SearchFilter

__all__ = [
    "StoreConfigError",
    "StoreError",
    "StoreUnavailableError",
    "VectorStore",
    "WriteHealth",
]


class StoreError(FolioError):
    """A vector store operation failed."""


class StoreUnavailableError(StoreError):
    """The store could not be opened (e.g. locked by another process) or was closed."""


class StoreConfigError(StoreError):
    """The stored index is incompatible with the requested configuration."""


class WriteHealth:
    """How a store's latest write went: `error` names why it failed, until a write succeeds."""

    def __init__(self) -> None:
        self.error: str | None = None

    @contextmanager
    def watch(self) -> Iterator[None]:
        try:
            yield
        except StoreError as exc:
            self.error = str(exc)
            raise
        self.error = None


@runtime_checkable
class VectorStore(Protocol):
    """Chunks with a dense and a sparse lexical vector each, searchable with document and page
    filters; the store derives the lexical vector from each chunk's `embed_text`."""

    @property
    def dim(self) -> int: ...

    @property
    def write_error(self) -> str | None:
        """Why the latest write failed, or None when it succeeded (what /health reports)."""
        ...

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Insert or replace chunks (by point id) with their vectors, row i for chunk i."""
        ...

    def replace_document(self, doc_id: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Make `chunks` the only chunks of `doc_id`; no search finds the document missing."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Delete every chunk of `doc_id`; returns how many there were."""
        ...

    def search(
        self,
        vector: np.ndarray,
        limit: int,
        flt: SearchFilter | None = None,
        *,
        text: str | None = None,
    ) -> list[ScoredChunk]:
        """The `limit` best chunks that pass `flt`, best first: nearest to `vector`, or with
        `text`, dense and lexical candidates fused by rank in one query."""
        ...

    def count(self, doc_id: str | None = None) -> int:
        """Chunks in the store, or of one document."""
        ...

    def doc_ids(self) -> dict[str, int]:
        """Every indexed document id with its number of chunks."""
        ...

    def chunks(self, doc_id: str) -> list[Chunk]:
        """Every chunk of one document, in chunk-id order."""
        ...

    def get(self, doc_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks of `doc_id` with these ids that are stored, in the order asked."""
        ...

    def flush(self) -> None:
        """Make every write durable."""
        ...

    def close(self) -> None:
        """Flush and release the store; later calls raise StoreUnavailableError."""
        ...
