"""A table chunked in row groups is answered as one: the search keeps one chunk a page, and the
row that answers can lie in the group beside the one it kept."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from doubles.builders import one_line_block, one_page_document, table_block
from doubles.fakes import HashEmbedder
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType, Document
from retrieval.answer import (
    AnswerOptions,
    Lookups,
    around_ids,
    extractive_answer,
    table_pieces,
    table_unit,
)
from retrieval.answer.chunk_lookups import StoreLookups
from retrieval.answer.retriever import Retriever
from retrieval.index.edge_store import EdgeStore
from retrieval.schema import Chunk, ScoredChunk

HEADER = ["", "February 2, 2019", "February 3, 2018"]
ROWS = [
    ["Cash and cash equivalents", "1,980", "1,101"],
    ["Receivables, net", "1,015", "1,049"],
    ["Merchandise inventories", "5,409", "5,209"],
    ["Other current assets", "466", "438"],
    ["Total current assets", "8,870", "9,829"],
    ["Land and buildings", "637", "623"],
    ["Leasehold improvements", "2,119", "2,327"],
    ["Goodwill", "915", "425"],
    ["Total assets", "12,901", "13,049"],
    ["Accounts payable", "5,257", "4,873"],
    ["Total current liabilities", "7,513", "7,817"],
    ["Total equity", "3,306", "3,612"],
]
X = (72.0, 300.0, 420.0, 540.0)


def _balance_sheet() -> Document:
    """One page: a heading, then a balance sheet long enough to be chunked in row groups."""
    heading = one_line_block(
        "p1-b0", BlockType.section_header, (72, 90, 300, 104), "Consolidated Balance Sheets"
    )
    table = table_block("p1-b1", [HEADER, *ROWS], X, 120.0)
    return one_page_document([heading, table], doc_id="b" * 64, source="10-K.pdf")


def _chunks() -> list[Chunk]:
    chunks = chunk_document(_balance_sheet(), count_tokens=lambda t: len(t.split()), max_tokens=48)
    assert sum(c.kind == "table_rows" for c in chunks) >= 3  # the table is split in row groups
    return chunks


def _holding(chunks: list[Chunk], words: str) -> Chunk:
    return next(c for c in chunks if c.kind == "table_rows" and words in c.text)


QUESTION = "What were merchandise inventories on February 2, 2019?"


def test_the_answer_reads_the_row_group_beside_the_hit() -> None:
    chunks = _chunks()
    hit = _holding(chunks, "Total assets")
    assert "inventories" not in hit.text
    rest = table_pieces(hit, chunks)
    assert any("Merchandise inventories" in c.text for c in rest)
    assert all(c.kind == "table_rows" for c in rest)

    hits = [ScoredChunk(chunk=hit, score=0.9)]
    alone = extractive_answer(QUESTION, hits, max_sentences=1)
    assert "5,409" not in (alone.text or "")
    whole = extractive_answer(
        QUESTION,
        hits,
        options=AnswerOptions(lookups=Lookups(table_rest=lambda c: table_pieces(c, chunks))),
        max_sentences=1,
    )
    assert whole.text is not None and whole.text.startswith(
        "Merchandise inventories, February 2, 2019: 5,409"
    )
    assert whole.citations[0].page == 1


def _on_page_two(chunk: Chunk) -> Chunk:
    regions = [r.model_copy(update={"page": 2}) for r in chunk.regions]
    return chunk.model_copy(update={"regions": regions})


def test_only_the_unbroken_run_of_row_groups_on_the_page_counts() -> None:
    chunks = _chunks()
    first, second, *later = chunks
    assert table_pieces(first.model_copy(update={"kind": "text"}), chunks) == []
    assert {c.chunk_id for c in table_pieces(first, chunks)} == {
        c.chunk_id for c in [second, *later]
    }
    broken = [first, second.model_copy(update={"kind": "text"}), *later]
    assert table_pieces(first, broken) == []  # a chunk of another kind ends the table
    moved = [first, *(_on_page_two(c) for c in [second, *later])]
    assert table_pieces(first, moved) == []  # row groups on another page are not read with it
    assert around_ids("c0003", 2) == ["c0002", "c0001", "c0004", "c0005"]
    assert around_ids("c0000", 1) == ["c0001"]


@contextmanager
def _retriever_over(chunks: list[Chunk], folder: Path) -> Iterator[Retriever]:
    """A retriever over an edge index holding `chunks`."""
    embedder = HashEmbedder(dim=128)
    store = EdgeStore(folder / "edge", embedder.dim)
    try:
        store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
        yield Retriever(embedder, store)
    finally:
        store.close()


def test_the_retriever_looks_up_the_rest_of_the_table_in_the_store(tmp_path: Path) -> None:
    chunks = _chunks()
    with _retriever_over(chunks, tmp_path) as retriever:
        hit = _holding(chunks, "Total assets")
        found = StoreLookups(retriever.store).table_rest(hit)
        assert {c.chunk_id for c in found} == {c.chunk_id for c in table_pieces(hit, chunks)}


def test_a_row_named_by_its_last_word_answers_the_question() -> None:
    """A row label names what it counts by its last word ("Merchandise inventories"): its
    cell at the question's year is where measure and period meet, as a sentence naming both."""
    chunks = _chunks()
    rows = _holding(chunks, "Merchandise inventories")
    note = chunks[0].model_copy(
        update={
            "chunk_id": "c0099",
            "kind": "text",
            "text": "Inventories are reviewed each quarter for obsolescence, as in fiscal 2019.",
        }
    )
    hits = [ScoredChunk(chunk=rows, score=0.9), ScoredChunk(chunk=note, score=0.85)]
    answer = extractive_answer("What were inventories in 2019?", hits, max_sentences=1)
    assert answer.text is not None
    assert answer.text.startswith("Merchandise inventories, February 2, 2019: 5,409")


