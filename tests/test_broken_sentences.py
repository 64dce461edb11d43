"""A sentence broken across two blocks or lines (a list item whose first line the page set apart
from the rest) is one answer candidate again (`retrieval.answer.candidates`)."""

from __future__ import annotations

from doubles.builders import one_line_block, one_page_document
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType
from retrieval.answer import answer_texts

FIRST = "Allow 1.25 cm of space on each"
REST = "side and at the top of the cabinet for ease of installation."


def _texts(*lines: str) -> list[str]:
    blocks = [
        one_line_block(f"b{i}", BlockType.text, (72.0, 100.0 + 30 * i, 400.0, 112.0 + 30 * i), text)
        for i, text in enumerate(lines)
    ]
    document = one_page_document(blocks, doc_id="m" * 64, source="manual.pdf")
    [chunk] = chunk_document(document, count_tokens=lambda t: len(t.split()))
    return [t.split(": ", 1)[-1] for t in answer_texts(chunk)]


def test_a_piece_without_a_stop_goes_on_in_the_next_that_starts_in_lower_case() -> None:
    texts = _texts(FIRST, REST, "The cabinet can stand flush against the back wall.")
    assert f"{FIRST} {REST}" in texts, texts
    assert "The cabinet can stand flush against the back wall." in texts


def test_a_piece_that_ends_a_sentence_or_a_capitalised_next_one_stays_apart() -> None:
    texts = _texts(
        "Leveling the cabinet.", "side screws turn clockwise.", "Tools required", "Two wrenches"
    )
    assert "Leveling the cabinet." in texts and "side screws turn clockwise." in texts, texts
    assert "Tools required" in texts and "Two wrenches" in texts
