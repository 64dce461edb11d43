"""A fast, deterministic embedder for tests that exercise ingestion rather than retrieval quality.

It implements `retrieval.index.embedder.Embedder` for real: words are hashed into a bag-of-words
vector, L2-normalised, so texts that share words are near. No model is loaded.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence

import numpy as np


class HashEmbedder:
    """Bag-of-hashed-words vectors; `delay_s` per call imitates a model's cost."""

    def __init__(self, dim: int = 64, *, delay_s: float = 0.0, max_tokens: int = 254) -> None:
        self._dim = dim
        self.delay_s = delay_s
        self._max_tokens = max_tokens
        self.calls = 0
        self.texts = 0

    @property
    def name(self) -> str:
        return f"hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self._dim, dtype=np.float32)
        for word in text.lower().split():
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest()
            vector[int.from_bytes(digest, "little") % self._dim] += 1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            vector[0] = 1.0
            return vector
        return vector / norm

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        if self.delay_s:
            time.sleep(self.delay_s)
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


class SameVector:
    """Every text the same vector: candidates are told apart by their words alone."""

    name, dim, max_tokens = "same", 2, 256

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_query(self, text: str) -> np.ndarray:
        return np.array([1.0, 0.0], dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class VocabularyEmbedder:
    """Vectors over a fixed vocabulary (a word counts where it starts with one of its stems):
    similarity is shared vocabulary; records every text it embeds."""

    max_tokens = 256

    def __init__(self, vocabulary: Sequence[str], name: str = "vocabulary") -> None:
        self.vocabulary = tuple(vocabulary)
        self.name = name
        self.dim = len(self.vocabulary)
        self.embedded: list[str] = []

    def _vector(self, text: str, synonyms: dict[str, str] | None = None) -> np.ndarray:
        words = [(synonyms or {}).get(w, w) for w in re.findall(r"[a-z]+", text.lower())]
        vector = np.array([float(any(w.startswith(v) for w in words)) for v in self.vocabulary])
        norm = np.linalg.norm(vector)
        return (vector / norm if norm else vector).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return np.array([self._vector(t) for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def count_tokens(self, text: str) -> int:
        return len(text.split())
