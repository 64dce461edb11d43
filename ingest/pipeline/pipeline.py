"""Process queued documents: extract -> chunk -> embed -> index, as bounded stages that overlap.

    feeder thread         main thread           indexer thread
    extract (worker) ->   embed (torch)    ->   replace points, write JSON, ledger
    + furniture + chunk   [queue: windows]      [queue: one document]

A document is read a window of pages at a time, so memory does not grow with its page count
(only its chunks and vectors, ~20 kB a page, are kept until its points are written in one
`replace_document`); its card point goes ahead once the pages its card is read from are read
(`ingest.cards.card_ahead`), and is written again, same id, with the rest. Extraction of the next
windows and documents goes on while the current ones are embedded; each queue holds a few
windows, so a slow stage holds the others back.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ingest.cards.card_ahead import CardAhead
from ingest.cards.cards import CardBuilder, card_chunk
from ingest.ledger.files import DocumentFiles
from ingest.ledger.ledger import Ledger
from ingest.ledger.records import (
    DocStatus,
    DocumentRecord,
    PageRecord,
    Timings,
    UnknownDocumentError,
    Versions,
)
from ingest.pipeline.chunker import ChunkStream
from ingest.pipeline.doc_run import STOP, Batch, DocRun, End, folio_version, ocr_note
from ingest.pipeline.embed_cache import EmbeddingCache
from ingest.pipeline.events import EventHub, EventKind, IngestEvent
from ingest.pipeline.extractor import Extractor, PageRead, WindowResult
from ingest.pipeline.failures import NoTextError, SourceGoneError, classify
from ingest.pipeline.options import (
    FileResult,
    FileStatus,
    IngestOptions,
    image_only_pages,
    windows,
)
from ingest.pipeline.passwords import PasswordBook, fingerprint
from ingest.pipeline.staging import ChunkStaging
from ocr_engine.engines import engine_key, sent_to_ocr
from ocr_engine.layout import FurnitureMarker
from ocr_engine.schema import SCHEMA_VERSION, BlockType, Document, Page, PageStatus
from retrieval.index import Embedder, VectorStore
from retrieval.schema import CHUNK_SCHEMA_VERSION, Chunk

__all__ = ["ChunkHook", "FileResult", "FileStatus", "IngestOptions", "Ingestor", "image_only_pages"]

log = logging.getLogger(__name__)


class ChunkHook(Protocol):
    """Shown each slice of a document's chunks once embedded, before they are staged; closed with
    the ingestor (`server/services.py` passes one that embeds what the answers will embed)."""

    def embedded(self, chunks: Sequence[Chunk]) -> None: ...

    def close(self) -> None: ...


class Ingestor:
    """Processes documents the ledger has queued; one `run` at a time. With an `on_embedded`
    hook, each slice of chunks is shown to it as it is embedded (FOLIO_ANSWER_SENTENCES=ingest
    embeds the sentences and table cells an extractive answer may embed, so that `/query` reads
    them instead)."""

    def __init__(
        self,
        ledger: Ledger,
        files: DocumentFiles,
        embedder: Embedder,
        store: VectorStore,
        options: IngestOptions | None = None,
        *,
        cache_path: Path | None = None,
        embed_cache: EmbeddingCache | None = None,
        on_embedded: ChunkHook | None = None,
        events: EventHub | None = None,
    ) -> None:
        self.ledger = ledger
        self.files = files
        self.embedder = embedder
        self.store = store
        self.options = options or IngestOptions()
        self.events = events or EventHub()
        self.embed_cache = embed_cache
        self.on_embedded = on_embedded
        self.passwords = PasswordBook(self.options.passwords_file)
        self.extractor = Extractor(
            self.options.extract,
            cache_path=cache_path,
            limits=self.options.limits,
            processes=self.options.extract_processes,
            on_page=self._page_read,
        )
        self._run_lock = threading.Lock()
        self._reading: dict[str, DocRun] = {}  # documents whose pages are being read
        self._read_lock = threading.Lock()

    def close(self) -> None:
        self.extractor.close()
        if self.embed_cache is not None:
            self.embed_cache.close()
        if self.on_embedded is not None:
            self.on_embedded.close()

    def run(
        self,
        records: Sequence[DocumentRecord],
        *,
        on_result: Callable[[FileResult], None] | None = None,
        stop: threading.Event | None = None,
    ) -> list[FileResult]:
        """Process these documents; `on_result` is called (in the indexer thread) as each ends."""
        stop = stop or threading.Event()
        results: list[FileResult] = []
        with self._run_lock:
            batches: queue.Queue[Any] = queue.Queue(maxsize=self.options.prefetch)
            finished: queue.Queue[Any] = queue.Queue(maxsize=1)
            started: dict[str, DocRun] = {}

            def index() -> None:
                for item in iter(finished.get, STOP):
                    try:
                        result = self._finish(item.doc)
                        started.pop(item.doc.doc_id, None)
                        results.append(result)
                        if on_result is not None:
                            on_result(result)
                    except Exception:  # left processing: redone by the next recovery
                        log.exception("finishing %s failed", item.doc.record.source)

            feeder = threading.Thread(
                target=self._feed, args=(records, batches, stop, started), name="folio-feed"
            )
            indexer = threading.Thread(target=index, name="folio-index")
            feeder.start()
            indexer.start()
            try:
                for item in iter(batches.get, STOP):
                    if isinstance(item, Batch):
                        self._embed(item)
                    else:
                        finished.put(item)
            except BaseException:
                stop.set()  # the feeder may be waiting on a full queue: let it finish
                while feeder.is_alive() or not batches.empty():
                    with contextlib.suppress(queue.Empty):
                        batches.get(timeout=0.1)
                raise
            finally:
                finished.put(STOP)
                feeder.join()
                indexer.join()
                if started:  # stopped part way: those documents wait for the next run
                    self.ledger.requeue(started)
        return results

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

    # main thread: embedding -------------------------------------------------------------------

    def _embed(self, batch: Batch) -> None:
        doc = batch.doc
        if batch.card is not None and doc.error is None:
            self._write_card(doc, batch.card)
        if doc.error is not None or not batch.chunks:
            if doc.error is None:
                self._progress(doc, batch.last_page)
            return
        step = self.options.embed_slice
        try:
            for start in range(0, len(batch.chunks), step):
                part = batch.chunks[start : start + step]
                began = time.perf_counter()
                vectors = self._vectors(doc, [c.embed_text for c in part])
                if self.on_embedded is not None:
                    self.on_embedded.embedded(part)
                doc.embed_s += time.perf_counter() - began
                if doc.staging is None:
                    doc.staging = ChunkStaging(self.files.root.parent, doc.doc_id, vectors.shape[1])
                doc.staging.add(part, vectors)
                reached = max(r.page for c in part for r in c.regions)
                self._progress(doc, min(reached, batch.last_page))
            self._progress(doc, batch.last_page)
        except Exception as exc:
            doc.error = exc

    def _write_card(self, doc: DocRun, card: Chunk) -> None:
        """The card point into the index and its card into the ledger, while the document is
        still processing: a kill leaves it as any processing document's points are left (the
        next start's recovery removes them, the document is read again); a failure removes it
        with the document's other points (`_failed`)."""
        assert card.card is not None
        try:
            began = time.perf_counter()
            vectors = self._vectors(doc, [card.embed_text])
            doc.embed_s += time.perf_counter() - began
            self.store.upsert([card], vectors)
            self.ledger.set_card(doc.doc_id, card.card)
        except Exception as exc:
            doc.error = exc

    def _vectors(self, doc: DocRun, texts: list[str]) -> np.ndarray:
        """Vectors of `texts`: from the embedding cache where it has them, else the model."""
        if self.embed_cache is None:
            doc.embedded += len(texts)
            return self.embedder.embed_documents(texts)
        model, dim = self.embedder.name, self.embedder.dim
        found = self.embed_cache.get(model, texts, dim)
        vectors = np.empty((len(texts), dim), dtype=np.float32)
        for i, vector in found.items():
            vectors[i] = vector
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            new = self.embedder.embed_documents([texts[i] for i in missing])
            vectors[missing] = new
            self.embed_cache.put(model, [texts[i] for i in missing], new)
        doc.embedded += len(missing)
        doc.reused += len(found)
        return vectors

    def _progress(self, doc: DocRun, reached: int) -> None:
        if reached <= doc.pages_done:
            return
        doc.pages_done = reached  # the ledger's pages_done counts pages read (`_count_read`)
        self._emit(EventKind.progress, doc, stage="embed", done=reached)

    # indexer thread: points, files, ledger ----------------------------------------------------

    def _finish(self, doc: DocRun) -> FileResult:
        if doc.error is None and doc.chunks == 0:
            doc.error = NoTextError(doc.no_text_reason(self.options.extract.ocr))
        if doc.error is not None:
            return self._failed(doc, doc.error)
        try:
            began = time.perf_counter()
            self._write_points(doc)
            index_s = time.perf_counter() - began
            assert doc.writer is not None
            doc.writer.commit()
        except Exception as exc:
            return self._failed(doc, exc)
        errors = list(doc.page_errors)
        if doc.unread:
            listed = ", ".join(map(str, doc.unread))
            note = ocr_note(self.options.extract.ocr)
            errors.append(f"pages {listed}: images without a text layer ({note})")
        status = DocStatus.partial if errors else DocStatus.ok
        timings = self._timings(doc, index_s)
        self.ledger.finish(
            doc.doc_id,
            status,
            pages=doc.pages,
            chunks=doc.chunks,
            errors=errors,
            timings=timings,
            versions=Versions(
                folio=folio_version(),
                document_schema=SCHEMA_VERSION,
                chunk_schema=CHUNK_SCHEMA_VERSION,
                embedder=self.embedder.name,
                engines=sorted(doc.engines),
            ),
            card=doc.described,
        )
        result = FileResult(
            path=doc.record.paths[0] if doc.record.paths else "",
            source=doc.record.source,
            status=FileStatus(status.value),
            doc_id=doc.doc_id,
            pages=doc.pages,
            chunks=doc.chunks,
            error="; ".join(errors) or None,
            seconds=timings.total_s,
        )
        self._emit(EventKind.finished, doc, status=status, done=doc.pages, error=result.error)
        self._discard(doc)
        log.info(
            "%s: %s, %d pages, %d chunks in %.1f s%s",
            status.value,
            result.source,
            result.pages,
            result.chunks,
            result.seconds,
            f" ({result.error})" if result.error else "",
        )
        return result

    def _write_points(self, doc: DocRun) -> None:
        """The staged chunks into the index: one `replace_document` when they fit one slice;
        else the document's old points (if any) go and the slices follow, a few seconds apart."""
        assert doc.staging is not None
        size = self.options.index_slice
        slices = doc.staging.slices(size)
        chunks, vectors = next(slices)
        if doc.staging.count <= size:
            self.store.replace_document(doc.doc_id, chunks, vectors)
            return
        if self.store.count(doc.doc_id):
            self.store.delete_document(doc.doc_id)
        self.store.upsert(chunks, vectors)
        for chunks, vectors in slices:
            self.store.upsert(chunks, vectors)

    @staticmethod
    def _discard(doc: DocRun) -> None:
        if doc.staging is not None:
            doc.staging.remove()

    def _failed(self, doc: DocRun, exc: BaseException) -> FileResult:
        kind, reason = classify(exc)
        self._discard(doc)
        if doc.writer is not None:
            doc.writer.abort()
        retry_at = self.options.retry.retry_at(kind, doc.attempt, time.time())
        if kind.retryable and retry_at is None:
            reason += f" (gave up after {doc.attempt} attempts)"
        try:
            self.store.delete_document(doc.doc_id)  # points of an earlier success, if any
        except Exception as store_exc:  # the reconciliation at the next start removes them
            log.warning("could not remove points of failed %s: %s", doc.doc_id[:12], store_exc)
        self.ledger.fail(
            doc.doc_id, [reason], kind, retry_at=retry_at, timings=self._timings(doc, 0.0)
        )
        named = reason if reason.startswith(doc.record.source) else f"{doc.record.source}: {reason}"
        log.warning("failed: %s", named)
        self._emit(EventKind.finished, doc, status=DocStatus.failed, error=reason)
        return FileResult(
            path=doc.record.paths[0] if doc.record.paths else "",
            source=doc.record.source,
            status=FileStatus.failed,
            doc_id=doc.doc_id,
            pages=doc.pages,
            error=reason,
            seconds=time.perf_counter() - doc.started,
            retry=retry_at is not None,
        )

    def _timings(self, doc: DocRun, index_s: float) -> Timings:
        return Timings(
            extract_s=round(doc.extract_s, 3),
            embed_s=round(doc.embed_s, 3),
            index_s=round(index_s, 3),
            total_s=round(time.perf_counter() - doc.started, 3),
            chunks_embedded=doc.embedded,
            chunks_cached=doc.reused,
        )

    def _emit(
        self,
        kind: EventKind,
        doc: DocRun,
        *,
        stage: str | None = None,
        done: int = 0,
        status: DocStatus | None = None,
        error: str | None = None,
        page: int | None = None,
        engine: str | None = None,
    ) -> None:
        elapsed = time.perf_counter() - doc.started
        self.events.emit(
            IngestEvent(
                kind=kind,
                doc_id=doc.doc_id,
                source=doc.record.source,
                path=doc.record.paths[0] if doc.record.paths else None,
                status=status or (DocStatus.processing if kind is not EventKind.finished else None),
                stage=stage,
                pages_done=done,
                pages_total=doc.pages,
                pages_per_s=round(done / elapsed, 3) if done and elapsed > 0 else None,
                chunks=doc.chunks,
                error=error,
                page=page,
                engine=engine,
            )
        )
