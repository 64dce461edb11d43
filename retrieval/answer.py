"""Extractive answers: the best-supported sentences of the top hits, each cited to its lines.

Sentences of the top hits are scored by the question terms they contain (weighted by an IDF over
the candidate sentences, numbers weigh more) times the hit's relative score. A citation points at
the union of the chunk lines that overlap the cited sentences, not at the whole chunk.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple
from urllib.parse import quote

from retrieval.schema import BBox, ChunkLine, Citation, Region, ScoredChunk, union_bbox

__all__ = ["NO_MATCH_ANSWER", "Answer", "extractive_answer", "sentence_spans", "terms"]

NO_MATCH_ANSWER = "No indexed passage matches the question."

_BOUNDARY = re.compile(r"(?P<end>[.!?][\"'”’)\]]*)\s+(?=[\"'“‘(\[]?[A-Z0-9])|(?P<cjk>[。！？])|\n+")
_ABBREVIATION_WORDS = """e.g i.e etc al fig figs no nos vs dr mr mrs ms prof eq eqs ref refs sec tab
vol pp ca approx inc ltd corp co jan feb mar apr jun jul aug sep sept oct nov dec u.s"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_STOPWORD_LIST = """a about above after again all also am an and any are as at be because been
before being between both but by can could did do does doing down during each few for from further
had has have having he her here hers him his how i if in into is it its itself just me more most my
no nor not now of off on once only or other our ours out over own same she should so some such than
that the their theirs them then there these they this those through to too under until up very was
we were what when where which while who whom why will with would you your yours tell show give
list describe explain many much per"""
_STOPWORDS = frozenset(_STOPWORD_LIST.split())


class Answer(NamedTuple):
    text: str
    citations: list[Citation]


@dataclass(frozen=True)
class _Sentence:
    hit: int
    start: int
    end: int
    text: str
    terms: frozenset[str]


def _stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Normalised search terms: lower-cased, light plural stemming, numbers without separators,
    CJK runs as character bigrams."""
    out: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        if token[0].isdigit():
            out.append(token.replace(",", ""))
        elif _CJK.search(token):
            out.extend(token[i : i + 2] for i in range(max(1, len(token) - 1)))
        elif keep_stopwords or token not in _STOPWORDS:
            out.append(_stem(token))
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences (and lines) of `text`, trimmed of whitespace."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group("end"):
            if _is_abbreviation(text[start : match.start("end")]):
                continue
            end = match.end("end")
        else:
            end = match.end("cjk") if match.group("cjk") else match.start()
        _add_span(spans, text, start, end)
        start = match.end()
    _add_span(spans, text, start, len(text))
    return spans


def _is_abbreviation(before: str) -> bool:
    word = before.rsplit(None, 1)[-1].lstrip("([\"'").lower() if before.strip() else ""
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if any(ch.isalnum() for ch in stripped):
        lead = len(piece) - len(piece.lstrip())
        spans.append((start + lead, start + lead + len(stripped)))


def _candidates(hits: Sequence[ScoredChunk]) -> list[_Sentence]:
    sentences = []
    for index, hit in enumerate(hits):
        text = hit.chunk.text
        for start, end in sentence_spans(text):
            shown = " ".join(text[start:end].split())
            sentences.append(_Sentence(index, start, end, shown, frozenset(terms(shown))))
    return sentences


def _rank(question: str, hits: Sequence[ScoredChunk], sentences: list[_Sentence]) -> list[float]:
    """Support of each sentence: IDF-weighted share of the question terms, times the hit weight."""
    wanted = set(terms(question)) or set(terms(question, keep_stopwords=True))
    if not wanted or not sentences:
        return [0.0] * len(sentences)
    df = Counter(t for s in sentences for t in s.terms & wanted)
    n = len(sentences)

    def weight(term: str) -> float:
        idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
        return idf * (1.5 if term[0].isdigit() else 1.0)

    total = sum(weight(t) for t in wanted)
    top = max(hit.score for hit in hits)
    scores = []
    for s in sentences:
        lexical = sum(weight(t) for t in s.terms & wanted) / total
        relative = hits[s.hit].score / top if top > 0 else 1.0
        length = 0.7 if len(s.terms) < 3 else min(1.0, 60 / len(s.terms))
        scores.append(lexical * (0.5 + 0.5 * relative) * length)
    return scores


