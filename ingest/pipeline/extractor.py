"""Page extraction a window at a time, in a worker process (or a thread of this one).

Extraction is CPU-bound Python and C that holds the GIL; embedding (torch) releases it. In a
worker process the two run on separate cores. The worker keeps the current PDF open between
windows, reads pages through the page cache, refuses bombs before the first page, and exits on
its own when its parent dies (a SIGKILLed `folio` leaves no worker behind). A crash of MuPDF in
the worker fails that document, not the service: the pool is rebuilt for the next one.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pymupdf
from pydantic import BaseModel, Field

from ingest.pipeline.guards import PdfLimits, check_pdf
from ingest.pipeline.page_cache import SqlitePageCache
from ocr_engine.engines import PageReader
from ocr_engine.errors import FolioError
from ocr_engine.inputs import document_pdf_bytes, open_pdf
from ocr_engine.options import ExtractOptions
from ocr_engine.parent_watch import watch_parent
from ocr_engine.schema import Page

__all__ = ["DocInfo", "Extractor", "PageRead", "WindowResult", "WorkerCrashedError"]

log = logging.getLogger(__name__)


class WorkerCrashedError(FolioError):
    """The extraction worker process died while reading a document (e.g. MuPDF crashed)."""


class DocInfo(BaseModel):
    page_count: int
    metadata: dict[str, str] = Field(default_factory=dict)


class PageRead(BaseModel):
    """A page an engine has finished reading, before the rest of its window is."""

    doc_id: str
    number: int
    engine: str


PageListener = Callable[[PageRead], None]


class WindowResult(BaseModel):
    """Pages first..last of a document, the MuPDF warnings raised while reading them, the time."""

    pages: list[Page]
    warnings: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class WindowReader:
    """Reads windows of pages of one PDF at a time (kept open between windows)."""

    def __init__(self, options: ExtractOptions, cache_path: Path | None, limits: PdfLimits) -> None:
        cache = SqlitePageCache(cache_path) if cache_path is not None else None
        self.reader = PageReader(options, cache=cache)
        self.limits = limits
        self._open: tuple[str, str | None, pymupdf.Document, bytes] | None = None

    def _document(
        self, path: str, name: str, password: str | None
    ) -> tuple[pymupdf.Document, bytes]:
        if self._open is not None and self._open[:2] == (path, password):
            return self._open[2], self._open[3]
        self.release()
        stored = Path(path)  # an image: wrapped into a PDF; an Office file: its rendering, kept
        data = document_pdf_bytes(
            stored.read_bytes(), name, cache_dir=stored.parent, password=password
        )
        pdf = open_pdf(data, password=password, name=name)
        self._open = (path, password, pdf, data)
        return pdf, data

    def release(self) -> None:
        if self._open is not None:
            self._open[2].close()
            self._open = None

    def probe(self, path: str, name: str, password: str | None) -> DocInfo:
        """Open the PDF (BadInputError when it cannot be read) and check it is safe to read."""
        self.release()
        pdf, _ = self._document(path, name, password)
        check_pdf(pdf, name, self.limits)
        wanted = ("title", "author", "subject")
        metadata = {k: str(v) for k, v in (pdf.metadata or {}).items() if k in wanted}
        return DocInfo(
            page_count=pdf.page_count,
            metadata={k: v for k, v in metadata.items() if v.strip()},
        )

    def read(
        self,
        path: str,
        name: str,
        password: str | None,
        doc_id: str,
        first: int,
        last: int,
        on_page: PageListener | None = None,
    ) -> WindowResult:
        """Pages first..last; `on_page` hears of each as soon as it is read."""
        started = time.perf_counter()
        pdf, data = self._document(path, name, password)
        numbers = list(range(first, last + 1))

        def read(page: Page) -> None:
            if on_page is not None:
                on_page(PageRead(doc_id=doc_id, number=page.number, engine=page.engine.name))

        pages = self.reader.read(
            pdf, data, doc_id, numbers, password=password, name=name, on_page=read
        )
        warnings = pymupdf.TOOLS.mupdf_warnings(reset=True)
        return WindowResult(
            pages=pages,
            warnings=[w for w in warnings.splitlines() if w.strip()][:20],
            seconds=time.perf_counter() - started,
        )


# the worker process's reader, and where it tells the parent of each page read: `_init_worker`
_WORKER: WindowReader | None = None
_PAGES: Any = None


def _init_worker(
    options_json: str, cache_path: str | None, limits_json: str, parent: int, pages: Any = None
) -> None:
    global _WORKER, _PAGES
    _PAGES = pages
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    watch_parent(parent)
    _WORKER = WindowReader(
        ExtractOptions.model_validate_json(options_json),
        Path(cache_path) if cache_path else None,
        PdfLimits.model_validate_json(limits_json),
    )


def _probe_in_worker(path: str, name: str, password: str | None) -> str:
    assert _WORKER is not None
    return _WORKER.probe(path, name, password).model_dump_json()


def _read_in_worker(
    path: str, name: str, password: str | None, doc_id: str, first: int, last: int
) -> str:
    assert _WORKER is not None
    pages = _PAGES
    told = (lambda read: pages.put(read.model_dump_json())) if pages is not None else None
    return _WORKER.read(path, name, password, doc_id, first, last, told).model_dump_json()


class Extractor:
    """Submits probes and page windows to one worker process, or to one thread if `processes=0`;
    `on_page` hears of each page as it is read (from the worker, through a queue that a thread
    of this process empties)."""

    def __init__(
        self,
        options: ExtractOptions,
        *,
        cache_path: Path | None,
        limits: PdfLimits | None = None,
        processes: int = 1,
        on_page: PageListener | None = None,
    ) -> None:
        self.options = options
        self.cache_path = cache_path
        self.limits = limits or PdfLimits()
        self.processes = processes
        self.on_page = on_page
        self._lock = threading.Lock()
        self._executor: Executor | None = None
        self._local: WindowReader | None = None
        self._pages: Any = None  # the worker's queue of pages read, and its reader thread
        self._listener: threading.Thread | None = None

    def _pool(self) -> Executor:
        with self._lock:
            if self._executor is None:
                if self.processes > 0:
                    context = multiprocessing.get_context("spawn")
                    if self.on_page is not None and self._pages is None:
                        self._pages = context.SimpleQueue()
                        self._listener = threading.Thread(
                            target=self._listen, name="folio-pages-read", daemon=True
                        )
                        self._listener.start()
                    self._executor = ProcessPoolExecutor(
                        max_workers=self.processes,
                        mp_context=context,
                        initializer=_init_worker,
                        initargs=(
                            self.options.model_dump_json(),
                            str(self.cache_path) if self.cache_path else None,
                            self.limits.model_dump_json(),
                            os.getpid(),
                            self._pages,
                        ),
                    )
                else:
                    self._local = WindowReader(self.options, self.cache_path, self.limits)
                    self._executor = ThreadPoolExecutor(1, thread_name_prefix="folio-extract")
            return self._executor

    def probe(self, path: Path, name: str, password: str | None) -> Future[DocInfo]:
        if self.processes > 0:
            return self._submit(
                DocInfo.model_validate_json, _probe_in_worker, str(path), name, password
            )
        pool = self._pool()
        assert self._local is not None
        return pool.submit(self._local.probe, str(path), name, password)

    def window(
        self, path: Path, name: str, password: str | None, doc_id: str, first: int, last: int
    ) -> Future[WindowResult]:
        args = (str(path), name, password, doc_id, first, last)
        if self.processes > 0:
            return self._submit(WindowResult.model_validate_json, _read_in_worker, *args)
        pool = self._pool()
        assert self._local is not None
        return pool.submit(self._local.read, *args, self.on_page)

    def _listen(self) -> None:
        """Pages the worker has read, to `on_page`, until `close` ends the queue."""
        assert self._pages is not None and self.on_page is not None
        for message in iter(self._pages.get, None):
            try:
                self.on_page(PageRead.model_validate_json(message))
            except Exception:  # a listener's failure must not stop the pages after
                log.exception("a page-read listener failed")

    def _submit(
        self, convert: Callable[[str], Any], fn: Callable[..., str], *args: Any
    ) -> Future[Any]:
        """Run `fn` in the worker; the returned future holds `convert` of its JSON result."""
        out: Future[Any] = Future()
        try:
            inner = self._pool().submit(fn, *args)
        except BrokenProcessPool:
            self._reset()
            inner = self._pool().submit(fn, *args)

        def done(f: Future[str]) -> None:
            try:
                out.set_result(convert(f.result()))
            except BrokenProcessPool as exc:
                self._reset()
                out.set_exception(
                    WorkerCrashedError(f"the extraction worker process died on this file ({exc})")
                )
            except BaseException as exc:
                out.set_exception(exc)

        inner.add_done_callback(done)
        return out

    def _reset(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if self._local is not None:
            self._local.release()
            self._local = None
        listener, self._listener = self._listener, None
        if listener is not None and self._pages is not None:
            self._pages.put(None)  # after the worker's last page: the queue keeps their order
            listener.join()
            self._pages.close()
            self._pages = None
