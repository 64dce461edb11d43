"""Dense embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (vLLM pooling, TEI).

`HttpEmbedder` implements `retrieval.index.embedder.Embedder`: texts go in batches of `batch_size`,
at most `max_in_flight` requests at once (one bound shared by every caller, ingest and queries),
and each request is retried with jittered exponential backoff on a timeout, a refused or broken
connection, a 429 or a 5xx, never on another 4xx. Tokens are counted, and chunks bounded, by a
local tokenizer directory (the shipped MiniLM's unless told otherwise), since the endpoint has no
standard tokenize route. Every failure is typed:

- `EmbedServiceUnavailableError` (an `EngineUnavailableError`: retry later): no answer in time,
  no connection, 429 or 5xx, after the retries;
- `EmbedServiceOutputError` (an `EngineOutputError`): an answer that is not the embeddings asked
  for (not JSON, wrong count, wrong dimension, not finite);
- `EmbedServiceRequestError`: the endpoint refused the request (a 4xx other than 429: a wrong
  model name, a bad key, an input too long); retrying as is will not help.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from ocr_engine.errors import EngineOutputError, EngineUnavailableError
from retrieval.index.embedder import EmbedderError, TokenCounter, default_model_path

__all__ = [
    "EmbedServiceError",
    "EmbedServiceOptions",
    "EmbedServiceOutputError",
    "EmbedServiceRequestError",
    "EmbedServiceUnavailableError",
    "HttpEmbedder",
]

log = logging.getLogger(__name__)

_MAX_BACKOFF_S = 30.0


class EmbedServiceError(EmbedderError):
    """The embeddings endpoint gave no usable answer."""


class EmbedServiceUnavailableError(EmbedServiceError, EngineUnavailableError):
    """No answer in time, no connection, 429 or 5xx, after every retry."""


class EmbedServiceOutputError(EmbedServiceError, EngineOutputError):
    """The endpoint answered with something other than the embeddings asked for."""


class EmbedServiceRequestError(EmbedServiceError):
    """The endpoint refused the request (4xx other than 429); retrying as is will not help."""


class EmbedServiceOptions(BaseModel):
    """Where the endpoint is and how it is called."""

    model_config = ConfigDict(frozen=True)

    url: str = Field(description="OpenAI-compatible base URL ending in /v1")
    model: str = Field(min_length=1, description="the served model's name, sent with each request")
    api_key: SecretStr | None = None
    batch_size: int = Field(default=16, ge=1, le=2048, description="texts per request")
    max_in_flight: int = Field(default=4, ge=1, le=256, description="requests at once")
    timeout_s: float = Field(default=30.0, gt=0, description="per request")
    retries: int = Field(default=4, ge=0, le=20, description="after the first attempt")
    backoff_s: float = Field(default=0.5, ge=0)
    tokenizer: Path | None = Field(
        default=None, description="a model directory with tokenizer.json; None: shipped MiniLM"
    )


class _Item(BaseModel):
    index: int = Field(ge=0)
    embedding: list[float]


class _Answer(BaseModel):
    data: list[_Item]


class _Transient(Exception):
    pass


class HttpEmbedder:
    """Embeddings from an OpenAI-compatible endpoint; `dim` is asked of it on first use."""

    def __init__(self, options: EmbedServiceOptions, *, dim: int | None = None) -> None:
        self.options = options
        self.url = options.url.rstrip("/")
        self._tokens = TokenCounter(options.tokenizer or default_model_path())
        headers = {"Content-Type": "application/json"}
        if options.api_key is not None:
            headers["Authorization"] = f"Bearer {options.api_key.get_secret_value()}"
        self._client = httpx.Client(
            timeout=options.timeout_s,
            headers=headers,
            limits=httpx.Limits(max_connections=options.max_in_flight),
        )
        self._slots = threading.BoundedSemaphore(options.max_in_flight)
        self._pool = ThreadPoolExecutor(options.max_in_flight, thread_name_prefix="folio-embed")
        self._dim = dim
        self._dim_lock = threading.Lock()
        self.requests = 0
        self.retried = 0

    @property
    def name(self) -> str:
        return self.options.model

    @property
    def dim(self) -> int:
        """The endpoint's dimension: one request the first time it is needed."""
        with self._dim_lock:
            if self._dim is None:
                vectors = self._request(["dimension probe"], expect_dim=None)
                self._dim = int(vectors.shape[1])
            return self._dim

    @property
    def max_tokens(self) -> int:
        return self._tokens.max_tokens

    def count_tokens(self, text: str) -> int:
        return self._tokens.count(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages in batches, `max_in_flight` requests at once; shape (len(texts), dim)."""
        dim = self.dim
        if not texts:
            return np.empty((0, dim), dtype=np.float32)
        size = self.options.batch_size
        batches = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        if len(batches) == 1:
            return self._request(batches[0], expect_dim=dim)
        futures = [self._pool.submit(self._request, batch, expect_dim=dim) for batch in batches]
        try:
            return np.concatenate([f.result() for f in futures])
        finally:
            for future in futures:
                future.cancel()

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one question; shape (dim,)."""
        return self._request([text], expect_dim=self.dim)[0]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, texts: list[str], *, expect_dim: int | None) -> np.ndarray:
        """One batch, retried with backoff on transient failures."""
        failures = 0
        while True:
            try:
                with self._slots:
                    response = self._post(texts)
                return self._vectors(response, len(texts), expect_dim)
            except _Transient as exc:
                failures += 1
                if failures > self.options.retries:
                    raise EmbedServiceUnavailableError(
                        f"embeddings endpoint {self.url}: {exc} (after {failures} attempts)"
                    ) from exc
                self.retried += 1
                delay = min(
                    _MAX_BACKOFF_S,
                    self.options.backoff_s * 2 ** (failures - 1) * random.uniform(0.5, 1.5),
                )
                log.debug("embeddings: %s; retrying in %.2fs", exc, delay)
                time.sleep(delay)

    def _post(self, texts: list[str]) -> httpx.Response:
        body = {"model": self.options.model, "input": texts, "encoding_format": "float"}
        self.requests += 1
        try:
            response = self._client.post(f"{self.url}/embeddings", json=body)
        except httpx.TimeoutException as exc:
            raise _Transient(f"no answer within {self.options.timeout_s:g} s") from exc
        except httpx.TransportError as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _Transient(f"HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code >= 400:
            raise EmbedServiceRequestError(
                f"embeddings endpoint {self.url} refused model {self.options.model!r}: "
                f"HTTP {response.status_code}: {response.text[:300]}"
            )
        return response

    def _vectors(self, response: httpx.Response, count: int, expect_dim: int | None) -> np.ndarray:
        where = f"embeddings endpoint {self.url} (model {self.options.model!r})"
        try:
            answer = _Answer.model_validate_json(response.content)
        except ValidationError as exc:
            raise EmbedServiceOutputError(f"{where}: not an embeddings answer: {exc}") from exc
        items = sorted(answer.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(count)):
            raise EmbedServiceOutputError(f"{where}: {len(items)} embeddings for {count} texts")
        dims = {len(item.embedding) for item in items}
        if len(dims) != 1 or 0 in dims:
            raise EmbedServiceOutputError(f"{where}: embeddings of dimensions {sorted(dims)}")
        matrix = np.asarray([item.embedding for item in items], dtype=np.float32)
        if expect_dim is not None and matrix.shape[1] != expect_dim:
            raise EmbedServiceOutputError(
                f"{where} returned {matrix.shape[1]}-dim vectors, expected {expect_dim}"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
            raise EmbedServiceOutputError(f"{where}: embeddings that are zero or not finite")
        return np.ascontiguousarray(matrix / norms, dtype=np.float32)
