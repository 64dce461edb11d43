"""ONNX sessions of the models shipped in wheels, as the embedder and the re-ranker open them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["onnx_feed", "open_onnx"]


def open_onnx(model_dir: Path, *, threads: int, max_length: int) -> tuple[Any, Any]:
    """The CPU session of `model_dir/model.onnx` on `threads` threads, and its
    `tokenizer.json`, truncating to `max_length` tokens and padding each batch."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding()
    session = ort.InferenceSession(
        str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    return session, tokenizer


def onnx_feed(session: Any, encoded: Sequence[Any]) -> dict[str, np.ndarray]:
    """A tokenized batch as the inputs `session` takes (ids, attention mask, token types)."""
    names = {i.name for i in session.get_inputs()}
    feed = {
        "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
    }
    return {k: v for k, v in feed.items() if k in names}