LEAD_IN = "Balances at year end were as follows ($ in millions):"


def _led_chunks(lead_in: str = LEAD_IN, aside: str = "", max_tokens: int = 48) -> list[Chunk]:
    """The balance sheet under a paragraph and a lead-in naming its unit, chunked so that the
    lead-in is in no chunk of the table (in row groups, or whole with a larger `max_tokens`)."""
    heading = one_line_block(
        "p1-b0", BlockType.section_header, (72, 60, 300, 74), "Consolidated Balance Sheets"
    )
    words = " ".join(["Our balance sheet is managed with care and reviewed by the board"] * 3)
    paragraph = one_line_block("p1-b1", BlockType.text, (72, 76, 540, 86), f"{words}.")
    note = [one_line_block("p1-b2", BlockType.text, (72, 88, 540, 98), aside)] if aside else []
    lead = one_line_block("p1-b3", BlockType.text, (72, 100, 540, 112), lead_in)
    table = table_block("p1-b4", [HEADER, *ROWS], X, 120.0)
    document = one_page_document(
        [heading, paragraph, *note, lead, table], doc_id="u" * 64, source="10-K.pdf"
    )
    chunks = chunk_document(document, count_tokens=lambda t: len(t.split()), max_tokens=max_tokens)
    assert not any(c.kind.startswith("table") and "$ in millions" in c.text for c in chunks)
    return chunks


def test_a_cell_takes_the_unit_its_tables_lead_in_states() -> None:
    """ "($ in millions)" in the sentence that introduces a table chunked apart from it is the
    unit of every cell of the table: "5,409" alone reads as dollars."""
    chunks = _led_chunks()
    hit = _holding(chunks, "Merchandise inventories")
    assert table_unit(hit, chunks) == "$ in millions"
    assert table_unit(_holding(chunks, "Total equity"), chunks) == "$ in millions"
    [whole] = [c for c in _led_chunks(max_tokens=120) if c.kind == "table"]  # one chunk
    assert table_unit(whole, _led_chunks(max_tokens=120)) == "$ in millions"
    hits = [ScoredChunk(chunk=hit, score=0.9)]
    options = AnswerOptions(
        lookups=Lookups(
            table_rest=lambda c: table_pieces(c, chunks), unit_of=lambda c: table_unit(c, chunks)
        )
    )
    answer = extractive_answer(QUESTION, hits, options=options, max_sentences=1)
    expected = "Merchandise inventories, February 2, 2019: 5,409 ($ in millions)"
    assert answer.text == f"{expected} [1]"
    assert answer.citations[0].quote == expected
    bare = extractive_answer(QUESTION, hits, max_sentences=1)  # without the neighbours
    assert bare.text == "Merchandise inventories, February 2, 2019: 5,409 [1]"


def test_a_unit_is_read_only_from_the_paragraph_that_leads_into_the_table() -> None:
    """A unit in an earlier paragraph, or in a chunk on another page, is not the table's."""
    aside = "Leases (in thousands of dollars) are shown in Note 7."
    chunks = _led_chunks("Balances at year end were as follows:", aside)
    [before] = [c for c in chunks if "as follows" in c.text]
    assert aside in before.text  # in the chunk before the table, but not its last paragraph
    assert table_unit(_holding(chunks, "Merchandise inventories"), chunks) == ""

    def on_page_two(chunk: Chunk) -> Chunk:
        lines = [ln.model_copy(update={"page": 2}) for ln in chunk.lines]
        return _on_page_two(chunk).model_copy(update={"lines": lines})

    moved = [on_page_two(c) if c.kind != "table_rows" else c for c in _led_chunks()]
    assert table_unit(_holding(moved, "Merchandise inventories"), moved) == ""


def test_the_retriever_reads_a_tables_unit_from_the_store(tmp_path: Path) -> None:
    chunks = _led_chunks()
    with _retriever_over(chunks, tmp_path) as retriever:
        assert (
            StoreLookups(retriever.store).unit_of(_holding(chunks, "Total equity"))
            == "$ in millions"
        )
