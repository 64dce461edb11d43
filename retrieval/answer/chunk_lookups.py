"""The answer's lookups served by an index: a chunk's neighbours in its document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from retrieval.answer import (
    FOLLOW_AHEAD,
    TABLE_REACH,
    Lookups,
    around_ids,
    following_ids,
    table_pieces,
    table_unit,
)
from retrieval.answer.page_layout import Layout
from retrieval.doc_card import DocumentCard
from retrieval.index.store import VectorStore
from retrieval.schema import Chunk

__all__ = ["StoreLookups", "store_lookups"]


@dataclass(frozen=True)
class StoreLookups:
    """A chunk's neighbours, read from the `store` by their ids."""

    store: VectorStore

    def table_rest(self, chunk: Chunk) -> list[Chunk]:
        """The other row groups of `chunk`'s table on its page."""
        return table_pieces(chunk, self._nearby(chunk, TABLE_REACH))

    def unit_of(self, chunk: Chunk) -> str:
        """The unit a table chunk's neighbours state (`table_unit`)."""
        return table_unit(chunk, self._nearby(chunk, TABLE_REACH + 1))

    def following(self, chunk: Chunk) -> list[Chunk]:
        """The few chunks after `chunk` in its document."""
        return self.store.get(chunk.doc_id, following_ids(chunk.chunk_id, FOLLOW_AHEAD))

    def _nearby(self, chunk: Chunk, reach: int) -> list[Chunk]:
        return self.store.get(chunk.doc_id, around_ids(chunk.chunk_id, reach))


def store_lookups(
    store: VectorStore,
    layout: Layout | None,
    card_of: Callable[[str], DocumentCard | None] | None,
) -> Lookups:
    """The answer's `Lookups` over an index, its page layouts and its documents' cards."""
    near = StoreLookups(store)
    return Lookups(
        layout=layout,
        following=near.following,
        table_rest=near.table_rest,
        unit_of=near.unit_of,
        card_of=card_of,
    )
