"""With a re-ranker, the answer cites the re-ranked first hit first unless another hit's sentence
is much better supported (`RANK_PRIOR`); without one, or when it failed, hits weigh alike."""

from __future__ import annotations

from pathlib import Path

from doubles.fakes import HashEmbedder
from doubles.rerank_stub import RerankStub
from retrieval.answer import RANK_PRIOR, AnswerOptions, extractive_answer
from retrieval.answer.retriever import Retriever
from retrieval.schema import Chunk, QueryRequest, Region, RerankFailure, ScoredChunk
from retrieval.search.search import Ranked
from server.services import build_services
from server.settings import Settings

QUESTION = "When did the Kelud volcano erupt?"


def _hit(n: int, text: str, score: float) -> ScoredChunk:
    chunk = Chunk(
        chunk_id=f"c{n:04d}",
        doc_id="d" * 64,
        source="volcanoes.pdf",
        kind="text",
        text=text,
        embed_text=text,
        regions=[Region(page=n, bbox=(72.0, 100.0, 400.0, 120.0))],
    )
    return ScoredChunk(chunk=chunk, score=score)


HITS = [
    _hit(1, "When did the Kelud volcano erupt last? In February 2014.", 0.9),
    _hit(2, "When did the Kelud volcano erupt? Nobody here knows.", 0.8),
]


def _first_page(rank_prior: float) -> int:
    options = AnswerOptions(rank_prior=rank_prior)
    answer = extractive_answer(QUESTION, HITS, embedder=HashEmbedder(), options=options)
    assert answer.found, answer
    return answer.citations[0].page


def test_the_first_hit_is_cited_first_with_the_prior_and_the_closer_sentence_without() -> None:
    assert _first_page(0.0) == 2  # the second hit's sentence is the question word for word
    assert _first_page(RANK_PRIOR) == 1  # nearly as close, and the re-ranker put it first


def test_the_prior_holds_only_while_the_reranker_ranked_the_hits(tmp_path: Path) -> None:
    request = QueryRequest(question=QUESTION)
    with RerankStub() as stub:
        settings = Settings(data_dir=tmp_path / "data", rerank=stub.url)
        services = build_services(settings, embedder=HashEmbedder())
        try:
            retriever: Retriever = services.retriever
            assert retriever.reranker is not None
            assert retriever.answer_options(request, Ranked(HITS)).rank_prior == RANK_PRIOR
            failed = Ranked(HITS, RerankFailure(code="rerank_unavailable", message="down"))
            assert retriever.answer_options(request, failed).rank_prior == 0.0
            retriever.reranker = None
            assert retriever.answer_options(request, Ranked(HITS)).rank_prior == 0.0
        finally:
            services.close()
