"""The feeder thread's part of `Ingestor`: each queued document's pages read a window at a time
(extraction, page furniture, the card point sent ahead), counted as they are read, and chunked
into batches for the embedding."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ingest.cards.card_ahead import CardAhead
from ingest.cards.cards import CardBuilder, card_chunk
from ingest.ledger.files import DocumentFiles
from ingest.ledger.ledger import Ledger
from ingest.ledger.records import DocumentRecord, PageRecord, UnknownDocumentError
from ingest.pipeline.chunker import ChunkStream
from ingest.pipeline.doc_run import STOP, Batch, DocRun, End
from ingest.pipeline.events import EventKind
from ingest.pipeline.extractor import DocInfo, Extractor, PageRead, WindowResult
from ingest.pipeline.failures import SourceGoneError
from ingest.pipeline.options import IngestOptions, image_only_pages, windows
from ingest.pipeline.passwords import PasswordBook, fingerprint
from ocr_engine.engines import engine_key, sent_to_ocr
from ocr_engine.layout import FurnitureMarker
from ocr_engine.schema import BlockType, Document, Page, PageStatus
from retrieval.index import Embedder
from retrieval.schema import Chunk

__all__ = ["FeedStage"]

log = logging.getLogger("ingest.pipeline.pipeline")  # the Ingestor's logger, as before the split


class FeedStage:
    """`Ingestor`'s feeder thread: extraction, furniture, chunks (what it uses of the ingestor is
    declared here; `Ingestor` sets it)."""

    ledger: Ledger
    files: DocumentFiles
    embedder: Embedder
    options: IngestOptions
    passwords: PasswordBook
    extractor: Extractor
    _reading: dict[str, DocRun]
    _read_lock: threading.Lock
    _emit: Callable[..., None]

    # feeder: extraction, furniture, chunks --------------------------------------------------------

    def _feed(
        self,
        records: Sequence[DocumentRecord],
        out: queue.Queue[Any],
        stop: threading.Event,
        started: dict[str, DocRun],
    ) -> None:
        try:
            for record in records:
                if stop.is_set():
                    break
                doc = DocRun(record=record, started=time.perf_counter())
                started[doc.doc_id] = doc
                try:
                    complete = self._feed_document(doc, out, stop)
                except UnknownDocumentError:  # removed from the ledger while it waited
                    started.pop(doc.doc_id, None)
                    continue
                except Exception as exc:
                    doc.error, complete = exc, True
                finally:
                    with self._read_lock:
                        self._reading.pop(doc.doc_id, None)
                if not complete:
                    if doc.writer is not None:
                        doc.writer.abort()
                    break  # stopped: left processing, requeued when the run ends
                out.put(End(doc))
        finally:
            out.put(STOP)

    def _feed_document(self, doc: DocRun, out: queue.Queue[Any], stop: threading.Event) -> bool:
        """Extract and chunk one document into `out`; False when `stop` cut it short."""
        record = doc.record
        source, password, info = self._open_document(doc)
        doc.card = card = CardBuilder(record.source, info.metadata, info.page_count)
        ahead = CardAhead(doc.doc_id, record.source, info.metadata, info.page_count)
        chunker: ChunkStream | None = None
        held: list[Page] = []  # marked pages waiting for the card that labels their chunks

        def chunked(pages: list[Page], last: bool = False) -> list[Chunk]:
            nonlocal chunker
            held.extend(pages)
            if chunker is None and not (last or card.complete(info.page_count)):
                return []
            if chunker is None:
                chunker = ChunkStream(
                    doc.doc_id,
                    record.source,
                    count_tokens=self.embedder.count_tokens,
                    max_tokens=min(self.options.max_tokens, self.embedder.max_tokens),
                    card=card.card(),
                )
            chunks = chunker.feed(held)
            held.clear()
            return chunks + chunker.finish() if last else chunks

        chunk_windows = windows(1, info.page_count, self.options.window)
        parts = self._extracted(doc, source, password, chunk_windows)
        furniture = FurnitureMarker(info.page_count)  # as `folio extract` marks it
        for first, last in chunk_windows:
            ready = self._read_window(doc, parts, first, last, ahead, furniture, out)
            if stop.is_set():
                return False
            if doc.error is not None:  # embedding failed: stop reading
                return True
            chunks = chunked(ready)
            out.put(Batch(doc, chunks, ready[-1].number if ready and not held else 0))
        marked = furniture.finish()
        self._take_pages(doc, marked)
        tail = chunked(marked, last=True)
        out.put(Batch(doc, tail + self._card_point(doc, bool(tail)), info.page_count))
        return True

    def _open_document(self, doc: DocRun) -> tuple[Path, str | None, DocInfo]:
        """A document's run begun: the ledger told, its stored copy and password found, its pages
        counted, its JSON file opened; returns the copy, the password and what the probe found."""
        record = doc.record
        doc.attempt = self.ledger.start(doc.doc_id)
        source = self._stored_copy(record)
        password = self.passwords.lookup(doc.doc_id, record.paths, record.source)
        self.ledger.set_password_tried(doc.doc_id, fingerprint(password))
        info = self.extractor.probe(source, record.source, password).result()
        doc.pages = info.page_count
        self.ledger.set_page_count(doc.doc_id, info.page_count)
        self._emit(EventKind.started, doc)
        with self._read_lock:
            self._reading[doc.doc_id] = doc
        head = Document(
            doc_id=doc.doc_id,
            source=record.source,
            page_count=info.page_count,
            pages=[],
            metadata=info.metadata,
        )
        doc.writer = self.files.writer(head)
        return source, password, info

    def _read_window(
        self,
        doc: DocRun,
        parts: Iterator[WindowResult],
        first: int,
        last: int,
        ahead: CardAhead,
        furniture: FurnitureMarker,
        out: queue.Queue[Any],
    ) -> list[Page]:
        """The pages `first`..`last` from the extraction results: timed, warned of, counted, the
        card point sent ahead when they complete it; returns those marked (ready to chunk)."""
        read = 0
        ready: list[Page] = []
        while read < last - first + 1:
            result = next(parts)
            doc.extract_s += result.seconds
            doc.warnings.extend(w for w in result.warnings if w not in doc.warnings)
            read += len(result.pages)
            if (early := ahead.feed(result.pages)) is not None:
                out.put(Batch(doc, [], 0, card=early))  # written at once (`_write_card`)
            # marked pages are written as they come (the live page cards read them); the
            # last pages wait for the evidence after them, whichever way pages are grouped
            if marked := furniture.feed(result.pages):
                self._take_pages(doc, marked)
                ready.extend(marked)
            self._count_read(doc, result.pages)  # those no engine told of as it read them
        return ready

    def _page_read(self, read: PageRead) -> None:
        """A page an engine has just read (before the rest of its window): counted, told."""
        with self._read_lock:
            doc = self._reading.get(read.doc_id)
        if doc is not None:
            self._count_read(doc, [read])

    def _count_read(self, doc: DocRun, pages: Sequence[Page | PageRead]) -> None:
        """Pages read, once each: the ledger's `pages_done` and an `extract` progress event for
        each page that was not counted yet."""
        with self._read_lock:
            for page in pages:
                if page.number in doc.read:
                    continue
                doc.read.add(page.number)
                engine = page.engine if isinstance(page, PageRead) else page.engine.name
                self.ledger.set_progress(doc.doc_id, len(doc.read))
                self._emit(
                    EventKind.progress,
                    doc,
                    stage="extract",
                    done=len(doc.read),
                    page=page.number,
                    engine=engine,
                )

    def _card_point(self, doc: DocRun, more: bool) -> list[Chunk]:
        """The document's card as one point, when it has chunks to go with."""
        if doc.card is None or doc.first_page is None or not (more or doc.content):
            return []
        doc.described = doc.card.card()
        return [card_chunk(doc.described, doc.doc_id, doc.record.source, doc.first_page)]

    def _extracted(
        self, doc: DocRun, source: Path, password: str | None, chunk_windows: list[tuple[int, int]]
    ) -> Iterator[WindowResult]:
        """Extraction results in page order, a few requests ahead of the caller."""
        ranges = self.options.extraction_ranges(chunk_windows)
        pending: deque[Future[WindowResult]] = deque()
        name = doc.record.source
        for first, last in ranges:
            pending.append(self.extractor.window(source, name, password, doc.doc_id, first, last))
            if len(pending) > self.options.prefetch:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def _take_pages(self, doc: DocRun, pages: list[Page]) -> None:
        """Page records, the JSON file: everything a window of marked pages is needed for."""
        assert doc.writer is not None
        doc.writer.add(pages)
        if doc.card is not None:
            doc.card.feed(pages)
        if doc.first_page is None and pages:
            doc.first_page = pages[0]
        self.ledger.record_pages(
            doc.doc_id,
            [
                PageRecord(
                    number=p.number,
                    width=p.width,
                    height=p.height,
                    engine=p.engine,
                    status=p.status,
                    route=p.route,
                    errors=[e.message for e in p.errors],
                    blocks=len(p.blocks),
                )
                for p in pages
            ],
        )
        doc.engines.update(engine_key(p.engine) for p in pages)
        texts = [b.type for p in pages for b in p.blocks if b.text.strip()]
        furniture = sum(t in (BlockType.page_header, BlockType.page_footer) for t in texts)
        doc.furniture += furniture
        doc.content += len(texts) - furniture
        doc.ocr_pages += sum(sent_to_ocr(p) for p in pages)
        doc.page_errors.extend(
            f"page {p.number}: {e.message}"
            for p in pages
            if p.status is PageStatus.failed
            for e in p.errors
        )
        doc.unread.extend(image_only_pages(pages))

    def _stored_copy(self, record: DocumentRecord) -> Path:
        """The document's bytes in the data directory, copied from a path that still holds them."""
        stored = self.files.verified_pdf(record.doc_id)
        if stored is not None:
            return stored
        for path in record.paths:
            try:
                copied = self.files.copy_pdf(record.doc_id, Path(path))
            except OSError as exc:
                log.info("cannot read %s: %s", path, exc)
                continue
            if copied is not None:
                return copied
        raise SourceGoneError(
            f"{record.source}: no file holds these bytes any more (changed or deleted before "
            "it was read)"
        )
