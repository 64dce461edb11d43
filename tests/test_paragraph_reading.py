"""A sentence is read with the one before it in its paragraph: what it goes on from may be what
the question names ("The panel is managed by …" after the sentence that names the panel)."""

from __future__ import annotations

from doubles.fakes import VocabularyEmbedder
from retrieval.answer import AnswerOptions, answer_texts, extractive_answer
from retrieval.schema import Chunk, ScoredChunk
from tests.test_answer import make_chunk

NAMES = "The Harbor Survey panel was recruited in 2019 from households across the city."
MANAGER = "The panel is managed by Ipsum Field Services."
OTHER = "Field services were extended in 2021 by the city council."


def topic_embedder() -> VocabularyEmbedder:
    """Similarity is shared topics: the place, the survey, the panel, its management."""
    return VocabularyEmbedder(("harbor", "survey", "panel", "manag"), name="topics")


def _chunk() -> Chunk:
    return make_chunk("c0000", [(2, f"{NAMES} {MANAGER}"), (2, OTHER)], joiner="\n\n")


def test_a_sentence_that_goes_on_from_the_one_naming_the_subject_answers() -> None:
    embedder = topic_embedder()
    hits = [ScoredChunk(chunk=_chunk(), score=0.9)]
    answer = extractive_answer("Who manages the Harbor Survey panel?", hits, embedder=embedder)
    assert answer.citations[0].quote == MANAGER, answer.text
    # read alone and after the sentence before it; the first sentence of a paragraph alone
    assert f"{NAMES} {MANAGER}" in embedder.embedded
    assert not any(t.endswith(f"{MANAGER} {OTHER}") for t in embedder.embedded)
    # what the answer embeds is what ingest and the idle fill embed ahead
    assert set(embedder.embedded) <= set(answer_texts(_chunk()))


def test_a_sentence_alone_as_like_the_question_goes_first() -> None:
    """Read with the sentence before it, a sentence is a little less like the question than the
    same likeness alone: the sentence that says it all itself is cited."""
    embedder = topic_embedder()
    says_all = "The Harbor Survey panel is managed by Ipsum Field Services."
    chunk = make_chunk("c0001", [(2, f"{NAMES} {says_all}")])
    hits = [ScoredChunk(chunk=chunk, score=0.9)]
    answer = extractive_answer("Who manages the Harbor Survey panel?", hits, embedder=embedder)
    assert answer.citations[0].quote == says_all, answer.text


def test_only_the_best_half_of_the_pool_is_read_after_its_lead() -> None:
    """The pairs cost an embedding each: only the half of the pool best by the question's terms
    is read after the sentence before it."""
    embedder = topic_embedder()
    lines = [
        f"The Harbor Survey panel met in {2000 + n}. The panel is managed by firm {n}."
        for n in range(4)
    ]
    chunk = make_chunk("c0002", [(2, line) for line in lines])
    hits = [ScoredChunk(chunk=chunk, score=0.9)]
    extractive_answer(
        "Who manages the Harbor Survey panel?",
        hits,
        embedder=embedder,
        options=AnswerOptions(dense_pool=4),
    )
    singles = [t for t in embedder.embedded if t.count(".") == 1]
    pairs = [t for t in embedder.embedded if t.count(".") == 2]
    assert len(singles) == 4 and len(pairs) == 2, embedder.embedded
