"""Page images and request bodies for an OCR endpoint, made off the event loop.

PyMuPDF holds the GIL while it rasterises a page and encodes the PNG (~100 ms for a Letter page at
144 dpi), so rendering in threads starves the event loop that sends the requests: the endpoint then
waits for the CPU in bursts. Worker processes (the default) render in parallel with the loop and
with each other; threads remain for hosts that cannot start processes. The pool lives as long as
its owner and serves document after document: a process reads the PDF from a temporary file the
first time it renders one of its pages, and keeps the last two documents open. Every worker, thread
or process, has its own `pymupdf.Document`s: documents must not be shared.
"""

from __future__ import annotations

import asyncio
import base64
import multiprocessing
import multiprocessing.util
import os
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import pymupdf

from ocr_engine.engines.render import render_page
from ocr_engine.parent_watch import watch_parent

__all__ = ["BodyBuilder", "PageRequest", "RenderPool", "SourceDocument"]

# (image data URL, width px, height px) -> the JSON request body; picklable for processes
BodyBuilder = Callable[[str, int, int], bytes]
_OPEN_DOCUMENTS = 2


@dataclass(slots=True)
class PageRequest:
    """A rendered page: its size in points (``page.rect``) and pixels, and its request body (the
    image is kept only there: a scanned page's PNG can be megabytes)."""

    number: int
    width: float
    height: float
    x0: float
    y0: float
    rotation: int
    width_px: int
    height_px: int
    body: bytes
    render_cpu_s: float
    encode_cpu_s: float


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """How a worker finds a PDF: a unique key, and a file (processes) or the bytes (threads)."""

    key: str
    path: str | None
    data: bytes | None
    password: str | None


class _Documents:
    """The documents one worker has open, the most recently used last."""

    def __init__(self) -> None:
        self._open: OrderedDict[str, pymupdf.Document] = OrderedDict()

    def get(self, source: SourceDocument) -> pymupdf.Document:
        doc = self._open.get(source.key)
        if doc is not None:
            self._open.move_to_end(source.key)
            return doc
        if source.path is not None:
            doc = pymupdf.open(source.path, filetype="pdf")
        else:
            doc = pymupdf.open(stream=source.data, filetype="pdf")
        if doc.needs_pass:
            doc.authenticate(source.password or "")
        self._open[source.key] = doc
        while len(self._open) > _OPEN_DOCUMENTS:
            self._open.popitem(last=False)[1].close()
        return doc

    def close(self) -> None:
        while self._open:
            self._open.popitem()[1].close()


def _render(
    documents: _Documents,
    source: SourceDocument,
    number: int,
    dpi: int,
    max_pixels: int,
    build_body: BodyBuilder,
) -> PageRequest:
    started = time.thread_time()
    page = documents.get(source).load_page(number - 1)
    image = render_page(page, dpi=dpi, max_pixels=max_pixels)
    rendered = time.thread_time()
    url = "data:image/png;base64," + base64.b64encode(image.png).decode("ascii")
    body = build_body(url, image.width_px, image.height_px)
    return PageRequest(
        number=number,
        width=image.width_pt,
        height=image.height_pt,
        x0=image.x0,
        y0=image.y0,
        rotation=page.rotation,
        width_px=image.width_px,
        height_px=image.height_px,
        body=body,
        render_cpu_s=rendered - started,
        encode_cpu_s=time.thread_time() - rendered,
    )


_process_documents = _Documents()


def _render_in_process(
    source: SourceDocument, number: int, dpi: int, max_pixels: int, build_body: BodyBuilder
) -> PageRequest:
    return _render(_process_documents, source, number, dpi, max_pixels, build_body)


def _ready() -> bool:
    return True


class RenderPool:
    """`workers` processes (or threads) rendering pages; `close` it when done."""

    def __init__(self, workers: int, *, processes: bool = True) -> None:
        self.workers = workers
        self.processes = processes
        self._executor: Executor
        if processes:
            context = multiprocessing.get_context("spawn")
            self._executor = ProcessPoolExecutor(
                workers, mp_context=context, initializer=watch_parent, initargs=(os.getpid(),)
            )
            # a pool made in a worker process (the extraction process) must stop before that
            # process joins its children at exit, where atexit and weakref.finalize never run;
            # above the priority (10) at which its queues' feeder threads are told to stop
            multiprocessing.util.Finalize(
                self,
                self._executor.shutdown,
                kwargs={"wait": True, "cancel_futures": True},
                exitpriority=20,
            )
        else:
            self._executor = ThreadPoolExecutor(workers, thread_name_prefix="page-render")
        self._local = threading.local()
        self._thread_documents: list[_Documents] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start every worker now rather than on the first renders (processes take ~1 s)."""
        for future in [self._executor.submit(_ready) for _ in range(self.workers)]:
            future.result()

    @contextmanager
    def document(self, pdf: bytes, password: str | None) -> Iterator[SourceDocument]:
        """The PDF made reachable by the workers while the block runs."""
        key = uuid.uuid4().hex
        if not self.processes:
            yield SourceDocument(key, None, pdf, password)
            return
        handle, path = tempfile.mkstemp(prefix="folio-ocr-", suffix=".pdf")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(pdf)
            yield SourceDocument(key, path, None, password)
        finally:
            os.unlink(path)

    def _render_in_thread(
        self,
        source: SourceDocument,
        number: int,
        dpi: int,
        max_pixels: int,
        build_body: BodyBuilder,
    ) -> PageRequest:
        documents: _Documents | None = getattr(self._local, "documents", None)
        if documents is None:
            documents = self._local.documents = _Documents()
            with self._lock:
                self._thread_documents.append(documents)
        return _render(documents, source, number, dpi, max_pixels, build_body)

    async def render(
        self,
        source: SourceDocument,
        number: int,
        *,
        dpi: int,
        max_pixels: int,
        build_body: BodyBuilder,
    ) -> PageRequest:
        """Page `number` (1-based) of `source`, rendered by a worker."""
        call = _render_in_process if self.processes else self._render_in_thread
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, call, source, number, dpi, max_pixels, build_body
        )

    def close(self) -> None:
        """Stop the workers (pending renders are cancelled) and close the threads' documents."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for documents in self._thread_documents:
                documents.close()
            self._thread_documents.clear()
