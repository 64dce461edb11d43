"""Uploads, removals (remembered, listed, undone) and live ingestion progress (server-sent
events) for `/documents`."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Query, Request, UploadFile
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from ingest.ledger import (
    DocStatus,
    DocumentRecord,
    NotRemovedError,
    PageRecord,
    RemovedFileGoneError,
    Tombstone,
)
from ingest.pipeline import EventHub, EventKind, IngestEvent
from ocr_engine.errors import BadInputError
from ocr_engine.inputs import check_office, document_pdf_bytes, is_office_name, sniff
from server.http.deps import ApiError, DocId, Svc, record_or_404
from server.http.shutdown import StoppableStream

__all__ = ["PDF_MAGIC", "UploadAccepted", "router"]

log = logging.getLogger(__name__)

PDF_MAGIC = b"%PDF-"
_READ_CHUNK = 1 << 20
_HEARTBEAT_S = 15.0
_QUEUE_EVENTS = 1000

router = APIRouter()


class UploadAccepted(BaseModel):
    doc_id: str
    source: str
    status: DocStatus
    duplicate: bool
    status_url: str
    events_url: str


async def _read_limited(file: UploadFile, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while chunk := await file.read(_READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise ApiError(
                413, "too_large", f"the upload exceeds the limit of {limit // (1 << 20)} MiB"
            )
        parts.append(chunk)
    return b"".join(parts)


def _check_upload(data: bytes, name: str) -> None:
    """A PDF or an accepted image by its content (415 otherwise); the image is checked whole."""
    if is_office_name(name):  # checked here, rendered by the worker (`ocr_engine.inputs.office`)
        try:
            check_office(data, name)
        except BadInputError as exc:
            raise ApiError(415, "unreadable_file", str(exc)) from None
        return
    kind = sniff(data)
    if kind == "pdf":
        return
    if kind is None:
        raise ApiError(
            415,
            "not_a_pdf",
            f"{name}: not a PDF (no %PDF- header) nor a PNG, JPEG, TIFF, WebP or BMP image",
        )
    try:
        document_pdf_bytes(data, name)
    except BadInputError as exc:
        raise ApiError(415, "unreadable_image", str(exc)) from None


@router.post("/documents", status_code=202)
async def upload(file: UploadFile, request: Request, svc: Svc) -> UploadAccepted:
    """Store an uploaded PDF or image and queue it; the same bytes again are not processed twice."""
    limit = svc.settings.max_upload_mb << 20
    data = await _read_limited(file, limit)
    name = file.filename or "upload.pdf"
    if not data:
        raise ApiError(400, "empty_file", f"{name}: the upload is empty")
    await asyncio.to_thread(_check_upload, data, name)
    known = {r.doc_id for r in svc.ledger.documents()}
    record = await asyncio.to_thread(svc.sync.add_upload, data, name)
    _wake(request)
    return UploadAccepted(
        doc_id=record.doc_id,
        source=record.source,
        status=record.status,
        duplicate=record.doc_id in known,
        status_url=f"/documents/{record.doc_id}",
        events_url=f"/documents/{record.doc_id}/events",
    )


@router.delete("/documents/{doc_id}")
def delete(doc_id: DocId, svc: Svc) -> DocumentRecord:
    """Remove a document's points, files and record; a processing one goes when it finishes.
    Files that hold it stay out of the index (see `/documents/removed`) until restored or
    changed."""
    record_or_404(svc, doc_id)
    return svc.sync.remove(doc_id)


@router.get("/documents/removed")
def removed(svc: Svc) -> list[Tombstone]:
    """Files whose document was removed while they stayed in their folder, latest first."""
    return svc.ledger.tombstones.all()


@router.post("/documents/{doc_id}/restore")
async def restore(doc_id: DocId, request: Request, svc: Svc) -> list[DocumentRecord]:
    """Undo a removal: the files that held the document are ingested again from where they are;
    answers what they hold now (queued)."""
    try:
        records = await asyncio.to_thread(svc.sync.restore, doc_id)
    except NotRemovedError:
        raise ApiError(404, "not_removed", f"no removal of {doc_id!r} is remembered") from None
    except RemovedFileGoneError as exc:
        raise ApiError(409, "file_gone", f"cannot restore {doc_id!r}: {exc}") from None
    _wake(request)
    return records


def _wake(request: Request) -> None:
    worker = getattr(request.app.state, "worker", None)
    if worker is not None:
        worker.wake()


def _sse(event: IngestEvent) -> str:
    return f"event: {event.kind.value}\ndata: {json.dumps(event.model_dump(mode='json'))}\n\n"


async def _stream(
    request: Request,
    events: EventHub,
    doc_id: str | None,
    *,
    until_finished: bool,
    snapshot: Callable[[], IngestEvent | None] | None = None,
) -> AsyncIterator[str]:
    """Events as SSE text; `snapshot` (called once subscribed, so nothing is missed) may say
    the document has already finished."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[IngestEvent] = asyncio.Queue(maxsize=_QUEUE_EVENTS)

    def put(event: IngestEvent) -> None:
        if queue.full() and event.kind is EventKind.progress:
            return  # a slow client misses progress ticks, never a state change
        queue.put_nowait(event)

    def on_event(event: IngestEvent) -> None:
        if doc_id is None or event.doc_id == doc_id:
            loop.call_soon_threadsafe(put, event)

    unsubscribe = events.subscribe(on_event)
    try:
        yield ": connected\n\n"
        done = snapshot() if snapshot is not None else None
        if done is not None:
            yield _sse(done)
            if until_finished:
                return
        while not await request.is_disconnected():
            try:
                event = await asyncio.wait_for(queue.get(), _HEARTBEAT_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            yield _sse(event)
            if until_finished and event.kind in (EventKind.finished, EventKind.removed):
                break
    finally:
        unsubscribe()


_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_DONE = (DocStatus.ok, DocStatus.partial, DocStatus.failed)


_SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}
}


