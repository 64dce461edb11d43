"""Checks of a generated answer's [n] markers against the numbered sources they cite.

Each answer sentence is checked against every source its markers name:

- lexical: the share of the sentence's content terms (`text_terms.terms`, stopwords and markers
  left out) found in the source, and every number of the sentence must appear in the source
  (`12.50` and `12.5`, `1,577` and `1577` are the same number);
- embedding: the cosine between the sentence and the source's closest sentence, by the embedder
  the index uses.

Verdicts: `supported` (lexical >= 0.6 and cosine >= 0.5, or lexical >= 0.4 and cosine >= 0.75),
`weak` (lexical >= 0.35 or cosine >= 0.6), `unsupported` (less, or a number the source lacks),
`invalid` (the marker names no source). Supported and weak markers stay in the answer; unsupported
and invalid ones are removed from the text (the sentence stays, without the marker) and reported
in `checks` with `kept: false`. Each kept source becomes one citation, boxed to the lines of the
source sentences closest to the answer sentences that cite it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from pydantic import BaseModel

from retrieval.answer import cite
from retrieval.index.embedder import Embedder
from retrieval.schema import Citation, ClaimCheck, ScoredChunk, Support, Verdict
from retrieval.text_terms import sentence_spans, terms

__all__ = ["CheckedAnswer", "SupportThresholds", "check_answer", "marked_sentences"]

_MARKER = re.compile(r"\[\s*(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\s*\]")
_MARKS = rf"{_MARKER.pattern}(?:\s*{_MARKER.pattern})*"
_MARKED_END = re.compile(rf"{_MARKS}\s*[.!?]+|[.!?]+\s*{_MARKS}")
_RANK = {"supported": 0, "weak": 1, "unsupported": 2, "invalid": 3}


class SupportThresholds(BaseModel):
    """Where the verdicts change (measured on the stub: docs/benchmarks.md)."""

    lexical: float = 0.6
    embedding: float = 0.5
    lexical_with_close_embedding: float = 0.4
    close_embedding: float = 0.75
    weak_lexical: float = 0.35
    weak_embedding: float = 0.6


@dataclass(frozen=True)
class MarkedSentence:
    start: int
    end: int
    claim: str
    markers: tuple[int, ...]
    marker_spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    citations: list[Citation]
    checks: list[ClaimCheck]


def marked_sentences(answer: str) -> list[MarkedSentence]:
    """The answer's sentences with the source numbers their markers name; a marker between two
    sentences (`… 2014. [1] Ash …`) belongs to the sentence before it, and a marker next to end
    punctuation ends a sentence whatever follows (`… 2014 [1]. reported …`)."""
    markers = list(_MARKER.finditer(answer))
    masked = answer
    for m in markers:  # markers become blanks, so `2014.[1] Ash` splits after the marker
        masked = masked[: m.start()] + " " * (m.end() - m.start()) + masked[m.end() :]
    spans = [
        (start + offset, end + offset)
        for offset, stop in pairwise([0, *_hard_ends(answer), len(answer)])
        for start, end in sentence_spans(masked[offset:stop])
    ]
    if not spans:
        return []
    owned: list[list[int]] = [[] for _ in spans]
    places: list[list[tuple[int, int]]] = [[] for _ in spans]
    ends = [end for _, end in spans]
    for m in markers:
        index = max((i for i, (start, _) in enumerate(spans) if start <= m.start()), default=0)
        owned[index].extend(int(x) for x in re.findall(r"\d+", m.group(1)))
        places[index].append(m.span())
        ends[index] = max(ends[index], m.end())
    return [
        MarkedSentence(
            start,
            ends[i],
            re.sub(r" ([.,;:!?])", r"\1", " ".join(masked[start:end].split())),
            tuple(owned[i]),
            tuple(places[i]),
        )
        for i, (start, end) in enumerate(spans)
    ]


def _hard_ends(answer: str) -> list[int]:
    """Where a marker next to end punctuation (`x [1].`, `x.[1]`) is followed by a blank."""
    return [
        m.end()
        for m in _MARKED_END.finditer(answer)
        if m.end() < len(answer) and answer[m.end()].isspace()
    ]


def _number(term: str) -> str:
    if "." in term:
        term = term.rstrip("0").rstrip(".")
    return term.lstrip("0") or "0"


def _terms(text: str) -> tuple[set[str], set[str]]:
    """(content terms, normalised numbers) of `text`."""
    found = terms(text)
    words = {t for t in found if not t[0].isdigit()}
    numbers = {_number(t) for t in found if t[0].isdigit()}
    return words | numbers, numbers


def _verdict(lexical: float, cosine: float, missing: list[str], t: SupportThresholds) -> Verdict:
    if missing:
        return "unsupported"
    if (lexical >= t.lexical and cosine >= t.embedding) or (
        lexical >= t.lexical_with_close_embedding and cosine >= t.close_embedding
    ):
        return "supported"
    if lexical >= t.weak_lexical or cosine >= t.weak_embedding:
        return "weak"
    return "unsupported"


@dataclass(frozen=True)
class _Source:
    spans: list[tuple[int, int]]
    terms: set[str]
    numbers: set[str]
    span_terms: list[set[str]]
    first_row: int  # this source's sentences' first row in the embedded matrix


def _sources(
    hits: Sequence[ScoredChunk], numbers: Sequence[int]
) -> tuple[dict[int, _Source], list[str]]:
    """The sources numbered `numbers` (1-based) with their sentences, and those sentences."""
    sources: dict[int, _Source] = {}
    texts: list[str] = []
    for n in numbers:
        text = hits[n - 1].chunk.text
        spans = sentence_spans(text) or [(0, len(text))]
        words, found = _terms(text)
        span_terms = [_terms(text[s:e])[0] for s, e in spans]
        sources[n] = _Source(spans, words, found, span_terms, len(texts))
        texts.extend(" ".join(text[s:e].split()) for s, e in spans)
    return sources, texts


def _support(
    claim: str, source: _Source, cosines: np.ndarray, t: SupportThresholds
) -> tuple[Support, int]:
    """How well `source` supports `claim`, given the cosines of the claim to its sentences, and
    the sentence to highlight."""
    words, numbers = _terms(claim)
    lexical = len(words & source.terms) / len(words) if words else 1.0
    missing = sorted(numbers - source.numbers)
    best = int(np.argmax(cosines))
    # the closest sentence for the highlight: cosine, and the claim terms it holds
    closeness = [
        float(cosines[i]) + (len(words & st) / len(words) if words else 0.0)
        for i, st in enumerate(source.span_terms)
    ]
    where = int(np.argmax(closeness))
    cosine = float(cosines[best])
    support = Support(
        verdict=_verdict(lexical, cosine, missing, t),
        lexical=round(lexical, 4),
        embedding=round(cosine, 4),
        numbers_missing=missing,
        claim=claim,
    )
    return support, where


def check_answer(
    answer: str,
    hits: Sequence[ScoredChunk],
    embedder: Embedder,
    thresholds: SupportThresholds | None = None,
) -> CheckedAnswer:
    """Check every marker of `answer` against `hits` (source n is hits[n - 1]); the answer with
    unkept markers removed, a citation per kept source, and every check."""
    t = thresholds or SupportThresholds()
    sentences = marked_sentences(answer)
    cited = sorted({n for s in sentences for n in s.markers if 1 <= n <= len(hits)})
    sources, source_texts = _sources(hits, cited)  # only the cited ones are embedded
    claims = [s.claim for s in sentences]
    vectors = (
        embedder.embed_documents([*claims, *source_texts])
        if cited
        else np.empty((0, 0), dtype=np.float32)
    )
    claim_vectors, source_vectors = vectors[: len(claims)], vectors[len(claims) :]
    checks: list[ClaimCheck] = []
    evidence: dict[int, list[tuple[tuple[int, int], Support]]] = {}
    for index, sentence in enumerate(sentences):
        for n in dict.fromkeys(sentence.markers):
            if n not in sources:
                checks.append(
                    ClaimCheck(
                        verdict="invalid",
                        lexical=0.0,
                        claim=sentence.claim,
                        n=n,
                        sentence=index,
                        kept=False,
                    )
                )
                continue
            source = sources[n]
            rows = source_vectors[source.first_row : source.first_row + len(source.spans)]
            support, where = _support(sentence.claim, source, rows @ claim_vectors[index], t)
            kept = support.verdict in ("supported", "weak")
            checks.append(ClaimCheck(**support.model_dump(), n=n, sentence=index, kept=kept))
            if kept:
                evidence.setdefault(n, []).append((source.spans[where], support))
    citations = []
    for n, found in sorted(evidence.items()):
        weakest = max((s for _, s in found), key=lambda s: _RANK[s.verdict])
        citations.append(cite(n, hits[n - 1], [span for span, _ in found], support=weakest))
    shown = {(c.sentence, c.n) for c in checks if c.kept}
    return CheckedAnswer(_rewrite(answer, sentences, shown), citations, checks)


def _rewrite(answer: str, sentences: list[MarkedSentence], kept: set[tuple[int, int]]) -> str:
    """`answer` with each marker naming only its sentence's kept sources, as `[1][2]`; a marker
    left with none is removed."""
    text = answer
    places = [(span, i) for i, s in enumerate(sentences) for span in s.marker_spans]
    for (start, end), index in sorted(places, reverse=True):
        numbers = dict.fromkeys(int(x) for x in re.findall(r"\d+", answer[start:end]))
        shown = "".join(f"[{n}]" for n in numbers if (index, n) in kept)
        text = text[:start] + shown + text[end:]
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)  # "2014 ." left by a removed marker
    return re.sub(r"[ \t]{2,}", " ", text).strip()
