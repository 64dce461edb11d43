"""An embedder that remembers, for the query path: the vectors of the texts it embedded (answer
sentences, by model and text, in a persistent cache) and of the last questions (in memory).

A query embeds its question for the search and again for the answer, and the extractive answer
embeds up to a dozen candidate sentences; on 2 CPU cores each forward pass costs tens of
milliseconds. The same sentences come back for other questions on the same pages, and the
vectors are the model's own, so answers are the same as without it (docs/benchmarks.md).
`folio serve` fills the cache ahead while idle (`retrieval.answer.sentence_fill`), or ingest does
(`remember_answer_texts`, FOLIO_ANSWER_SENTENCES=ingest): every candidate of every chunk, so a
new question pays for its own embedding only.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from retrieval.answer import answer_texts
from retrieval.index.embedder import Embedder
from retrieval.schema import Chunk

__all__ = [
    "AnswerTextsAhead",
    "RememberingEmbedder",
    "VectorCache",
    "answer_texts",
    "missing_answer_texts",
    "remember_answer_texts",
]


class VectorCache(Protocol):
    """float32 vectors by (model, text) (`ingest.pipeline.embed_cache.EmbeddingCache` is one)."""

    def get(self, model: str, texts: Sequence[str], dim: int) -> dict[int, np.ndarray]: ...

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None: ...

    def close(self) -> None: ...


class RememberingEmbedder:
    """`inner`, with the vectors of embedded texts kept in `cache` and those of the last
    `questions` questions in memory."""

    def __init__(self, inner: Embedder, cache: VectorCache | None, *, questions: int = 256) -> None:
        self.inner = inner
        self.cache = cache
        self.questions = questions
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.last_used = float("-inf")  # time.monotonic() of the last query's embedding

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
        """The question's vector, from memory when it was asked lately."""
        self.last_used = time.monotonic()
        with self._lock:
            if (found := self._recent.get(text)) is not None:
                self._recent.move_to_end(text)
                return found
        vector = self.inner.embed_query(text)
        vector.setflags(write=False)
        with self._lock:
            self._recent[text] = vector
            while len(self._recent) > self.questions:
                self._recent.popitem(last=False)
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors: cached ones read, the others embedded and cached."""
        self.last_used = time.monotonic()
        if self.cache is None or not texts:
            return self.inner.embed_documents(texts)
        found = self.cache.get(self.name, texts, self.dim)
        missing = [i for i in range(len(texts)) if i not in found]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, vector in found.items():
            vectors[i] = vector
        if missing:
            new = self.inner.embed_documents([texts[i] for i in missing])
            vectors[missing] = new
            self.cache.put(self.name, [texts[i] for i in missing], new)
        return vectors


def missing_answer_texts(
    chunks: Sequence[Chunk], model: str, dim: int, cache: VectorCache
) -> list[str]:
    """The answer texts of `chunks` that `cache` holds no vector of (by `model`), once each."""
    texts = list(dict.fromkeys(t for chunk in chunks for t in answer_texts(chunk)))
    found = cache.get(model, texts, dim) if texts else {}
    return [t for i, t in enumerate(texts) if i not in found]


def remember_answer_texts(chunks: Sequence[Chunk], embedder: Embedder, cache: VectorCache) -> int:
    """The answer texts of `chunks` embedded into `cache` where it lacks them (at ingest, so that
    a query reads them); how many were embedded."""
    missing = missing_answer_texts(chunks, embedder.name, embedder.dim, cache)
    if missing:
        cache.put(embedder.name, missing, embedder.embed_documents(missing))
    return len(missing)


class AnswerTextsAhead:
    """The answer texts of chunks embedded into `cache` as ingest embeds the chunks
    (FOLIO_ANSWER_SENTENCES=ingest; the ingestor's `on_embedded` hook)."""

    def __init__(self, embedder: Embedder, cache: VectorCache) -> None:
        self.embedder = embedder
        self.cache = cache

    def embedded(self, chunks: Sequence[Chunk]) -> None:
        remember_answer_texts(chunks, self.embedder, self.cache)

    def close(self) -> None:
        self.cache.close()
