"""Reading without indexing (`POST /extract`, pages streamed as server-sent events) and the page
cards of an indexed document (`GET /documents/{doc_id}/cards`).

An extraction adds nothing to the index, the ledger, the page cache or `DATA_DIR/documents`: the
upload is held in a temporary folder outside the data directory for `EXTRACT_TTL_S` (the most
recent `EXTRACT_KEEP` uploads) so that its page images can be shown, at
`/extract/{extract_id}/pages/{n}.png`, and is then deleted. Every URL a card carries is built
here (documents' through `retrieval.links`), never by the web page.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, Field

from ingest.ledger import DocStatus
from ingest.pipeline import check_pdf
from ocr_engine.engines import PAGE_WINDOW, PageReader
from ocr_engine.errors import BadInputError
from ocr_engine.exports import page_markdown
from ocr_engine.inputs import document_pdf_bytes, open_pdf
from ocr_engine.layout import FurnitureMarker
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Document, EngineInfo, Page
from retrieval.links import page_image_url, page_url_template
from server.http.deps import (
    ApiError,
    DocId,
    PageNumber,
    Renderer,
    Svc,
    page_png,
    record_or_404,
)
from server.http.shutdown import StoppableStream

__all__ = ["EXTRACT_KEEP", "EXTRACT_TTL_S", "PageCard", "extract_options", "router"]

EXTRACT_TTL_S = 1800.0
EXTRACT_KEEP = 16
_CARDS_MAX = 50
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

router = APIRouter()


class PageCard(BaseModel):
    """What a page card shows: the page (None while it is not read yet, with `status` saying
    so), its Markdown, its image, and the image with each block highlighted, by block id."""

    number: int
    status: str
    engine: str = ""
    route: str = ""
    page: Page | None = None
    markdown: str = ""
    image_url: str
    block_urls: dict[str, str] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)


class ExtractStarted(BaseModel):
    extract_id: str
    doc_id: str
    source: str
    page_count: int
    pages: list[int] = Field(description="the pages that will be read, in order")
    page_url_template: str


class DocumentCards(BaseModel):
    doc_id: str
    source: str
    status: DocStatus
    page_count: int
    page_url_template: str
    cards: list[PageCard]


class _Held:
    """Uploads held for their page images: a temporary folder, the oldest dropped first."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="folio-extract-"))
        self._lock = threading.Lock()
        self._kept: dict[str, float] = {}

    def put(self, data: bytes) -> str:
        extract_id = uuid.uuid4().hex
        (self.root / extract_id).write_bytes(data)
        with self._lock:
            self._kept[extract_id] = time.monotonic()
            self._expire()
        return extract_id

    def path(self, extract_id: str) -> Path:
        with self._lock:
            self._expire()
            if extract_id not in self._kept:
                raise ApiError(404, "unknown_extraction", "no such extraction (or it expired)")
        return self.root / extract_id

    def _expire(self) -> None:
        now = time.monotonic()
        order = sorted(self._kept, key=self._kept.__getitem__)
        for i, key in enumerate(order):
            if now - self._kept[key] > EXTRACT_TTL_S or len(order) - i > EXTRACT_KEEP:
                del self._kept[key]
                (self.root / key).unlink(missing_ok=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


_held_lock = threading.Lock()
_HELD: list[_Held] = []


def _held() -> _Held:
    with _held_lock:
        if not _HELD:
            _HELD.append(_Held())
            atexit.register(_HELD[0].close)
        return _HELD[0]


def extract_options(svc: Svc) -> ExtractOptions:
    """How `/extract` reads pages: the server's settings (a dependency tests may override)."""
    return svc.settings.extract_options()


def parse_pages(spec: str | None, count: int) -> list[int]:
    """`1-3,7` -> [1, 2, 3, 7] within 1..count; ValueError with the reason."""
    if not spec or not spec.strip():
        return list(range(1, count + 1))
    numbers: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"pages {spec!r}: {part.strip()!r} is not N or N-M") from None
        if not 1 <= first <= last <= count:
            raise ValueError(f"pages {spec!r}: {part.strip()!r} is not within 1-{count}")
        numbers.update(range(first, last + 1))
    return sorted(numbers)


