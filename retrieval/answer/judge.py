"""The learned judge of answer candidates: a cross-encoder scores (question, candidate) pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from retrieval.answer.candidates import _in_context, _Sentence
from retrieval.schema import ScoredChunk
from retrieval.search.rerank import sigmoid

if TYPE_CHECKING:
    from retrieval.search.rerank import Reranker

JUDGE_POOL = 8  # candidates the judge reads, best first by the terms-and-embedding score

JUDGE_KEEP = 0.5  # candidates said after the first: judged at least this share of its score


def judged(
    question: str,
    hits: Sequence[ScoredChunk],
    sentences: Sequence[_Sentence],
    scores: Sequence[float],
    judge: Reranker,
    pool: int = JUDGE_POOL,
) -> list[float]:
    """The `pool` best candidates by `scores` (those above 0), each led by its section heading,
    scored again by the `judge` as the logistic of its logit; the others score 0. RerankError
    as the judge raises it."""
    order = [i for i in sorted(range(len(sentences)), key=lambda i: -scores[i]) if scores[i] > 0]
    out = [0.0] * len(sentences)
    order = order[:pool]
    if not order:
        return out
    texts = [_in_context(hits[sentences[i].hit].chunk, sentences[i].text) for i in order]
    for i, logit in zip(order, judge.score(question, texts), strict=True):
        out[i] = max(sigmoid(logit), 1e-6)
    return out
