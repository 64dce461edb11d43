"""Candidates scored by the question terms they hold, then by the embedder's similarity."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from retrieval.schema import ScoredChunk
from retrieval.text_terms import stems

if TYPE_CHECKING:
    from retrieval.index.embedder import Embedder

from retrieval.answer.candidates import _dense_texts, _Sentence

MIN_SUPPORT = 0.35  # below this best-candidate cosine nothing answers: calibrated on `tune` (docs)
# the same floor for other embedders, whose cosines spread otherwise: each calibrated on `tune` to
# withhold at most a tenth of the answerable questions (python -m eval.not_found_calibration)
_MIN_SUPPORT_OF = {"bge-small-en-v1.5": 0.62}


def min_support_for(model: str) -> float:
    """The "not found" floor calibrated for the embedding model `model` (MIN_SUPPORT otherwise)."""
    return _MIN_SUPPORT_OF.get(model, MIN_SUPPORT)


_DENSE_FLOOR = 0.3


_DENSE_KEEP = 0.8

# a sentence read after the one before it is scored this much below its likeness: its own words
# go first (chosen on `tune`: 0 and 0.03 tried, docs/experiments.md)
_LEAD_MARGIN = 0.03


def _rank(
    question: str,
    hits: Sequence[ScoredChunk],
    sentences: list[_Sentence],
    ignored: frozenset[str] = frozenset(),
) -> list[float]:
    """Support of each sentence: IDF-weighted share of the question terms (but `ignored`),
    times the hit weight."""
    wanted = (set(stems(question)) - ignored) or set(stems(question))
    wanted = wanted or set(stems(question, keep_stopwords=True))
    if not wanted or not sentences:
        return [0.0] * len(sentences)
    df = Counter(t for s in sentences for t in s.terms & wanted)
    n = len(sentences)

    def weight(term: str) -> float:
        return math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))

    total = math.fsum(weight(t) for t in wanted)
    top = max(hit.score for hit in hits)
    scores = []
    for s in sentences:
        lexical = math.fsum(weight(t) for t in s.terms & wanted) / total
        relative = hits[s.hit].score / top if top > 0 else 1.0
        length = 0.7 if len(s.terms) < 3 else min(1.0, 60 / len(s.terms))
        scores.append(lexical * (0.5 + 0.5 * relative) * length)
    return scores


def _dense(
    question: str,
    hits: Sequence[ScoredChunk],
    sentences: list[_Sentence],
    lexical: list[float],
    embedder: Embedder,
    pool: int,
    meet: Sequence[float] = (),
) -> tuple[list[float], float]:
    """The `pool` best sentences by `lexical`, down to 0.3 times the best, scored again by the
    similarity of their text, led by their section heading, to the question (a sentence's text
    alone, or for the half of the pool best by terms after the one before it in its paragraph
    less `_LEAD_MARGIN`, whichever is more like it: what it goes on from may be what the question
    names); the others score 0.
    (The floor keeps a sentence merely alike in meaning from outvoting one with the question's
    rare terms, such as a name.) Table cells have a pool of their own, half as large, so that the
    many cells of a table do not crowd the sentences out; a cell where measure and period `meet`
    is scored whatever its rank. Also the best similarity of a candidate's own text, candidates
    that write only part of the question left out (`_echoes`; 0.0 for none)."""
    floor = _DENSE_FLOOR * max(lexical, default=0.0)
    ranked = sorted(range(len(sentences)), key=lambda i: -lexical[i])
    texts_first = [i for i in ranked if sentences[i].cell is None][:pool]
    cells_first = [i for i in ranked if sentences[i].cell is not None][: max(1, pool // 2)]
    meeting = [i for i, m in enumerate(meet) if m > 1.0 and sentences[i].cell is not None]
    pooled = sorted({*texts_first, *cells_first}, key=lambda i: -lexical[i])
    order = [i for i in pooled if lexical[i] >= floor]
    order += [i for i in meeting if i not in order]
    if not order:
        return [0.0] * len(sentences), 0.0
    paired = set([i for i in order if sentences[i].lead][: max(1, pool // 2)])
    read = [
        (i, k, text)
        for i in order
        for k, text in enumerate(_dense_texts(hits[sentences[i].hit].chunk, sentences[i]))
        if k == 0 or i in paired
    ]
    similarity = embedder.embed_documents([t for _, _, t in read]) @ embedder.embed_query(question)
    scores = [0.0] * len(sentences)
    for (i, k, _), value in zip(read, similarity, strict=True):
        scores[i] = max(scores[i], float(value) - k * _LEAD_MARGIN, 1e-6)
    asked = frozenset(stems(question))
    own = [
        float(v)
        for (i, k, _), v in zip(read, similarity, strict=True)
        if k == 0 and not _echoes(sentences[i], asked)
    ]
    return scores, max(own, default=0.0)


def _echoes(sentence: _Sentence, asked: frozenset[str]) -> bool:
    """Whether a candidate writes only some of the question's words and figures (`asked`, its
    stems) and nothing else: a heading or label that repeats part of the question ("Soft launch"
    for "… in the soft launch?") is as like it as can be and tells the asker nothing, so it is no
    support for an answer. A sentence that holds every word of the question is the passage the
    question quotes ("Kelud volcano erupted in February 2014 …"), and supports it."""
    return bool(sentence.terms) and sentence.terms < asked


def _writes(text: str, names: Sequence[str]) -> bool:
    """Whether the text writes one of the names, as whole words in any case."""
    return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) for name in names)


def _select(
    sentences: list[_Sentence], scores: list[float], limit: int, keep: float = 0.4
) -> list[_Sentence]:
    """The best-supported sentences, best first, down to `keep` times the best score, leaving out
    near-repeats of a chosen one."""
    order = sorted(range(len(sentences)), key=lambda i: -scores[i])
    chosen: list[_Sentence] = []
    for i in order:
        if scores[i] <= 0 or scores[i] < keep * scores[order[0]] or len(chosen) == limit:
            break
        s = sentences[i]
        if all(_jaccard(s.terms, c.terms) < 0.7 for c in chosen):
            chosen.append(s)
    return chosen


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