def _card(page: Page, image: str, block_url: Any) -> PageCard:
    return PageCard(
        number=page.number,
        status=page.status.value,
        engine=_engine_name(page.engine),
        route=page.route or "",
        page=page,
        markdown=page_markdown(page),
        image_url=image,
        block_urls={b.id: block_url(page.number, b.bbox) for b in page.blocks},
        errors=[e.message for e in page.errors],
    )


def _engine_name(info: EngineInfo | None) -> str:
    return " ".join(x for x in (info.name, info.model) if x) if info is not None else ""


def _extract_url(extract_id: str, page: int, box: Any = None) -> str:
    base = f"/extract/{extract_id}/pages/{page}.png"
    return base if box is None else f"{base}?highlight={','.join(f'{v:.1f}' for v in box)}"


def _read(
    data: bytes, name: str, numbers: list[int], options: ExtractOptions, stop: threading.Event
) -> Iterator[Page]:
    """The pages `numbers` in order, a page at a time on the CPU; with vLLM in windows of 1, 1,
    2, 4 .. 16 pages (a window's requests are in flight together): the first card comes after
    one page, the later ones at the endpoint's concurrent pace."""
    top = 1 if options.vllm is None else min(PAGE_WINDOW, options.vllm.max_in_flight, 16)
    doc_id = hashlib.sha256(data).hexdigest()
    pdf_bytes = document_pdf_bytes(data, name)
    with PageReader(options) as reader, open_pdf(pdf_bytes, name=name) as pdf:
        start, size, previous = 0, 1, 0
        while start < len(numbers) and not stop.is_set():
            yield from reader.read(pdf, pdf_bytes, doc_id, numbers[start : start + size], name=name)
            start, size, previous = start + size, min(top, max(1, previous + size)), size


def _sse(event: str, body: BaseModel | dict[str, Any]) -> str:
    text = body.model_dump_json() if isinstance(body, BaseModel) else json.dumps(body)
    return f"event: {event}\ndata: {text}\n\n"


async def _stream(
    request: Request, data: bytes, started: ExtractStarted, options: ExtractOptions
) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Page | BaseException | None] = asyncio.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for page in _read(data, started.source, started.pages, options, stop):
                loop.call_soon_threadsafe(queue.put_nowait, page)
        except BaseException as exc:  # sent to the client as an error event
            loop.call_soon_threadsafe(queue.put_nowait, exc)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=produce, name="folio-extract-stream", daemon=True).start()
    marker = FurnitureMarker(started.page_count)
    pages: list[Page] = []
    eid = started.extract_id
    try:
        yield _sse("started", started)
        while (item := await queue.get()) is not None:
            if isinstance(item, BaseException):
                error = {"code": type(item).__name__, "message": str(item)}
                yield _sse("error", {"error": error})
                return
            card = _card(item.model_copy(deep=True), _extract_url(eid, item.number), _block(eid))
            yield _sse("page", card)
            pages += marker.feed([item])
            if await request.is_disconnected():
                return
        pages += marker.finish()
        document = Document(
            doc_id=started.doc_id, source=started.source, page_count=len(pages), pages=pages
        )
        yield _sse("done", {"document": document.model_dump(mode="json")})
    finally:
        stop.set()


def _block(extract_id: str) -> Any:
    return lambda page, box: _extract_url(extract_id, page, box)


def _prepare(data: bytes, name: str, pages: str | None) -> tuple[int, list[int]]:
    try:
        pdf_bytes = document_pdf_bytes(data, name)
        with open_pdf(pdf_bytes, name=name) as pdf:
            check_pdf(pdf, name)
            count = pdf.page_count
    except BadInputError as exc:
        raise ApiError(415, "unreadable_file", str(exc)) from None
    try:
        return count, parse_pages(pages, count)
    except ValueError as exc:
        raise ApiError(422, "invalid_pages", str(exc)) from None


