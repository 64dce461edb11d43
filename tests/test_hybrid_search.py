"""Hybrid search: lexical vectors beside dense ones in both stores, fused by Qdrant (RRF)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from doubles.builders import one_line_chunk
from doubles.fakes import HashEmbedder
from retrieval.answer.retriever import Retriever
from retrieval.index.edge_store import EdgeStore
from retrieval.index.qdrant_store import QdrantServerStore
from retrieval.index.store import StoreConfigError, VectorStore
from retrieval.index.store_common import LEXICAL_NAME, VECTOR_NAME, HybridParams
from retrieval.schema import QueryRequest, Region, SearchFilter

DIM = 16
DOC = "d" * 64
TEXTS = [
    "Capital expenditures were $1,577 million in 2018, paid in cash.",
    "Revenue grew strongly across every segment during the year.",
    "The board declared a quarterly dividend to shareholders.",
    "公司资本支出增长了百分之十二，主要用于新工厂。",
    "Operating margin improved as costs fell in the second half.",
    "Inventories rose because of supply chain delays in Asia.",
]


CHUNKS = [one_line_chunk(i + 1, t, doc_id=DOC, source="report.pdf") for i, t in enumerate(TEXTS)]
# dense vectors that carry no meaning: only the lexical half can find the right chunk
VECTORS = np.eye(len(CHUNKS), DIM, dtype=np.float32)
NOWHERE = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)

FACTORIES: dict[str, Callable[[Path], VectorStore]] = {
    "edge": lambda tmp: EdgeStore(tmp / "edge", DIM),
    "qdrant-memory": lambda tmp: QdrantServerStore(location=":memory:", dim=DIM),
}


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    s = FACTORIES[request.param](tmp_path)
    s.upsert(CHUNKS, VECTORS)
    yield s
    s.close()


def _ids(results: list) -> list[str]:
    return [r.chunk.chunk_id for r in results]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How much were capex purchases, $1577.00 million?", "c0000"),
        ("资本支出是多少", "c0003"),
        ("why did inventories rise", "c0005"),
    ],
)
def test_lexical_half_finds_what_dense_vectors_miss(
    store: VectorStore, question: str, expected: str
) -> None:
    assert _ids(store.search(NOWHERE, 1, text=question)) == [expected]


def test_without_text_the_search_is_dense_only(store: VectorStore) -> None:
    assert _ids(store.search(VECTORS[2], 1)) == ["c0002"]
    assert _ids(store.search(VECTORS[2], 1, text="the of and")) == ["c0002"]  # no terms


def test_fusion_keeps_the_dense_match_beside_the_lexical_one(store: VectorStore) -> None:
    found = _ids(store.search(VECTORS[1], 2, text="dividend shareholders"))
    assert sorted(found) == ["c0001", "c0002"]


def test_chunks_are_fetched_by_id_in_the_order_asked(store: VectorStore) -> None:
    doc = CHUNKS[0].doc_id
    got = store.get(doc, ["c0003", "c0001", "c0999"])
    assert got == [CHUNKS[3], CHUNKS[1]]
    assert store.get("f" * 64, ["c0001"]) == []
    assert store.get(doc, []) == []


def test_filters_apply_to_both_halves(store: VectorStore) -> None:
    flt = SearchFilter(page_from=2, page_to=3)
    found = _ids(store.search(NOWHERE, 6, flt, text="capital expenditures 1,577 dividend"))
    assert found[0] == "c0002"
    assert set(found) <= {"c0001", "c0002"}


def test_both_stores_rank_alike(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(CHUNKS), DIM)).astype(np.float32)
    query = rng.normal(size=DIM).astype(np.float32)
    questions = ["capital expenditures 1,577", "资本支出", "margin costs", "supply chain Asia"]
    rankings = []
    for factory in FACTORIES.values():
        s = factory(tmp_path)
        s.upsert(CHUNKS, vectors)
        rankings.append([_ids(s.search(query, 4, text=q)) for q in questions])
        s.close()
    assert rankings[0] == rankings[1]


def test_lexical_weight_tips_the_fusion(tmp_path: Path) -> None:
    lexical_first = EdgeStore(tmp_path / "w", DIM, hybrid=HybridParams(rrf_k=1, lexical_weight=3.0))
    lexical_first.upsert(CHUNKS, VECTORS)
    assert _ids(lexical_first.search(VECTORS[1], 1, text="dividend"))[0] == "c0002"
    lexical_first.close()
    dense_first = EdgeStore(tmp_path / "w2", DIM, hybrid=HybridParams(rrf_k=1, dense_weight=3.0))
    dense_first.upsert(CHUNKS, VECTORS)
    assert _ids(dense_first.search(VECTORS[1], 1, text="dividend"))[0] == "c0001"
    dense_first.close()


def test_retriever_searches_both_halves_unless_told(tmp_path: Path) -> None:
    embedder = HashEmbedder(dim=DIM)
    store = EdgeStore(tmp_path / "r", DIM)
    store.upsert(CHUNKS, embedder.embed_documents(TEXTS))
    hybrid = Retriever(embedder, store)
    dense = Retriever(embedder, store, lexical=False)
    assert _ids(hybrid.search("资本支出是多少", 1)) == ["c0003"]
    assert _ids(dense.search("资本支出是多少", 1)) != ["c0003"]  # one unknown "word" to a hash
    store.close()


def test_old_edge_index_without_lexical_vectors_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "old"
    config = qe.EdgeConfig(
        vectors={VECTOR_NAME: qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}
    )
    shard = qe.EdgeShard.create(str(path), config)
    point = qe.Point(CHUNKS[0].point_id, {VECTOR_NAME: VECTORS[0].tolist()}, {"doc_id": DOC})
    shard.update(qe.UpdateOperation.upsert_points([point]))
    shard.flush()
    shard.close()
    store = EdgeStore(path, DIM)
    assert store.rebuilt
    assert store.count() == 0  # the ledger's recovery ingests its documents again
    store.upsert(CHUNKS, VECTORS)
    assert _ids(store.search(NOWHERE, 1, text="dividend")) == ["c0002"]
    store.close()
    stored = json.loads((path / "edge_config.json").read_text())
    assert LEXICAL_NAME in stored["sparse_vectors"]
    reopened = EdgeStore(path, DIM)
    assert not reopened.rebuilt
    assert reopened.count() == len(CHUNKS)
    reopened.close()


def test_old_server_collection_without_lexical_vectors_is_refused(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    vectors = {VECTOR_NAME: qm.VectorParams(size=DIM, distance=qm.Distance.COSINE)}
    client.create_collection("folio", vectors_config=vectors)
    client.close()
    with pytest.raises(StoreConfigError, match=LEXICAL_NAME):
        QdrantServerStore(path=tmp_path / "q", dim=DIM)


# the first three chunks moved to page 1, so it holds three and pages 4-6 one each
SAME_PAGE = [
    c.model_copy(update={"regions": [Region(page=1, bbox=c.regions[0].bbox)]}) for c in CHUNKS[:3]
]
PAGE_QUESTION = "capital expenditures revenue dividend inventories"


def _three_on_page_one(tmp_path: Path) -> tuple[HashEmbedder, EdgeStore]:
    embedder = HashEmbedder(dim=DIM)
    store = EdgeStore(tmp_path / "p", DIM)
    store.upsert([*SAME_PAGE, *CHUNKS[3:]], embedder.embed_documents(TEXTS))
    return embedder, store


def test_retriever_returns_the_best_chunk_of_each_page(tmp_path: Path) -> None:
    embedder, store = _three_on_page_one(tmp_path)
    pages = [s.chunk.page for s in Retriever(embedder, store).search(PAGE_QUESTION, 3)]
    assert len(pages) == len(set(pages)) == 3
    every = Retriever(embedder, store, page_hits=False).search(PAGE_QUESTION, 6)
    assert [s.chunk.page for s in every].count(1) == 3
    store.close()


def test_a_search_held_to_one_page_still_returns_top_k_chunks(tmp_path: Path) -> None:
    embedder, store = _three_on_page_one(tmp_path)
    on_one = SearchFilter(page_from=1, page_to=1)
    held = Retriever(embedder, store).search(PAGE_QUESTION, 5, on_one)
    assert sorted(s.chunk.chunk_id for s in held) == sorted(c.chunk_id for c in SAME_PAGE)
    assert held[0].score == max(s.score for s in held)
    every = Retriever(embedder, store).search(PAGE_QUESTION, len(CHUNKS))
    pages = [s.chunk.page for s in every]
    assert len(pages) == len(CHUNKS)
    assert len(set(pages[: len(set(pages))])) == len(set(pages))  # each page once, then the rest
    store.close()


def test_a_lead_in_found_alone_on_its_page_is_cited_with_the_table_stored_after_it(
    tmp_path: Path,
) -> None:
    from tests.test_answer import make_chunk

    lead_in = make_chunk("c0020", [(11, "The following table presents our debt investments:")])
    header = make_chunk("c0021", [(11, "June 30, 2023")])
    table = make_chunk(
        "c0022",
        [(11, "| Corporate bonds | 416,420 |"), (11, "| Government securities | 57,696 |")],
        joiner="\n",
    ).model_copy(update={"kind": "table"})
    chunks = [lead_in, header, table]
    embedder = HashEmbedder(dim=DIM)
    with EdgeStore(tmp_path / "lead", DIM) as store:
        store.upsert(chunks, embedder.embed_documents([c.text for c in chunks]))
        retriever = Retriever(embedder, store, dense_sentences=0)
        question = "What does the following table present about debt investments?"
        response = retriever.query(QueryRequest(question=question, top_k=1))
        assert [h.chunk_id for h in response.hits] == ["c0020"]
        cited = response.citations[0]
        assert cited.quote.startswith("The following table presents our debt investments:")
        assert cited.quote.endswith("| Government securities | 57,696 |")
        assert cited.bbox[3] == table.regions[0].bbox[3]
