"""The Qdrant Edge store, for real in tmp_path, and the retriever on it with the real model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page
from retrieval.answer.retriever import Retriever
from retrieval.index.edge_store import EdgeStore
from retrieval.index.embedder import SentenceTransformerEmbedder
from retrieval.index.store import StoreConfigError, StoreUnavailableError, VectorStore
from retrieval.schema import Chunk, ChunkLine, QueryRequest, Region, SearchFilter
from retrieval.search.search import InvalidQueryError

DIM = 8
DOC_A, DOC_B = "a" * 64, "b" * 64


def make_chunk(doc_id: str, chunk_id: str, pages: list[int]) -> Chunk:
    regions = [
        Region(page=p, bbox=(10.0, 10.0 * i, 100.0, 10.0 * i + 8)) for i, p in enumerate(pages)
    ]
    text = f"{doc_id[:1]} {chunk_id}"
    return Chunk(
        chunk_id=chunk_id,
        doc_id=doc_id,
        source=f"{doc_id[:1]}.pdf",
        kind="text",
        text=text,
        embed_text=text,
        regions=regions,
        lines=[ChunkLine(page=pages[0], bbox=regions[0].bbox, start=0, end=len(text))],
    )


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


CHUNKS = [
    make_chunk(DOC_A, "c0000", [1]),
    make_chunk(DOC_A, "c0001", [2, 3]),
    make_chunk(DOC_A, "c0002", [5]),
    make_chunk(DOC_B, "c0000", [1]),
    make_chunk(DOC_B, "c0001", [4]),
]
VECTORS = unit_vectors(len(CHUNKS))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeStore]:
    with EdgeStore(tmp_path / "index", DIM) as s:
        s.upsert(CHUNKS, VECTORS)
        yield s


def keys(results: list) -> list[tuple[str, str]]:
    return [(r.chunk.doc_id, r.chunk.chunk_id) for r in results]


def test_it_is_a_vector_store(store: EdgeStore) -> None:
    assert isinstance(store, VectorStore)


def test_search_finds_the_nearest_chunk_first(store: EdgeStore) -> None:
    for chunk, vector in zip(CHUNKS, VECTORS, strict=True):
        results = store.search(vector, 3)
        assert keys(results)[0] == (chunk.doc_id, chunk.chunk_id)
        assert results[0].score == pytest.approx(1.0, abs=1e-5)
        assert results[0].chunk == chunk
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_filters_by_document_and_page_range(store: EdgeStore) -> None:
    query = VECTORS[0]
    only_b = store.search(query, 10, SearchFilter(doc_ids=[DOC_B]))
    assert {doc for doc, _ in keys(only_b)} == {DOC_B}
    pages_3_to_4 = store.search(query, 10, SearchFilter(page_from=3, page_to=4))
    assert set(keys(pages_3_to_4)) == {(DOC_A, "c0001"), (DOC_B, "c0001")}
    both = store.search(query, 10, SearchFilter(doc_ids=[DOC_A], page_from=2))
    assert set(keys(both)) == {(DOC_A, "c0001"), (DOC_A, "c0002")}
    assert store.search(query, 10, SearchFilter(doc_ids=[])) == []


def test_delete_document(store: EdgeStore) -> None:
    assert store.delete_document(DOC_A) == 3
    assert store.count(DOC_A) == 0
    assert store.count() == 2
    assert store.doc_ids() == {DOC_B: 2}
    assert store.delete_document(DOC_A) == 0


def test_reupsert_does_not_duplicate(store: EdgeStore) -> None:
    store.upsert(CHUNKS, VECTORS)
    assert store.count() == len(CHUNKS)
    assert store.doc_ids() == {DOC_A: 3, DOC_B: 2}


def test_replace_document_drops_stale_chunks(store: EdgeStore) -> None:
    store.replace_document(DOC_A, CHUNKS[:1], VECTORS[:1])
    assert store.count(DOC_A) == 1
    assert store.chunks(DOC_A) == CHUNKS[:1]
    with pytest.raises(ValueError):
        store.replace_document(DOC_B, CHUNKS[:1], VECTORS[:1])


def test_chunks_of_a_document_in_id_order(store: EdgeStore) -> None:
    assert store.chunks(DOC_A) == CHUNKS[:3]
    assert store.chunks("none") == []


def test_persists_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "index"
    store = EdgeStore(path, DIM)
    store.upsert(CHUNKS, VECTORS)
    before = [(keys(r), [x.score for x in r]) for r in (store.search(v, 3) for v in VECTORS)]
    store.close()
    with pytest.raises(StoreUnavailableError):
        store.count()
    with EdgeStore(path, DIM) as reopened:
        assert reopened.count() == len(CHUNKS)
        after = [(keys(r), [x.score for x in r]) for r in (reopened.search(v, 3) for v in VECTORS)]
        assert after == before
        assert reopened.doc_ids() == {DOC_A: 3, DOC_B: 2}


def test_open_errors_are_typed(store: EdgeStore, tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError):
        EdgeStore(tmp_path / "index", DIM)  # held by the fixture's store
    store.close()
    with pytest.raises(StoreConfigError):
        EdgeStore(tmp_path / "index", DIM * 2)


def test_bad_vectors_are_refused(store: EdgeStore) -> None:
    with pytest.raises(ValueError):
        store.upsert(CHUNKS, VECTORS[:2])
    with pytest.raises(ValueError):
        store.search(np.zeros(DIM + 1, dtype=np.float32), 3)


# the retriever with the real model -------------------------------------------------------------


def report_document() -> Document:
    def block(i: int, kind: BlockType, text: str, y: float, level: int | None = None) -> Block:
        bbox = (72.0, y, 72.0 + 5 * len(text), y + 12)
        line = Line(text=text, bbox=bbox)
        return Block(id=f"p1-b{i}", type=kind, bbox=bbox, text=text, level=level, lines=[line])

    paragraphs = [
        (BlockType.section_header, "Financial results", 1),
        (BlockType.text, "Revenue grew to 12.5 million euros in 2023.", None),
        (BlockType.section_header, "People", 1),
        (BlockType.text, "Headcount rose to 140 employees during the year.", None),
        (BlockType.section_header, "Environment", 1),
        (BlockType.text, "Carbon emissions fell by a third thanks to solar panels.", None),
    ]
    blocks = [block(i, k, t, 72.0 + 20 * i, lvl) for i, (k, t, lvl) in enumerate(paragraphs)]
    page = Page(number=1, width=612, height=792, engine=EngineInfo(name="test"), blocks=blocks)
    return Document(doc_id="c" * 64, source="annual.pdf", page_count=1, pages=[page])


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_retriever_answers_with_cited_hits(
    tmp_path: Path, embedder: SentenceTransformerEmbedder
) -> None:
    doc = report_document()
    chunks = chunk_document(doc, count_tokens=embedder.count_tokens, max_tokens=embedder.max_tokens)
    with EdgeStore(tmp_path / "index", embedder.dim) as store:
        store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
        retriever = Retriever(embedder, store, page_hits=False)  # every chunk is on page 1
        response = retriever.query(QueryRequest(question="How many employees are there?", top_k=2))
        assert len(response.hits) == 2
        top = response.hits[0]
        assert top.text == "Headcount rose to 140 employees during the year."
        assert (top.source, top.page, top.section_path) == ("annual.pdf", 1, ["People"])
        assert response.answer == "Headcount rose to 140 employees during the year. [1]"
        assert response.citations[0].bbox == top.regions[0].bbox
        filtered = retriever.query(QueryRequest(question="employees", doc_ids=["f" * 64]))
        assert filtered.hits == [] and filtered.citations == []
        with pytest.raises(InvalidQueryError):
            retriever.query(QueryRequest(question="employees", page_from=3, page_to=2))


def test_equal_scores_come_in_document_and_chunk_order(tmp_path: Path) -> None:
    """RRF gives many equal scores; the engine's own order of them is not fixed, so the same
    question could cite another page after a restart."""
    same = unit_vectors(1, seed=7)[0]
    chunks = [make_chunk(doc, cid, [1]) for doc in (DOC_B, DOC_A) for cid in ("c0003", "c0001")]
    with EdgeStore(tmp_path / "index", DIM) as s:
        s.upsert(chunks, np.stack([same] * len(chunks)))
        found = s.search(same, 4)
    assert len({round(h.score, 6) for h in found}) == 1
    assert [(h.chunk.doc_id, h.chunk.chunk_id) for h in found] == [
        (DOC_A, "c0001"),
        (DOC_A, "c0003"),
        (DOC_B, "c0001"),
        (DOC_B, "c0003"),
    ]