@router.get("/events", response_class=StreamingResponse, responses=_SSE_DOC)
def all_events(request: Request, svc: Svc) -> StreamingResponse:
    """Every ingestion event as server-sent events (`event:` kind, `data:` JSON); the stream
    ends when the server stops."""
    return StoppableStream(
        _stream(request, svc.events, None, until_finished=False),
        media_type="text/event-stream",
        headers=_SSE_HEADERS,
    )


@router.get("/documents/{doc_id}/events", response_class=StreamingResponse, responses=_SSE_DOC)
def document_events(
    doc_id: DocId,
    request: Request,
    svc: Svc,
    follow: bool = Query(default=False, description="keep streaming after it finishes"),
) -> StreamingResponse:
    """One document's events; the stream ends when it finishes unless `follow`."""
    record_or_404(svc, doc_id)

    def finished() -> IngestEvent | None:
        record = svc.ledger.find(doc_id)
        if record is None or record.status not in _DONE:
            return None
        return IngestEvent(
            kind=EventKind.finished,
            doc_id=doc_id,
            source=record.source,
            status=record.status,
            pages_done=record.pages,
            pages_total=record.pages,
            chunks=record.chunks,
            error="; ".join(record.errors) or None,
        )

    return StoppableStream(
        _stream(request, svc.events, doc_id, until_finished=not follow, snapshot=finished),
        media_type="text/event-stream",
        headers=_SSE_HEADERS,
    )


class DocumentDetail(DocumentRecord):
    page_summaries: list[PageRecord] = Field(default_factory=list)


@router.get("/documents")
def documents(svc: Svc, status: DocStatus | None = None) -> list[DocumentRecord]:
    """Every document the ledger knows, oldest first; `?status=failed` lists the failures."""
    return svc.ledger.documents(status)


@router.get("/documents/{doc_id}")
def document(doc_id: DocId, svc: Svc) -> DocumentDetail:
    """One document with a record per page read so far (engine, route, status, errors)."""
    record = record_or_404(svc, doc_id)
    return DocumentDetail(**record.model_dump(), page_summaries=svc.ledger.pages(doc_id))
