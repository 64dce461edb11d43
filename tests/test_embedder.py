"""The packaged all-MiniLM-L6-v2 embedder: offline load, vector shape and norm, token counts."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from retrieval.index.embedder import Embedder, EmbedderError, SentenceTransformerEmbedder

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_loads_offline_from_the_package(embedder: SentenceTransformerEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_path.joinpath("model.safetensors").is_file()
    assert embedder.dim == 384
    assert embedder.max_tokens == 254


def test_documents_are_float32_and_unit_length(embedder: SentenceTransformerEmbedder) -> None:
    texts = ["Revenue grew by 12 percent.", "Sales went up by a tenth.", "The cat sat on the mat."]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert embedder.embed_documents([]).shape == (0, 384)


def test_query_vector_matches_the_document_vector(embedder: SentenceTransformerEmbedder) -> None:
    query = embedder.embed_query("Revenue grew by 12 percent.")
    assert query.shape == (384,)
    assert query.dtype == np.float32
    document = embedder.embed_documents(["Revenue grew by 12 percent."])[0]
    assert float(query @ document) == pytest.approx(1.0, abs=1e-5)


def test_batches_give_the_same_vectors(embedder: SentenceTransformerEmbedder) -> None:
    texts = [f"Sentence number {i} about topic {i % 3}." for i in range(7)]
    small = SentenceTransformerEmbedder(batch_size=2)
    np.testing.assert_allclose(
        small.embed_documents(texts), embedder.embed_documents(texts), atol=1e-5
    )


def test_token_counts_use_the_model_tokenizer(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder.count_tokens("hello world") == 2  # no [CLS] / [SEP]
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("tokenization") == 2  # word pieces: token ##ization
    # tokenizer.json ships with truncation and fixed padding at 128: neither may leak into counts
    assert embedder.count_tokens("word " * 300) == 300


def test_threads_share_one_embedder(embedder: SentenceTransformerEmbedder) -> None:
    questions = [f"What happened in year {2000 + i}?" for i in range(8)]
    expected = [embedder.embed_query(q) for q in questions]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(embedder.embed_query, questions))
        counts = list(pool.map(embedder.count_tokens, questions))
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert counts == [embedder.count_tokens(q) for q in questions]


def test_a_missing_model_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError):
        SentenceTransformerEmbedder(tmp_path)


def test_import_and_construction_are_light() -> None:
    code = (
        "import sys; from retrieval.index.embedder import SentenceTransformerEmbedder as E; "
        "e = E(); e.count_tokens('hi'); "
        "print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
