"""The vector caches (embeddings at ingest, answer sentences for /query): what is put is got back,
in a compact row, and a file written in the older layout is converted when opened."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from ingest.pipeline.embed_cache import EmbeddingCache

MODEL = "all-MiniLM-L6-v2"


def _vectors(n: int, dim: int = 384) -> np.ndarray:
    return np.random.default_rng(7).standard_normal((n, dim)).astype(np.float32)


def test_cache_gives_back_what_was_put_by_model_and_text(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    texts = [f"sentence {i}" for i in range(600)]  # more than one SELECT's worth of keys
    vectors = _vectors(len(texts))
    cache.put(MODEL, texts, vectors)
    found = cache.get(MODEL, ["new", *texts], 384)
    assert sorted(found) == list(range(1, len(texts) + 1))
    assert all(np.array_equal(found[i + 1], vectors[i]) for i in range(len(texts)))
    assert cache.get("other-model", texts, 384) == {}
    assert cache.get(MODEL, texts, 768) == {}  # a vector of another size is not this model's
    assert cache.count() == len(texts)
    cache.close()


def test_a_vector_row_stays_on_its_page(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = EmbeddingCache(path)
    n = 3000
    cache.put(MODEL, [f"sentence {i}" for i in range(n)], _vectors(n))
    cache.close()
    assert path.stat().st_size / n < 2000  # a 1,536-byte vector; ~4,100 bytes in the old layout


def test_old_layout_is_converted_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    texts = [f"sentence {i}" for i in range(2500)]
    vectors = _vectors(len(texts))
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")
    db.executemany(
        "INSERT INTO vectors VALUES (?, ?)",
        [
            (hashlib.sha256(f"{MODEL}\0{t}".encode()).digest(), v.tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ],
    )
    db.commit()
    db.close()
    before = path.stat().st_size
    cache = EmbeddingCache(path)
    found = cache.get(MODEL, texts, 384)
    assert len(found) == len(texts)
    assert all(np.array_equal(found[i], vectors[i]) for i in range(len(texts)))
    cache.close()
    assert path.stat().st_size < before / 2
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall()
    assert ("vectors",) not in tables
    again = EmbeddingCache(path)  # converted once: opening again finds the new table only
    assert again.count() == len(texts)
    again.close()
