"""A replica's card map: the documents a question may name, read from the index's card points,
equal to what the coordinator's ledger gives for the same documents, kept current by polling."""

from __future__ import annotations

import numpy as np

from doubles.fakes import HashEmbedder
from retrieval.card_map import CardMap
from retrieval.doc_card import CARD_CHUNK_ID, CARD_KIND, DocumentCard
from retrieval.doc_names import Named, NamedDocuments
from retrieval.qdrant_store import QdrantServerStore
from retrieval.schema import Chunk, Region
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
    cards = CardMap(store, full_s=3600)
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
    cards = CardMap(store, full_s=0.0)  # every poll reads every card again
    cards.poll()
    _index(store, A, [make_chunk(A, "c0000", [1]), _card(A, "a.pdf", "New Title")])
    assert cards.poll() is True
    card = cards.named()[A].card
    assert card is not None and card.title == "New Title"
