"""A question that names a day is answered by the sentence dated that day: quarterly reports
repeat a sentence with each quarter's date and balance (`retrieval.answer.meet._on_the_day`)."""

from __future__ import annotations

from collections.abc import Sequence

from doubles.builders import one_line_block, one_page_document
from doubles.fakes import SameVector
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType
from retrieval.answer import extractive_answer
from retrieval.schema import Chunk, ScoredChunk


def _report(name: str, text: str) -> Chunk:
    """The one chunk of a one-page report holding `text`."""
    block = one_line_block("b0", BlockType.text, (72.0, 100.0, 540.0, 112.0), text)
    document = one_page_document([block], doc_id=name * 64, source=f"{name}.pdf")
    [chunk] = chunk_document(document, count_tokens=lambda t: len(t.split()))
    return chunk


REPORTS = [
    _report("a", "As of March 31, 2024, the company had $4.2 billion remaining under the program."),
    _report("b", "As of June 30, 2024, the company had $3.7 billion remaining under the program."),
    _report(
        "c", "As of September 30, 2024, the company had $2.9 billion remaining under the program."
    ),
]


def _answer(question: str, chunks: Sequence[Chunk]) -> str:
    hits = [ScoredChunk(chunk=chunk, score=0.9) for chunk in chunks]
    answer = extractive_answer(question, hits, embedder=SameVector(), max_sentences=1)
    assert answer.text is not None
    return answer.text


def test_the_sentence_dated_the_day_asked_answers_not_another_quarters() -> None:
    """Each day asked, in any order of the hits, is answered by its own quarter's sentence."""
    for day, figure in (
        ("March 31, 2024", "$4.2"),
        ("June 30, 2024", "$3.7"),
        ("September 30, 2024", "$2.9"),
    ):
        question = f"How much remained under the program at {day}?"
        for order in (REPORTS, REPORTS[::-1]):
            assert figure in _answer(question, order), (day, order[0].source)
