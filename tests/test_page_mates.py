"""The answer reads the hits' pages, not only the chunk the search kept of each: a page takes one
place in the hits, and what answers on it can be its second chunk (the table under the paragraph
that speaks of it)."""

from __future__ import annotations

from pathlib import Path

from doubles.builders import one_line_block, one_page_document, table_block
from doubles.fakes import HashEmbedder
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType, Document
from retrieval.answer import AnswerOptions, extractive_answer
from retrieval.answer.retriever import Retriever
from retrieval.index.edge_store import EdgeStore
from retrieval.schema import Chunk, QueryRequest, ScoredChunk
from retrieval.search.search import page_mates

PROSE = (
    "Gizmo net sales decreased during the second quarter compared to the same quarter a year "
    "earlier, due primarily to lower unit volumes of the larger gizmo models."
)
ROWS = [
    ["", "June 30, 2031", "June 30, 2030"],
    ["Gadgets", "4,210", "3,980"],
    ["Gizmos", "1,675", "1,902"],
    ["Total", "5,885", "5,882"],
]
QUESTION = "What were gizmo net sales in the quarter ended June 30, 2031?"


def _page() -> Document:
    """One page: a paragraph on gizmo sales, then the table of sales by product."""
    heading = one_line_block("p1-b0", BlockType.section_header, (72, 80, 300, 94), "Net Sales")
    prose = one_line_block("p1-b1", BlockType.text, (72, 100, 540, 140), PROSE)
    table = table_block("p1-b2", ROWS, (72.0, 300.0, 420.0, 540.0), 400.0)
    return one_page_document([heading, prose, table], doc_id="d" * 64, source="10-Q.pdf")


def _chunks() -> tuple[Chunk, Chunk]:
    chunks = chunk_document(_page(), count_tokens=lambda t: len(t.split()), max_tokens=40)
    prose = next(c for c in chunks if "decreased" in c.text)
    table = next(c for c in chunks if "1,675" in c.text)
    assert prose.chunk_id != table.chunk_id and prose.page == table.page == 1
    return prose, table


def _scored(chunk: Chunk, score: float, page: int | None = None) -> ScoredChunk:
    if page is not None:
        regions = [r.model_copy(update={"page": page}) for r in chunk.regions]
        chunk = chunk.model_copy(update={"regions": regions, "chunk_id": f"{chunk.chunk_id}x"})
    return ScoredChunk(chunk=chunk, score=score)


def test_page_mates_are_the_other_candidates_on_the_hits_pages() -> None:
    prose, table = _chunks()
    hit, mate = _scored(prose, 0.9), _scored(table, 0.5)
    elsewhere = _scored(table, 0.4, page=2)
    assert page_mates([hit], [hit, elsewhere, mate, mate]) == (mate,)
    assert page_mates([hit, mate], [hit, mate]) == ()  # a hit is no mate of its page
    assert page_mates([], [hit, mate]) == ()


def test_the_answer_reads_a_table_beside_the_paragraph_the_search_kept() -> None:
    prose, table = _chunks()
    hits = [_scored(prose, 0.9)]
    alone = extractive_answer(QUESTION, hits)
    assert alone.text is not None and "1,675" not in alone.text
    read = extractive_answer(
        QUESTION, hits, options=AnswerOptions(page_mates=[_scored(table, 0.5)])
    )
    assert read.text is not None and "Gizmos, June 30, 2031: 1,675" in read.text
    cited = next(c for c in read.citations if "1,675" in c.quote)
    assert cited.page == 1 and cited.bbox[1] >= 400.0  # boxed in the table, under the paragraph
    # a candidate on another page than any hit's is not read
    away = _scored(table, 0.5, page=2)
    assert extractive_answer(QUESTION, hits, options=AnswerOptions(page_mates=[away])) == alone


def test_the_retriever_passes_the_pages_other_chunks_to_its_answer(tmp_path: Path) -> None:
    prose, table = _chunks()
    embedder = HashEmbedder(dim=128)
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        chunks = [prose, table]
        store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
        retriever = Retriever(embedder, store)
        ranked = retriever.ranked(QUESTION, 5)
        assert len(ranked.hits) == 2  # fewer pages than asked for: the page's chunks fill in
        one = retriever.ranked(QUESTION, 1)
        assert [h.chunk.chunk_id for h in one.mates] == [
            c.chunk_id for c in chunks if c.chunk_id != one.hits[0].chunk.chunk_id
        ]
        options = retriever.answer_options(QueryRequest(question=QUESTION, top_k=1), one)
        assert [m.chunk.chunk_id for m in options.page_mates] == [
            m.chunk.chunk_id for m in one.mates
        ]
    finally:
        store.close()
