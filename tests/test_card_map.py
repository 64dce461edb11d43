"""A replica's card map: the documents a question may name, read from the index's card points,
equal to what the coordinator's ledger gives for the same documents, kept current by polling; the
JSON and page layouts of a document read again are dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from doubles.fakes import HashEmbedder
from ocr_engine.schema import EngineInfo, Page
from retrieval.answer.page_layout import PageLayouts
from retrieval.answer.retriever import Retriever
from retrieval.doc_card import CARD_CHUNK_ID, CARD_KIND, DocumentCard
from retrieval.index.qdrant_store import QdrantServerStore
from retrieval.schema import Chunk, Region
from retrieval.search.card_map import CardMap
from retrieval.search.doc_names import Named, NamedDocuments
from server.replica_docs import ReplicaDocs
from server.serve.replica import _forgetting
from tests.test_edge_store import make_chunk

DIM = 32
A, B = "a" * 64, "b" * 64


def _card(doc_id: str, source: str, title: str) -> Chunk:
    return Chunk(
        chunk_id=CARD_CHUNK_ID,
        doc_id=doc_id,
        source=source,
        kind=CARD_KIND,
        text=title,
        embed_text=title,
        regions=[Region(page=1, bbox=(0.0, 0.0, 612.0, 792.0))],
        card=DocumentCard(title=title, organisation=title, aliases=title.lower().split()),
    )


def _index(store: QdrantServerStore, doc_id: str, chunks: list[Chunk]) -> None:
    vectors = HashEmbedder(DIM).embed_documents([c.embed_text for c in chunks])
    store.replace_document(doc_id, chunks, np.asarray(vectors))


def test_the_map_names_the_documents_of_the_index_as_the_ledger_does() -> None:
    store = QdrantServerStore(location=":memory:", dim=DIM)
    cards = CardMap(store, full_s=3600, counts_s=3600)
    assert cards.poll() is False and cards.named() == {}
    _index(store, A, [make_chunk(A, "c0000", [1]), _card(A, "a.pdf", "Kelud Observatory")])
    assert cards.poll() is True
    (named,) = cards.named().values()
    assert named == Named("a.pdf", _card(A, "a.pdf", "Kelud Observatory").card)
    assert NamedDocuments(cards.named).match("What did Kelud Observatory report?").doc_ids == [A]
    _index(store, B, [make_chunk(B, "c0000", [1])])  # an index from before cards: its name
    assert cards.poll() is True and cards.named()[B] == Named("b.pdf", None)
    assert cards.poll() is False  # nothing changed: one count asked, nothing read
    store.delete_document(A)
    assert cards.poll() is True and list(cards.named()) == [B]


def test_a_card_changed_with_as_many_points_is_read_at_the_full_refresh() -> None:
    store = QdrantServerStore(location=":memory:", dim=DIM)
    _index(store, A, [make_chunk(A, "c0000", [1]), _card(A, "a.pdf", "Old Title")])
    told: list[list[str]] = []
    cards = CardMap(store, full_s=0.0, on_change=told.append)  # every poll reads every card
    cards.poll()
    assert cards.poll() is False and told == []  # read again, nothing changed
    _index(store, A, [make_chunk(A, "c0000", [1]), _card(A, "a.pdf", "New Title")])
    assert cards.poll() is True and told == [[A]]
    card = cards.named()[A].card
    assert card is not None and card.title == "New Title"


def test_documents_read_again_or_removed_are_told_new_ones_not() -> None:
    store = QdrantServerStore(location=":memory:", dim=DIM)
    told: list[list[str]] = []
    cards = CardMap(store, full_s=3600, counts_s=0.0, on_change=told.append)
    _index(store, A, [make_chunk(A, "c0000", [1]), _card(A, "a.pdf", "Kelud")])
    _index(store, B, [make_chunk(B, "c0000", [1]), _card(B, "b.pdf", "Merapi")])
    cards.poll()
    assert told == []
    _index(store, A, [make_chunk(A, f"c{i:04d}", [1]) for i in range(3)] + [_card(A, "a.pdf", "K")])
    store.delete_document(B)  # as many points as before in all: found by the documents' counts
    assert cards.poll() is True and told == [[A, B]]


def test_a_replica_forgets_the_json_and_layouts_of_documents_read_again(tmp_path: Path) -> None:
    loads: list[tuple[str, int]] = []

    def load(doc_id: str, number: int) -> Page:
        loads.append((doc_id, number))
        return Page(number=number, width=612, height=792, engine=EngineInfo(name="test"))

    layouts = PageLayouts(load)
    docs = ReplicaDocs(
        shared=None,
        cache_root=tmp_path,
        cache_bytes=1 << 20,
        coordinator_url=None,
        api_key=None,
        object_store_url=None,
    )
    cached = tmp_path / "documents" / f"{A}.json"
    cached.write_text("{}")
    (tmp_path / "documents" / f"{B}.json").write_text("{}")
    for doc_id in (A, B):
        layouts.heading(doc_id, 1, "Title", 100.0)
    store = QdrantServerStore(location=":memory:", dim=DIM)
    _forgetting(docs, Retriever(HashEmbedder(DIM), store, layout=layouts))([A])
    assert not cached.exists() and (tmp_path / "documents" / f"{B}.json").exists()
    for doc_id in (A, B):
        layouts.heading(doc_id, 1, "Title", 100.0)
    assert loads == [(A, 1), (B, 1), (A, 1)]  # A's page read again, B's kept
    docs.close()


def test_a_document_whose_only_point_is_its_card_is_named_once_its_chunks_are_in() -> None:
    """Ingest writes a document's card point once its first pages are read, its chunks with its
    last page. Until they are in, it has nothing to search: a name would only take the
    question's name words from the documents that can answer (the ledger names only finished
    documents too)."""
    store = QdrantServerStore(location=":memory:", dim=DIM)
    told: list[list[str]] = []
    cards = CardMap(store, full_s=3600, counts_s=0.0, on_change=told.append)
    _index(store, B, [make_chunk(B, "c0000", [1]), _card(B, "b.pdf", "Merapi")])
    early = _card(A, "a.pdf", "Kelud Observatory")
    store.upsert([early], np.asarray(HashEmbedder(DIM).embed_documents([early.embed_text])))
    assert cards.poll() is True and list(cards.named()) == [B]
    assert NamedDocuments(cards.named).match("What did Kelud Observatory report?").doc_ids == []
    assert cards.poll() is False  # still only its card: still unnamed, nothing told
    _index(store, A, [make_chunk(A, "c0000", [1]), _card(A, "a.pdf", "Kelud Observatory")])
    assert cards.poll() is True and sorted(cards.named()) == [A, B] and told == []
    assert NamedDocuments(cards.named).match("What did Kelud Observatory report?").doc_ids == [A]
