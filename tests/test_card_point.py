"""A document's card point is in the index once the pages its card is read from are in, long
before its last batch; finished, stopped or killed and read again, it ends with one card point."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from doubles.crash_driver import snapshot
from doubles.fakes import HashEmbedder
from ingest.cards.cards import CARD_PAGES
from ingest.ledger.records import DocStatus
from ingest.pipeline.events import EventKind, IngestEvent
from ingest.pipeline.pipeline import IngestOptions
from ocr_engine.options import ExtractOptions, OcrMode
from retrieval.doc_card import CARD_CHUNK_ID, DocumentCard
from retrieval.search.card_map import CardMap
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import fact_pdf

PAGES = CARD_PAGES + 14  # the card is read from the first 12; seven batches of four pages


def _services(data_dir: Path) -> Services:
    options = IngestOptions(
        extract=ExtractOptions(ocr=OcrMode.never), extract_processes=0, window=4
    )
    return build_services(
        Settings(data_dir=data_dir, ocr=OcrMode.never), embedder=HashEmbedder(), options=options
    )


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    sections = [("Eruptions", "Kelud erupted in 2014."), ("Crater", "The crater lake is gone.")]
    pdf = fact_pdf("Kelud Observatory Handbook", sections, filler_pages=PAGES - 1)
    (folder / "kelud.pdf").write_bytes(pdf)
    return folder


class _Watch:
    """Whether the document's card point is in the index when page `AT` has been read, and its
    point count there. Told in the thread that reads pages, it holds the reading there until
    the card point is in (5 s at most): what the document sent ahead of that page is written,
    what comes after it cannot be."""

    AT = PAGES - 2

    def __init__(self, services: Services, stop: threading.Event | None = None) -> None:
        self.services = services
        self.stop = stop
        self.seen: tuple[bool, int] | None = None
        self.ledger_card: DocumentCard | None = None

    def __call__(self, event: IngestEvent) -> None:
        if (
            event.kind is not EventKind.progress
            or event.stage != "extract"
            or event.page != self.AT
        ):
            return
        store = self.services.store
        deadline = time.monotonic() + 5.0
        while not (card := bool(store.get(event.doc_id, [CARD_CHUNK_ID]))):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.seen = (card, store.count(event.doc_id))
        self.ledger_card = self.services.ledger.get(event.doc_id).card
        if self.stop is not None:
            self.stop.set()


def test_the_card_point_is_written_with_the_batch_that_completes_the_card(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    services = _services(tmp_path / "data")
    watch = _Watch(services)
    unsubscribe = services.events.subscribe(watch)
    try:
        services.sync.scan(folder)
        (result,) = services.sync.process_pending()
        assert result.doc_id is not None
        record = services.ledger.get(result.doc_id)
        (card,) = services.store.get(result.doc_id, [CARD_CHUNK_ID])
        points = services.store.count(result.doc_id)
    finally:
        unsubscribe()
        services.close()
    assert result.status == "ok" and result.pages == PAGES
    # page 24 of 26 read: the card point is in, alone (the chunks go in with the last batch)
    assert watch.seen == (True, 1), watch.seen
    # finished: one card point, rewritten with the card the ledger keeps, counted once
    assert points == record.chunks and card.card == record.card
    assert record.card is not None and record.card.title == "Kelud Observatory Handbook"
    # the ledger told what the document is from then on too: what its card says was settled by
    # its first pages (the contents, read from every page, grew with the rest)
    assert watch.ledger_card is not None
    settled = {"contents"}
    assert watch.ledger_card.model_dump(exclude=settled) == record.card.model_dump(exclude=settled)


def test_a_stop_after_the_card_point_then_a_restart_ends_as_a_clean_run(tmp_path: Path) -> None:
    """Stopped once its card point is in, the document waits in the queue with that point; the
    next start's recovery removes it (a killed run's `processing` documents go the same way), and
    the run after gives the points and ledger of a run nobody stopped."""
    folder = _folder(tmp_path)
    clean = _services(tmp_path / "clean")
    try:
        clean.sync.scan(folder)
        clean.sync.process_pending()
    finally:
        clean.close()
    stop = threading.Event()
    services = _services(tmp_path / "data")
    unsubscribe = services.events.subscribe(_Watch(services, stop))
    try:
        services.sync.scan(folder)
        assert services.sync.process_pending(stop=stop) == []
        (record,) = services.ledger.documents()
        assert record.status is DocStatus.queued
        assert services.store.count(record.doc_id) == 1  # its card point, nothing else
        # named by neither the ledger nor a replica's card map: nothing of it to search yet
        cards = CardMap(services.store)
        cards.poll()
        assert services.ledger.named() == {} and cards.named() == {}
    finally:
        unsubscribe()
        services.close()
    restarted = _services(tmp_path / "data")
    try:
        report = restarted.sync.recover()
        assert report.stray == [record.doc_id] and restarted.store.count() == 0
        (result,) = restarted.sync.process_pending()
        assert result.status == "ok"
    finally:
        restarted.close()
    assert snapshot(tmp_path / "data") == snapshot(tmp_path / "clean")


def test_a_slow_read_hands_back_the_card_pages_in_a_request_of_their_own() -> None:
    """CPU OCR reads a scan in requests of 1, 1, 2, 4 then 8 pages: one ends with page 12, so
    the card point does not wait for the pages after it (on a 50-page scan, 9-15 was one)."""
    slow = IngestOptions(extract=ExtractOptions(ocr=OcrMode.auto))
    ranges = slow.extraction_ranges([(1, 50)])
    assert ranges[:6] == [(1, 1), (2, 2), (3, 4), (5, 8), (9, CARD_PAGES), (CARD_PAGES + 1, 15)]
    assert [n for lo, hi in ranges for n in range(lo, hi + 1)] == list(range(1, 51))
    fast = IngestOptions(extract=ExtractOptions(ocr=OcrMode.never))  # one request a window
    assert fast.extraction_ranges([(1, 50)]) == [(1, 50)]
