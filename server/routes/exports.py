"""Exports of an ingested document: structured JSON, Markdown, plain text, a searchable PDF and a
DoclingDocument.

Ingestion writes the whole `Document` to `DATA_DIR/documents/{doc_id}.json` a window of pages at
a time and moves it into place when the document is indexed, so the JSON export is that file,
sent as it is (no parsing: cost is the disk read). The Markdown export parses that file once and
renders it a page at a time. A document that is queued, processing for the first time or failed
has no JSON yet: 409 `not_ready` / `not_available`. The searchable PDF is the stored PDF with
an invisible text layer on its OCR'd pages (`ocr_engine.exports.searchable`); the Docling export
is `ocr_engine.exports.docling_export`'s DoclingDocument, boxes bottom-left as Docling writes them.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from docling_core.types.doc import DoclingDocument
from fastapi import APIRouter
from fastapi.responses import FileResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from ingest.ledger import DocStatus, DocumentRecord, UnknownDocumentError
from ingest.pipeline import PASSWORDS_FILE, PasswordBook
from ocr_engine.errors import BadInputError
from ocr_engine.exports import document_markdown, document_text, searchable_pdf, to_docling
from ocr_engine.inputs import stored_pdf_bytes
from ocr_engine.schema import Document
from server.http.deps import ApiError, DocId, Svc, record_or_404
from server.http.errors import ErrorBody
from server.services import Services

__all__ = ["router"]

router = APIRouter()

_PENDING = (DocStatus.queued, DocStatus.processing)


def _json_path(svc: Services, record: DocumentRecord) -> Path:
    """The stored JSON of an indexed document, or a 409 that says why there is none."""
    path = svc.files.root / f"{record.doc_id}.json"
    if path.is_file():
        return path
    if record.status in _PENDING:
        raise ApiError(
            409, "not_ready", f"{record.source} is {record.status.value}: try again when it is ok"
        )
    raise ApiError(
        409,
        "not_available",
        f"{record.source} has no structured document (status {record.status.value})",
    )


def _disposition(record: DocumentRecord, suffix: str) -> str:
    """`inline` with the export's file name (RFC 6266): `filename*` the real name in UTF-8
    (RFC 5987), `filename` an ASCII fallback (accents dropped, other letters `_`)."""
    stem = "".join(
        c if c.isprintable() and c not in "/\\" else "_" for c in Path(record.source).stem
    )
    stem = stem.strip() or record.doc_id[:12]
    plain = unicodedata.normalize("NFKD", stem)
    ascii_stem = "".join(
        c if c.isascii() and (c.isalnum() or c in "-_.,()[] ") else "_"
        for c in plain
        if not unicodedata.combining(c)
    )
    if not any(c.isalnum() for c in ascii_stem):
        ascii_stem = record.doc_id[:12]
    encoded = quote(stem + suffix, safe="")
    return f"inline; filename=\"{ascii_stem}{suffix}\"; filename*=UTF-8''{encoded}"


_NOT_READY: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "no structured document yet (or any more)"}
}


@router.get("/documents/{doc_id}/json", response_model=Document, responses=_NOT_READY)
def document_json(doc_id: DocId, svc: Svc) -> FileResponse:
    """The document's structured JSON: pages -> blocks -> lines, boxes in PDF points."""
    record = record_or_404(svc, doc_id)
    return FileResponse(
        _json_path(svc, record),
        media_type="application/json",
        headers={"Content-Disposition": _disposition(record, ".json")},
    )


def _markdown(document: Document) -> Iterator[bytes]:
    for part in document_markdown(document):
        yield part.encode("utf-8")


@router.get(
    "/documents/{doc_id}/markdown",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/markdown": {"schema": {"type": "string"}}}},
        **_NOT_READY,
    },
)
async def document_markdown_export(doc_id: DocId, svc: Svc) -> StreamingResponse:
    """The document as Markdown: headings, paragraphs, lists, tables; `<!-- page N -->` and a
    `---` rule between pages; running headers and footers left out."""
    record = record_or_404(svc, doc_id)
    path = _json_path(svc, record)
    try:
        document = await asyncio.to_thread(_load, path)
    except FileNotFoundError:  # removed or replaced between the check and the read
        raise ApiError(409, "not_ready", f"{record.source} is being re-ingested") from None
    return StreamingResponse(
        _markdown(document),
        media_type="text/markdown; charset=utf-8",
        headers={"Content-Disposition": _disposition(record, ".md")},
    )


def _load(path: Path) -> Document:
    return Document.model_validate_json(path.read_bytes())


async def _document(svc: Services, record: DocumentRecord) -> Document:
    path = _json_path(svc, record)
    try:
        return await asyncio.to_thread(_load, path)
    except FileNotFoundError:  # removed or replaced between the check and the read
        raise ApiError(409, "not_ready", f"{record.source} is being re-ingested") from None


@router.get(
    "/documents/{doc_id}/text",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}, **_NOT_READY},
)
async def document_text_export(doc_id: DocId, svc: Svc) -> StreamingResponse:
    """The document's text, block by block in reading order, a form feed between pages."""
    record = record_or_404(svc, doc_id)
    document = await _document(svc, record)
    return StreamingResponse(
        (part.encode("utf-8") for part in document_text(document)),
        media_type="text/plain; charset=utf-8",
        headers={"Content-Disposition": _disposition(record, ".txt")},
    )


def _searchable(svc: Services, record: DocumentRecord, document: Document) -> bytes:
    path = svc.files.pdf_path(record.doc_id)
    data = stored_pdf_bytes(path) or path.read_bytes()  # an image's copy is wrapped into a PDF
    settings = svc.settings
    book = PasswordBook(settings.passwords_file or settings.data_dir / PASSWORDS_FILE)
    password = book.lookup(record.doc_id, record.paths, record.source)
    return searchable_pdf(document, data, password=password)


@router.get(
    "/documents/{doc_id}/searchable.pdf",
    response_class=Response,
    responses={
        200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}},
        **_NOT_READY,
    },
)
async def document_searchable_pdf(doc_id: DocId, svc: Svc) -> Response:
    """The original PDF with an invisible text layer at the read lines of every OCR'd page, so
    that search and selection work in any viewer; text-layer pages are left as they are."""
    record = record_or_404(svc, doc_id)
    document = await _document(svc, record)
    try:
        data = await run_in_threadpool(_searchable, svc, record, document)
    except UnknownDocumentError:
        raise ApiError(409, "not_available", f"no PDF stored for {record.source}") from None
    except BadInputError as exc:
        raise ApiError(409, "not_available", str(exc)) from None
    headers = {"Content-Disposition": _disposition(record, ".searchable.pdf")}
    return Response(data, media_type="application/pdf", headers=headers)


@router.get("/documents/{doc_id}/docling", response_model=DoclingDocument, responses=_NOT_READY)
async def document_docling(doc_id: DocId, svc: Svc) -> Response:
    """The document as a DoclingDocument (docling-core's JSON): headings, text, lists, tables
    with cells and spans, pictures and captions, furniture, each with page and box."""
    record = record_or_404(svc, doc_id)
    document = await _document(svc, record)
    body = await run_in_threadpool(lambda: to_docling(document).model_dump_json())
    headers = {"Content-Disposition": _disposition(record, ".docling.json")}
    return Response(body, media_type="application/json", headers=headers)
