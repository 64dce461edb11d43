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

The feeder thread's methods are in `ingest.pipeline.feeding`, the indexer thread's in
`ingest.pipeline.indexing`; the embedding (main thread) is here.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ingest.ledger.files import DocumentFiles
from ingest.ledger.ledger import Ledger
from ingest.ledger.records import DocStatus, DocumentRecord
from ingest.pipeline.doc_run import STOP, Batch, DocRun
from ingest.pipeline.embed_cache import EmbeddingCache
from ingest.pipeline.events import EventHub, EventKind, IngestEvent
from ingest.pipeline.extractor import Extractor
from ingest.pipeline.feeding import FeedStage
from ingest.pipeline.indexing import IndexStage
from ingest.pipeline.options import FileResult, FileStatus, IngestOptions, image_only_pages
from ingest.pipeline.passwords import PasswordBook
from ingest.pipeline.staging import ChunkStaging
from retrieval.index import Embedder, VectorStore
from retrieval.schema import Chunk

__all__ = ["ChunkHook", "FileResult", "FileStatus", "IngestOptions", "Ingestor", "image_only_pages"]

log = logging.getLogger(__name__)


class ChunkHook(Protocol):
    """Shown each slice of a document's chunks once embedded, before they are staged; closed with
    the ingestor (`server/services.py` passes one that embeds what the answers will embed)."""

    def embedded(self, chunks: Sequence[Chunk]) -> None: ...

    def close(self) -> None: ...


class Ingestor(FeedStage, IndexStage):
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
                path=doc.path,
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
