"""A document's card ahead of its last batch, read from its first CARD_PAGES pages as the engines
give them.

Ingest marks a page's running headers and footers only once it has read the `RADIUS` (32) pages
after it (`ocr_engine.layout.furniture`), so the card of the marked pages, the one that labels the
chunks (`ingest.pipeline.feeding`), is complete only when page 44 is read, or at the end of a
shorter document: on a 50-page scan, minutes after its first 12 pages are read. The card ahead is
read from copies of the first pages, their furniture marked among themselves (as `folio extract` of
those pages alone marks it), once they are all read. Ingest writes it as the document's card point
at once; the card of the marked pages, with the contents of every page, replaces it under the same
point id with the last batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ingest.cards.cards import CARD_PAGES, CardBuilder, card_chunk
from ocr_engine.layout import mark_furniture
from ocr_engine.schema import BlockType, Page
from retrieval.schema import Chunk

__all__ = ["CardAhead"]

_FURNITURE = (BlockType.page_header, BlockType.page_footer)


class CardAhead:
    """The card point of a document longer than CARD_PAGES, once its first pages are read."""

    def __init__(
        self, doc_id: str, source: str, metadata: Mapping[str, str], page_count: int
    ) -> None:
        self.doc_id = doc_id
        self.source = source
        self.metadata = dict(metadata)
        self.page_count = page_count
        self.pages: dict[int, Page] = {}
        self.done = page_count <= CARD_PAGES  # the card is complete only with its last batch

    def feed(self, pages: Iterable[Page]) -> Chunk | None:
        """The card point once every page it is read from has been fed (once); None before,
        after, or when those pages hold no text to index (the last batch decides then)."""
        if self.done:
            return None
        self.pages.update(
            (p.number, p.model_copy(deep=True)) for p in pages if p.number <= CARD_PAGES
        )
        if len(self.pages) < CARD_PAGES:
            return None
        self.done = True
        first = [self.pages[n] for n in sorted(self.pages)]
        self.pages = {}
        mark_furniture(first)
        if not any(b.text.strip() and b.type not in _FURNITURE for p in first for b in p.blocks):
            return None
        builder = CardBuilder(self.source, self.metadata, self.page_count)
        builder.feed(first)
        return card_chunk(builder.card(), self.doc_id, self.source, first[0])
