"""Exports of an ingested document: its structured JSON and its Markdown.

Ingestion writes the whole `Document` to `DATA_DIR/documents/{doc_id}.json` a window of pages at
a time and moves it into place when the document is indexed, so the JSON export is that file,
sent as it is (no parsing: cost is the disk read). The Markdown export parses that file once and
renders it a page at a time. A document that is queued, processing for the first time or failed
has no JSON yet: 409 `not_ready` / `not_available`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, StreamingResponse

from ingest.records import DocStatus, DocumentRecord
from ocr_engine.markdown import document_markdown
from ocr_engine.schema import Document
from server.deps import ApiError, DocId, Svc, record_or_404
from server.errors import ErrorBody
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


def _filename(record: DocumentRecord, suffix: str) -> str:
    stem = Path(record.source).stem or record.doc_id[:12]
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_. ") else "_" for c in stem)
    return f"{safe}{suffix}"


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
        filename=_filename(record, ".json"),
        content_disposition_type="inline",
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
        headers={"Content-Disposition": f'inline; filename="{_filename(record, ".md")}"'},
    )


def _load(path: Path) -> Document:
    return Document.model_validate_json(path.read_bytes())
