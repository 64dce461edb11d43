"""The extractive answer drawn from what the search found: its options built from the ranked
hits (the place and documents the question names, whether the re-ranker ordered them), then the
answer and its citations as `POST /query` returns them."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from retrieval.answer.chunk_lookups import store_lookups
from retrieval.answer.extractive import extractive_answer
from retrieval.answer.options import RANK_PRIOR, Answer, AnswerOptions, Scope
from retrieval.answer.page_layout import Layout
from retrieval.answer.scores import MIN_SUPPORT
from retrieval.index.embedder import Embedder
from retrieval.index.store import VectorStore
from retrieval.schema import DENSE_POOL, LlmFailure, QueryRequest, QueryResponse, ScoredChunk
from retrieval.search.doc_names import NamedDocuments, NameMatch
from retrieval.search.rerank import Reranker
from retrieval.search.search import Ranked, Searcher, search_filter, to_hit
from retrieval.text_terms import stems

__all__ = ["Retriever", "extractive_response"]

logger = logging.getLogger(__name__)


def _name_terms(question: str, names: NameMatch | None) -> frozenset[str]:
    """Stems of the words by which the question names the documents it is about."""
    if names is None or not names.doc_ids:
        return frozenset()
    return frozenset(stems(question)) - frozenset(stems(names.rest))


def extractive_response(
    answer: Answer, hits: Sequence[ScoredChunk], failure: LlmFailure | None = None
) -> QueryResponse:
    """The response of an extractive answer from `hits`: `not_found`, with the hits as the
    nearest passages, when the answer is none."""
    return QueryResponse(
        answer=answer.text,
        citations=answer.citations,
        hits=[to_hit(s) for s in hits],
        mode="extractive" if answer.found else "not_found",
        llm_error=failure,
    )


class Retriever(Searcher):
    """Answers questions from a vector store: the search (`Searcher`, whose settings it takes),
    then the extractive answer from its first `answer_hits` hits.

    The extractive answer ranks its `dense_sentences` best sentences by terms again by their
    embedding similarity to the question (0: by terms alone); below `min_support` similarity
    for the best of them the documents do not answer the question (`mode: "not_found"`).
    Table cells are cited to the boxes the `layout` gives (the document JSON's), else their row's;
    a cited title or caption with the figure or table the layout says it names. With a
    `reranker` the answer cites the re-ranked first page first unless another is much better
    supported (`RANK_PRIOR`). An `answer_judge` (a cross-encoder) orders the extractive answer's
    best candidates again (`AnswerOptions.judge`).
    """

    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        *,
        answer_hits: int = 5,
        lexical: bool = True,
        page_hits: bool = True,
        overfetch: int = 4,
        names: NamedDocuments | None = None,
        dense_sentences: int = DENSE_POOL,
        min_support: float = MIN_SUPPORT,
        layout: Layout | None = None,
        reranker: Reranker | None = None,
        rerank_candidates: int = 20,
        answer_judge: Reranker | None = None,
    ) -> None:
        super().__init__(
            embedder,
            store,
            lexical=lexical,
            page_hits=page_hits,
            overfetch=overfetch,
            names=names,
            reranker=reranker,
            rerank_candidates=rerank_candidates,
        )
        self.answer_hits = answer_hits
        self.dense_sentences = dense_sentences
        self.min_support = min_support
        self.rank_prior = RANK_PRIOR  # how much a re-ranked hit's rank weighs on its sentences
        self.layout = layout
        self.answer_judge = answer_judge

    def answer_options(self, req: QueryRequest, ranked: Ranked | None = None) -> AnswerOptions:
        """How this retriever draws extractive answers for `req` (its page filter included), from
        the hits `ranked` (re-ranked unless it says why not)."""
        reranked = self.reranker is not None and (ranked is None or ranked.rerank_error is None)
        names = ranked.names if ranked is not None else None
        names = names or self.match(req.question, search_filter(req))
        place = ranked.place if ranked is not None else None
        scope = Scope(
            pages=(req.page_from, req.page_to) if place is None else (place.first, place.last),
            name_terms=_name_terms(req.question, names),
            subjects=self._unknown_subjects(req),
        )
        card_of = self.names.card if self.names is not None else None
        lookups = store_lookups(self.store, self.layout, card_of)
        return AnswerOptions(
            max_hits=self.answer_hits,
            dense_pool=self.dense_sentences,
            min_support=self.min_support,
            rank_prior=self.rank_prior if reranked else 0.0,
            judge=self.answer_judge,
            scope=scope,
            lookups=lookups,
            page_mates=ranked.mates if ranked is not None else (),
        )

    def _unknown_subjects(self, req: QueryRequest) -> tuple[str, ...]:
        """The owners the question names that no document is named by; where the request chose
        its documents, the names of the documents it asks about when none of them is chosen.
        None with names off."""
        if self.names is None:
            return ()
        if req.doc_ids:
            return self.names.named_outside(req.question, req.doc_ids)
        return self.names.unknown_subjects(req.question)

    def query(self, req: QueryRequest) -> QueryResponse:
        """Search with the request's filters and answer from the hits."""
        started = time.perf_counter()
        ranked = self.ranked(req.question, req.top_k, search_filter(req))
        scored, failure = ranked.hits, ranked.rerank_error
        answer = extractive_answer(
            req.question, scored, embedder=self.embedder, options=self.answer_options(req, ranked)
        )
        logger.debug(
            "query %r: %d hits in %.1f ms",
            req.question,
            len(scored),
            1e3 * (time.perf_counter() - started),
        )
        return extractive_response(answer, scored).model_copy(update={"rerank_error": failure})
