"""Ingest files: read -> extract -> chunk -> embed -> index, one result per file, failures kept."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ingest.catalog import Catalog, DocStatus, DocumentRecord
from ingest.chunker import chunk_document
from ocr_engine.errors import FolioError
from ocr_engine.extract import extract_document
from ocr_engine.schema import BlockType, Document, PageStatus
from retrieval.embedder import Embedder
from retrieval.schema import Chunk
from retrieval.store import VectorStore

log = logging.getLogger(__name__)

EMBED_SLICE = 64
PageProgress = Callable[[int], None]


class FileStatus(StrEnum):
    ok = "ok"
    partial = "partial"
    unchanged = "unchanged"
    failed = "failed"


class FileResult(BaseModel):
    """The outcome of ingesting one file; `error` is set whenever status is failed or partial."""

    path: str
    source: str
    status: FileStatus
    doc_id: str | None = None
    pages: int = 0
    chunks: int = 0
    error: str | None = None
    seconds: float = 0.0


class IngestOptions(BaseModel):
    max_tokens: int = Field(default=256, ge=32)
    embed_batch_size: int = Field(default=32, ge=1)
    prefetch: int = Field(default=2, ge=1, description="files extracted ahead of embedding")


@dataclass
class _Prepared:
    """A file read, extracted and chunked, waiting for embedding."""

    path: Path
    doc_id: str
    data: bytes
    document: Document | None
    chunks: list[Chunk]
    started: float
    error: str | None = None
    unchanged: bool = False


def find_pdfs(paths: Iterable[Path]) -> list[Path]:
    """Files given directly, plus `*.pdf` (any case) found by walking the directories given."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf")
            )
        else:
            found.append(path)
    return found


