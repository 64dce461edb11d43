"""What answers need of the indexed documents, behind one protocol: the coordinator's ledger, or a
query replica's map of the index's card points.

A `DocumentCatalog` gives doc_id -> `Named` (file name and card) of every document a question may
name; `retrieval.search.doc_names.NamedDocuments` and the retriever read nothing else of the
documents. The coordinator's `Ledger.named` is one; `CardMap.named` is the other, read from the
index alone: each indexed document's card point (`retrieval.doc_card`, chunk id `card`) holds its
file name and card, written by ingest with the same card the ledger keeps. So the coordinator and a
replica name the same documents for the same index.

A `CardMap` is filled at start and refreshed by `poll()`: when the index's point count changed,
or every `counts_s` (a document grown by what another lost), the documents' point counts are read
(one facet) and the card of each new or changed document is fetched; every `full_s` all cards are
read again (a document re-ingested with as many points as before); `on_change` is told the
documents changed or gone (a replica drops their cached JSON). A document without a card point
(an index written before cards) is named by its file name, read from one of its chunks. A document
whose only point is its card is still being ingested (ingest writes the card point once the first
pages are read, the chunks when the last is): it is named once its chunks are in, as the ledger
names only finished documents, since a name whose document has nothing to search would only
take the question's name words away from the documents that can answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from retrieval.doc_card import CARD_CHUNK_ID
from retrieval.index.store import StoreError, VectorStore
from retrieval.search.doc_names import Named

__all__ = ["CardMap", "CardPoller", "DocumentCatalog"]

log = logging.getLogger(__name__)

FULL_REFRESH_S = 600.0
COUNTS_S = 60.0


class DocumentCatalog(Protocol):
    """The indexed documents a question may name: doc_id -> file name and card."""

    def named(self) -> Mapping[str, Named]: ...


class CardMap:
    """doc_id -> `Named` of every document in `store`, from its card points (`DocumentCatalog`)."""

    def __init__(
        self,
        store: VectorStore,
        *,
        full_s: float = FULL_REFRESH_S,
        counts_s: float = COUNTS_S,
        on_change: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.store = store
        self.full_s = full_s
        self.counts_s = counts_s
        self.on_change = on_change
        """Told the documents a poll found changed (other points) or gone, not new ones."""
        self._named: dict[str, Named] = {}
        self._points: dict[str, int] = {}  # doc_id -> its points when its card was read
        self._count = -1
        self._full_at = 0.0
        self._counts_at = 0.0
        self._lock = threading.Lock()

    def named(self) -> Mapping[str, Named]:
        with self._lock:
            return self._named

    def poll(self) -> bool:
        """Read what changed in the index since the last poll; True when the map changed.
        StoreError when the index cannot be read (the map is kept as it was)."""
        now = time.monotonic()
        full = now >= self._full_at
        count = self.store.count()
        if count == self._count and not full and now < self._counts_at:
            return False
        points = self.store.doc_ids()
        self._counts_at = now + self.counts_s
        known = {} if full else self._points
        changed = [d for d, n in points.items() if known.get(d) != n]
        read = {d: self._read(d, points[d]) for d in changed}
        with self._lock:
            before = self._named
            found = {d: read[d] if d in read else before.get(d) for d in points}
            named = {d: n for d, n in found.items() if n is not None}
            self._named = named
        moved_ids = [
            d
            for d in before
            if d not in named or points[d] != self._points.get(d) or named[d] != before[d]
        ]
        self._points = {d: n for d, n in points.items() if d in named}
        self._count = count
        if moved_ids and self.on_change is not None:
            self.on_change(moved_ids)
        if full:
            self._full_at = now + self.full_s
        moved = named != before
        if moved:
            log.info("the index holds %d documents (%d points)", len(named), count)
        return moved

    def _read(self, doc_id: str, points: int) -> Named | None:
        """The document's name and card from its card point, else its name from a chunk; None
        while its card is its only point (its chunks are not in yet)."""
        cards = self.store.get(doc_id, [CARD_CHUNK_ID])
        if cards and cards[0].card is not None:
            return Named(cards[0].source, cards[0].card) if points > 1 else None
        chunks = self.store.chunks(doc_id)
        if not chunks:
            raise StoreError(f"document {doc_id[:12]} has points but none could be read")
        return Named(chunks[0].source, None)


class CardPoller:
    """Polls a `CardMap` every `every_s` seconds in a thread until stopped; a failed poll is
    logged and tried again at the next, the map kept as it was."""

    def __init__(self, cards: CardMap, every_s: float) -> None:
        self.cards = cards
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="card-poll", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.cards.poll()
            except Exception as exc:  # the index down, a point unreadable: the map is kept
                log.warning(
                    "cannot read the index's cards (tried again in %.0f s): %s", self.every_s, exc
                )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
