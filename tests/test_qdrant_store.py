"""The Qdrant server store in qdrant-client's local mode, and the store contract on both stores."""

from __future__ import annotations

import gc
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from retrieval.index.edge_store import EdgeStore
from retrieval.index.qdrant_requests import index_params, qdrant_filter
from retrieval.index.qdrant_store import QdrantServerStore
from retrieval.index.store import StoreConfigError, StoreUnavailableError, VectorStore
from retrieval.index.store_common import PAYLOAD_INDEXES, VECTOR_NAME, stale_filter
from retrieval.schema import Chunk, SearchFilter
from server.services import open_store
from server.settings import Settings
from tests.test_edge_store import CHUNKS, DIM, DOC_A, DOC_B, VECTORS, keys, make_chunk

StoreFactory = Callable[[Path], VectorStore]

FACTORIES: dict[str, StoreFactory] = {
    "edge": lambda tmp: EdgeStore(tmp / "edge", DIM),
    "qdrant-memory": lambda tmp: QdrantServerStore(location=":memory:", dim=DIM),
    "qdrant-path": lambda tmp: QdrantServerStore(path=tmp / "qdrant", dim=DIM),
}


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    s = FACTORIES[request.param](tmp_path)
    s.upsert(CHUNKS, VECTORS)
    yield s
    s.close()


# the store contract, on every implementation ----------------------------------------------------


def test_it_is_a_vector_store(store: VectorStore) -> None:
    assert isinstance(store, VectorStore)
    assert store.dim == DIM


def test_search_finds_the_nearest_chunk_first(store: VectorStore) -> None:
    for chunk, vector in zip(CHUNKS, VECTORS, strict=True):
        results = store.search(vector, 3)
        assert len(results) == 3
        assert keys(results)[0] == (chunk.doc_id, chunk.chunk_id)
        assert results[0].score == pytest.approx(1.0, abs=1e-5)
        assert results[0].chunk == chunk
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert store.search(VECTORS[0], 0) == []


def test_filters_by_document_and_page_range(store: VectorStore) -> None:
    query = VECTORS[0]
    only_b = store.search(query, 10, SearchFilter(doc_ids=[DOC_B]))
    assert set(keys(only_b)) == {(DOC_B, "c0000"), (DOC_B, "c0001")}
    pages_3_to_4 = store.search(query, 10, SearchFilter(page_from=3, page_to=4))
    assert set(keys(pages_3_to_4)) == {(DOC_A, "c0001"), (DOC_B, "c0001")}
    from_page_4 = store.search(query, 10, SearchFilter(page_from=4))
    assert set(keys(from_page_4)) == {(DOC_A, "c0002"), (DOC_B, "c0001")}
    both = store.search(query, 10, SearchFilter(doc_ids=[DOC_A], page_from=2))
    assert set(keys(both)) == {(DOC_A, "c0001"), (DOC_A, "c0002")}
    assert store.search(query, 10, SearchFilter(doc_ids=[])) == []
    assert store.search(query, 10, SearchFilter(doc_ids=["x" * 64])) == []


def test_counts_and_document_ids(store: VectorStore) -> None:
    assert store.count() == len(CHUNKS)
    assert (store.count(DOC_A), store.count(DOC_B), store.count("none")) == (3, 2, 0)
    assert store.doc_ids() == {DOC_A: 3, DOC_B: 2}


def test_delete_document(store: VectorStore) -> None:
    assert store.delete_document(DOC_A) == 3
    assert store.count(DOC_A) == 0
    assert store.count() == 2
    assert store.doc_ids() == {DOC_B: 2}
    assert store.delete_document(DOC_A) == 0
    assert {doc for doc, _ in keys(store.search(VECTORS[0], 10))} == {DOC_B}


def test_reupsert_does_not_duplicate(store: VectorStore) -> None:
    store.upsert(CHUNKS, VECTORS)
    assert store.count() == len(CHUNKS)
    assert store.doc_ids() == {DOC_A: 3, DOC_B: 2}


