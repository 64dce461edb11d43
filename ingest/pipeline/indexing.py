"""The indexer thread's part of `Ingestor`: a document's staged chunks written to the index, its
JSON file committed and its ledger record finished, or everything of it undone when it failed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ingest.ledger.ledger import Ledger
from ingest.ledger.records import DocStatus, Timings, Versions
from ingest.pipeline.doc_run import DocRun, folio_version, ocr_note
from ingest.pipeline.events import EventKind
from ingest.pipeline.failures import NoTextError, classify
from ingest.pipeline.options import FileResult, FileStatus, IngestOptions
from ocr_engine.schema import SCHEMA_VERSION
from retrieval.index import Embedder, VectorStore
from retrieval.schema import CHUNK_SCHEMA_VERSION

__all__ = ["IndexStage"]

log = logging.getLogger("ingest.pipeline.pipeline")  # the Ingestor's logger, as before the split


class IndexStage:
    """`Ingestor`'s indexer thread: points, files, ledger (what it uses of the ingestor is
    declared here; `Ingestor` sets it)."""

    ledger: Ledger
    embedder: Embedder
    store: VectorStore
    options: IngestOptions
    _emit: Callable[..., None]

    def reading(self, engines: list[str] | None = None) -> Versions:
        """The versions this code reads a document with; `engines` are its pages' engine keys
        (by default the text layer's, whose new versions read every text-layer page anew)."""
        if engines is None:
            from ocr_engine.engines import PyMuPDFEngine, engine_key

            engines = [engine_key(PyMuPDFEngine().info)]
        return Versions(
            folio=folio_version(),
            document_schema=SCHEMA_VERSION,
            chunk_schema=CHUNK_SCHEMA_VERSION,
            embedder=self.embedder.name,
            extraction=self.options.extract.extraction_version,
            engines=engines,
        )

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
            versions=self.reading(sorted(doc.engines)),
            card=doc.described,
        )
        result = FileResult(
            path=doc.path or "",
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
        if doc.record.chunks > 0:  # read again (an upgrade, --force): the earlier reading stays
            return self._kept(doc, reason)
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
            path=doc.path or "",
            source=doc.record.source,
            status=FileStatus.failed,
            doc_id=doc.doc_id,
            pages=doc.pages,
            error=reason,
            seconds=time.perf_counter() - doc.started,
            retry=retry_at is not None,
        )

    def _kept(self, doc: DocRun, reason: str) -> FileResult:
        """A document read again failed: its earlier points, record and JSON stay as they were
        (read again at the next start while its reading is older than the code's)."""
        status = DocStatus.partial if doc.record.errors else DocStatus.ok
        self.ledger.restore_status(doc.doc_id, status)
        reason = f"reading it again failed, the earlier reading stays searchable: {reason}"
        log.warning("%s: %s", doc.record.source, reason)
        self._emit(EventKind.finished, doc, status=status, error=reason)
        return FileResult(
            path=doc.path or "",
            source=doc.record.source,
            status=FileStatus.failed,
            doc_id=doc.doc_id,
            pages=doc.record.pages,
            chunks=doc.record.chunks,
            error=reason,
            seconds=time.perf_counter() - doc.started,
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
