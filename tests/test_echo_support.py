"""A candidate that writes only part of the question and nothing else (a heading or label
repeating it) is no support for an answer: the documents that hold only an echo of the question
are "not found"; a sentence that holds the whole question is the passage it quotes."""

from __future__ import annotations

from doubles.fakes import VocabularyEmbedder
from retrieval.answer import extractive_answer
from retrieval.schema import ScoredChunk
from tests.test_answer import make_chunk

QUESTION = "On what date was the final reminder of the Harbor Survey soft launch sent?"
ECHO = "Harbor Survey soft launch"
UNRELATED = "Sixty households took part in the panel during 2021."
ANSWER = "The final reminder of the Harbor Survey soft launch was sent on April 10, 2021."


def _embedder() -> VocabularyEmbedder:
    """Similarity is shared topics: the survey, its soft launch, the reminder."""
    return VocabularyEmbedder(("harbor", "survey", "soft", "launch", "remind"), name="topics")


def test_a_page_that_only_repeats_the_question_does_not_answer_it() -> None:
    chunk = make_chunk("c0000", [(3, ECHO), (3, UNRELATED)], joiner="\n")
    embedder = _embedder()
    answer = extractive_answer(QUESTION, [ScoredChunk(chunk=chunk, score=0.9)], embedder=embedder)
    assert ECHO in embedder.embedded  # it was read, and is as like the question as any line
    assert answer.text is None and answer.citations == [], answer.text
    assert answer.support is not None and answer.support < 0.35


def test_the_sentence_that_adds_what_was_asked_supports_the_answer() -> None:
    """Beside the same echo, a sentence that writes the date answers, and is what supports it."""
    chunk = make_chunk("c0001", [(3, ECHO), (3, ANSWER), (3, UNRELATED)], joiner="\n")
    answer = extractive_answer(
        QUESTION, [ScoredChunk(chunk=chunk, score=0.9)], embedder=_embedder()
    )
    assert answer.text is not None and answer.citations[0].quote == ANSWER, answer.text
    assert answer.support is not None and answer.support > 0.9


def test_a_question_that_quotes_a_sentence_whole_is_answered_by_it() -> None:
    """A user looking for a passage writes it out: the sentence that holds every word of the
    question is what was asked for, not an echo."""
    quoted = "The Harbor Survey soft launch reminder"
    chunk = make_chunk("c0002", [(3, f"{quoted}."), (3, UNRELATED)], joiner="\n")
    answer = extractive_answer(quoted, [ScoredChunk(chunk=chunk, score=0.9)], embedder=_embedder())
    assert answer.text is not None and answer.citations[0].quote == f"{quoted}.", answer.text