def image_only_pages(document: Document) -> list[int]:
    """Pages that show images but carry no text: their content is not searchable without OCR."""
    return [
        page.number
        for page in document.pages
        if page.status is not PageStatus.failed
        and any(b.type is BlockType.figure for b in page.blocks)
        and not any(b.lines for b in page.blocks)
    ]


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class Ingestor:
    """Runs files through the pipeline; extraction of the next files overlaps embedding."""

    def __init__(
        self,
        catalog: Catalog,
        embedder: Embedder,
        store: VectorStore,
        options: IngestOptions | None = None,
    ) -> None:
        self.catalog = catalog
        self.embedder = embedder
        self.store = store
        self.options = options or IngestOptions()

    def ingest_file(
        self, path: Path, *, force: bool = False, on_pages: PageProgress | None = None
    ) -> FileResult:
        return self._index(self._prepare(path, force=force), on_pages)

    def ingest_paths(
        self,
        paths: Iterable[Path],
        *,
        force: bool = False,
        on_result: Callable[[FileResult], None] | None = None,
        on_pages: PageProgress | None = None,
    ) -> list[FileResult]:
        """Ingest every file; `on_pages(n)` reports newly indexed pages, `on_result` each file."""
        results = []
        for prepared in self._prefetched(list(paths), force):
            result = self._index(prepared, on_pages)
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    def _prefetched(self, paths: list[Path], force: bool) -> Iterator[_Prepared]:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="folio-extract") as pool:
            pending: list[Future[_Prepared]] = []
            queue = iter(paths)
            for path in queue:
                pending.append(pool.submit(self._prepare, path, force=force))
                if len(pending) > self.options.prefetch:
                    yield pending.pop(0).result()
            for future in pending:
                yield future.result()

    def _prepare(self, path: Path, *, force: bool) -> _Prepared:
        started = time.perf_counter()
        try:
            data = path.read_bytes()
        except OSError as exc:
            return _Prepared(path, "", b"", None, [], started, error=f"cannot read file: {exc}")
        doc_id = hashlib.sha256(data).hexdigest()
        if not force and self.catalog.has_ok(doc_id):
            return _Prepared(path, doc_id, data, None, [], started, unchanged=True)
        try:
            document = extract_document(data, source=path.name)
            chunks = chunk_document(
                document,
                count_tokens=self.embedder.count_tokens,
                max_tokens=min(self.options.max_tokens, self.embedder.max_tokens),
            )
        except FolioError as exc:
            return _Prepared(path, doc_id, data, None, [], started, error=_describe(exc))
        except Exception as exc:  # a bug or a library crash must not stop the other files
            log.exception("unexpected failure while extracting %s", path)
            return _Prepared(
                path, doc_id, data, None, [], started, error=f"internal error: {_describe(exc)}"
            )
        if not chunks:
            reason = (
                f"no text could be read from its {document.page_count} page(s): image-only or "
                "scanned pages need OCR, which is not available"
            )
            return _Prepared(path, doc_id, data, None, [], started, error=reason)
        return _Prepared(path, doc_id, data, document, chunks, started)

    def _embed(self, chunks: list[Chunk], on_pages: PageProgress | None) -> np.ndarray:
        """Vectors for the chunks, a slice at a time so progress moves on large documents."""
        parts = [np.zeros((0, self.embedder.dim), dtype=np.float32)]
        reported = 0
        for start in range(0, len(chunks), EMBED_SLICE):
            part = chunks[start : start + EMBED_SLICE]
            parts.append(self.embedder.embed_documents([c.embed_text for c in part]))
            reached = max(r.page for c in part for r in c.regions)
            if on_pages is not None and reached > reported:
                on_pages(reached - reported)
                reported = reached
        return np.concatenate(parts)

    def _index(self, item: _Prepared, on_pages: PageProgress | None = None) -> FileResult:
        source = item.path.name
        if item.unchanged:
            record = self.catalog.get_record(item.doc_id)
            if str(item.path) not in record.paths:
                record.paths.append(str(item.path))
                self.catalog.save_record(record)
            return FileResult(
                path=str(item.path),
                source=source,
                status=FileStatus.unchanged,
                doc_id=item.doc_id,
                pages=record.pages,
                chunks=record.chunks,
            )
        if item.document is None:
            return self._failed(item, item.error or "extraction produced no document")
        try:
            vectors = self._embed(item.chunks, on_pages)
            self.catalog.save_pdf(item.doc_id, item.data)
            self.catalog.save_document(item.document)
            self.store.replace_document(item.doc_id, item.chunks, vectors)
        except Exception as exc:
            log.exception("indexing %s failed", item.path)
            return self._failed(item, f"indexing failed: {_describe(exc)}")
        page_errors = [
            f"page {p.number}: {e.message}"
            for p in item.document.pages
            if p.status is PageStatus.failed
            for e in p.errors
        ]
        unread = image_only_pages(item.document)
        if unread:
            pages = ", ".join(map(str, unread))
            page_errors.append(f"pages {pages}: images without a text layer (OCR not available)")
        if on_pages is not None:
            done = max((r.page for c in item.chunks for r in c.regions), default=0)
            on_pages(max(0, item.document.page_count - done))
        status = FileStatus.partial if page_errors else FileStatus.ok
        seconds = time.perf_counter() - item.started
        self.catalog.save_record(
            DocumentRecord(
                doc_id=item.doc_id,
                source=source,
                paths=[str(item.path)],
                status=DocStatus(status.value),
                pages=item.document.page_count,
                chunks=len(item.chunks),
                errors=page_errors,
                seconds=seconds,
            )
        )
        return FileResult(
            path=str(item.path),
            source=source,
            status=status,
            doc_id=item.doc_id,
            pages=item.document.page_count,
            chunks=len(item.chunks),
            error="; ".join(page_errors) or None,
            seconds=seconds,
        )

    def _failed(self, item: _Prepared, reason: str) -> FileResult:
        log.info("failed to ingest %s: %s", item.path, reason)
        if item.doc_id:
            self.catalog.save_record(
                DocumentRecord(
                    doc_id=item.doc_id,
                    source=item.path.name,
                    paths=[str(item.path)],
                    status=DocStatus.failed,
                    errors=[reason],
                )
            )
        return FileResult(
            path=str(item.path),
            source=item.path.name,
            status=FileStatus.failed,
            doc_id=item.doc_id or None,
            error=reason,
            seconds=time.perf_counter() - item.started,
        )