def test_replace_document_drops_stale_chunks(store: VectorStore) -> None:
    store.replace_document(DOC_A, CHUNKS[:1], VECTORS[:1])
    assert store.count(DOC_A) == 1
    assert store.chunks(DOC_A) == CHUNKS[:1]
    assert store.count(DOC_B) == 2
    with pytest.raises(ValueError):
        store.replace_document(DOC_B, CHUNKS[:1], VECTORS[:1])
    store.replace_document(DOC_A, [], np.zeros((0, DIM), dtype=np.float32))
    assert store.count(DOC_A) == 0 and store.count(DOC_B) == 2


def version_of(doc_id: str, n: int, tag: str) -> list[Chunk]:
    """`n` chunks of one document whose text says which version they belong to."""
    chunks = [make_chunk(doc_id, f"c{i:04d}", [i + 1]) for i in range(n)]
    return [c.model_copy(update={"text": f"{tag} {c.chunk_id}"}) for c in chunks]


def test_a_search_never_sees_neither_or_both_versions(store: VectorStore) -> None:
    doc = "d" * 64
    old, new = version_of(doc, 5, "old"), version_of(doc, 3, "new")
    rng = np.random.default_rng(1)
    old_vectors = rng.normal(size=(5, DIM)).astype(np.float32)
    new_vectors = rng.normal(size=(3, DIM)).astype(np.float32)
    store.replace_document(doc, old, old_vectors)
    seen: list[tuple[str, ...]] = []
    done = threading.Event()

    def search_while_replacing() -> None:
        while not done.is_set():
            hits = store.search(VECTORS[0], 20, SearchFilter(doc_ids=[doc]))
            seen.append(tuple(sorted(h.chunk.text for h in hits)))

    reader = threading.Thread(target=search_while_replacing)
    reader.start()
    try:
        for i in range(20):
            chunks, vectors = (new, new_vectors) if i % 2 == 0 else (old, old_vectors)
            store.replace_document(doc, chunks, vectors)
    finally:
        done.set()
        reader.join()
    allowed = {tuple(sorted(c.text for c in old)), tuple(sorted(c.text for c in new))}
    assert seen and set(seen) <= allowed


def test_chunks_of_a_document_in_id_order(store: VectorStore) -> None:
    assert store.chunks(DOC_A) == CHUNKS[:3]
    assert store.chunks("none") == []


def test_bad_vectors_are_refused(store: VectorStore) -> None:
    with pytest.raises(ValueError):
        store.upsert(CHUNKS, VECTORS[:2])
    with pytest.raises(ValueError):
        store.search(np.zeros(DIM + 1, dtype=np.float32), 3)


def test_a_closed_store_refuses_every_call(store: VectorStore) -> None:
    store.flush()
    store.close()
    store.close()
    for call in (
        store.count,
        store.doc_ids,
        store.flush,
        lambda: store.search(VECTORS[0], 3),
        lambda: store.upsert(CHUNKS, VECTORS),
        lambda: store.delete_document(DOC_A),
        lambda: store.chunks(DOC_A),
    ):
        with pytest.raises(StoreUnavailableError, match="closed"):
            call()


# the server store ------------------------------------------------------------------------------


def test_both_stores_give_the_same_results(tmp_path: Path) -> None:
    more = [make_chunk(DOC_A, f"c{i:04d}", [1 + i % 7]) for i in range(3, 40)]
    chunks = CHUNKS + more
    vectors = np.random.default_rng(7).normal(size=(len(chunks), DIM)).astype(np.float32)
    queries = np.random.default_rng(8).normal(size=(10, DIM)).astype(np.float32)
    flt = SearchFilter(doc_ids=[DOC_A], page_from=2, page_to=5)
    with (
        EdgeStore(tmp_path / "edge", DIM) as edge,
        QdrantServerStore(location=":memory:", dim=DIM) as server,
    ):
        for s in (edge, server):
            s.upsert(chunks, vectors)
        for query in queries:
            for f in (None, flt):
                a, b = edge.search(query, 8, f), server.search(query, 8, f)
                assert keys(a) == keys(b)
                assert [x.score for x in a] == pytest.approx([x.score for x in b], abs=1e-5)
        assert edge.doc_ids() == server.doc_ids()
        assert edge.chunks(DOC_A) == server.chunks(DOC_A)


