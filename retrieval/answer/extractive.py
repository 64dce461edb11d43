"""The extractive answer: candidates of the top hits scored, chosen, said and cited."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from retrieval.schema import ScoredChunk
from retrieval.search.rerank import RerankError
from retrieval.text_terms import stems

if TYPE_CHECKING:
    from retrieval.index.embedder import Embedder

from retrieval.answer.candidates import _candidates, _headings, _Sentence, _with_table_rest
from retrieval.answer.citing import _cite_sentence, _opens
from retrieval.answer.judge import JUDGE_KEEP, judged
from retrieval.answer.meet import _meet, other_period
from retrieval.answer.options import Answer, AnswerOptions
from retrieval.answer.said import _said, _with_unit
from retrieval.answer.scores import _DENSE_KEEP, _dense, _rank, _select, _writes

logger = logging.getLogger(__name__)


def extractive_answer(
    question: str,
    hits: Sequence[ScoredChunk],
    *,
    embedder: Embedder | None = None,
    options: AnswerOptions = AnswerOptions(),
    max_sentences: int = 3,
) -> Answer:
    """The best-supported sentences of the top hits, best first, each followed by the [n] of its
    own citation (boxed to that sentence's lines); `options` says which hits, pages and how many
    sentences the `embedder` (if any) ranks again, keeping those within 0.8 times the best. No
    answer (text None) without hits, or when no pooled sentence is as like the question as
    `options.min_support`."""
    top, ranks = _with_table_rest(
        list(hits[: options.max_hits]), options.lookups.table_rest, options.page_mates
    )
    if options.scope.subjects and not any(
        _writes(h.chunk.text, options.scope.subjects) for h in top
    ):
        return Answer(None, [], 0.0 if embedder is not None else None)
    sentences = _candidates(top, options.scope.pages, options.cells) or _candidates(
        top, cells=options.cells
    )
    if not sentences:
        return Answer(None, [], 0.0 if embedder is not None else None)
    meet = (
        _meet(question, sentences, top, options.scope.name_terms, options.lookups.card_of)
        if options.cells
        else [1.0] * len(sentences)
    )
    meet = [m * o for m, o in zip(meet, other_period(question, sentences), strict=True)]
    chosen, support = _choose(
        question, top, ranks, sentences, meet, embedder, options, max_sentences
    )
    met = {id(s) for s, m in zip(sentences, meet, strict=True) if m > 1.0}
    lead = None
    if support is not None and options.dense_pool >= 1 and not (chosen and id(chosen[0]) in met):
        lead, support = _heading_lead(question, top, options, embedder, support)
    if support is not None and support < options.min_support:
        return Answer(None, [], support)
    if not chosen:  # no lexical support at all: the best hit's opening sentence
        chosen = sentences[:1]
    if lead is not None:
        chosen = [lead, *chosen][:max_sentences]
    if (
        chosen[0].cell is not None and id(chosen[0]) in met
    ):  # the cell asked for, not its row's others
        chosen = [s for s in chosen if s.cell is None or id(s) in met]
    if options.lookups.unit_of is not None:
        chosen = [_with_unit(s, top, options.lookups.unit_of) for s in chosen]
    citations = [_cite_sentence(n, s, top, options) for n, s in enumerate(chosen, 1)]
    spoken = [_said(s, c) for s, c in zip(chosen, citations, strict=True)]
    text = " ".join(f"{words} [{n}]" for n, words in enumerate(spoken, 1))
    return Answer(text, citations, support)


def _choose(
    question: str,
    top: list[ScoredChunk],
    ranks: Sequence[int],
    sentences: list[_Sentence],
    meet: list[float],
    embedder: Embedder | None,
    options: AnswerOptions,
    max_sentences: int,
) -> tuple[list[_Sentence], float | None]:
    """The sentences chosen, best first, and how well the best of them supports an answer (None
    without an embedder): ranked by terms, then by the embedder, then by the judge, as there are."""
    ranked = _rank(question, top, sentences, options.scope.name_terms)
    scores = [v * m for v, m in zip(ranked, meet, strict=True)]
    support: float | None = None
    if embedder is None:
        chosen = _select(sentences, scores, max_sentences)
    elif options.dense_pool < 1:  # ranked by terms; the best of them still measures support
        _, support = _dense(question, top, sentences, scores, embedder, 1)
        chosen = _select(sentences, scores, max_sentences)
    else:
        scores, support = _dense(
            question, top, sentences, scores, embedder, options.dense_pool, meet
        )
        prior = [1.0 / (1.0 + options.rank_prior * ranks[s.hit]) for s in sentences]
        scores = [v * m * p for v, m, p in zip(scores, meet, prior, strict=True)]
        chosen = _select(sentences, scores, max_sentences, keep=_DENSE_KEEP)
    if options.judge is not None and chosen:
        try:
            by_judge = judged(question, top, sentences, scores, options.judge)
        except RerankError as exc:  # the judge is down: the candidates keep their order
            logger.warning("the answer judge failed, candidates unjudged: %s: %s", exc.code, exc)
        else:
            chosen = _select(sentences, by_judge, max_sentences, keep=JUDGE_KEEP)
    return chosen, support


def _heading_lead(
    question: str,
    hits: Sequence[ScoredChunk],
    options: AnswerOptions,
    embedder: Embedder | None,
    support: float,
) -> tuple[_Sentence | None, float]:
    """The section heading over a hit's chunk that is more like the question than the best
    sentence (`support`) by `options.heading_lead`, if any, and the best similarity of either: a
    question of a section as a whole ("How many button functions are there during a workout?")
    is answered by its heading and what it heads, which no one sentence under it says. A heading
    leads only with a word of the question other than the names of its documents, on the pages
    the options hold the answer to, and where the layout finds it on the page of its chunk's
    first line, above it, heading that chunk (`_opens`) or a figure or table (`Layout.headed`)."""
    if options.lookups.layout is None or embedder is None:
        return None, support
    wanted = set(stems(question)) - options.scope.name_terms
    found = [h for h in _headings(hits, options.scope.pages) if h.terms & wanted]
    if not found:
        return None, support
    asked = embedder.embed_query(question)
    similarity = embedder.embed_documents([h.text for h in found]) @ asked
    for i in sorted(range(len(found)), key=lambda i: -similarity[i]):
        if similarity[i] <= support + options.heading_lead:
            break
        chunk = hits[found[i].hit].chunk
        first = chunk.lines[0]
        box = options.lookups.layout.heading(chunk.doc_id, first.page, found[i].text, first.bbox[1])
        if box is None:
            continue
        block = options.lookups.layout.headed(chunk.doc_id, first.page, box)
        if block is not None or _opens(chunk, box):
            return replace(found[i], heading=box, heads=block), float(similarity[i])
    return None, support