@router.post(
    "/extract",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "the pages as events"},
        413: {"description": "the upload is too large"},
        415: {"description": "not a readable PDF or image"},
    },
)
async def extract(
    request: Request,
    svc: Svc,
    options: Annotated[ExtractOptions, Depends(extract_options)],
    file: Annotated[UploadFile, File(description="a PDF or an image")],
    pages: Annotated[str | None, Form(description="pages to read, e.g. 1-3,7")] = None,
    ocr: Annotated[OcrMode | None, Form(description="auto, always or never")] = None,
) -> StoppableStream:
    """Read a file without indexing it: `started`, one `page` event per page as it is read (its
    card: JSON, Markdown, image URLs), then `done` with the document (or `error`)."""
    limit = svc.settings.max_upload_mb << 20
    data = await file.read(limit + 1)
    name = file.filename or "upload"
    if len(data) > limit:
        raise ApiError(413, "too_large", f"the upload exceeds the limit of {limit >> 20} MiB")
    if not data:
        raise ApiError(400, "empty_file", f"{name}: the upload is empty")
    count, numbers = await asyncio.to_thread(_prepare, data, name, pages)
    if ocr is not None:
        options = options.model_copy(update={"ocr": ocr})
    extract_id = _held().put(data)
    started = ExtractStarted(
        extract_id=extract_id,
        doc_id=hashlib.sha256(data).hexdigest(),
        source=name,
        page_count=count,
        pages=numbers,
        page_url_template=f"/extract/{extract_id}/pages/{{n}}.png",
    )
    return StoppableStream(
        _stream(request, data, started, options),
        media_type="text/event-stream",
        headers=_SSE_HEADERS,
    )


@router.get(
    "/extract/{extract_id}/pages/{n}.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}},
)
def extract_page_image(
    extract_id: str,
    n: PageNumber,
    svc: Svc,
    renderer: Renderer,
    highlight: Annotated[str | None, Query(max_length=4000)] = None,
    dpi: Annotated[int | None, Query(ge=36)] = None,
) -> Response:
    """A page of a held extraction as PNG, `highlight` boxes drawn."""
    if len(extract_id) != 32 or any(c not in "0123456789abcdef" for c in extract_id):
        raise ApiError(404, "unknown_extraction", "no such extraction")
    return page_png(svc, renderer, _held().path(extract_id), n, dpi, highlight, extract_id)


_documents: dict[str, tuple[float, Document]] = {}
_documents_lock = threading.Lock()


def _document(path: Path) -> Document:
    """The stored document JSON, parsed once per version of the file (the last few kept)."""
    mtime = path.stat().st_mtime
    with _documents_lock:
        hit = _documents.get(str(path))
        if hit is not None and hit[0] == mtime:
            return hit[1]
    document = Document.model_validate_json(path.read_bytes())
    with _documents_lock:
        _documents[str(path)] = (mtime, document)
        while len(_documents) > 4:
            _documents.pop(next(iter(_documents)))
    return document


@router.get("/documents/{doc_id}/cards")
def document_cards(
    doc_id: DocId,
    svc: Svc,
    first: Annotated[int, Query(ge=1)] = 1,
    last: Annotated[int | None, Query(ge=1)] = None,
) -> DocumentCards:
    """Cards of pages `first`..`last` (at most 50): read pages with their JSON once the document
    is indexed; while it is read, those already written to its JSON (as they will be in it), the
    others with their engine, route and status as far as they have been read."""
    record = record_or_404(svc, doc_id)
    count = record.pages
    end = min(count, last or first + _CARDS_MAX - 1, first + _CARDS_MAX - 1)
    path = svc.files.root / f"{doc_id}.json"
    cards: list[PageCard] = []
    block = lambda n, box: page_image_url(doc_id, n, [box])  # noqa: E731
    if record.status not in (DocStatus.queued, DocStatus.processing) and path.is_file():
        document = _document(path)
        for page in document.pages[first - 1 : end]:
            cards.append(_card(page, page_image_url(doc_id, page.number), block))
    else:
        written = {p.number: p for p in svc.files.pages_written(doc_id, first, end)}
        read = {p.number: p for p in svc.ledger.pages(doc_id)}
        for number in range(first, end + 1):
            if number in written:
                cards.append(_card(written[number], page_image_url(doc_id, number), block))
                continue
            summary = read.get(number)
            cards.append(
                PageCard(
                    number=number,
                    status=summary.status.value if summary else "waiting",
                    engine=_engine_name(summary.engine) if summary else "",
                    route=(summary.route or "") if summary else "",
                    image_url=page_image_url(doc_id, number),
                    errors=list(summary.errors) if summary else [],
                )
            )
    return DocumentCards(
        doc_id=doc_id,
        source=record.source,
        status=record.status,
        page_count=count,
        page_url_template=page_url_template(doc_id),
        cards=cards,
    )
