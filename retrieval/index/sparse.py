"""Sparse lexical vectors: folio's terms, weighted by Qdrant's own BM25 (`qdrant_edge.Bm25`).

Qdrant's tokenizers fall short on two kinds of text that matter here (the cases are measured in
tests/test_sparse.py): its word tokenizers split `1,577` into `1` and `577` (so it never meets
`1577`) and keep a Chinese or Japanese run without spaces as one token, and its multilingual
tokenizer drops numbers altogether and segments Japanese differently in a question and a passage.
So the text is first cut into terms here -- numbers as typed reduced to one form (`$1,577.00`,
`1577` -> `1577`; `12.50%` -> `12.5`), letters split from digits (`FY2022` -> `fy 2022`), CJK
runs as overlapping character pairs -- and the terms go, space-separated, to `Bm25` with the
whitespace tokenizer, which lower-cases, drops English stopwords, stems, hashes each term to an
index and weighs it by term frequency and length. IDF is left to Qdrant (`Modifier.IDF`), so it
follows the collection as it grows.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import NamedTuple

import qdrant_edge as qe

from retrieval.text_terms import CJK_CHARS as _CJK_CHARS
from retrieval.text_terms import CJK_SPACING

__all__ = ["LEXICAL_VERSION", "LexicalEncoder", "SparseVec", "lexical_terms"]

LEXICAL_VERSION = 1
"""Bumped whenever terms or weights change: vectors of another version do not match."""

_TERM = re.compile(
    rf"(?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    rf"|(?P<cjk>[{_CJK_CHARS}]+)"
    rf"|(?P<word>[^\W\d_{_CJK_CHARS}]+(?:'[^\W\d_{_CJK_CHARS}]+)*)"
)


class SparseVec(NamedTuple):
    """Indices (hashed terms) and their weights, as both Qdrant bindings take them."""

    indices: list[int]
    values: list[float]


def _number(token: str) -> str:
    digits = token.replace(",", "")
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    return digits or "0"


def lexical_terms(text: str) -> list[str]:
    """The terms of `text` before stemming and stopwords: numbers in one form, CJK pairs."""
    normal = CJK_SPACING.sub("", unicodedata.normalize("NFKC", text).replace("’", "'").lower())
    terms: list[str] = []
    for match in _TERM.finditer(normal):
        if match.lastgroup == "num":
            terms.append(_number(match.group()))
        elif match.lastgroup == "cjk":
            run = match.group()
            terms.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        else:
            terms.append(match.group())
    return terms


class LexicalEncoder:
    """Documents and queries as sparse BM25 vectors over `lexical_terms`; thread-safe."""

    def __init__(self, *, k: float = 1.2, b: float = 0.75, avg_len: float = 120.0) -> None:
        config = qe.Bm25Config(
            k=k,
            b=b,
            avg_len=avg_len,
            tokenizer=qe.TokenizerType.Whitespace,
            language="english",
        )
        self._bm25 = qe.Bm25(config)
        self._lock = threading.Lock()

    def embed_document(self, text: str) -> SparseVec:
        """Term-frequency weights of a passage (IDF is applied by the store)."""
        return self._embed(text, query=False)

    def embed_query(self, text: str) -> SparseVec:
        """Each distinct query term with weight 1."""
        return self._embed(text, query=True)

    def _embed(self, text: str, *, query: bool) -> SparseVec:
        joined = " ".join(lexical_terms(text))
        with self._lock:
            vector = self._bm25.embed_query(joined) if query else self._bm25.embed_document(joined)
        return SparseVec(list(vector.indices), list(vector.values))
