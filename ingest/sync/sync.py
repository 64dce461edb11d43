"""Keep the index equal to the folder: scan, record what changed, process what is new, remove
what is gone. `folio ingest`, the folder watcher and the HTTP API all go through `Sync`.

A scan compares each PDF's size and mtime with the ledger and hashes only files that differ, so
an unchanged folder costs a directory walk. Bytes already known under another name are linked, not
processed (a copy; a rename when the old name vanished). A file whose bytes changed becomes a new
document; the old version keeps its points until the new one is indexed, then it is removed, so
the file never drops out of search. A deleted file's points go, unless another path holds the
same bytes. A document the user removed while its file stayed is remembered by path and bytes
(a tombstone): scans leave the file out, even moved, until other bytes are at its path or it is
restored; naming the file itself (`add_files`, `folio ingest FILE`) restores it.
`recover()` at startup makes the index agree with the ledger after a crash.

The scans themselves (`scan`, `add_files`) are in `ingest.sync.scanning`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ingest.ledger.files import DocumentFiles
from ingest.ledger.ledger import Ledger
from ingest.ledger.records import (
    INDEXED,
    DocStatus,
    DocumentRecord,
    NotRemovedError,
    RemovedFileGoneError,
)
from ingest.pipeline.events import EventHub, EventKind, IngestEvent
from ingest.pipeline.options import IngestSummary
from ingest.pipeline.page_cache import SqlitePageCache
from ingest.pipeline.pipeline import FileResult, FileStatus, Ingestor
from ingest.pipeline.staging import clear_staging
from ingest.sync.scan import RecoveryReport, ScanReport, summarize
from ingest.sync.scanning import ScanStage
from retrieval.index import VectorStore

__all__ = ["Sync"]

log = logging.getLogger(__name__)


class Sync(ScanStage):
    """The ledger, the index and the files of `DATA_DIR`, kept in step with the folders."""

    def __init__(
        self,
        ledger: Ledger,
        files: DocumentFiles,
        store: VectorStore,
        ingestor: Ingestor,
        *,
        events: EventHub | None = None,
        cache: SqlitePageCache | None = None,
        reread_older: bool = True,
    ) -> None:
        self.ledger = ledger
        self.files = files
        self.store = store
        self.ingestor = ingestor
        self.events = events or ingestor.events
        self.cache = cache
        self.reread_older = reread_older
        self._lock = threading.RLock()
        self._processing = threading.Lock()  # one pass over the due documents at a time

    # startup ----------------------------------------------------------------------------------

    def recover(self) -> RecoveryReport:
        """Make the index agree with the ledger: redo what a killed process left half done,
        remove points of documents that are not indexed, redo indexed ones whose points are not
        all there, and remove documents no path holds. With `reread_older`, documents an older
        folio read are queued to be read again; their points stay until the new ones replace
        them (a document queued again keeps its points whole across a restart)."""
        with self._lock:
            report = RecoveryReport(interrupted=self.ledger.reset_interrupted())
            self.files.sweep_temporary()
            clear_staging(self.files.root.parent)
            in_index = self.store.doc_ids()
            indexed = {r.doc_id: r.chunks for r in self.ledger.documents(INDEXED)}
            again = {r.doc_id: r.chunks for r in self.ledger.documents(DocStatus.queued)}
            for doc_id, count in in_index.items():
                if doc_id not in indexed and again.get(doc_id) != count:
                    self.store.delete_document(doc_id)
                    report.stray.append(doc_id)
            for doc_id, chunks in indexed.items():
                if in_index.get(doc_id, 0) != chunks:
                    if doc_id in in_index:
                        self.store.delete_document(doc_id)
                    report.missing.append(doc_id)
            self.ledger.requeue(report.missing)
            report.removed = self.collect_garbage()
            if self.reread_older:
                report.reread = self._requeue_older()
        if report.interrupted or report.stray or report.missing or report.removed:
            log.info(
                "recovered: %d interrupted, %d stray, %d missing, %d orphaned",
                len(report.interrupted),
                len(report.stray),
                len(report.missing),
                len(report.removed),
            )
        return report

    def _requeue_older(self) -> list[str]:
        """Queue the indexed documents whose reading is older than this code's; their ids."""
        current = self.ingestor.reading()
        older: dict[str, str] = {}
        for record in self.ledger.documents(INDEXED):
            if (why := record.versions.older_than(current)) is not None:
                older[record.doc_id] = why
        if older:
            self.ledger.requeue(older)
            reasons = sorted(set(older.values()))
            log.info(
                "reading again %d document(s) an older folio read (%s); their earlier reading "
                "stays searchable meanwhile (FOLIO_REREAD_OLDER=false leaves them)",
                len(older),
                "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else ""),
            )
        return sorted(older)

    # removal ------------------------------------------------------------------------------------

    def collect_garbage(self) -> list[str]:
        """Remove documents no path holds (and whose newer version is indexed or failed)."""
        with self._lock:
            removed = self.ledger.orphans()
            for doc_id in removed:
                self._remove(doc_id)
        return removed

    def remove(self, doc_id: str) -> DocumentRecord:
        """Remove a document (its points, files and record) whatever holds it; its paths become
        tombstones, so scans leave its files out until they change or it is restored."""
        with self._lock:
            record = self.ledger.get(doc_id)
            self.ledger.tombstones.bury(doc_id)
            if record.status is DocStatus.processing:
                self.ledger.set_uploaded(doc_id, False)
                return record  # the pipeline removes it when it finishes (no path holds it)
            self._remove(doc_id)
            return record

    def restore(self, doc_id: str) -> list[DocumentRecord]:
        """End the removal of `doc_id`: its files are linked (and queued) again from where they
        were; returns what those paths hold now (other bytes, if a file changed meanwhile)."""
        paths = [stone.path for stone in self.ledger.tombstones.of(doc_id)]
        if not paths:
            raise NotRemovedError(doc_id)
        self.ledger.tombstones.drop(paths)
        self.add_files([Path(path) for path in paths])
        held = {r.doc_id for path in paths if (r := self.ledger.path_record(path)) is not None}
        if not held:
            raise RemovedFileGoneError(f"no file is left at {', '.join(paths)}")
        return [self.ledger.get(held_id) for held_id in sorted(held)]

    def _remove(self, doc_id: str) -> None:
        record = self.ledger.find(doc_id)
        self.store.delete_document(doc_id)  # points first: a crash after this is only a record
        self.files.remove(doc_id)
        if self.cache is not None:
            self.cache.drop(doc_id)
        self.ledger.delete(doc_id)
        if record is not None:
            self._emit(EventKind.removed, doc_id, record.source, None)

    # uploads and retries ------------------------------------------------------------------------

    def add_upload(self, data: bytes, name: str) -> DocumentRecord:
        """Record uploaded bytes (kept without a path until removed); queued unless known."""
        doc_id = hashlib.sha256(data).hexdigest()
        self.files.save_pdf(doc_id, data)
        source = os.path.basename(name) or "upload.pdf"
        with self._lock:
            if self.ledger.add(doc_id, source, len(data), uploaded=True):
                self._emit(EventKind.queued, doc_id, source, None)
        return self.ledger.get(doc_id)

    def retry(self, *, include_permanent: bool = False) -> list[str]:
        """Queue failed documents now, ignoring their backoff (all of them with
        `include_permanent`, e.g. after a password was added or an engine was configured)."""
        doc_ids = self.ledger.failed_ids(include_permanent=include_permanent)
        self.ledger.requeue(doc_ids)
        return doc_ids

    def requeue_paths(self, paths: Sequence[str]) -> list[str]:
        """Process again the documents these paths hold (`folio ingest --force`)."""
        doc_ids = sorted({r.doc_id for p in paths if (r := self.ledger.path_record(p)) is not None})
        self.ledger.requeue(doc_ids)
        return doc_ids

    # processing ---------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A pass over the due documents is running."""
        return self._processing.locked()

    def process_pending(
        self,
        *,
        stop: threading.Event | None = None,
        on_result: Callable[[FileResult], None] | None = None,
    ) -> list[FileResult]:
        """Process every document due now (queued, or failed with its retry time come)."""
        with self._processing:
            return self._process_due(stop, on_result)

    def _process_due(
        self, stop: threading.Event | None, on_result: Callable[[FileResult], None] | None
    ) -> list[FileResult]:
        results: list[FileResult] = []
        attempted: set[str] = set()
        while not (stop is not None and stop.is_set()):
            due = [r for r in self._due() if r.doc_id not in attempted]
            if not due:
                break
            attempted.update(r.doc_id for r in due)

            def finished(result: FileResult) -> None:
                self._after(result)
                if on_result is not None:
                    on_result(result)

            results.extend(self.ingestor.run(due, on_result=finished, stop=stop))
        return results

    def _due(self) -> list[DocumentRecord]:
        """Due documents, after re-checking their paths (a file may have changed since its scan),
        smallest file first: a dropped folder's empty or broken files fail at once, not after
        every long report before them, and short files are searchable soonest."""
        due = self.ledger.due()
        stale = []
        for record in due:
            for path in record.paths:
                known = self.ledger.path_record(path)
                try:
                    stat = os.stat(path)
                    current = (stat.st_size, stat.st_mtime_ns)
                except OSError:
                    current = None
                if known is None or current != (known.size, known.mtime_ns):
                    stale.append(Path(path))
        if stale:
            self.add_files(stale)
            due = self.ledger.due()
        return sorted(due, key=lambda record: record.size)

    def _after(self, result: FileResult) -> None:
        """A document is done: drop it if no path holds it now, and older versions it replaced."""
        with self._lock:
            if result.doc_id and self.ledger.is_orphan(result.doc_id):
                self._remove(result.doc_id)
            self.collect_garbage()

    def ingest_paths(
        self,
        paths: Sequence[Path],
        *,
        force: bool = False,
        on_result: Callable[[FileResult], None] | None = None,
        stop: threading.Event | None = None,
        scans: list[ScanReport] | None = None,
    ) -> list[FileResult]:
        """Sync folders and files, then process what is due; one result per file given or found
        (unchanged files included) plus any document processed for another reason (a retry, a
        document a killed run left). The reports of the scans are appended to `scans`."""
        seen: list[str] = []
        unreadable: list[str] = []
        fresh: set[str] = set()  # new or changed in this call, whoever processes them
        for path in paths:
            report = self.scan(path) if path.is_dir() else self.add_files([path])
            if scans is not None:
                scans.append(report)
            unreadable.extend(report.unreadable)
            fresh.update(report.paths)
            if path.is_dir():
                seen.extend(self.ledger.paths_under(report.root))
            else:
                seen.append(os.path.abspath(path))
        seen = list(dict.fromkeys(seen))
        if force:
            self.requeue_paths(seen)
        processed = {r.doc_id: r for r in self.process_pending(on_result=on_result, stop=stop)}
        results: list[FileResult] = []
        reported: set[str] = set()
        for name in seen:
            record = self.ledger.path_record(name)
            if record is None:
                continue
            done = processed.get(record.doc_id)
            if done is not None and record.doc_id not in reported:
                results.append(done.model_copy(update={"path": name}))
            else:
                results.append(self._standing(name, record.doc_id, fresh=name in fresh))
            reported.add(record.doc_id)
        results.extend(r for d, r in processed.items() if d not in reported)
        results.extend(
            FileResult(
                path=path,
                source=os.path.basename(path),
                status=FileStatus.failed,
                error="the file cannot be read",
            )
            for path in unreadable
        )
        return results

    def ingest_summary(
        self,
        paths: Sequence[Path],
        *,
        force: bool = False,
        stop: threading.Event | None = None,
    ) -> IngestSummary:
        """`ingest_paths` with each file counted by what happened to it (what `folio ingest`
        prints, through the API or not)."""
        started = time.perf_counter()
        scans: list[ScanReport] = []
        results = self.ingest_paths(paths, force=force, stop=stop, scans=scans)
        summary = summarize(results, scans)
        summary.seconds = time.perf_counter() - started
        return summary

    def _standing(self, path: str, doc_id: str, *, fresh: bool = False) -> FileResult:
        """A file this call did not process: unchanged, failed earlier and not due for a retry,
        or (`fresh`) new and processed meanwhile by the server's own worker."""
        record = self.ledger.find(doc_id)
        name = os.path.basename(path)
        if record is None:
            return FileResult(path=path, source=name, status=FileStatus.failed, error="unknown")
        if record.status is DocStatus.failed:
            return FileResult(
                path=path,
                source=name,
                status=FileStatus.failed,
                doc_id=doc_id,
                error="; ".join(record.errors) or "failed",
                retry=record.retryable,
            )
        partial = record.status is DocStatus.partial
        done = FileStatus.ok if fresh and record.status is DocStatus.ok else FileStatus.unchanged
        return FileResult(
            path=path,
            source=name,
            status=FileStatus.partial if partial else done,
            doc_id=doc_id,
            pages=record.pages,
            chunks=record.chunks,
            error="; ".join(record.errors) or None if partial else None,
        )

    def _emit(self, kind: EventKind, doc_id: str, source: str, path: str | None) -> None:
        self.events.emit(IngestEvent(kind=kind, doc_id=doc_id, source=source, path=path))