def test_persists_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    store = QdrantServerStore(path=path, dim=DIM, collection="kept")
    store.upsert(CHUNKS, VECTORS)
    before = [keys(store.search(v, 3)) for v in VECTORS]
    store.close()
    with QdrantServerStore(path=path, dim=DIM, collection="kept") as reopened:
        assert reopened.doc_ids() == {DOC_A: 3, DOC_B: 2}
        assert [keys(reopened.search(v, 3)) for v in VECTORS] == before


# qdrant-client leaves the lock file of a refused local folder open until it is collected
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_folder_held_by_another_client_is_unavailable(tmp_path: Path) -> None:
    with QdrantServerStore(path=tmp_path / "qdrant", dim=DIM):
        with pytest.raises(StoreUnavailableError, match="already accessed by another instance"):
            QdrantServerStore(path=tmp_path / "qdrant", dim=DIM)
        gc.collect()


def test_a_collection_of_another_size_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    QdrantServerStore(path=path, dim=DIM).close()
    with pytest.raises(StoreConfigError, match=f"holds {DIM}-dim vectors, the embedder makes 16"):
        QdrantServerStore(path=path, dim=16)
    with QdrantServerStore(path=path, dim=16, collection="other") as other:
        assert other.count() == 0


def test_a_collection_not_made_by_folio_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    client = QdrantClient(path=str(path))
    client.create_collection("plain", vectors_config=qm.VectorParams(size=DIM, distance="Cosine"))
    client.create_collection(
        "dot", vectors_config={VECTOR_NAME: qm.VectorParams(size=DIM, distance="Dot")}
    )
    client.close()
    with pytest.raises(StoreConfigError, match="no 'dense' vector"):
        QdrantServerStore(path=path, dim=DIM, collection="plain")
    with pytest.raises(StoreConfigError, match="folio needs Cosine"):
        QdrantServerStore(path=path, dim=DIM, collection="dot")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_unavailable() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(StoreUnavailableError, match=f"cannot reach Qdrant at {url}: .*refused"):
        QdrantServerStore(url, dim=DIM, timeout_s=1)


def test_a_silent_server_times_out() -> None:
    with socket.socket() as listener:  # accepts connections (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="timed out"):
            QdrantServerStore(url, dim=DIM, timeout_s=1)
        # the 1 s limit applies, not the client's default of 5 s
        assert time.monotonic() - started < 4.5


def test_constructor_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        QdrantServerStore(dim=DIM)
    with pytest.raises(ValueError, match="exactly one"):
        QdrantServerStore("http://127.0.0.1:1", location=":memory:", dim=DIM)
    with pytest.raises(ValueError, match="http"):
        QdrantServerStore("qdrant:6333", dim=DIM)
    with pytest.raises(ValueError, match="dim"):
        QdrantServerStore(location=":memory:", dim=0)


def test_server_payload_indexes_and_filters_are_valid_models() -> None:
    assert index_params(PAYLOAD_INDEXES["doc_id"]) == qm.KeywordIndexParams(type="keyword")
    pages = index_params(PAYLOAD_INDEXES["pages"])
    assert isinstance(pages, qm.IntegerIndexParams) and pages.lookup and pages.range
    stale = qdrant_filter(stale_filter(DOC_A, ["id-1", "id-2"]))
    assert stale.must_not == [qm.HasIdCondition(has_id=["id-1", "id-2"])]


# settings pick the store -----------------------------------------------------------------------


def test_settings_choose_edge_or_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FOLIO_QDRANT_URL", raising=False)
    edge = open_store(Settings(data_dir=tmp_path), DIM)
    try:
        assert isinstance(edge, EdgeStore) and edge.path == tmp_path / "index"
    finally:
        edge.close()
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("FOLIO_QDRANT_URL", url)
    monkeypatch.setenv("FOLIO_QDRANT_COLLECTION", "docs_v2")
    settings = Settings(data_dir=tmp_path)
    assert (settings.qdrant_url, settings.qdrant_collection) == (url, "docs_v2")
    with pytest.raises(StoreUnavailableError, match=url):
        open_store(settings, DIM)


@pytest.mark.parametrize(
    ("name", "value"),
    [("FOLIO_QDRANT_URL", "qdrant:6333"), ("FOLIO_QDRANT_COLLECTION", "has space")],
)
def test_bad_qdrant_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name.removeprefix("FOLIO_").lower()):
        Settings()
