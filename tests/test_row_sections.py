"""Of rows that name a question's measure alike, the one whose group ("Net sales:", "Net sales
mix:") says least besides the question is the one met (`retrieval.answer.meet._closest_labels`)."""

from __future__ import annotations

from collections.abc import Sequence

from doubles.builders import one_line_block, one_page_document, table_block
from doubles.fakes import SameVector
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType
from retrieval.answer import extractive_answer
from retrieval.schema import Chunk, ScoredChunk


def _segments(groups: Sequence[str]) -> Chunk:
    """A segment table whose row groups come in the order `groups` names them."""
    rows = {
        "Net sales mix:": [["Net sales mix:", "", ""], ["Cloud", "17 %", "16 %"]],
        "Net sales:": [["Net sales:", "", ""], ["Cloud", "22,140", "19,739"]],
    }
    body = [row for group in groups for row in rows[group]]
    title = one_line_block("p1-b0", BlockType.section_header, (72, 90, 300, 104), "Segments")
    table = table_block("p1-b1", [["", "2023", "2022"], *body], (72.0, 300.0, 420.0, 540.0), 120.0)
    document = one_page_document([title, table], doc_id="s" * 64, source="10-Q.pdf")
    [chunk] = chunk_document(document, count_tokens=lambda t: len(t.split()))
    return chunk


def test_the_group_saying_least_besides_the_question_is_met() -> None:
    """Both "Cloud" rows name the measure's words ("net sales", "cloud") and the year: the
    group that adds "mix", which the question does not say, is not the answer, in either order."""
    question = "How much did Cloud contribute to net sales in 2023?"
    for groups in (["Net sales mix:", "Net sales:"], ["Net sales:", "Net sales mix:"]):
        hits = [ScoredChunk(chunk=_segments(groups), score=0.9)]
        answer = extractive_answer(question, hits, embedder=SameVector(), max_sentences=1)
        assert answer.text is not None
        assert answer.text.startswith("Net sales, Cloud, 2023: 22,140"), (groups, answer.text)
