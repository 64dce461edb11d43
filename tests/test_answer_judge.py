"""The answer's candidates judged by a cross-encoder (FOLIO_ANSWER_JUDGE): its order decides what
is said and cited first; it reads only its pool; a failed judge changes nothing; "not found"
stays the embedder's threshold."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from doubles.fakes import HashEmbedder
from retrieval.answer import AnswerOptions, extractive_answer
from retrieval.answer.judge import JUDGE_POOL
from retrieval.schema import Chunk, QueryRequest, Region, ScoredChunk
from retrieval.search.rerank import OnnxReranker, RerankError, shipped_model_dir
from server.services import build_services
from server.settings import Settings

QUESTION = "When did the Kelud volcano erupt?"
ABOUT = "The Kelud volcano is watched closely by the Kelud volcano observatory."
ERUPTED = "An eruption came on 13 February 2014, and 100,000 people left their homes."


def _hit(n: int, text: str, score: float = 1.0, doc: str = "d") -> ScoredChunk:
    chunk = Chunk(
        chunk_id=f"c{n:04d}",
        doc_id=doc * 64,
        source=f"{doc}.pdf",
        kind="text",
        text=text,
        embed_text=text,
        regions=[Region(page=n, bbox=(72.0, 100.0, 400.0, 120.0))],
    )
    return ScoredChunk(chunk=chunk, score=score)


class ScriptedJudge:
    """A judge whose logit for a passage is the score of the first phrase it holds."""

    def __init__(self, logits: dict[str, float], default: float = -8.0) -> None:
        self.logits = logits
        self.default = default
        self.asked: list[list[str]] = []

    @property
    def name(self) -> str:
        return "scripted"

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.asked.append(list(passages))
        return [next((v for k, v in self.logits.items() if k in p), self.default) for p in passages]


HITS = [_hit(1, f"{ABOUT} {ERUPTED}")]


def _answer(judge: object, **options: object) -> object:
    return extractive_answer(
        QUESTION,
        HITS,
        embedder=HashEmbedder(),
        options=AnswerOptions(judge=judge, min_support=0.0, **options),  # type: ignore[arg-type]
    )


def test_without_a_judge_the_sentence_holding_the_question_words_comes_first() -> None:
    answer = extractive_answer(
        QUESTION, HITS, embedder=HashEmbedder(), options=AnswerOptions(min_support=0.0)
    )
    assert answer.citations[0].quote == ABOUT


def test_the_judge_decides_which_candidate_is_said_and_cited_first() -> None:
    judge = ScriptedJudge({"13 February 2014": 6.0, "observatory": -2.0})
    answer = _answer(judge)
    assert answer.citations[0].quote == ERUPTED
    assert answer.text is not None and answer.text.startswith(ERUPTED)


def test_a_judge_that_fails_leaves_the_candidates_in_their_order() -> None:
    class Down:
        name = "down"

        def score(self, question: str, passages: Sequence[str]) -> list[float]:
            raise RerankError("rerank_unavailable", "no answer in time")

    answer = _answer(Down())
    assert answer.citations[0].quote == ABOUT


def test_not_found_stays_the_embedders_threshold_with_a_judge() -> None:
    judge = ScriptedJudge({"13 February 2014": 6.0})
    options = AnswerOptions(judge=judge, min_support=0.99)
    answer = extractive_answer(QUESTION, HITS, embedder=HashEmbedder(), options=options)
    assert answer.text is None and answer.support is not None and answer.support < 0.99


def test_the_judge_reads_only_its_pool_of_candidates() -> None:
    sentences = " ".join(f"Kelud sentence number {n} is here." for n in range(12))
    judge = ScriptedJudge({})
    options = AnswerOptions(judge=judge, min_support=0.0)
    extractive_answer(QUESTION, [_hit(1, sentences)], embedder=HashEmbedder(), options=options)
    assert len(judge.asked) == 1 and len(judge.asked[0]) == JUDGE_POOL


def test_the_shipped_cross_encoder_prefers_the_sentence_that_answers() -> None:
    try:
        shipped_model_dir()
    except RerankError as exc:
        pytest.skip(str(exc))
    answer = _answer(OnnxReranker(threads=1))
    assert answer.citations[0].quote == ERUPTED


def test_folio_answer_judge_gives_the_retriever_its_judge(tmp_path: Path) -> None:
    request = QueryRequest(question=QUESTION)
    for value, wanted in (("off", None), ("local", OnnxReranker)):
        settings = Settings(data_dir=tmp_path / value, answer_judge=value)
        services = build_services(settings, embedder=HashEmbedder())
        try:
            judge = services.retriever.answer_options(request).judge
            assert judge is None if wanted is None else isinstance(judge, wanted)
        finally:
            services.close()