def _select(sentences: list[_Sentence], scores: list[float], limit: int) -> list[_Sentence]:
    order = sorted(range(len(sentences)), key=lambda i: -scores[i])
    chosen: list[_Sentence] = []
    for i in order:
        if scores[i] <= 0 or scores[i] < 0.4 * scores[order[0]] or len(chosen) == limit:
            break
        s = sentences[i]
        if all(_jaccard(s.terms, c.terms) < 0.7 for c in chosen):
            chosen.append(s)
    return sorted(chosen, key=lambda s: (s.hit, s.start))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _columns(lines: Sequence[ChunkLine]) -> list[BBox]:
    """Boxes of runs of lines that stay in one column (a jump up or sideways starts a new one)."""
    boxes: list[BBox] = []
    for line in lines:
        x0, y0, x1, _ = line.bbox
        if boxes:
            bx0, _, bx1, by1 = boxes[-1]
            if x0 < bx1 and x1 > bx0 and y0 >= by1 - (line.bbox[3] - y0):
                boxes[-1] = union_bbox([boxes[-1], line.bbox])
                continue
        boxes.append(line.bbox)
    return boxes


def _fmt(boxes: Sequence[BBox]) -> str:
    return ";".join(",".join(f"{v:.1f}" for v in box) for box in boxes)


def _citation(n: int, hit: ScoredChunk, chosen: list[_Sentence]) -> Citation:
    chunk = hit.chunk
    spans = [(s.start, s.end) for s in chosen]
    lines = [ln for ln in chunk.lines if any(ln.start < e and ln.end > s for s, e in spans)]
    pages: dict[int, list[ChunkLine]] = {}
    for line in lines:
        pages.setdefault(line.page, []).append(line)
    if pages:
        regions = [
            Region(page=p, bbox=union_bbox([ln.bbox for ln in ls])) for p, ls in pages.items()
        ]
        page = regions[0].page
        highlight = _fmt(_columns(pages[page]))
    else:  # a chunk without lines: the best we can point at is its first region
        regions = [chunk.regions[0]]
        page = chunk.page
        highlight = _fmt([regions[0].bbox])
    quote_text = chosen[0].text
    for before, s in pairwise(chosen):
        gap = chunk.text[before.end : s.start]
        quote_text += (" " if not gap.strip() else " … ") + s.text
    base = f"/documents/{quote(chunk.doc_id, safe='')}/pages/{page}"
    return Citation(
        n=n,
        doc_id=chunk.doc_id,
        source=chunk.source,
        page=page,
        bbox=regions[0].bbox,
        regions=regions,
        quote=quote_text,
        score=hit.score,
        page_image_url=f"{base}.png",
        highlight_url=f"{base}.png?highlight={highlight}",
        viewer_url=f"{base}/view?highlight={highlight}",
    )


def extractive_answer(
    question: str,
    hits: Sequence[ScoredChunk],
    *,
    max_sentences: int = 3,
    max_hits: int = 5,
) -> Answer:
    """The best-supported sentences of the top `max_hits` hits, each followed by its [n]."""
    top = list(hits[:max_hits])
    if not top:
        return Answer(NO_MATCH_ANSWER, [])
    sentences = _candidates(top)
    chosen = _select(sentences, _rank(question, top, sentences), max_sentences)
    if not chosen:  # no lexical support at all: the best hit's opening sentence
        chosen = sentences[:1]
    if not chosen:
        return Answer(NO_MATCH_ANSWER, [])
    numbers: dict[int, int] = {}
    for s in chosen:
        numbers.setdefault(s.hit, len(numbers) + 1)
    text = " ".join(f"{s.text} [{numbers[s.hit]}]" for s in chosen)
    citations = [
        _citation(n, top[hit], [s for s in chosen if s.hit == hit]) for hit, n in numbers.items()
    ]
    return Answer(text, citations)
