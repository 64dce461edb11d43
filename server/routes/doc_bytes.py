"""The stored copy of a document for `folio worker`s: `GET /worker/documents/{sha256}.pdf?token=`.

The token (`ingest.doc_bytes.DocTokens`, signed by this coordinator into each unit it sends) opens
that one document until it expires and nothing else; the API key does not open this route, and
the API-key middleware leaves it to the token. Range requests are answered (206), so a worker
resumes a dropped transfer. A refused token is a 401 that says why, logged here as well.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse

from ingest.doc_bytes import WORKER_PATH, DocTokens, TokenRefusedError
from ingest.records import UnknownDocumentError
from server.deps import ApiError, DocId, Svc

__all__ = ["router"]

log = logging.getLogger(__name__)

router = APIRouter()


def _tokens(request: Request, svc: Svc) -> DocTokens:
    tokens: DocTokens | None = getattr(request.app.state, "doc_tokens", None)
    if tokens is None:
        tokens = request.app.state.doc_tokens = DocTokens.for_data_dir(svc.settings.data_dir)
    return tokens


@router.get(
    WORKER_PATH + "{doc_id}.pdf",
    response_class=FileResponse,
    responses={
        200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}},
        206: {"description": "the range asked for"},
        401: {"description": "the token does not open this document"},
    },
)
def stored_copy(
    doc_id: DocId, request: Request, svc: Svc, token: str | None = None
) -> FileResponse:
    """A stored copy's bytes for a worker holding a unit's token (range requests answered)."""
    try:
        _tokens(request, svc).check(doc_id, token)
    except TokenRefusedError as exc:
        client = request.client.host if request.client is not None else "?"
        log.warning("refused %s the stored copy of %s: %s", client, doc_id[:12], exc.reason)
        raise ApiError(
            401, "unauthorized", f"this token does not open the document: {exc.reason}"
        ) from None
    try:
        path = svc.files.pdf_path(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "not_found", f"no stored copy of {doc_id}") from None
    return FileResponse(path, media_type="application/pdf")
