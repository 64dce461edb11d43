"""Reference marks after a sentence's stop ("… one year.[26] Larger …", as encyclopedias and
reports print them) end the sentence: the answer quotes the one sentence, not the paragraph."""

from __future__ import annotations

from doubles.fakes import VocabularyEmbedder
from retrieval.answer import extractive_answer
from retrieval.schema import ScoredChunk
from retrieval.text_terms import sentence_spans
from tests.test_answer import make_chunk

PARAGRAPH = (
    "Ducks generally only have one partner at a time, although the partnership usually only "
    "lasts one year.[26] Larger species tend to have pair-bonds that last numerous years.[27][28] "
    "Most duck species breed once a year.[29, 30] See Fig. [3] for the nests."
)


def test_a_stop_with_its_reference_marks_ends_a_sentence() -> None:
    said = [PARAGRAPH[a:b] for a, b in sentence_spans(PARAGRAPH)]
    assert said == [
        "Ducks generally only have one partner at a time, although the partnership usually only "
        "lasts one year.[26]",
        "Larger species tend to have pair-bonds that last numerous years.[27][28]",
        "Most duck species breed once a year.[29, 30]",
        "See Fig. [3] for the nests.",  # a mark after an abbreviation ends nothing
    ]


def test_the_answer_quotes_the_sentence_not_its_paragraph() -> None:
    embedder = VocabularyEmbedder(("duck", "partner", "last", "year"), name="topics")
    chunk = make_chunk("c0000", [(10, PARAGRAPH)])
    answer = extractive_answer(
        "How long does a duck's partnership usually last?",
        [ScoredChunk(chunk=chunk, score=0.9)],
        embedder=embedder,
    )
    quote = answer.citations[0].quote
    assert quote.startswith("Ducks generally") and quote.endswith("one year.[26]"), quote
