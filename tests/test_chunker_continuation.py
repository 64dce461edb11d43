"""Paragraphs and tables that a page break cuts stay together, with regions on both pages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ingest.pipeline.chunker import ChunkStream, chunk_document
from ocr_engine.schema import BlockType, Document, TableCell
from retrieval.schema import Chunk
from tests.test_chunker import Pages, assert_provenance, count_tokens, sentences

__all__ = ["count_tokens"]  # the fixture, shared

HEADER = "| Item | 2018 | 2017 |"
CELLS = [TableCell(row=0, col=c, text=t, header=True) for c, t in enumerate("IAB")]


def _paragraph_across_pages(ending: str, opening: str) -> Document:
    b = Pages()
    b.add(1, BlockType.section_header, ["Outlook"], level=1)
    b.add(1, BlockType.text, sentences(6, "filler"))
    b.add(1, BlockType.text, ["Management expects that net revenue from the new plants", ending])
    b.add(2, BlockType.page_header, ["ACME 2018 ANNUAL REPORT"])
    b.add(2, BlockType.text, [opening, "and costs to fall as the plants reach full output."])
    return b.document()


def _holding(chunks: list[Chunk], *needles: str) -> list[Chunk]:
    return [c for c in chunks if all(n in c.text for n in needles)]


def test_paragraph_cut_by_a_page_break_stays_one_chunk(
    count_tokens: Callable[[str], int],
) -> None:
    doc = _paragraph_across_pages("will continue to", "grow by 12.5% in the coming year")
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=96)
    (chunk,) = _holding(chunks, "continue to", "grow by 12.5%")
    assert {r.page for r in chunk.regions} == {1, 2}
    assert {ln.page for ln in chunk.lines} == {1, 2}
    assert "ACME 2018" not in chunk.text
    assert "filler" not in chunk.text  # the earlier block went to a chunk of its own
    assert_provenance(doc, chunk)


@pytest.mark.parametrize(
    ("ending", "opening"),
    [
        ("will continue to grow.", "grow by 12.5% in the coming year"),  # ended with a period
        ("will continue to", "Growth by 12.5% in the coming year"),  # a new sentence
    ],
)
def test_finished_paragraphs_are_not_pulled_across_the_page(
    count_tokens: Callable[[str], int], ending: str, opening: str
) -> None:
    doc = _paragraph_across_pages(ending, opening)
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=96)
    assert not _holding(chunks, ending, opening)
    assert _holding(chunks, "filler", ending)


def _table_across_pages(rows_1: int, rows_2: int, *, caption_2: bool = False) -> Document:
    b = Pages()
    b.add(1, BlockType.text, sentences(2, "cash"))
    b.add(1, BlockType.caption, ["Table 4: Cash flows"])
    first_rows = [f"| Item {i} | {100 + i} | {200 + i} |" for i in range(rows_1)]
    b.add(1, BlockType.table, [HEADER, "|---|---|---|", *first_rows], cells=CELLS)
    b.add(2, BlockType.page_footer, ["Page 2"])
    if caption_2:
        b.add(2, BlockType.caption, ["Table 5: Debt"])
    rows = [f"| Item {i} | {100 + i} | {200 + i} |" for i in range(rows_1, rows_1 + rows_2)]
    b.add(2, BlockType.table, rows)
    b.add(2, BlockType.text, sentences(1, "after"))
    return b.document()


def test_table_continued_on_the_next_page_is_one_chunk(count_tokens: Callable[[str], int]) -> None:
    doc = _table_across_pages(4, 3)
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=256)
    (table,) = [c for c in chunks if c.kind == "table"]
    lines = table.text.splitlines()
    assert lines[:3] == ["Table 4: Cash flows", HEADER, "|---|---|---|"]
    assert [ln.split("|")[1].strip() for ln in lines[3:]] == [f"Item {i}" for i in range(7)]
    assert [r.page for r in table.regions] == [1, 1, 2]  # caption, table, its continuation
    assert "Item 6" in table.embed_text
    assert_provenance(doc, table)


def test_continued_large_table_repeats_caption_and_header_in_every_batch(
    count_tokens: Callable[[str], int],
) -> None:
    doc = _table_across_pages(12, 12)
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=80)
    batches = [c for c in chunks if c.kind == "table_rows"]
    assert len(batches) > 2
    seen = []
    for chunk in batches:
        lines = chunk.text.splitlines()
        assert lines[:3] == ["Table 4: Cash flows", HEADER, "|---|---|---|"]
        seen.extend(ln.split("|")[1].strip() for ln in lines[3:])
        assert_provenance(doc, chunk)
    assert seen == [f"Item {i}" for i in range(24)]
    last = batches[-1]
    assert 2 in {r.page for r in last.regions} and 1 in {r.page for r in last.regions}


def test_a_table_with_its_own_caption_is_another_table(count_tokens: Callable[[str], int]) -> None:
    doc = _table_across_pages(4, 3, caption_2=True)
    tables = [c for c in chunk_document(doc, count_tokens=count_tokens) if c.kind == "table"]
    assert len(tables) == 2
    assert tables[1].text.startswith("Table 5: Debt")


def test_page_windows_give_the_same_chunks(count_tokens: Callable[[str], int]) -> None:
    for doc in (
        _table_across_pages(12, 12),
        _paragraph_across_pages("will continue to", "grow by 12.5% in the coming year"),
    ):
        whole = chunk_document(doc, count_tokens=count_tokens, max_tokens=80)
        stream = ChunkStream(doc.doc_id, doc.source, count_tokens=count_tokens, max_tokens=80)
        windowed = [c for page in doc.pages for c in stream.feed([page])] + stream.finish()
        assert windowed == whole
